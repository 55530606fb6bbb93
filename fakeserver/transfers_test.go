package fakeserver_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
)

var txHashRE = regexp.MustCompile(`^0x[0-9a-f]{64}$`)

func TestTransferLifecycle(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "1000.25")
	rec := leakcheck.New(nil)
	ac := newClient(t, srv, alice.test(), rec)
	bc := newClient(t, srv, bob.test(), rec)
	ctx := context.Background()

	tr := send(t, ac, "@BOB", "123.456789", withMemo("rent for march"))
	if tr.Status != confpay.StatusPending || !strings.HasPrefix(tr.TransferID, "tr_") || !txHashRE.MatchString(tr.TxHash) {
		t.Fatalf("create answer %+v", tr)
	}
	if tr.To != "@bob" || !tr.Confidential || !tr.CreatedAt.Equal(srv.Now()) || tr.Asset != "USDG" {
		t.Fatalf("create answer %+v", tr)
	}
	// Reserved at once: alice can spend less, bob has nothing yet.
	if got := srv.Balance(t, "@alice", "USDG").String(); got != "876.793211" {
		t.Fatalf("alice available after submit = %s", got)
	}
	if got := settled(t, srv, "@alice", confpay.NetworkTest, "USDG"); got != "1000.25" {
		t.Fatalf("alice settled after submit = %s", got)
	}
	if got := srv.Balance(t, "@bob", "USDG").String(); got != "0" {
		t.Fatalf("bob before confirmation = %s", got)
	}

	// Both parties read it; the note opens for both.
	for _, p := range []struct {
		c  *confpay.Client
		dk *decrypt.PrivateKey
	}{{ac, alice.dk}, {bc, bob.dk}} {
		got, err := p.c.Transfers.Get(ctx, tr.TransferID)
		if err != nil {
			t.Fatal(err)
		}
		if got.From != "@alice" || got.To != "@bob" || got.Status != confpay.StatusPending || got.TxHash != tr.TxHash || got.ConfirmedAt != nil {
			t.Fatalf("retrieve %+v", got)
		}
		if len(got.NoteReaders) != 2 || got.NoteReaders[0] != alice.info.EncryptionKey || got.NoteReaders[1] != bob.info.EncryptionKey {
			t.Fatalf("note readers %v", got.NoteReaders)
		}
		note := openNote(t, p.dk, got)
		if note.Amount.String() != "123456789" || note.Memo != "rent for march" {
			t.Fatalf("note opened to the wrong figure or memo")
		}
	}

	// One block later it is confirmed and bob is credited.
	srv.Advance(999 * time.Millisecond)
	if got, _ := ac.Transfers.Get(ctx, tr.TransferID); got.Status != confpay.StatusPending {
		t.Fatalf("confirmed before the block time: %s", got.Status)
	}
	srv.Advance(time.Millisecond)
	got, err := bc.Transfers.Get(ctx, tr.TransferID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != confpay.StatusConfirmed || got.ConfirmedAt == nil || !got.ConfirmedAt.Equal(tr.CreatedAt.Add(time.Second)) {
		t.Fatalf("after the block time: %+v", got)
	}
	if a, b := settled(t, srv, "@alice", confpay.NetworkTest, "USDG"), settled(t, srv, "@bob", confpay.NetworkTest, "USDG"); a != "876.793211" || b != "123.456789" {
		t.Fatalf("after confirmation alice %s bob %s", a, b)
	}
	rec.Check(t, "123.456789", "123456789", "1000.25", "876.793211", "rent for march")
}

