package fakeserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	fundOn(t, srv, "@alice", confpay.NetworkLive, "USDG", "100")
	srv.AddFunds(t, "@bob", "USDG", "100")
	ac := newClient(t, srv, alice.test(), nil)
	ctx := context.Background()
	p := &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("7")}

	var r1, r2 confpay.Response
	t1, err := ac.Transfers.Create(ctx, p, confpay.WithIdempotencyKey("order-1"), confpay.WithResponse(&r1))
	if err != nil {
		t.Fatal(err)
	}
	t2, err := ac.Transfers.Create(ctx, p, confpay.WithIdempotencyKey("order-1"), confpay.WithResponse(&r2))
	if err != nil {
		t.Fatal(err)
	}
	if t1.TransferID != t2.TransferID || r1.IdempotentReplayed || !r2.IdempotentReplayed || r2.StatusCode != 201 || r1.RequestID == r2.RequestID {
		t.Fatalf("replay: %s %s %+v %+v", t1.TransferID, t2.TransferID, r1, r2)
	}
	if ts, _ := srv.Transfers("@alice", confpay.NetworkTest); len(ts) != 1 {
		t.Fatalf("%d transfers", len(ts))
	}

	// Same key, another body or path: 422.
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("8")}, confpay.WithIdempotencyKey("order-1"))
	wantAPIError(t, err, 422, confpay.CodeIdempotencyKeyReused, "Idempotency-Key", "")
	a := rawCall(t, srv, "POST", "/v1/webhooks", alice.test(), `{"url":"https://example.com/h","events":["transfer.confirmed"]}`, "Idempotency-Key", "order-1")
	if a.status != 422 || a.err().Code != confpay.CodeIdempotencyKeyReused {
		t.Fatalf("%d %s", a.status, a.body)
	}

	// Keys are scoped to the account and the network.
	t3, err := newClient(t, srv, bob.test(), nil).Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@alice", Amount: confpay.MustParseAmount("7")}, confpay.WithIdempotencyKey("order-1"))
	if err != nil {
		t.Fatal(err)
	}
	t4, err := newClient(t, srv, alice.live(), nil).Transfers.Create(ctx, p, confpay.WithIdempotencyKey("order-1"))
	if err != nil {
		t.Fatal(err)
	}
	if t3.TransferID == t1.TransferID || t4.TransferID == t1.TransferID {
		t.Fatal("a key was shared across accounts or networks")
	}

	// An error answer is kept and replayed like any other.
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1000")}, confpay.WithIdempotencyKey("big"))
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	srv.AddFunds(t, "@alice", "USDG", "1000")
	var r3 confpay.Response
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1000")}, confpay.WithIdempotencyKey("big"), confpay.WithResponse(&r3))
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	if !r3.IdempotentReplayed {
		t.Fatal("the stored error was not replayed")
	}

	// After 24 hours the key is forgotten.
	srv.Advance(24 * time.Hour)
	t5, err := ac.Transfers.Create(ctx, p, confpay.WithIdempotencyKey("order-1"))
	if err != nil || t5.TransferID == t1.TransferID {
		t.Fatalf("after 24 h: %v", err)
	}

	// Bad keys.
	for _, k := range []string{strings.Repeat("k", 256), "tab\there"} {
		a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`, "Idempotency-Key", k)
		if a.status != 400 || a.err().Param != "Idempotency-Key" {
			t.Fatalf("key %q: %d %s", k, a.status, a.body)
		}
	}
	a = rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`, "Idempotency-Key", "a", "Idempotency-Key", "b")
	if a.status != 400 {
		t.Fatalf("two keys: %d %s", a.status, a.body)
	}
}

func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultDelay, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	body := `{"to":"@bob","amount":"5"}`
	first := make(chan answer)
	go func() { first <- rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1") }()
	waitTimers(srv, 1) // the first request is held, its key in use

	a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
	if a.status != 409 || a.err().Code != confpay.CodeIdempotencyKeyInUse || a.header.Get("Retry-After") != "1" {
		t.Fatalf("%d %s Retry-After %q, want 409 idempotency_key_in_use with Retry-After: 1", a.status, a.body, a.header.Get("Retry-After"))
	}
	srv.Advance(time.Hour)
	got := <-first
	if got.status != 201 {
		t.Fatalf("held request: %d %s", got.status, got.body)
	}
	a = rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
	if a.status != 201 || a.header.Get("Idempotent-Replayed") != "true" || string(a.body) != string(got.body) {
		t.Fatalf("replay: %d %s", a.status, a.body)
	}
}

