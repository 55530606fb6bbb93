package fakeserver_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// TestDataDirRewriteKeyedAtomic: a request under an Idempotency-Key whose
// effect is made (so that every chunk of a fuzzy snapshot taken from
// then on holds it) and whose answer is not yet kept holds the rewrite at
// its barrier: the snapshot is not written before the request's effect
// and answer are durable together in the new journal. A kill -9 with the
// request held (the rewrite encoded, the old snapshot standing) and one
// once the new snapshot is in place each load either both the payment
// and its kept answer (a retry replays it) or neither (a retry pays
// once). Fails without the barrier's wait.
func TestDataDirRewriteKeyedAtomic(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.NewUnstartedServer(fakeserver.WithDataDir(dir))
	var armed, keyedHeld atomic.Bool
	barrierWaits, passed := make(chan struct{}, 1), make(chan struct{})
	var mu sync.Mutex
	crashes := map[string]string{} // step → a copy of the directory then
	crashAt := func(step string) {
		c := t.TempDir()
		copyDataDir(t, dir, c)
		mu.Lock()
		crashes[step] = c
		mu.Unlock()
	}
	renamed := make(chan struct{})
	fakeserver.SetTestHook(srv, func(point string) {
		switch point {
		case "keyed-ran": // the payment is made, its answer not yet kept
			if !armed.CompareAndSwap(true, false) {
				return
			}
			keyedHeld.Store(true)
			fakeserver.StartRewrite(srv)
			// The barrier must wait for this request: held here, the
			// rewrite either reports that its barrier waits (it holds
			// a ticket behind this request's slot) or passes it.
			select {
			case <-barrierWaits:
			case <-passed:
				t.Error("the rewrite's barrier passed while a keyed request that made its effect had not answered")
				<-renamed // the new snapshot stands: a crash now shows what it holds
			}
			keyedHeld.Store(false)
		case "rewrite-barrier-waits":
			barrierWaits <- struct{}{}
		}
	})
	fakeserver.SetRewriteHook(srv, func(step string) error {
		switch step {
		case "encoded": // every chunk holds the payment
			crashAt(step)
		case "barrier":
			if keyedHeld.Load() {
				close(passed)
			}
		case "snapshot-renamed":
			crashAt(step)
			if keyedHeld.Load() {
				close(renamed)
			}
		}
		return nil
	})
	srv.Start()
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
	const body = `{"to":"@bob","amount":"1","asset":"USDG"}`
	armed.Store(true)
	first := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
	if first.status != http.StatusCreated {
		t.Fatalf("keyed payment: %d %s", first.status, first.body)
	}
	fakeserver.WaitRewrite(srv)
	srv.Close()
	if len(crashes) != 2 {
		t.Fatalf("crash copies at %v, want encoded and snapshot-renamed", crashes)
	}
	for step, c := range crashes {
		srv2 := fakeserver.New(t, fakeserver.WithDataDir(c))
		ts, err := srv2.Transfers("@alice", confpay.NetworkTest)
		if err != nil {
			t.Fatal(err)
		}
		retry := rawCall(t, srv2, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
		replayed := retry.header.Get("Idempotent-Replayed") == "true"
		switch {
		case len(ts) == 1 && (!replayed || !bytes.Equal(retry.body, first.body)):
			t.Errorf("crash at %s: the payment is there but its key does not replay it: %d replayed=%v %s", step, retry.status, replayed, retry.body)
		case len(ts) == 0 && (replayed || retry.status != http.StatusCreated):
			t.Errorf("crash at %s: no payment but the key answers %d replayed=%v %s", step, retry.status, replayed, retry.body)
		case len(ts) > 1:
			t.Errorf("crash at %s: %d payments", step, len(ts))
		}
		if step == "snapshot-renamed" && len(ts) != 1 {
			t.Errorf("crash at %s: %d payments, want the acknowledged one", step, len(ts))
		}
		srv2.Close()
	}
}

// fuzzyView is what TestDataDirRewriteForgets compares: the full state
// and the histories the bounds forget from.
type fuzzyView struct {
	Snap     fakeserver.Snapshot
	Held     []*fakeserver.HeldPayment
	Events   []fakeserver.EventRecord
	Webhooks []*confpay.Webhook
}

func viewOf(t *testing.T, srv *fakeserver.Server) fuzzyView {
	t.Helper()
	v := fuzzyView{Snap: srv.Snapshot()}
	v.Held, _ = srv.HeldPayments("@alice/bot", confpay.NetworkTest) // an error: gone (a reset)
	v.Events, _ = srv.Events("@alice", confpay.NetworkTest)
	v.Webhooks, _ = srv.Webhooks("@alice", confpay.NetworkTest)
	return v
}

// TestDataDirRewriteForgets: every way state is forgotten leaves a
// record, so that a fuzzy snapshot whose chunks were all taken before it
// (the forgetting runs once the snapshot is encoded, before its barrier)
// does not bring it back: after a crash once the new snapshot and journal
// are in place, and after a clean restart, the state is the one the
// server had, the held payments, events and webhooks included. An
// Idempotency-Key past its TTL is checked by a retry with another body
// (runs anew rather than 422).
func TestDataDirRewriteForgets(t *testing.T) {
	for _, tc := range forgettings {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, opts := newForgetEnv(t, dir)
			srv := e.srv
			var crash string
			var once sync.Once
			fakeserver.SetRewriteHook(srv, func(step string) error {
				switch step {
				case "encoded":
					once.Do(func() { tc.forget(t, e) })
				case "journal-renamed":
					crash = t.TempDir()
					copyDataDir(t, dir, crash)
				}
				return nil
			})
			fakeserver.StartRewrite(srv)
			fakeserver.WaitRewrite(srv)
			want := viewOf(t, srv)
			srv.Close()
			if crash == "" {
				t.Fatal("the rewrite did not finish")
			}
			for _, d := range []string{crash, dir} {
				srv2 := fakeserver.New(t, append([]fakeserver.Option{fakeserver.WithDataDir(d)}, opts[1:]...)...)
				if diff := cmp.Diff(want, viewOf(t, srv2), restartOptions); diff != "" {
					t.Errorf("after a restart (crash copy: %v; -before +after):\n%s", d == crash, diff)
				}
				if tc.name == "idempotency key expired" {
					if a := rawCall(t, srv2, "POST", "/v1/transfers", e.alice, `{"to":"@bob","amount":"0.03","asset":"USDG"}`, "Idempotency-Key", "kept"); a.status != http.StatusCreated {
						t.Errorf("the expired key after a restart: %d %s, want a new payment", a.status, a.body)
					}
				}
				srv2.Close()
			}
		})
	}
}

