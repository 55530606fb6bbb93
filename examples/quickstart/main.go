// Command quickstart is confpay-go's main job in one program: two accounts,
// a confidential payment with a memo, confirmation, balances read through
// decryption proofs, and the payment's sealed note opened by both sides.
//
// With no configuration it starts the embedded fakeserver in process, so it
// runs on a fresh machine with no network:
//
//	go run ./examples/quickstart
//
// With CONFPAY_API_KEY set (and optionally CONFPAY_BASE_URL and
// CONFPAY_DECRYPTION_KEY, the hex of the account's private encryption key)
// it runs the read-only part against that server instead: the account, its
// balances, and its latest transfers. It never moves money there.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run picks the mode from the environment.
func run(ctx context.Context, out io.Writer, getenv func(string) string) error {
	if key := getenv("CONFPAY_API_KEY"); key != "" {
		return runReadOnly(ctx, out, key, getenv("CONFPAY_BASE_URL"), getenv("CONFPAY_DECRYPTION_KEY"))
	}
	return runLocal(ctx, out)
}

// party is one account as this program holds it: a client and the private
// encryption key that only its owner has.
type party struct {
	handle string
	client *confpay.Client
	key    *decrypt.PrivateKey
}

// runLocal runs the whole flow against an in-process fakeserver.
func runLocal(ctx context.Context, out io.Writer) error {
	srv := fakeserver.NewServer(fakeserver.WithRealClock(), fakeserver.WithBlockTime(300*time.Millisecond))
	defer srv.Close()
	fmt.Fprintf(out, "fakeserver listening on %s (test network, chain %d)\n", srv.URL(), confpay.ChainIDTest)

	alice, err := newParty(srv, "@alice")
	if err != nil {
		return err
	}
	bob, err := newParty(srv, "@bob")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "created @alice and @bob, each with an encryption key only they hold")

	if err := srv.Fund("@alice", confpay.NetworkTest, confpay.AssetUSDG, "100"); err != nil {
		return err
	}
	fmt.Fprintln(out, "funded @alice with 100 USDG of test money")

	t, err := alice.client.Transfers.Create(ctx, &confpay.TransferCreateParams{
		To:     "@bob",
		Amount: confpay.MustParseAmount("12.5"),
		Memo:   "lunch on Friday",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "@alice paid @bob confidentially: %s is %s, tx %s…\n", t.TransferID, t.Status, t.TxHash[:10])

	t, err = waitConfirmed(ctx, alice.client, t.TransferID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s confirmed at %s (the service's answers never carry the amount)\n", t.TransferID, t.ConfirmedAt.Format(time.RFC3339))

	for _, p := range []party{alice, bob} {
		if err := showBalances(ctx, out, p); err != nil {
			return err
		}
	}
	for _, p := range []party{alice, bob} {
		if err := showNote(ctx, out, p, t.TransferID); err != nil {
			return err
		}
	}
	// The fakeserver audits the calls it received for the integration
	// bugs that cost money (a payment without an Idempotency-Key, a retry
	// that mints a new key, ...): a test calls srv.CheckAudit(t).
	if fs := srv.Audit(); len(fs) > 0 {
		return fmt.Errorf("the fakeserver's audit found %d problem(s), the first: %s", len(fs), fs[0])
	}
	fmt.Fprintln(out, "the fakeserver's audit found nothing to fix in these calls")
	return nil
}

// newParty creates an account on the fakeserver with a generated encryption
// key and returns its client and key.
func newParty(srv *fakeserver.Server, handle string) (party, error) {
	info, err := srv.CreateAccount(fakeserver.AccountParams{Handle: handle, GenerateEncryptionKey: true})
	if err != nil {
		return party{}, err
	}
	client := srv.Client(info.TestKey)
	key, err := decrypt.ParsePrivateKeyHex(info.DecryptionKey.Reveal())
	if err != nil {
		return party{}, err
	}
	return party{handle: handle, client: client, key: key}, nil
}

// waitConfirmed polls a transfer until it is confirmed or failed.
func waitConfirmed(ctx context.Context, c *confpay.Client, id string) (*confpay.Transfer, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		t, err := c.Transfers.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		switch t.Status {
		case confpay.StatusConfirmed:
			return t, nil
		case confpay.StatusFailed:
			return nil, errors.New("transfer " + id + " failed")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// showBalances reads a party's balances: ciphertexts from the service,
// decrypted locally, proved, and the figures returned against the proof.
func showBalances(ctx context.Context, out io.Writer, p party) error {
	balances, err := p.client.Accounts.ReadBalances(ctx, p.key)
	if err != nil {
		return err
	}
	for _, b := range balances {
		fmt.Fprintf(out, "%s reads its own balance with a decryption proof: %s %s\n", p.handle, b.Amount, b.Asset)
	}
	return nil
}

// showNote opens the transfer's sealed note with the party's own key.
func showNote(ctx context.Context, out io.Writer, p party, id string) error {
	t, err := p.client.Transfers.Get(ctx, id)
	if err != nil {
		return err
	}
	note, err := confpay.OpenTransferNote(p.key, p.client.ChainID(), t)
	if err != nil {
		return err
	}
	amount, err := confpay.NoteAmount(note)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s opens the note of %s: %s %s, memo %q\n", p.handle, id, amount, t.Asset, note.Memo)
	return nil
}

// runReadOnly shows what a key can see on a real server, moving nothing.
func runReadOnly(ctx context.Context, out io.Writer, apiKey, baseURL, decryptionKey string) error {
	var opts []confpay.Option
	if baseURL != "" {
		opts = append(opts, confpay.WithBaseURL(baseURL))
	}
	c, err := confpay.NewClient(apiKey, opts...)
	if err != nil {
		return err
	}
	me, err := c.Accounts.Me(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%s account, %s network, chain %d)\n", me.Handle, me.Type, c.Network(), c.ChainID())

	if decryptionKey != "" {
		key, err := decrypt.ParsePrivateKeyHex(decryptionKey)
		if err != nil {
			return errors.New("CONFPAY_DECRYPTION_KEY is not a valid private encryption key")
		}
		balances, err := c.Accounts.ReadBalances(ctx, key)
		if err != nil {
			return err
		}
		for _, b := range balances {
			fmt.Fprintf(out, "balance %s %s (proved)\n", b.Amount, b.Asset)
		}
	} else {
		balances, err := c.Accounts.Balances(ctx, nil)
		if err != nil {
			return err
		}
		for _, b := range balances {
			nonzero := b.Nonzero != nil && *b.Nonzero
			fmt.Fprintf(out, "balance %s: nonzero=%t (set CONFPAY_DECRYPTION_KEY to read the figure)\n", b.Asset, nonzero)
		}
	}

	n := 0
	for t, err := range c.Transfers.All(ctx, &confpay.TransferListParams{Limit: 5}) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "transfer %s %s → %s %s %s\n", t.TransferID, t.From, t.To, t.Asset, t.Status)
		if n++; n == 5 {
			break
		}
	}
	return nil
}