func TestTransferFailedReleasesReservation(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")
	ac := newClient(t, srv, alice.test(), nil)
	tr := send(t, ac, "@bob", "4")
	if err := srv.FailTransfer(tr.TransferID); err != nil {
		t.Fatal(err)
	}
	if err := srv.FailTransfer(tr.TransferID); err == nil {
		t.Fatal("failing a failed transfer again succeeded")
	}
	srv.Advance(time.Hour)
	got, err := ac.Transfers.Get(context.Background(), tr.TransferID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != confpay.StatusFailed || got.FailedAt == nil || got.ConfirmedAt != nil {
		t.Fatalf("%+v", got)
	}
	if a, b := srv.Balance(t, "@alice", "USDG").String(), srv.Balance(t, "@bob", "USDG").String(); a != "10" || b != "0" {
		t.Fatalf("after failure alice %s bob %s", a, b)
	}

	// Scripted at confirmation: pending until the block, then failed.
	tr2 := send(t, ac, "@bob", "3")
	if err := srv.FailTransferAtConfirmation(tr2.TransferID); err != nil {
		t.Fatal(err)
	}
	if got := srv.Balance(t, "@alice", "USDG").String(); got != "7" {
		t.Fatalf("alice available %s", got)
	}
	srv.Advance(time.Second)
	got, _ = ac.Transfers.Get(context.Background(), tr2.TransferID)
	if got.Status != confpay.StatusFailed {
		t.Fatalf("status %s", got.Status)
	}
	if a := srv.Balance(t, "@alice", "USDG").String(); a != "10" {
		t.Fatalf("alice %s", a)
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")
	fundOn(t, srv, "@alice", confpay.NetworkLive, "USDG", "10")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "1")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "2")
	send(t, newClient(t, srv, alice.live(), nil), "@bob", "5")
	if n := srv.Settle(); n != 3 {
		t.Fatalf("Settle = %d", n)
	}
	if n := srv.Settle(); n != 0 {
		t.Fatalf("second Settle = %d", n)
	}
	if b := settled(t, srv, "@bob", confpay.NetworkTest, "USDG"); b != "3" {
		t.Fatalf("bob test %s", b)
	}
	if b := settled(t, srv, "@bob", confpay.NetworkLive, "USDG"); b != "5" {
		t.Fatalf("bob live %s", b)
	}
}

func TestRecipientKinds(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@Bob_2")
	carol := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@carol"}) // no encryption key
	if err := srv.RegisterDomain("@bob_2", "API.Market"); err != nil {
		t.Fatal(err)
	}
	srv.AddFunds(t, "@alice", "USDG", "100")
	ac := newClient(t, srv, alice.test(), nil)
	ctx := context.Background()
	bobAddr := bob.info.PublicKey
	external := common.HexToAddress("0x00000000000000000000000000000000000000aa").Hex()

	cases := []struct {
		to, wantTo   string
		confidential *bool
	}{
		{"@bob_2", "@Bob_2", nil},
		{"@BOB_2", "@Bob_2", nil},
		{bobAddr, bobAddr, nil},
		{strings.ToLower(bobAddr), bobAddr, nil},
		{"0x" + strings.ToUpper(bobAddr[2:]), bobAddr, nil},
		{"api.market", "api.market", nil},
		{"API.MARKET", "api.market", nil},
		{"@carol", "@carol", confpay.Ptr(false)},
		{strings.ToLower(external), external, confpay.Ptr(false)},
	}
	for _, c := range cases {
		tr, err := ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: c.to, Amount: confpay.MustParseAmount("1"), Confidential: c.confidential})
		if err != nil {
			t.Fatalf("to %s: %v", c.to, err)
		}
		if tr.To != c.wantTo {
			t.Errorf("to %s: answer names %s, want %s", c.to, tr.To, c.wantTo)
		}
	}
	srv.Advance(time.Second)
	if got := settled(t, srv, "@bob_2", confpay.NetworkTest, "USDG"); got != "7" {
		t.Fatalf("bob received %s, want 7", got)
	}
	if got := settled(t, srv, "@carol", confpay.NetworkTest, "USDG"); got != "1" {
		t.Fatalf("carol received %s", got)
	}
	if got := settled(t, srv, "@alice", confpay.NetworkTest, "USDG"); got != "91" {
		t.Fatalf("alice has %s", got)
	}

	errs := []struct {
		to           string
		confidential *bool
		status       int
		code         confpay.ErrorCode
		param        string
	}{
		{"@nobody", nil, 404, confpay.CodeRecipientNotFound, "to"},
		{"@bob_2/nobot", nil, 404, confpay.CodeRecipientNotFound, "to"},
		{"unknown.example", nil, 404, confpay.CodeRecipientNotFound, "to"},
		{"@carol", nil, 422, confpay.CodeRecipientNotConfidentialReady, "to"},
		{"@carol", confpay.Ptr(true), 422, confpay.CodeRecipientNotConfidentialReady, "to"},
		{external, nil, 422, confpay.CodeRecipientNotConfidentialReady, "to"},
		{"@alice", nil, 400, confpay.CodeInvalidRequest, "to"},
		{"@ALICE", confpay.Ptr(false), 400, confpay.CodeInvalidRequest, "to"},
		{alice.info.PublicKey, nil, 400, confpay.CodeInvalidRequest, "to"},
		{badChecksum(bobAddr), nil, 400, confpay.CodeInvalidRequest, "to"},
		{"@ab", nil, 400, confpay.CodeInvalidRequest, "to"},
		{"bob", nil, 400, confpay.CodeInvalidRequest, "to"},
		{"0x1234", nil, 400, confpay.CodeInvalidRequest, "to"},
	}
	for _, c := range errs {
		_, err := ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: c.to, Amount: confpay.MustParseAmount("1"), Confidential: c.confidential})
		if err == nil {
			t.Fatalf("to %s: no error", c.to)
		}
		wantAPIError(t, err, c.status, c.code, c.param, "")
	}
	_ = carol
}