// forgetEnv is the state the forgetting tests start from (newForgetEnv).
type forgetEnv struct {
	srv   *fakeserver.Server
	alice string // a test key of @alice's
	hook  *confpay.Webhook
}

// newForgetEnv starts a server on dir with buildState's state, a test key
// of @alice's, a webhook of hers and a payment under Idempotency-Key
// "kept"; opts are its options, for a restart on another directory
// (opts[0] is the data directory).
func newForgetEnv(t *testing.T, dir string) (*forgetEnv, []fakeserver.Option) {
	t.Helper()
	opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithApprovalWindow(time.Hour), fakeserver.WithMaxEvents(4)}
	srv := fakeserver.New(t, opts...)
	buildState(t, srv)
	e := &forgetEnv{srv: srv}
	e.alice = newKey(t, srv, "@alice")
	ac := newClient(t, srv, e.alice, nil, noRetry)
	var err error
	if e.hook, err = ac.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: "https://example.com/h", Events: []confpay.EventKind{"transfer.confirmed"}}); err != nil {
		t.Fatal(err)
	}
	const body1 = `{"to":"@bob","amount":"0.02","asset":"USDG"}`
	if a := rawCall(t, srv, "POST", "/v1/transfers", e.alice, body1, "Idempotency-Key", "kept"); a.status != http.StatusCreated {
		t.Fatalf("keyed payment: %d %s", a.status, a.body)
	}
	return e, opts
}

