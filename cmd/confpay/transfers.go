package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// pollInterval is how often pay --wait asks for the transfer's status.
const pollInterval = 250 * time.Millisecond

// virtualHintAfter is how long pay --wait waits before it asks whether the
// server's clock is virtual, to say so when it is.
const virtualHintAfter = 5 * time.Second

func (a *app) payCmd() *cobra.Command {
	var (
		memo, asset, idemKey string
		amountFile, memoFile string
		public, wait         bool
	)
	cmd := &cobra.Command{
		Use:   "pay RECIPIENT {AMOUNT | --amount-file F}",
		Short: "Send a payment",
		Long: `Send a payment to an @handle, an @owner/agent, a 0x address or a registered
domain. The amount and memo are sealed: only you and the recipient can read
them. The amount is exact decimal text (12.5, 0.000001), in USDG unless
--asset says otherwise.

An argument or flag value is visible to every user of the machine (ps) and
lands in your shell's history: --amount-file and --memo-file read the amount
and the memo from a file instead, or from standard input with "-" (one of
them). The amount file's surrounding white space is ignored; the memo file
is the memo byte for byte, but for one final line ending.

With --wait, confpay waits until the transfer is confirmed or failed (with a
progress indicator on a terminal); a failed transfer exits with code 7.
A payment by an agent above its approval threshold is held for the owner:
confpay prints the held transaction's id.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 2 && amountFile != "":
				return usagef("give the amount either as an argument or with --amount-file, not both")
			case len(args) == 1 && amountFile == "", len(args) != 1 && len(args) != 2:
				return usagef("%s takes 2 argument(s): RECIPIENT AMOUNT (got %d), or RECIPIENT alone with --amount-file", cmd.CommandPath(), len(args))
			case cmd.Flags().Changed("memo") && memoFile != "":
				return usagef("give the memo either with --memo or with --memo-file, not both")
			}
			return nil
		},
		Example: `  confpay pay @bob 12.5 --memo "lunch"
  confpay pay @bob 0.01 --asset ETH --wait
  confpay pay 0x52908400098527886E0F7030069857D2E4169EE7 5 --public
  confpay pay @shop 30 --idempotency-key order-1234 --json
  confpay pay @landlord --amount-file rent.amount --memo-file rent.memo
  pass show payments/rent | confpay pay @landlord --amount-file - --memo-file rent.memo`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var amount confpay.Amount
			if amountFile != "" {
				in := input{flag: "--amount-file", what: "the amount", path: amountFile, max: maxAmountFile, limit: "an amount is a short decimal"}
				b, err := a.read(in)
				if err != nil {
					return err
				}
				// The amount is confidential: the message never repeats it.
				if amount, err = confpay.ParseAmount(amountText(b)); err != nil {
					return usagef("the amount in --amount-file %s is not an amount: %s", in.source(), strings.TrimPrefix(strings.TrimPrefix(err.Error(), "confpay: "), "amount "))
				}
			} else {
				var err error
				if amount, err = confpay.ParseAmount(args[1]); err != nil {
					return usagef("invalid amount %q: %s", clean(args[1]), strings.TrimPrefix(strings.TrimPrefix(err.Error(), "confpay: "), "amount "))
				}
			}
			if memoFile != "" {
				b, err := a.read(input{flag: "--memo-file", what: "the memo", path: memoFile, max: maxMemoFile, limit: "a memo is at most 1024 bytes"})
				if err != nil {
					return err
				}
				memo = memoText(b)
			}
			p := &confpay.TransferCreateParams{To: args[0], Amount: amount, Memo: memo}
			if asset != "" {
				p.Asset = strings.ToUpper(asset)
			}
			if public {
				p.Confidential = publicPayment()
			}
			var resp confpay.Response
			opts := []confpay.CallOption{confpay.WithResponse(&resp)}
			if cmd.Flags().Changed("idempotency-key") {
				if !confpay.ValidIdempotencyKey(idemKey) {
					return usagef("--idempotency-key must be 1 to 255 printable ASCII characters")
				}
				opts = append(opts, confpay.WithIdempotencyKey(idemKey))
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			t, held, err := createTransfer(cmd.Context(), c, p, opts...)
			if err != nil {
				return err
			}
			if held != nil {
				if a.jsonOut {
					return a.printJSON(held)
				}
				return a.fields(
					[2]string{"Held", "for the owner's approval (above the agent's threshold)"},
					[2]string{"Transaction", clean(held.TransactionID)},
					[2]string{"Status", a.status(string(held.Status))},
					[2]string{"Expires", fmtTime(held.ExpiresAt)},
				)
			}
			if !a.jsonOut {
				what := "Sent"
				if resp.IdempotentReplayed {
					what = "Already sent (replayed with the same idempotency key)"
				}
				kind := "confidential"
				if !t.Confidential {
					kind = "public"
				}
				fmt.Fprintf(a.stdout, "%s %s %s to %s (%s) on %s\n", what, amount, assetOrDefault(p.Asset), clean(t.To), kind, networkLine(c))
			}
			if wait {
				if t, err = a.waitSettled(cmd.Context(), c, t); err != nil {
					return err
				}
			}
			if a.jsonOut {
				if err := a.printJSON(t); err != nil {
					return err
				}
			} else if err := a.transferFields(t, opened{Amount: &amount, Memo: &memo}, nil); err != nil {
				return err
			}
			if t.Status == confpay.StatusFailed {
				return &codedError{exitFailed, "transfer " + t.TransferID + " failed"}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&memo, "memo", "", "a note sealed with the amount (at most 1024 bytes of UTF-8)")
	f.StringVar(&amountFile, "amount-file", "", "read the amount from this file (- for standard input), not the command line")
	f.StringVar(&memoFile, "memo-file", "", "read the memo from this file (- for standard input), not the command line")
	f.StringVar(&asset, "asset", "", "USDG (default) or ETH")
	f.BoolVar(&public, "public", false, "send without confidentiality, for a wallet without confidential token support")
	f.StringVar(&idemKey, "idempotency-key", "", "make a retry of this command safe: the same key never pays twice")
	f.BoolVar(&wait, "wait", false, "wait until the transfer is confirmed or failed")
	return cmd
}

// waitSettled polls the transfer until it leaves pending, showing a
// spinner on a terminal. After virtualHintAfter it asks once whether the
// server's clock is virtual (a fakeserver's that moves only when asked),
// and if so says how to move it: the wait would otherwise never end.
func (a *app) waitSettled(ctx context.Context, c *confpay.Client, t *confpay.Transfer) (*confpay.Transfer, error) {
	spin := isTerminal(a.stderr)
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	now := a.now
	if now == nil {
		now = time.Now
	}
	start, asked := now(), false
	wait := a.pollWait
	if wait == nil {
		wait = func(ctx context.Context) error {
			tm := time.NewTimer(pollInterval)
			defer tm.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tm.C:
				return nil
			}
		}
	}
	for i := 0; t.Status == confpay.StatusPending; i++ {
		if !asked && now().Sub(start) >= virtualHintAfter {
			asked = true
			if a.serverClockVirtual(ctx, c.BaseURL()) {
				if spin {
					fmt.Fprint(a.stderr, "\r\x1b[K")
				}
				fmt.Fprintf(a.stderr, "%s is still pending: the server's clock is virtual (confpay-fakeserver -virtual-clock), so no block is mined until it moves. Move it from another shell:\n  curl -s -X POST %s/_fake/clock -d '{\"advance\":\"5s\"}'\n",
					clean(t.TransferID), clean(strings.TrimSuffix(c.BaseURL(), "/")))
			}
		}
		if spin {
			fmt.Fprintf(a.stderr, "\r%s waiting for %s: %s (%s)\x1b[K", frames[i%len(frames)], clean(t.TransferID), t.Status, now().Sub(start).Round(time.Second))
		}
		if err := wait(ctx); err != nil {
			if spin {
				fmt.Fprint(a.stderr, "\r\x1b[K")
			}
			return nil, err
		}
		next, err := c.Transfers.Get(ctx, t.TransferID)
		if err != nil {
			if spin {
				fmt.Fprint(a.stderr, "\r\x1b[K")
			}
			return nil, err
		}
		t = next
	}
	if spin {
		fmt.Fprint(a.stderr, "\r\x1b[K")
	}
	return t, nil
}

// serverClockVirtual asks the server at base whether its clock is virtual,
// as a confpay-fakeserver answers GET /_fake/clock ({"now","virtual"}),
// without credentials. Any other answer, or none within two seconds, is
// "no". The real service (the SDK's default URL) is never asked.
func (a *app) serverClockVirtual(ctx context.Context, base string) bool {
	if base == confpay.DefaultBaseURL {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	u := strings.TrimSuffix(base, "/") + "/_fake/clock"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "confpay-cli")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if a.debug {
			fmt.Fprintf(a.stderr, "debug: GET %s (is the server's clock virtual?): no answer\n", clean(u))
		}
		return false
	}
	defer resp.Body.Close()
	var clock struct {
		Virtual bool `json:"virtual"`
	}
	virtual := resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&clock) == nil && clock.Virtual
	if a.debug {
		fmt.Fprintf(a.stderr, "debug: GET %s (is the server's clock virtual?): %d, virtual %t\n", clean(u), resp.StatusCode, virtual)
	}
	return virtual
}

// transferFields prints one transfer; o is its opened note, if any, and
// openErr why it could not be opened.
func (a *app) transferFields(t *confpay.Transfer, o opened, key *decrypt.PrivateKey) error {
	pairs := [][2]string{
		{"Transfer", clean(t.TransferID)},
		{"Status", a.status(string(t.Status))},
	}
	if t.From != "" {
		pairs = append(pairs, [2]string{"From", clean(t.From)})
	}
	pairs = append(pairs,
		[2]string{"To", clean(t.To)},
		[2]string{"Asset", assetOrDefault(t.Asset)},
	)
	if o.Amount != nil {
		pairs = append(pairs, [2]string{"Amount", o.Amount.String()}, [2]string{"Memo", orDash(clean(*o.Memo))})
	} else if key == nil && t.EncryptedNote != "" {
		pairs = append(pairs, [2]string{"Amount", "sealed (set " + envDecryptionKey + " to open it)"})
	}
	pairs = append(pairs,
		[2]string{"Confidential", yesNo(t.Confidential)},
		[2]string{"Tx hash", orDash(clean(t.TxHash))},
		[2]string{"Created", fmtTime(t.CreatedAt)},
	)
	if t.ConfirmedAt != nil {
		pairs = append(pairs, [2]string{"Confirmed", fmtTimePtr(t.ConfirmedAt)})
	}
	if t.FailedAt != nil {
		pairs = append(pairs, [2]string{"Failed", fmtTimePtr(t.FailedAt)})
	}
	return a.fields(pairs...)
}

func (a *app) transfersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transfers",
		Short: "List and show transfers",
		Example: `  confpay transfers list --status confirmed --limit 5
  confpay transfers get tr_0123456789abcdefghij`,
	}
	cmd.AddCommand(a.transfersListCmd(), a.transfersGetCmd())
	return cmd
}

func (a *app) transfersListCmd() *cobra.Command {
	var (
		status, from, to string
		limit, offset    int
		all              bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List transfers, newest first",
		Long: `List the transfers you sent or received, newest first. With your decryption
key, the amount and memo of each are opened locally.

--from and --to are exclusive bounds on the creation time, RFC 3339
(2026-01-05T09:00:00Z) or a date (2026-01-05, midnight UTC).`,
		Args: exactArgs(),
		Example: `  confpay transfers list
  confpay transfers list --status pending --limit 50
  confpay transfers list --from 2026-01-01 --all --json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := &confpay.TransferListParams{Limit: limit, Offset: offset, Status: confpay.TransferStatus(status)}
			var err error
			if p.From, err = parseWhen("--from", from); err != nil {
				return err
			}
			if p.To, err = parseWhen("--to", to); err != nil {
				return err
			}
			if limit < 0 || limit > confpay.MaxPageSize {
				return usagef("--limit must be 1 to %d", confpay.MaxPageSize)
			}
			switch confpay.TransferStatus(status) {
			case "", confpay.StatusPending, confpay.StatusConfirmed, confpay.StatusFailed:
			default:
				return usagef("--status must be pending, confirmed or failed")
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			key, err := a.decryptionKey()
			if err != nil {
				return err
			}
			var list []*confpay.Transfer
			more := false
			if all {
				for t, err := range c.Transfers.All(cmd.Context(), p) {
					if err != nil {
						return err
					}
					list = append(list, t)
				}
			} else {
				page, err := c.Transfers.List(cmd.Context(), p)
				if err != nil {
					return err
				}
				list, more = page.Transfers, page.HasMore
			}
			rows := make([]openedTransfer, len(list))
			for i, t := range list {
				o, err := openTransfer(c, key, t)
				if err != nil && !wrongKey(err) {
					return err
				}
				rows[i] = openedTransfer{t, o}
			}
			if a.jsonOut {
				return a.printJSON(struct {
					Transfers []openedTransfer `json:"transfers"`
					HasMore   bool             `json:"has_more"`
				}{rows, more})
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.stdout, "No transfers.")
				return nil
			}
			header := []string{"ID", "STATUS", "FROM", "TO", "ASSET"}
			if key != nil {
				header = append(header, "AMOUNT", "MEMO")
			}
			t := a.newTable(append(header, "CREATED")...)
			for _, r := range rows {
				cells := []string{clean(r.TransferID), a.status(string(r.Status)), orDash(clean(r.From)), clean(r.To), assetOrDefault(r.Asset)}
				if key != nil {
					amt, memo := "sealed", "-"
					if r.Amount != nil {
						amt, memo = r.Amount.String(), orDash(short(clean(*r.Memo), 32))
					}
					cells = append(cells, amt, memo)
				}
				t.row(append(cells, fmtTime(r.CreatedAt))...)
			}
			if err := t.flush(); err != nil {
				return err
			}
			if more {
				fmt.Fprintf(a.stderr, "More transfers: use --offset %d, or --all.\n", offset+len(rows))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only this status: pending, confirmed or failed")
	f.StringVar(&from, "from", "", "only transfers created after this instant")
	f.StringVar(&to, "to", "", "only transfers created before this instant")
	f.IntVar(&limit, "limit", 0, "page size, 1 to 100 (default 20)")
	f.IntVar(&offset, "offset", 0, "transfers to skip")
	f.BoolVar(&all, "all", false, "list every page")
	return cmd
}

// parseWhen reads an instant flag: RFC 3339, or a date at midnight UTC.
func parseWhen(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t, err = time.Parse(time.DateOnly, s)
	}
	if err == nil && t.Year() >= 1970 {
		return t, nil
	}
	return time.Time{}, usagef("%s must be RFC 3339 (2026-01-05T09:00:00Z) or a date (2026-01-05)", flag)
}

func (a *app) transfersGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get TRANSFER_ID",
		Short: "Show one transfer, with its amount and memo when your key can read them",
		Args:  exactArgs("TRANSFER_ID"),
		Example: `  confpay transfers get tr_0123456789abcdefghij
  confpay transfers get tr_0123456789abcdefghij --json | jq -r .amount`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			key, err := a.decryptionKey()
			if err != nil {
				return err
			}
			t, err := c.Transfers.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			o, err := openTransfer(c, key, t)
			if err != nil && !wrongKey(err) {
				return err
			}
			if a.jsonOut {
				return a.printJSON(openedTransfer{t, o})
			}
			if err := a.transferFields(t, o, key); err != nil {
				return err
			}
			if key != nil && o.Amount == nil && t.EncryptedNote != "" {
				fmt.Fprintln(a.stderr, "The note is not sealed to your decryption key: the amount and memo stay hidden.")
			}
			return nil
		},
	}
}