func TestBadChecksumAddress(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	srv.AddFunds(t, "@alice", "USDG", "1")
	bad := badChecksum(common.HexToAddress("0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359").Hex())
	_, err := newClient(t, srv, alice.test(), nil).Transfers.Create(context.Background(), &confpay.TransferCreateParams{
		To: bad, Amount: confpay.MustParseAmount("1"), Confidential: confpay.Ptr(false)})
	ae := wantAPIError(t, err, 400, confpay.CodeInvalidRequest, "to", "")
	if !strings.Contains(ae.Message, "checksum") {
		t.Fatalf("message %q", ae.Message)
	}
}

func TestInsufficientBalanceAndConcurrentReservation(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	ac := newClient(t, srv, alice.test(), nil)
	ctx := context.Background()
	_, err := ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("0.000001")})
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	srv.AddFunds(t, "@alice", "USDG", "5")
	send(t, ac, "@bob", "3")
	// 2 left available although 5 are settled: 3 more is refused.
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("3")})
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	send(t, ac, "@bob", "2")
	// ETH is a separate balance.
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Asset: "ETH", Amount: confpay.MustParseAmount("0.000000000000000001")})
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	srv.AddFunds(t, "@alice", "ETH", "1")
	tr := send(t, ac, "@bob", "0.000000000000000001", withAsset("ETH"))
	if tr.Asset != "ETH" {
		t.Fatalf("asset %s", tr.Asset)
	}
	srv.Advance(time.Second)
	if got := settled(t, srv, "@bob", confpay.NetworkTest, "ETH"); got != "0.000000000000000001" {
		t.Fatalf("bob ETH %s", got)
	}
}