// firstsFirst is a transport that sends each Idempotency-Key's first
// attempt at once and holds every retry until n first attempts have
// returned, so that concurrent first attempts are not overtaken by an
// early retry (which would take one of a fault's drops).
type firstsFirst struct {
	base http.RoundTripper
	n    int
	all  chan struct{} // closed when n first attempts have returned

	mu    sync.Mutex
	seen  map[string]bool
	first int
}

func (f *firstsFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	retry := f.seen[key]
	f.seen[key] = true
	f.mu.Unlock()
	if retry {
		<-f.all
		return f.base.RoundTrip(r)
	}
	resp, err := f.base.RoundTrip(r)
	f.mu.Lock()
	if f.first++; f.first == f.n {
		close(f.all)
	}
	f.mu.Unlock()
	return resp, err
}

func TestExactlyOnceWithDroppedAnswers(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	const n = 8
	// Every first attempt commits and then loses its answer; so do a few
	// retries.
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: n + 3, Action: fakeserver.FaultDropAfterCommit}); err != nil {
		t.Fatal(err)
	}
	// The n first attempts must meet the first n drops whatever the
	// scheduling: retries wait until every first attempt has returned.
	gate := &firstsFirst{base: srv.HTTPClient().Transport, n: n, seen: map[string]bool{}, all: make(chan struct{})}
	ac := newClient(t, srv, alice.test(), nil, confpay.WithMaxRetries(5), confpay.WithHTTPClient(&http.Client{Transport: gate}))
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp confpay.Response
			tr, err := ac.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1.25")}, confpay.WithResponse(&resp))
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			if !resp.IdempotentReplayed {
				t.Errorf("create %d: the answer was not a replay after a dropped commit", i)
			}
			ids[i] = tr.TransferID
		}()
	}
	wg.Wait()
	ts, _ := srv.Transfers("@alice", confpay.NetworkTest)
	if len(ts) != n {
		t.Fatalf("%d logical transfers made %d transfers", n, len(ts))
	}
	seen := map[string]bool{}
	for _, tr := range ts {
		seen[tr.TransferID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("the SDK returned %s, which the server does not hold", id)
		}
	}
	if got := srv.Balance(t, "@alice", "USDG").String(); got != "90" {
		t.Fatalf("alice available %s, want 90", got)
	}
	if f := srv.Faults(); f[0].Used != n+3 {
		t.Fatalf("the drop fault applied %d times", f[0].Used)
	}
}

// TestIdempotencyExpiryAfterClockSetBack: a key is forgotten 24 hours
// after its first use even when a key used later (at an earlier server
// time, the clock having been set back) has not expired yet.
func TestIdempotencyExpiryAfterClockSetBack(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	t0 := srv.Now()
	body := `{"url":"https://example.com/h","events":["transfer.confirmed"]}`
	srv.Set(t0.Add(10 * time.Hour))
	if a := rawCall(t, srv, "POST", "/v1/webhooks", alice.test(), body, "Idempotency-Key", "late"); a.status != 201 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	srv.Set(t0.Add(-5 * time.Hour))
	if a := rawCall(t, srv, "POST", "/v1/webhooks", alice.test(), body, "Idempotency-Key", "early"); a.status != 201 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	srv.Set(t0.Add(20 * time.Hour)) // "early" is 25 h old, "late" 10 h
	a := rawCall(t, srv, "POST", "/v1/webhooks", alice.test(), body, "Idempotency-Key", "early")
	if a.status != 201 || a.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a key 25 h old: %d replayed=%q, want a fresh 201", a.status, a.header.Get("Idempotent-Replayed"))
	}
	a = rawCall(t, srv, "POST", "/v1/webhooks", alice.test(), body, "Idempotency-Key", "late")
	if a.status != 201 || a.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a key 10 h old: %d replayed=%q, want a replay", a.status, a.header.Get("Idempotent-Replayed"))
	}
}

