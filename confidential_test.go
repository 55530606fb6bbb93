package confpay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confpay/confpay-go/decrypt"
	"github.com/ethereum/go-ethereum/common"
)

const fakeAddress = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"

// fakeBalance is one asset on the fake ledger.
type fakeBalance struct {
	asset   string
	version uint64
	units   *big.Int
	ct      []byte
}

// ledgerFake plays the balances side of the service with the real
// confidentiality protocol: it encrypts balances and verifies proofs
// without any key.
type ledgerFake struct {
	t     *testing.T
	mu    sync.Mutex
	acct  decrypt.Account
	me    Account
	bals  []*fakeBalance
	stale int  // answer this many proofs with 422 stale, changing USDG first
	lie   bool // answer a figure one unit off
	omit  bool // leave the first proved asset out of the answer
	extra bool // add figures for assets the proof did not cover
	rec   recorder
}

func newLedgerFake(t *testing.T, key *decrypt.PrivateKey, amounts map[string]string) *ledgerFake {
	f := &ledgerFake{t: t}
	f.acct = decrypt.Account{ChainID: ChainIDTest, Address: common.HexToAddress(fakeAddress), Key: key.PublicKey()}
	f.me = Account{AccountID: "acct_1", Handle: "@alice", Type: AccountPersonal, PublicKey: fakeAddress, KYCStatus: KYCVerified, EncryptionKey: key.PublicKey().Hex()}
	for _, asset := range []string{AssetUSDG, AssetETH} {
		if s, ok := amounts[asset]; ok {
			u, err := MustParseAmount(s).UnitsOf(asset)
			if err != nil {
				t.Fatal(err)
			}
			b := &fakeBalance{asset: asset, units: u}
			f.reencrypt(b)
			f.bals = append(f.bals, b)
		}
	}
	return f
}

func (f *ledgerFake) reencrypt(b *fakeBalance) {
	b.version++
	ct, err := decrypt.EncryptBalance(nil, f.acct, b.asset, b.version, b.units)
	if err != nil {
		f.t.Fatal(err)
	}
	b.ct = ct
}