func TestKYCGate(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	for _, st := range []confpay.KYCStatus{confpay.KYCUnverified, confpay.KYCPending} {
		p := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@u_" + string(st), KYCStatus: st, GenerateEncryptionKey: true})
		srv.AddFunds(t, p.info.Handle, "USDG", "5")
		newAccount(t, srv, "@r_"+string(st))
		c := newClient(t, srv, p.test(), nil)
		_, err := c.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@r_" + string(st), Amount: confpay.MustParseAmount("1")})
		wantAPIError(t, err, 403, confpay.CodeKYCRequired, "", "")
		// Reads still work.
		if _, err := c.Accounts.Me(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := srv.SetKYC(p.info.Handle, confpay.KYCEnhanced); err != nil {
			t.Fatal(err)
		}
		send(t, c, "@r_"+string(st), "1")
	}
}

func TestNetworkIsolation(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	fundOn(t, srv, "@alice", confpay.NetworkLive, "USDG", "50")
	live := newClient(t, srv, alice.live(), nil)
	test := newClient(t, srv, alice.test(), nil)
	ctx := context.Background()

	// Live money cannot be spent with a test key.
	_, err := test.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")})
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	tr := send(t, live, "@bob", "20")
	// A test key never sees live transfers or balances.
	_, err = test.Transfers.Get(ctx, tr.TransferID)
	wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
	_, err = newClient(t, srv, bob.test(), nil).Transfers.Get(ctx, tr.TransferID)
	wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
	l, err := test.Transfers.List(ctx, nil)
	if err != nil || len(l.Transfers) != 0 {
		t.Fatalf("test list %v %v", l, err)
	}
	bs, err := test.Accounts.Balances(ctx, nil)
	if err != nil || len(bs) != 0 {
		t.Fatalf("test balances %v %v", bs, err)
	}
	bs, err = live.Accounts.Balances(ctx, nil)
	if err != nil || len(bs) != 1 || bs[0].Nonzero == nil || !*bs[0].Nonzero {
		t.Fatalf("live balances %v %v", bs, err)
	}
	got, err := newClient(t, srv, bob.live(), nil).Transfers.Get(ctx, tr.TransferID)
	if err != nil || got.TransferID != tr.TransferID {
		t.Fatalf("bob live get: %v", err)
	}
	// The tx hash commits to the chain id: the same transfer fields on
	// the other chain would hash differently, and two transfers never
	// share one.
	tr2 := send(t, live, "@bob", "20")
	if tr2.TxHash == tr.TxHash {
		t.Fatal("two transfers share a tx hash")
	}
	// A third party sees nothing.
	carol := newAccount(t, srv, "@carol")
	_, err = newClient(t, srv, carol.live(), nil).Transfers.Get(ctx, tr.TransferID)
	wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
}

func TestKeysAndAuth(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "50")
	ctx := context.Background()

	k2, err := srv.IssueKey("@alice", confpay.NetworkTest, "ci")
	if err != nil {
		t.Fatal(err)
	}
	c2 := newClient(t, srv, k2.APIKey.Reveal(), nil)
	send(t, c2, "@bob", "1.5")
	send(t, c2, "@bob", "2")
	srv.Advance(time.Second)
	keys, err := srv.Keys("@alice")
	if err != nil {
		t.Fatal(err)
	}
	var info *fakeserver.KeyInfo
	for i := range keys {
		if keys[i].KeyID == k2.KeyID {
			info = &keys[i]
		}
	}
	if info == nil || info.Name != "ci" || info.RequestCount != 2 || info.USDGMoved.String() != "3.5" || info.LastUsedAt == nil {
		t.Fatalf("key info %+v", info)
	}
	if len(keys) != 3 {
		t.Fatalf("%d keys", len(keys))
	}

	if err := srv.RevokeKey(k2.KeyID); err != nil {
		t.Fatal(err)
	}
	_, err = c2.Accounts.Me(ctx)
	wantAPIError(t, err, 401, confpay.CodeUnauthorized, "", "")
	// The account's other key still works.
	if _, err := newClient(t, srv, alice.test(), nil).Accounts.Me(ctx); err != nil {
		t.Fatal(err)
	}

	// Every endpoint answers 401 without a valid key.
	paths := []struct{ method, path string }{
		{"GET", "/v1/accounts/me"}, {"GET", "/v1/accounts/me/balances"}, {"GET", "/v1/accounts/me/agents"},
		{"POST", "/v1/accounts/me/agents"}, {"GET", "/v1/agents/acct_x/spend-policy"}, {"PATCH", "/v1/agents/acct_x/spend-policy"},
		{"GET", "/v1/agents/transactions/pending"}, {"POST", "/v1/agents/transactions/atx_x/approve"},
		{"POST", "/v1/agents/transactions/atx_x/reject"}, {"GET", "/v1/transfers"}, {"POST", "/v1/transfers"},
		{"GET", "/v1/transfers/tr_x"}, {"GET", "/v1/webhooks"}, {"POST", "/v1/webhooks"}, {"DELETE", "/v1/webhooks/wh_x"},
		{"POST", "/v1/webhooks/wh_x/replay/evt_x"}, {"GET", "/v1/webhooks/wh_x/deliveries"},
	}
	bad := []string{"", "hc_test_", "hc_test_" + strings.Repeat("a", 32), "sk_test_abc", k2.APIKey.Reveal(), "Basic " + alice.test()}
	for _, p := range paths {
		for i, key := range bad {
			var a answer
			if i == len(bad)-1 {
				a = rawCall(t, srv, p.method, p.path, "", "", "Authorization", key)
			} else {
				a = rawCall(t, srv, p.method, p.path, key, "")
			}
			if a.status != 401 || a.err().Code != confpay.CodeUnauthorized || a.err().RequestID == "" {
				t.Fatalf("%s %s with key #%d: %d %s", p.method, p.path, i, a.status, a.body)
			}
		}
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	a := rawCall(t, srv, "GET", "/v1/nothing", alice.test(), "")
	if a.status != 404 || a.err().Code != confpay.CodeNotFound {
		t.Fatalf("%d %s", a.status, a.body)
	}
	a = rawCall(t, srv, "GET", "/v2/transfers", "", "")
	if a.status != 404 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	a = rawCall(t, srv, "DELETE", "/v1/transfers", alice.test(), "")
	if a.status != 405 || a.err().Code != confpay.CodeMethodNotAllowed || a.header.Get("Allow") == "" {
		t.Fatalf("%d %s %v", a.status, a.body, a.header)
	}
	a = rawCall(t, srv, "PUT", "/v1/accounts/me", "", "")
	if a.status != 405 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	// The mux's own redirect of an unclean path carries a request id too
	// (checked by raw).
	rawCall(t, srv, "GET", "/v1//transfers", alice.test(), "")
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	body := `{"to":"@bob","amount":"1","memo":"` + strings.Repeat("x", fakeserver.MaxBodyBytes) + `"}`
	a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body)
	if a.status != http.StatusRequestEntityTooLarge || a.err().Code != confpay.CodeRequestTooLarge {
		t.Fatalf("%d %s", a.status, a.body)
	}
}