// TestIdempotencyStoreRule: an answer is kept only when the request ran
// against the state. A 400 (or 413) is forgotten, so the caller can fix
// its body and send it again with the same key; 402 and 404
// recipient_not_found are kept and replayed.
func TestIdempotencyStoreRule(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	key := alice.test()

	// Not kept: 400 (a missing member, too many decimals) and 413.
	for i, bad := range []string{`{"to":"@bob"}`, `{"to":"@bob","amount":"1.0000001"}`, `{"to":"@bob","amount":"1","memo":"` + strings.Repeat("m", fakeserver.MaxBodyBytes) + `"}`} {
		k := "fix-" + string(rune('a'+i))
		a := rawCall(t, srv, "POST", "/v1/transfers", key, bad, "Idempotency-Key", k)
		if a.status != 400 && a.status != 413 {
			t.Fatalf("bad body %d: %d %s", i, a.status, a.body)
		}
		a = rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"1"}`, "Idempotency-Key", k)
		if a.status != 201 || a.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("corrected body after %d: %d replayed=%q %s, want a fresh 201", i, a.status, a.header.Get("Idempotent-Replayed"), a.body)
		}
		if a2 := rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"1"}`, "Idempotency-Key", k); a2.status != 201 || a2.header.Get("Idempotent-Replayed") != "true" || string(a2.body) != string(a.body) {
			t.Fatalf("the corrected answer was not kept: %d %s", a2.status, a2.body)
		}
	}
	if ts, _ := srv.Transfers("@alice", confpay.NetworkTest); len(ts) != 3 {
		t.Fatalf("%d transfers, want 3", len(ts))
	}

	// Kept: refusals decided on the state, replayed even once the state
	// would answer otherwise.
	a := rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"@carol","amount":"1"}`, "Idempotency-Key", "nf")
	if a.status != 404 || a.err().Code != confpay.CodeRecipientNotFound {
		t.Fatalf("%d %s", a.status, a.body)
	}
	newAccount(t, srv, "@carol")
	if r := rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"@carol","amount":"1"}`, "Idempotency-Key", "nf"); r.status != 404 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("404 recipient_not_found not replayed: %d %s", r.status, r.body)
	}
	a = rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"500"}`, "Idempotency-Key", "poor")
	if a.status != 402 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	srv.AddFunds(t, "@alice", "USDG", "1000")
	if r := rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"500"}`, "Idempotency-Key", "poor"); r.status != 402 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("402 not replayed: %d %s", r.status, r.body)
	}
}

// TestIdempotencyStoreIsBounded: an account holds at most the configured
// number of Idempotency-Keys; one more new key answers 429 rate_limited
// with Retry-After until the oldest expires, runs nothing, and leaves the
// other accounts alone. Kept keys still replay.
func TestIdempotencyStoreIsBounded(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithMaxIdempotencyKeys(3))
	alice, bob := newAccount(t, srv, "@alice"), newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	srv.AddFunds(t, "@bob", "USDG", "100")
	pay := func(key, idem, to string) answer {
		return rawCall(t, srv, "POST", "/v1/transfers", key, `{"to":"`+to+`","amount":"1"}`, "Idempotency-Key", idem)
	}
	for i := range 3 {
		if a := pay(alice.test(), fmt.Sprint("k", i), "@bob"); a.status != 201 {
			t.Fatalf("key %d: %d %s", i, a.status, a.body)
		}
	}
	before := srv.Balance(t, "@alice", "USDG").String()
	a := pay(alice.test(), "k3", "@bob")
	if a.status != 429 || a.err().Code != confpay.CodeRateLimited || a.header.Get("Retry-After") != "86400" {
		t.Fatalf("a fourth key: %d %s, Retry-After %q", a.status, a.body, a.header.Get("Retry-After"))
	}
	if got := srv.Balance(t, "@alice", "USDG").String(); got != before {
		t.Fatal("the refused request moved money")
	}
	if a := pay(alice.test(), "k0", "@bob"); a.status != 201 || a.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a kept key at the bound: %d, replayed %q", a.status, a.header.Get("Idempotent-Replayed"))
	}
	if a := pay(bob.test(), "k3", "@alice"); a.status != 201 {
		t.Fatalf("another account: %d %s", a.status, a.body)
	}
	srv.Advance(24 * time.Hour)
	if a := pay(alice.test(), "k3", "@bob"); a.status != 201 {
		t.Fatalf("once the oldest expired: %d %s", a.status, a.body)
	}
}

// TestReplayAfterConfirm: a create's kept answer replays byte for byte
// after the transfer has moved on (confirmed), and after a restart from
// the data directory; the store keeps the transfer, not the bytes
// (createAnswer), and renders them again.
func TestReplayAfterConfirm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	body := `{"to":"@bob","amount":"7","memo":"for <b> & \"c\""}`
	first := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
	if first.status != 201 || !strings.Contains(string(first.body), `"status":"pending"`) {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	srv.Advance(time.Hour)
	var tr confpay.Transfer
	if err := json.Unmarshal(first.body, &tr); err != nil {
		t.Fatal(err)
	}
	if got := rawCall(t, srv, "GET", "/v1/transfers/"+tr.TransferID, alice.test(), ""); !strings.Contains(string(got.body), `"status":"confirmed"`) {
		t.Fatalf("not confirmed after an hour: %s", got.body)
	}
	check := func(when string, srv *fakeserver.Server) {
		t.Helper()
		again := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
		if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
			t.Fatalf("%s: replay %d %q\n%s\nfirst answer\n%s", when, again.status, again.header.Get("Idempotent-Replayed"), again.body, first.body)
		}
	}
	check("after the confirmation", srv)
	srv.Close()
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir))
	check("after a restart", srv2)
}