// forgettings are the ways the server forgets something, each of which
// leaves a record so that a snapshot chunk taken before cannot bring it
// back (persist_rewrite.go); the first is a reset.
var forgettings = []struct {
	name   string
	forget func(t *testing.T, e *forgetEnv)
}{
	{"reset", func(t *testing.T, e *forgetEnv) { e.srv.Reset() }},
	{"webhook deleted", func(t *testing.T, e *forgetEnv) {
		if err := newClient(t, e.srv, e.alice, nil, noRetry).Webhooks.Delete(context.Background(), e.hook.WebhookID); err != nil {
			t.Fatal(err)
		}
	}},
	{"events past their bound", func(t *testing.T, e *forgetEnv) {
		ac := newClient(t, e.srv, e.alice, nil, noRetry)
		for range 6 {
			send(t, ac, "@bob", "0.01")
		}
	}},
	{"idempotency key expired", func(t *testing.T, e *forgetEnv) { e.srv.Advance(25 * time.Hour) }},
	{"held payments pruned", func(t *testing.T, e *forgetEnv) {
		e.srv.Advance(31 * 24 * time.Hour)
		// A payment held prunes the history (at most hourly).
		bot := newClient(t, e.srv, newKey(t, e.srv, "@alice/bot"), nil, noRetry)
		hold(t, bot, "@bob", "6")
	}},
	{"seed rolled back", func(t *testing.T, e *forgetEnv) {
		seed := &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@dora"}, {Handle: "@alice"}}}
		if _, err := e.srv.Load(seed); err == nil {
			t.Fatal("a seed naming an existing handle loaded")
		}
	}},
}

// TestDataDirRewriteNoSyncSyncsNext: with -data-nosync, a fuzzy rewrite
// still fsyncs journal.next before its snapshot is written. The snapshot's
// chunks may hold changes made after the switch, whose records are only in
// journal.next: after a machine crash, a snapshot that stands without them
// would load half a transfer (one account's book after it, the other's
// before). Before the fix journal.next was never fsynced with -data-nosync.
func TestDataDirRewriteNoSyncSyncsNext(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync())
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
	var mu sync.Mutex
	var events []string
	paid := false // only the rewrite's goroutine reads and sets it
	fakeserver.SetFsync(srv, func(f *os.File) error {
		mu.Lock()
		events = append(events, "fsync "+filepath.Base(f.Name()))
		mu.Unlock()
		return f.Sync()
	})
	fakeserver.SetRewriteHook(srv, func(step string) error {
		mu.Lock()
		events = append(events, step)
		mu.Unlock()
		if step == "chunk" && !paid {
			// A payment between two chunks: its record is in journal.next.
			paid = true
			if r := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1","asset":"USDG"}`); r.status != http.StatusCreated {
				t.Errorf("payment: %d %s", r.status, r.body)
			}
		}
		return nil
	})
	fakeserver.StartRewrite(srv)
	fakeserver.WaitRewrite(srv)
	mu.Lock()
	defer mu.Unlock()
	synced := slices.Index(events, "fsync "+journal.NextFile)
	written := slices.Index(events, "snapshot-synced")
	if written < 0 || synced < 0 || synced > written {
		t.Errorf("steps %v: want journal.next fsynced before the snapshot is written", events)
	}
}