func (f *ledgerFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := f.rec.add(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out any
	switch r.URL.Path {
	case "/v1/accounts/me":
		out = f.me
	case "/v1/accounts/me/balances":
		var p BalancesParams
		if len(req.Body) > 0 {
			if err := json.Unmarshal(req.Body, &p); err != nil {
				writeJSON(w, 400, []byte(`{"code":"invalid_request"}`))
				return
			}
		}
		if r.URL.RawQuery != "" {
			f.t.Errorf("balances query %q: the proof must travel in the body", r.URL.RawQuery)
		}
		if p.DecryptionProof != "" && f.stale > 0 {
			f.stale--
			f.bals[0].units.Add(f.bals[0].units, big.NewInt(1_000_000)) // a payment arrives
			f.reencrypt(f.bals[0])
		}
		var list BalanceList
		current := make([]decrypt.Balance, len(f.bals))
		for i, b := range f.bals {
			current[i] = decrypt.Balance{Asset: b.asset, Version: b.version, Ciphertext: b.ct}
		}
		if p.DecryptionProof == "" {
			for _, b := range f.bals {
				list.Balances = append(list.Balances, &Balance{Asset: b.asset, Nonzero: Ptr(b.units.Sign() > 0),
					EncryptedBalance: decrypt.EncodeBase64(b.ct), BalanceVersion: b.version})
			}
			out = list
			break
		}
		proof, err := decrypt.DecodeBase64(p.DecryptionProof)
		if err != nil {
			writeJSON(w, 422, []byte(`{"code":"decryption_proof_invalid","reason":"malformed"}`))
			return
		}
		figures, err := decrypt.Verify(f.acct, proof, current)
		if errors.Is(err, decrypt.ErrStale) {
			writeJSON(w, 422, []byte(`{"code":"decryption_proof_invalid","message":"balance changed","reason":"stale"}`))
			return
		}
		if err != nil {
			writeJSON(w, 422, []byte(`{"code":"decryption_proof_invalid","reason":"verification_failed"}`))
			return
		}
		if f.omit {
			figures = figures[1:]
		}
		for _, fig := range figures {
			dec, _ := AssetDecimals(fig.Asset)
			u := new(big.Int).Set(fig.Amount)
			if f.lie {
				u.Add(u, big.NewInt(1))
			}
			a := AmountFromUnits(u, dec)
			list.Balances = append(list.Balances, &Balance{Asset: fig.Asset, Amount: &a})
		}
		if f.extra {
			for _, asset := range []string{AssetETH, "EURC"} {
				a := MustParseAmount("7")
				list.Balances = append(list.Balances, &Balance{Asset: asset, Amount: &a})
			}
			list.Balances = append(list.Balances, &Balance{Asset: "EURC", Nonzero: Ptr(false)})
		}
		out = list
	default:
		writeJSON(w, 404, []byte(`{"code":"not_found"}`))
		return
	}
	body, _ := json.Marshal(out)
	writeJSON(w, 200, body)
}

func (f *ledgerFake) setStale(n int) { f.mu.Lock(); f.stale = n; f.mu.Unlock() }

func mustKey(t *testing.T) *decrypt.PrivateKey {
	k, err := decrypt.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func figures(bals []*Balance) map[string]string {
	m := map[string]string{}
	for _, b := range bals {
		if b.Amount != nil {
			m[b.Asset] = b.Amount.String()
		}
	}
	return m
}

func TestReadBalances(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, map[string]string{AssetUSDG: "1250.5", AssetETH: "0.000000000000000001"})
	c := newTestClient(t, f.ServeHTTP)
	bals, err := c.Accounts.ReadBalances(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := figures(bals); got[AssetUSDG] != "1250.5" || got[AssetETH] != "0.000000000000000001" || len(got) != 2 {
		t.Errorf("figures %v", got)
	}
	reqs := f.rec.all()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want me, balances, balances with proof", len(reqs))
	}
	var p BalancesParams
	if err := json.Unmarshal(reqs[2].Body, &p); err != nil || p.DecryptionProof == "" || reqs[2].Method != "GET" {
		t.Fatalf("proof request %s %q", reqs[2].Method, reqs[2].Body)
	}
	proof, err := decrypt.DecodeBase64(p.DecryptionProof)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := decrypt.ParseProof(proof)
	if err != nil || len(parsed.Entries()) != 2 {
		t.Fatalf("proof entries %v, %v", parsed.Entries(), err)
	}
}

func TestReadBalancesStale(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, map[string]string{AssetUSDG: "10"})
	c := newTestClient(t, f.ServeHTTP)

	f.setStale(1)
	bals, err := c.Accounts.ReadBalances(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := figures(bals)[AssetUSDG]; got != "11" {
		t.Errorf("figure %q after the balance changed, want the new 11", got)
	}
	if n := len(f.rec.all()); n != 5 {
		t.Errorf("%d requests, want 5 (me, then read and prove twice)", n)
	}

	f.setStale(2) // stale again after the one fresh start: give up
	_, err = c.Accounts.ReadBalances(context.Background(), key)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Reason != ReasonStale {
		t.Errorf("error %v, want the stale APIError", err)
	}
}

func TestReadBalancesRefusals(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, map[string]string{AssetUSDG: "10"})
	c := newTestClient(t, f.ServeHTTP)
	ctx := context.Background()

	if _, err := c.Accounts.ReadBalances(ctx, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("nil key: %v", err)
	}
	_, err := c.Accounts.ReadBalances(ctx, mustKey(t))
	if !errors.Is(err, decrypt.ErrNotForThisKey) {
		t.Errorf("another key: %v, want decrypt.ErrNotForThisKey", err)
	}
	for _, r := range f.rec.all() {
		if r.Path == "/v1/accounts/me/balances" && len(r.Body) > 0 {
			t.Error("a proof was sent for another key")
		}
	}

	f.lie = true
	if _, err := c.Accounts.ReadBalances(ctx, key); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("lying service: %v", err)
	} else if strings.Contains(err.Error(), "10") {
		t.Errorf("error %q carries a figure", err)
	}
	f.lie = false

	f.omit = true // the answer leaves USDG out: it must not read as "nothing held"
	if bals, err := c.Accounts.ReadBalances(ctx, key); err == nil || !strings.Contains(err.Error(), "no figure for USDG") {
		t.Errorf("service omitting a proved asset: %v, %v", figures(bals), err)
	}
	f.omit = false

	f.me.EncryptionKey = ""
	if _, err := c.Accounts.ReadBalances(ctx, key); err == nil || !strings.Contains(err.Error(), "no encryption key") {
		t.Errorf("account without key: %v", err)
	}
	f.me.EncryptionKey = key.PublicKey().Hex()
	f.me.PublicKey = "alice"
	if _, err := c.Accounts.ReadBalances(ctx, key); err == nil || !strings.Contains(err.Error(), "public_key") {
		t.Errorf("bad address: %v", err)
	}
}