func TestMe(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@Acme", Type: confpay.AccountBusiness, KYCStatus: confpay.KYCPending, GenerateEncryptionKey: true})
	me, err := newClient(t, srv, alice.test(), nil).Accounts.Me(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := confpay.Account{AccountID: alice.info.AccountID, Handle: "@Acme", Type: confpay.AccountBusiness,
		PublicKey: alice.info.PublicKey, KYCStatus: confpay.KYCPending, CreatedAt: srv.Now(), EncryptionKey: alice.info.EncryptionKey}
	if *me != want {
		t.Fatalf("me = %+v, want %+v", *me, want)
	}
	if common.HexToAddress(me.PublicKey).Hex() != me.PublicKey {
		t.Fatal("public_key is not EIP-55")
	}
}

// badChecksum flips the case of the first letter of an EIP-55 address whose
// letters are mixed, so that its checksum fails.
func badChecksum(addr string) string {
	b := []byte(addr)
	hasLower, hasUpper := false, false
	for _, c := range b[2:] {
		hasLower = hasLower || c >= 'a' && c <= 'f'
		hasUpper = hasUpper || c >= 'A' && c <= 'F'
	}
	for i := 2; i < len(b); i++ {
		switch {
		case b[i] >= 'a' && b[i] <= 'f' && hasLower && (hasUpper || countLetters(b) > 1):
			b[i] -= 'a' - 'A'
			return string(b)
		case b[i] >= 'A' && b[i] <= 'F' && hasUpper && (hasLower || countLetters(b) > 1):
			b[i] += 'a' - 'A'
			return string(b)
		}
	}
	panic("no address with a single letter in these tests")
}

func countLetters(b []byte) int {
	n := 0
	for _, c := range b[2:] {
		if c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			n++
		}
	}
	return n
}