// TestDataDirRewriteFuzzyChunks: a fuzzy snapshot of one thing per chunk
// (WithDataDirRewriteChunk(1)) with changes between its chunks that span
// things already encoded and things not yet encoded: at every chunk a
// payment each way between @alice and @bob and one on the live network, a
// held agent payment approved and another rejected (held ones made
// before the switch first, then ones made during the rewrite), a webhook
// created and the last one deleted, a key issued and the last one
// revoked, the agent's spend policy changed, and a payment under an
// Idempotency-Key; then a block confirms every pending payment, moving
// money from one book to another. So two accounts' books, a held payment
// and its transfer, land in different chunks at different instants, and
// only the journal since the switch makes them one state. A kill -9 once
// the new snapshot is in place (at snapshot-renamed and journal-renamed,
// and before it, at encoded and barrier) loads exactly the server's
// state (the direct API's full Snapshot), money is conserved per asset
// and network (everything funded is in the books, and is the supply), the
// audit finds no broken invariant, and every Idempotency-Key replays its
// answer. Fails with a loader that replays the snapshot alone, or lets a
// book's first record win over its later ones.
func TestDataDirRewriteFuzzyChunks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithApprovalWindow(time.Hour)}
	srv := fakeserver.New(t, append(opts, fakeserver.WithDataDirRewriteChunk(1))...)
	type pot struct {
		n     confpay.Network
		asset string
	}
	funded := map[pot]confpay.Amount{}
	fund := func(who string, n confpay.Network, asset, amount string) {
		fundOn(t, srv, who, n, asset, amount)
		funded[pot{n, asset}] = funded[pot{n, asset}].Add(confpay.MustParseAmount(amount))
	}
	alice, bob := newAccount(t, srv, "@alice"), newAccount(t, srv, "@bob")
	carol := newAccount(t, srv, "@carol")
	fund(alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	fund(alice.info.AccountID, confpay.NetworkTest, "ETH", "2")
	fund(bob.info.AccountID, confpay.NetworkTest, "USDG", "100")
	fund(alice.info.AccountID, confpay.NetworkLive, "USDG", "50")
	fund(carol.info.AccountID, confpay.NetworkLive, "USDG", "20")
	ac, bc := newClient(t, srv, alice.test(), nil, noRetry), newClient(t, srv, bob.test(), nil, noRetry)
	agent, err := ac.Agents.Create(ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("10000"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("5"),
		AllowedRecipients: []string{"@bob", "@carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	fund(agent.AccountID, confpay.NetworkTest, "USDG", "1000")
	bot := newClient(t, srv, newKey(t, srv, agent.AccountID), nil, noRetry)
	// Things in the plan, each a chunk: transfers, held payments, a
	// webhook and a key to remove, and a kept answer.
	send(t, ac, "@bob", "1")
	send(t, bc, "@alice", "2")
	send(t, ac, "@carol", "0.5", withAsset("ETH"))
	send(t, newClient(t, srv, alice.live(), nil, noRetry), "@bob", "5")
	var held []string // pending held payments, oldest first
	for range 4 {
		held = append(held, hold(t, bot, "@bob", "6").TransactionID)
	}
	hook, err := ac.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "https://example.com/h0", Events: []confpay.EventKind{"transfer.failed"}})
	if err != nil {
		t.Fatal(err)
	}
	extra, err := srv.IssueKey(bob.info.AccountID, confpay.NetworkTest, "extra")
	if err != nil {
		t.Fatal(err)
	}
	lastHook, lastKey := hook.WebhookID, extra.KeyID

	type keyed struct {
		key, body string
		first     answer
	}
	var kept []keyed
	h := srv.Handler()
	steps := 0
	// change runs at every chunk step, on the rewrite's goroutine outside
	// s.mu (a request made under it would never return): t.Errorf only.
	change := func() {
		steps++
		i := strconv.Itoa(steps)
		for _, p := range []struct{ key, body string }{
			{alice.test(), `{"to":"@bob","amount":"1"}`},
			{bob.test(), `{"to":"@alice","amount":"0.5"}`},
			{alice.live(), `{"to":"@bob","amount":"0.01"}`},
		} {
			if a := serve(h, "POST", "/v1/transfers", p.key, p.body); a.status != http.StatusCreated {
				t.Errorf("step %d: payment %s: %d %s", steps, p.body, a.status, a.body)
			}
		}
		for range 2 { // two new held payments for the later steps
			if _, err := pay(bot, "@bob", "6"); !errors.As(err, new(*confpay.HeldError)) {
				t.Errorf("step %d: an agent payment of 6 was not held: %v", steps, err)
				return
			}
		}
		pending, err := ac.Agents.ListPending(ctx)
		if err != nil {
			t.Errorf("step %d: %v", steps, err)
			return
		}
		for _, p := range pending {
			if !slices.Contains(held, p.TransactionID) {
				held = append(held, p.TransactionID)
			}
		}
		if _, err := ac.Agents.Approve(ctx, held[0]); err != nil {
			t.Errorf("step %d: approve %s: %v", steps, held[0], err)
		}
		if _, err := ac.Agents.Reject(ctx, held[1]); err != nil {
			t.Errorf("step %d: reject %s: %v", steps, held[1], err)
		}
		held = held[2:]
		wh, err := ac.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "https://example.com/h" + i, Events: []confpay.EventKind{"transfer.failed"}})
		if err != nil {
			t.Errorf("step %d: create a webhook: %v", steps, err)
			return
		}
		if err := ac.Webhooks.Delete(ctx, lastHook); err != nil {
			t.Errorf("step %d: delete webhook %s: %v", steps, lastHook, err)
		}
		lastHook = wh.WebhookID
		k, err := srv.IssueKey(bob.info.AccountID, confpay.NetworkTest, "k"+i)
		if err != nil {
			t.Errorf("step %d: issue a key: %v", steps, err)
			return
		}
		if err := srv.RevokeKey(lastKey); err != nil {
			t.Errorf("step %d: revoke key %s: %v", steps, lastKey, err)
		}
		lastKey = k.KeyID
		if _, err := ac.Agents.UpdatePolicy(ctx, agent.AccountID, &confpay.SpendPolicyParams{
			DailyLimitUSDG: limit(strconv.Itoa(10000 + steps)), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("5"),
			AllowedRecipients: []string{"@bob", "@carol"}}); err != nil {
			t.Errorf("step %d: update the policy: %v", steps, err)
		}
		kb := keyed{key: "fuzzy-" + i, body: `{"to":"@carol","amount":"0.25"}`}
		if kb.first = serve(h, "POST", "/v1/transfers", alice.test(), kb.body, "Idempotency-Key", kb.key); kb.first.status != http.StatusCreated {
			t.Errorf("step %d: keyed payment: %d %s", steps, kb.first.status, kb.first.body)
		}
		kept = append(kept, kb)
		// The block: every pending payment confirms, moving its amount
		// from one account's book to another's.
		srv.Advance(time.Second)
	}

	crashes := map[string]string{} // step → a copy of the directory then
	var atRenamed fakeserver.Snapshot
	fakeserver.SetRewriteHook(srv, func(step string) error {
		switch step {
		case "chunk":
			change()
		case "encoded", "barrier", "snapshot-renamed", "journal-renamed":
			c := t.TempDir()
			copyDataDir(t, dir, c)
			crashes[step] = c
			if step == "journal-renamed" {
				atRenamed = srv.Snapshot()
			}
		}
		return nil
	})
	fakeserver.StartRewrite(srv)
	fakeserver.WaitRewrite(srv)
	want := srv.Snapshot()
	if t.Failed() {
		t.FailNow()
	}
	// Four accounts, their keys, and per network their books and
	// transfers (and held payments on test), one chunk each.
	if steps < 25 || len(crashes) != 4 {
		t.Fatalf("%d chunk steps, crash copies at %v: the rewrite did not run in chunks of one", steps, slices.Sorted(maps.Keys(crashes)))
	}
	t.Logf("%d chunk steps", steps)
	if diff := cmp.Diff(atRenamed, want, snapshotOptions); diff != "" {
		t.Fatalf("the state changed after the rewrite (-at journal-renamed +after):\n%s", diff)
	}
	srv.Close()

	for _, step := range []string{"encoded", "barrier", "snapshot-renamed", "journal-renamed"} {
		srv2, err := fakeserver.Open(append(opts[1:], fakeserver.WithDataDir(crashes[step]), fakeserver.WithoutListener())...)
		if err != nil {
			t.Errorf("after a crash at %s: %v", step, err)
			continue
		}
		got := srv2.Snapshot()
		if diff := cmp.Diff(want, got, restartOptions); diff != "" {
			t.Errorf("after a crash at %s (-acknowledged +loaded):\n%s", step, diff)
		}
		for p, f := range funded {
			var inBooks confpay.Amount
			for _, entries := range got.Networks[p.n].Balances {
				for _, e := range entries {
					if e.Asset == p.asset {
						inBooks = inBooks.Add(e.Balance)
					}
				}
			}
			units, err := f.UnitsOf(p.asset)
			if err != nil {
				t.Fatal(err)
			}
			if supply := got.Networks[p.n].Supply[p.asset]; inBooks.String() != f.String() || supply != units.String() {
				t.Errorf("after a crash at %s: %s %s: %s funded, %s in the books, supply %s units (want %s)", step, p.n, p.asset, f, inBooks, supply, units)
			}
		}
		for _, f := range srv2.Audit() {
			if strings.HasPrefix(f.Rule, "invariant_") {
				t.Errorf("after a crash at %s: the audit's invariant: %s", step, f)
			}
		}
		h2 := srv2.Handler()
		for _, kb := range kept {
			a := serve(h2, "POST", "/v1/transfers", alice.test(), kb.body, "Idempotency-Key", kb.key)
			if a.header.Get("Idempotent-Replayed") != "true" || a.status != kb.first.status || !bytes.Equal(a.body, kb.first.body) {
				t.Errorf("after a crash at %s: key %s answers %d replayed=%q %s, want its kept answer", step, kb.key, a.status, a.header.Get("Idempotent-Replayed"), a.body)
			}
		}
		srv2.Close()
	}
}
