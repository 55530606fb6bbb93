package fakeserver_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
	ctx := context.Background()
	type env struct {
		srv   *fakeserver.Server
		alice string // a test key of @alice's
		hook  *confpay.Webhook
	}
	cases := []struct {
		name   string
		forget func(t *testing.T, e *env)
	}{
		{"reset", func(t *testing.T, e *env) { e.srv.Reset() }},
		{"webhook deleted", func(t *testing.T, e *env) {
			if err := newClient(t, e.srv, e.alice, nil, noRetry).Webhooks.Delete(ctx, e.hook.WebhookID); err != nil {
				t.Fatal(err)
			}
		}},
		{"events past their bound", func(t *testing.T, e *env) {
			ac := newClient(t, e.srv, e.alice, nil, noRetry)
			for range 6 {
				send(t, ac, "@bob", "0.01")
			}
		}},
		{"idempotency key expired", func(t *testing.T, e *env) { e.srv.Advance(25 * time.Hour) }},
		{"held payments pruned", func(t *testing.T, e *env) {
			e.srv.Advance(31 * 24 * time.Hour)
			// A payment held prunes the history (at most hourly).
			bot := newClient(t, e.srv, newKey(t, e.srv, "@alice/bot"), nil, noRetry)
			hold(t, bot, "@bob", "6")
		}},
		{"seed rolled back", func(t *testing.T, e *env) {
			seed := &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@dora"}, {Handle: "@alice"}}}
			if _, err := e.srv.Load(seed); err == nil {
				t.Fatal("a seed naming an existing handle loaded")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithApprovalWindow(time.Hour), fakeserver.WithMaxEvents(4)}
			srv := fakeserver.New(t, opts...)
			buildState(t, srv)
			e := &env{srv: srv}
			e.alice = newKey(t, srv, "@alice")
			ac := newClient(t, srv, e.alice, nil, noRetry)
			var err error
			if e.hook, err = ac.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "https://example.com/h", Events: []confpay.EventKind{"transfer.confirmed"}}); err != nil {
				t.Fatal(err)
			}
			const body1 = `{"to":"@bob","amount":"0.02","asset":"USDG"}`
			if a := rawCall(t, srv, "POST", "/v1/transfers", e.alice, body1, "Idempotency-Key", "kept"); a.status != http.StatusCreated {
				t.Fatalf("keyed payment: %d %s", a.status, a.body)
			}
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