// TestReadBalancesOnlyProvedFigures checks that figures the answer holds
// for assets the proof did not cover never reach the caller.
func TestReadBalancesOnlyProvedFigures(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, map[string]string{AssetUSDG: "10"})
	f.extra = true
	c := newTestClient(t, f.ServeHTTP)
	bals, err := c.Accounts.ReadBalances(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := figures(bals); len(got) != 1 || got[AssetUSDG] != "10" {
		t.Errorf("figures %v, want only the proved USDG", got)
	}
	if len(bals) != 2 || bals[1].Asset != "EURC" || bals[1].Amount != nil {
		t.Errorf("entries %v, want USDG and EURC's entry without a figure", bals)
	}
}

func TestReadBalancesNothingHeld(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, nil)
	c := newTestClient(t, f.ServeHTTP)
	bals, err := c.Accounts.ReadBalances(context.Background(), key)
	if err != nil || len(bals) != 0 {
		t.Errorf("empty account: %v, %v", bals, err)
	}
}

func TestOpenNotes(t *testing.T) {
	sender, recipient, stranger := mustKey(t), mustKey(t), mustKey(t)
	units := big.NewInt(12_500_000)
	seal := func(ref string, readers ...*decrypt.PrivateKey) (string, []string) {
		ctx := decrypt.NoteContext{ChainID: ChainIDTest, Reference: ref, Asset: AssetUSDG}
		var hexes []string
		for _, k := range readers {
			ctx.Readers = append(ctx.Readers, k.PublicKey())
			hexes = append(hexes, k.PublicKey().Hex())
		}
		note, err := decrypt.SealNote(nil, ctx, units, "invoice 42")
		if err != nil {
			t.Fatal(err)
		}
		return decrypt.EncodeBase64(note), hexes
	}
	note, readers := seal("tr_1", sender, recipient)
	tr := &Transfer{TransferID: "tr_1", Asset: AssetUSDG, EncryptedNote: note, NoteReaders: readers}
	for _, k := range []*decrypt.PrivateKey{sender, recipient} {
		n, err := OpenTransferNote(k, ChainIDTest, tr)
		if err != nil {
			t.Fatal(err)
		}
		a, err := NoteAmount(n)
		if err != nil || a.String() != "12.5" || n.Memo != "invoice 42" {
			t.Errorf("note amount %q, memo %q, %v", a, n.Memo, err)
		}
	}
	if _, err := OpenTransferNote(stranger, ChainIDTest, tr); !errors.Is(err, decrypt.ErrNotForThisKey) {
		t.Errorf("stranger: %v", err)
	}
	if _, err := OpenTransferNote(sender, ChainIDLive, tr); err == nil {
		t.Error("opened under the other network's chain id")
	}
	moved := *tr
	moved.TransferID = "tr_2"
	if _, err := OpenTransferNote(sender, ChainIDTest, &moved); !errors.Is(err, decrypt.ErrVerification) {
		t.Errorf("note moved to another transfer: %v", err)
	}
	// The answer's asset field is not trusted: a note of 12.5 USDG shown
	// as ETH (18 decimals) does not open, instead of reading 0.0000000000125.
	relabelled := *tr
	relabelled.Asset = AssetETH
	if _, err := OpenTransferNote(sender, ChainIDTest, &relabelled); !errors.Is(err, decrypt.ErrVerification) {
		t.Errorf("note opened under another asset: %v", err)
	}
	noAsset := *tr
	noAsset.Asset = ""
	if n, err := OpenTransferNote(sender, ChainIDTest, &noAsset); err != nil || n.Asset != AssetUSDG {
		t.Errorf("a transfer without asset opens as USDG: %v", err)
	}
	for _, bad := range []*Transfer{nil, {EncryptedNote: note, NoteReaders: readers}, {TransferID: "tr_1", NoteReaders: readers},
		{TransferID: "tr_1", EncryptedNote: note}, {TransferID: "tr_1", EncryptedNote: note + "=", NoteReaders: readers},
		{TransferID: "tr_1", EncryptedNote: note, NoteReaders: []string{"zz"}}} {
		if _, err := OpenTransferNote(sender, ChainIDTest, bad); err == nil {
			t.Errorf("opened %+v", bad)
		}
	}
	if _, err := OpenTransferNote(nil, ChainIDTest, tr); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("nil key: %v", err)
	}

	held, hr := seal("atx_1", sender)
	atx := &AgentTransaction{TransactionID: "atx_1", Asset: AssetUSDG, EncryptedNote: held, NoteReaders: hr}
	n, err := OpenAgentTransactionNote(sender, ChainIDTest, atx)
	if err != nil || n.Amount.Cmp(units) != 0 {
		t.Errorf("held note: %v", err)
	}
	var buf bytes.Buffer
	buf.WriteString(n.String())
	if strings.Contains(buf.String(), "12") || strings.Contains(buf.String(), "invoice") {
		t.Errorf("note prints %q", buf.String())
	}
	if a, err := NoteAmount(n); err != nil || a.String() != "12.5" || n.Asset != AssetUSDG {
		t.Errorf("NoteAmount: %q, %v", a, err)
	}
	if a, err := NoteAmount(&decrypt.Note{Asset: AssetETH, Amount: units}); err != nil || a.String() != "0.0000000000125" {
		t.Errorf("NoteAmount ETH: %q, %v", a, err)
	}
	if _, err := NoteAmount(&decrypt.Note{Asset: "DOGE", Amount: units}); err == nil {
		t.Error("unknown asset accepted")
	}
	if _, err := NoteAmount(nil); err == nil {
		t.Error("nil note accepted")
	}
}

// TestReadBalancesCallTimeout checks that WithCallTimeout bounds the whole
// flow: every request carries one deadline, not one per request.
func TestReadBalancesCallTimeout(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, map[string]string{AssetUSDG: "10"})
	var mu sync.Mutex
	var deadlines []time.Time
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		d, ok := r.Context().Deadline()
		if !ok {
			t.Error("request without a deadline")
		}
		mu.Lock()
		deadlines = append(deadlines, d)
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})
	c := newTestClient(t, f.ServeHTTP, WithHTTPClient(&http.Client{Transport: rt}))
	if _, err := c.Accounts.ReadBalances(context.Background(), key, WithCallTimeout(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(deadlines) != 3 {
		t.Fatalf("%d requests, want 3", len(deadlines))
	}
	for i, d := range deadlines {
		if !d.Equal(deadlines[0]) {
			t.Errorf("request %d deadline %v, want the flow's one deadline %v", i+1, d, deadlines[0])
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProveBalances: the proof ProveBalances builds reads the figures
// through Balances; a key that is not the account's is refused before
// anything is proved; an account holding nothing gives no proof.
func TestProveBalances(t *testing.T) {
	key := mustKey(t)
	f := newLedgerFake(t, key, map[string]string{AssetUSDG: "12.5"})
	c := newTestClient(t, f.ServeHTTP)
	ctx := context.Background()
	p, err := c.Accounts.ProveBalances(ctx, key)
	if err != nil || p == nil || p.DecryptionProof == "" {
		t.Fatalf("ProveBalances = %v, %v", p, err)
	}
	if s := p.String(); strings.Contains(s, p.DecryptionProof) {
		t.Fatalf("the params print their proof: %s", s)
	}
	bals, err := c.Accounts.Balances(ctx, p)
	if err != nil || figures(bals)[AssetUSDG] != "12.5" {
		t.Fatalf("Balances with the proof = %v, %v", figures(bals), err)
	}
	if _, err := c.Accounts.ProveBalances(ctx, mustKey(t)); !errors.Is(err, decrypt.ErrNotForThisKey) {
		t.Fatalf("another key: %v, want ErrNotForThisKey", err)
	}
	if _, err := c.Accounts.ProveBalances(ctx, nil); err == nil {
		t.Fatal("a nil key was accepted")
	}
	empty := newLedgerFake(t, key, nil)
	if p, err := BuildDecryptionProof(key, ChainIDTest, &empty.me, nil); p != nil || err != nil {
		t.Fatalf("nothing held: %v, %v; want no proof", p, err)
	}
}
