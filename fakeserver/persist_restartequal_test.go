package fakeserver_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// restartEqualModes runs check on a server with a data directory that
// only appends to its journal, and on one that rewrites its snapshot at
// every commit (the restart then loads a fuzzy snapshot and the journal
// written since).
func restartEqualModes(t *testing.T, check func(t *testing.T, opts ...fakeserver.Option)) {
	t.Run("journal", func(t *testing.T) { check(t, fakeserver.WithDataDir(t.TempDir()), fakeserver.WithDataDirNoSync()) })
	t.Run("rewrites", func(t *testing.T) {
		check(t, fakeserver.WithDataDir(t.TempDir()), fakeserver.WithDataDirNoSync(), fakeserver.WithDataDirRewriteAlways())
	})
}

// TestDataDirRestartKeepsDeletedWebhooksInDeletionOrder (issue 26): past
// hooks.MaxDeletedPerAccount, an account's book forgets its oldest
// deletion, not the subscription it created first; a restart keeps the
// same ids, so a second DELETE answers the same before and after it. The
// subscription created first and deleted last is kept; the first one
// deleted is forgotten.
func TestDataDirRestartKeepsDeletedWebhooksInDeletionOrder(t *testing.T) {
	restartEqualModes(t, func(t *testing.T, opts ...fakeserver.Option) {
		srv := fakeserver.New(t, opts...)
		alice := newAccount(t, srv, "@alice")
		create := func() string {
			t.Helper()
			w, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, http.NotFoundHandler(), "whsec_restartequal0123456789")
			if err != nil {
				t.Fatal(err)
			}
			return w.WebhookID
		}
		del := func(srv *fakeserver.Server, id string) int {
			t.Helper()
			return rawCall(t, srv, "DELETE", "/v1/webhooks/"+id, alice.test(), "").status
		}
		oldest := create() // created first, deleted last
		var deleted []string
		for range hooks.MaxDeletedPerAccount {
			id := create()
			if st := del(srv, id); st != http.StatusNoContent {
				t.Fatalf("DELETE %s: %d", id, st)
			}
			deleted = append(deleted, id)
		}
		if st := del(srv, oldest); st != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d", oldest, st)
		}
		// Memory: the first deleted is forgotten, the last deleted kept.
		probe := []string{oldest, deleted[0], deleted[1], deleted[len(deleted)-1]}
		want := map[string]int{oldest: http.StatusNoContent, deleted[0]: http.StatusNotFound, deleted[1]: http.StatusNoContent,
			deleted[len(deleted)-1]: http.StatusNoContent}
		for _, id := range probe {
			if st := del(srv, id); st != want[id] {
				t.Fatalf("before the restart: a second DELETE of %s answers %d, want %d", id, st, want[id])
			}
		}
		before := srv.Snapshot()
		srv.Close()

		srv2 := fakeserver.New(t, opts...)
		if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
			t.Fatalf("state after restart (-before +after):\n%s", diff)
		}
		for _, id := range probe {
			if st := del(srv2, id); st != want[id] {
				t.Errorf("after the restart: a second DELETE of %s answers %d, want %d (as before it)", id, st, want[id])
			}
		}
	})
}

// TestDataDirRestartForgetsExpiredIdempotencyKeys (issue 26): a key the
// server forgot past its 24 hours stays forgotten after a restart, even
// once the clock is set back to before its expiry (memory then runs a
// request with it anew; a restored server must not replay the old
// answer); and a key memory still holds, expired but not yet pruned,
// comes back as memory holds it. Each order: the key pruned after its
// expiry by another key's request, by the request that reuses it (which
// makes a new payment, whose answer then replays), or not at all; a
// snapshot rewrite between (rewrites); the clock set back before or after
// the restart.
func TestDataDirRestartForgetsExpiredIdempotencyKeys(t *testing.T) {
	const body = `{"to":"@bob","amount":"1"}`
	for _, tc := range []struct {
		name         string
		prune        string // after the expiry, the request that forgets the key: "", "other" or "reuse"
		backBefore   bool   // the clock set back before the restart (else after)
		wantReplayed bool   // the key, used again at the earlier time, replays
	}{
		{"pruned, clock back before the restart", "other", true, false},
		{"pruned, clock back after the restart", "other", false, false},
		{"reused, clock back before the restart", "reuse", true, true},
		{"reused, clock back after the restart", "reuse", false, true},
		{"not pruned, clock back before the restart", "", true, true},
		{"not pruned, clock back after the restart", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restartEqualModes(t, func(t *testing.T, opts ...fakeserver.Option) {
				srv := fakeserver.New(t, opts...)
				alice := newAccount(t, srv, "@alice")
				newAccount(t, srv, "@bob")
				fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "100")
				start := srv.Now()
				first := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k-old")
				if first.status != http.StatusCreated {
					t.Fatalf("POST /v1/transfers: %d %s", first.status, first.body)
				}
				srv.Advance(25 * time.Hour)
				switch tc.prune {
				case "other": // another key's request prunes every expired key
					if a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k-other"); a.status != http.StatusCreated {
						t.Fatalf("POST /v1/transfers: %d %s", a.status, a.body)
					}
				case "reuse": // a new payment, whose answer the key keeps now
					if first = rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k-old"); first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
						t.Fatalf("POST /v1/transfers after the TTL: %d replayed=%q %s", first.status, first.header.Get("Idempotent-Replayed"), first.body)
					}
				}
				if tc.backBefore {
					srv.Set(start.Add(time.Hour))
				}
				before, keys := srv.Snapshot(), fakeserver.IdempotencyKeys(srv)
				srv.Close()
				srv2 := fakeserver.New(t, opts...)
				if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
					t.Fatalf("state after restart (-before +after):\n%s", diff)
				}
				if got := fakeserver.IdempotencyKeys(srv2); got != keys {
					t.Errorf("%d Idempotency-Keys after the restart, %d before it", got, keys)
				}
				if !tc.backBefore {
					srv2.Set(start.Add(time.Hour))
				}
				again := rawCall(t, srv2, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k-old")
				replayed := again.header.Get("Idempotent-Replayed") == "true"
				if replayed != tc.wantReplayed || (replayed && !bytes.Equal(again.body, first.body)) || again.status != http.StatusCreated {
					t.Errorf("the key used again after the restart: %d replayed=%v %s, want replayed=%v (first answer %s)",
						again.status, replayed, again.body, tc.wantReplayed, first.body)
				}
			})
		})
	}
}

// restartTwin runs scenario on a server kept in memory (its restart
// returns the server as it is) and on one with a data directory (its
// restart closes the server and opens the directory again, and checks
// that the snapshot is the same across it), in each restartEqualModes
// and in two where the restart loads a snapshot that holds everything:
// "fuzzy", where the running server rewrites its snapshot before it
// closes (persist_rewrite.go), and "fold", where the journal is folded
// into a snapshot at an open (snapshotLocked) before the restart's.
// What the scenario observes must be the same: a restart is nothing
// happening, for what the server forgets by time too.
func restartTwin(t *testing.T, scenario func(t *testing.T, srv *fakeserver.Server, restart func(*fakeserver.Server) *fakeserver.Server) []string) {
	t.Helper()
	want := scenario(t, fakeserver.New(t), func(srv *fakeserver.Server) *fakeserver.Server { return srv })
	twin := func(t *testing.T, fold string, opts ...fakeserver.Option) {
		got := scenario(t, fakeserver.New(t, opts...), func(srv *fakeserver.Server) *fakeserver.Server {
			t.Helper()
			srv.Sync()
			if fold == "fuzzy" {
				fakeserver.StartRewrite(srv)
				fakeserver.WaitRewrite(srv)
			}
			before := srv.Snapshot()
			srv.Close()
			if fold == "fold" {
				// the journal has outgrown the snapshot of 1 byte: the
				// open folds it
				fakeserver.New(t, append(opts, fakeserver.WithDataDirRewriteAt(1))...).Close()
			}
			srv2 := fakeserver.New(t, opts...)
			if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
				t.Fatalf("state after restart (-before +after):\n%s", diff)
			}
			return srv2
		})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("with a restart, the server answers otherwise than memory alone (-memory +restarted):\n%s", diff)
		}
	}
	restartEqualModes(t, func(t *testing.T, opts ...fakeserver.Option) { twin(t, "", opts...) })
	for _, fold := range []string{"fuzzy", "fold"} {
		t.Run(fold, func(t *testing.T) { twin(t, fold, fakeserver.WithDataDir(t.TempDir()), fakeserver.WithDataDirNoSync()) })
	}
}

// observeHistory is what a restart twin compares: how many events,
// delivery records and held payments the direct API holds for @alice on
// the test network, and the snapshot's counts.
func observeHistory(t *testing.T, srv *fakeserver.Server, step string) string {
	t.Helper()
	srv.Sync()
	evs, err := srv.Events("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := srv.Deliveries("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	held, err := srv.HeldPayments("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	ns := srv.Snapshot().Networks[confpay.NetworkTest]
	return fmt.Sprintf("%s: %d events, %d deliveries, %d held payments; snapshot: %d events, %d held", step, len(evs), len(ds), len(held), ns.Events, len(ns.Held))
}

// TestDataDirRestartKeepsDeletedWebhookMarkersAsMemory (issue 26): a
// deleted subscription's id answers its second DELETE with 204 for as
// long as memory holds it: a restart neither brings back one that
// pruning forgot (then the clock set back within its window) nor drops
// one past the window that no pruning has forgotten yet.
func TestDataDirRestartKeepsDeletedWebhookMarkersAsMemory(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prune      bool // an event after the window prunes the marker
		backBefore bool // the clock set back before the restart (else after)
	}{
		{"pruned, clock back before the restart", true, true},
		{"pruned, clock back after the restart", true, false},
		{"not pruned, clock back before the restart", false, true},
		{"not pruned, clock back after the restart", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restartTwin(t, func(t *testing.T, srv *fakeserver.Server, restart func(*fakeserver.Server) *fakeserver.Server) []string {
				alice := newAccount(t, srv, "@alice")
				newAccount(t, srv, "@bob")
				fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "100")
				transfer := func(srv *fakeserver.Server) {
					t.Helper()
					if a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`); a.status != http.StatusCreated {
						t.Fatalf("POST /v1/transfers: %d %s", a.status, a.body)
					}
				}
				del := func(srv *fakeserver.Server, id string) string {
					t.Helper()
					return fmt.Sprintf("DELETE: %d", rawCall(t, srv, "DELETE", "/v1/webhooks/"+id, alice.test(), "").status)
				}
				w, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, http.NotFoundHandler(), "whsec_restartequal0123456789")
				if err != nil {
					t.Fatal(err)
				}
				start := srv.Now()
				var obs []string
				obs = append(obs, del(srv, w.WebhookID))
				transfer(srv) // prunes (nothing yet)
				srv.Advance(hooks.HistoryWindow + 24*time.Hour)
				if tc.prune {
					transfer(srv) // prunes the marker
				}
				obs = append(obs, del(srv, w.WebhookID))
				if tc.backBefore {
					srv.Set(start.Add(time.Hour))
				}
				srv = restart(srv)
				if !tc.backBefore {
					srv.Set(start.Add(time.Hour))
				}
				obs = append(obs, del(srv, w.WebhookID))
				transfer(srv)
				return append(obs, del(srv, w.WebhookID))
			})
		})
	}
}

// TestDataDirRestartPrunesEventsAsMemory (issue 26): events and delivery
// records past the history window are forgotten by the pruning pass that
// an event runs at most once an hour of server time; a restart keeps when
// it last ran, so the first events after it forget what memory would
// have. Each: the clock moved past the window before the restart; or a
// pass just before the restart, then the clock set back within the hour
// after it (memory does not prune yet).
func TestDataDirRestartPrunesEventsAsMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		// steps, each "t" (a transfer), "r" (the restart) or a duration
		// to advance the clock by (negative: set back)
		steps []any
	}{
		{"past the window, restart, event", []any{"t", hooks.HistoryWindow + time.Hour, "r", "t"}},
		{"past the window, event, restart, event", []any{"t", hooks.HistoryWindow + time.Hour, "t", "r", "t"}},
		{"a pass, restart, clock back within the hour, event", []any{"t", hooks.HistoryWindow - 10*time.Minute, "t", 40 * time.Minute, "r", -20 * time.Minute, "t"}},
		{"past the window, restart, clock back, event", []any{"t", hooks.HistoryWindow + 2*time.Hour, "r", -hooks.HistoryWindow, "t"}},
		{"past the window, event, clock back, restart, event", []any{"t", hooks.HistoryWindow + 2*time.Hour, "t", -hooks.HistoryWindow, "r", "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restartTwin(t, func(t *testing.T, srv *fakeserver.Server, restart func(*fakeserver.Server) *fakeserver.Server) []string {
				alice := newAccount(t, srv, "@alice")
				newAccount(t, srv, "@bob")
				fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "100")
				ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
				if _, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, ok, "whsec_restartequal0123456789"); err != nil {
					t.Fatal(err)
				}
				var obs []string
				for i, step := range tc.steps {
					switch step := step.(type) {
					case string:
						if step == "r" {
							srv = restart(srv)
							break
						}
						if a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`); a.status != http.StatusCreated {
							t.Fatalf("POST /v1/transfers: %d %s", a.status, a.body)
						}
					case time.Duration:
						srv.Set(srv.Now().Add(step))
					}
					obs = append(obs, observeHistory(t, srv, fmt.Sprint(i, " ", step)))
				}
				return obs
			})
		})
	}
}

// TestDataDirRestartPrunesHeldPaymentsAsMemory (issue 26): held payments
// past the 30-day history are forgotten by the pass a new held payment
// runs at most once an hour of server time; a restart keeps when it last
// ran. Each: a pass just before the restart and a payment held within
// the hour after it (memory does not prune yet); the clock past the
// window; the clock set back after a pass.
func TestDataDirRestartPrunesHeldPaymentsAsMemory(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name  string
		steps []any // "h" (a payment held), "r" (the restart), or a clock move
	}{
		{"a pass, restart, a hold within the hour", []any{"h", day + hooks.HistoryWindow - 10*time.Minute, "h", "r", 20 * time.Minute, "h"}},
		{"past the window, restart, a hold", []any{"h", day + hooks.HistoryWindow + time.Hour, "r", "h"}},
		{"past the window, a hold, clock back, restart, a hold", []any{"h", day + hooks.HistoryWindow + time.Hour, "h", -hooks.HistoryWindow, "r", "h"}},
		{"past the window, a hold, restart, clock back, a hold", []any{"h", day + hooks.HistoryWindow + time.Hour, "h", "r", -hooks.HistoryWindow, "h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restartTwin(t, func(t *testing.T, srv *fakeserver.Server, restart func(*fakeserver.Server) *fakeserver.Server) []string {
				srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
				srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
				bot := srv.AddAgent(t, "@alice", "bot", confpay.SpendPolicyParams{
					DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("1"),
				})
				srv.AddFunds(t, bot.Handle, "USDG", "100")
				var obs []string
				for i, step := range tc.steps {
					switch step := step.(type) {
					case string:
						if step == "r" {
							srv = restart(srv)
							bot.Client = srv.Client(bot.TestKey)
							break
						}
						hold(t, bot.Client, "@bob", "5")
					case time.Duration:
						srv.Set(srv.Now().Add(step))
					}
					obs = append(obs, observeHistory(t, srv, fmt.Sprint(i, " ", step)))
				}
				return obs
			})
		})
	}
}

// olderDataDir makes dir, written by this build, what a build before the
// forgotten ids and the pass times were kept (itemSubGone,
// itemHooksPruned, itemHeldPruned) wrote for the same steps: the same
// records without those items, in one snapshot.
func olderDataDir(t *testing.T, dir string) {
	t.Helper()
	jr, c, err := journal.Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	for _, p := range slices.Concat(c.Snapshot, c.Journal) {
		if p = fakeserver.OlderRecord(p); len(p) > 0 {
			recs = append(recs, p)
		}
	}
	err = jr.Rewrite(func(emit func([]byte)) {
		for _, p := range recs {
			emit(p)
		}
	})
	jr.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDataDirOlderBuildForgotDeletedWebhookIDs (issue 26): a build
// before the pass times were kept forgot a deleted webhook's id 30 days
// after its deletion without writing it; its directory, loaded now, does
// not bring the id back (a second DELETE stays 404): as that build did,
// the load drops the deleted ids past the 30 days on the restored clock
// and counts the pass as run at the restart. A recent one stays. The
// directory is rewritten in the current form at that load, so that a
// pass after it (whose record says when it ran) does not make the next
// restart bring the id back either.
func TestDataDirOlderBuildForgotDeletedWebhookIDs(t *testing.T) {
	dir := t.TempDir()
	opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync()}
	srv := fakeserver.New(t, opts...)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "100")
	transfer := func(srv *fakeserver.Server) {
		t.Helper()
		if a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`); a.status != http.StatusCreated {
			t.Fatalf("POST /v1/transfers: %d %s", a.status, a.body)
		}
	}
	del := func(srv *fakeserver.Server, id string) int {
		t.Helper()
		return rawCall(t, srv, "DELETE", "/v1/webhooks/"+id, alice.test(), "").status
	}
	deleted := func() string {
		t.Helper()
		w, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, http.NotFoundHandler(), "whsec_restartequal0123456789")
		if err != nil {
			t.Fatal(err)
		}
		if st := del(srv, w.WebhookID); st != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d", w.WebhookID, st)
		}
		return w.WebhookID
	}
	old := deleted()
	transfer(srv) // a pass (nothing to forget yet)
	srv.Advance(hooks.HistoryWindow + 24*time.Hour)
	transfer(srv) // the pass forgets old's id
	recent := deleted()
	want := map[string]int{old: http.StatusNotFound, recent: http.StatusNoContent}
	check := func(when string, srv *fakeserver.Server) {
		t.Helper()
		for _, id := range []string{old, recent} {
			if st := del(srv, id); st != want[id] {
				t.Errorf("%s: a second DELETE of %s answers %d, want %d", when, id, st, want[id])
			}
		}
	}
	check("before the restart", srv)
	srv.Close()
	olderDataDir(t, dir)

	srv = fakeserver.New(t, opts...)
	check("the older directory loaded", srv)
	srv.Advance(2 * time.Hour)
	transfer(srv) // a pass, recorded
	srv.Close()
	srv = fakeserver.New(t, opts...)
	check("after a pass and a second restart", srv)
}

// TestDataDirNewKeepsPassTimes (issue 26): a new directory's first
// snapshot says when each webhook book last pruned (never), so that its
// load never takes it for an older build's (which drops the deleted
// webhook ids past the 30 days): so do its records after a seed, a
// reset or a reset to the seed, and a snapshot rewritten after them; the
// older directory olderDataDir makes does not.
func TestDataDirNewKeepsPassTimes(t *testing.T) {
	records := func(dir string) [][]byte {
		t.Helper()
		jr, c, err := journal.Open(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		jr.Close()
		return slices.Concat(c.Snapshot, c.Journal)
	}
	for _, tc := range []struct {
		name string
		then func(t *testing.T, srv *fakeserver.Server)
	}{
		{"new", func(*testing.T, *fakeserver.Server) {}},
		{"seeded", func(t *testing.T, srv *fakeserver.Server) {
			srv.Seed(t, &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@alice"}}})
		}},
		{"reset", func(t *testing.T, srv *fakeserver.Server) {
			newAccount(t, srv, "@alice")
			if a := rawCall(t, srv, "POST", "/_fake/reset", "", ""); a.status != http.StatusNoContent {
				t.Fatalf("POST /_fake/reset: %d %s", a.status, a.body)
			}
		}},
		{"reset to the seed", func(t *testing.T, srv *fakeserver.Server) {
			srv.Seed(t, &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@alice"}}})
			if _, err := srv.ResetToSeed(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync())
			tc.then(t, srv)
			srv.Close()
			if !fakeserver.PassTimesKept(records(dir)) {
				t.Error("the directory does not say when the webhook books last pruned")
			}
			srv = fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync())
			fakeserver.StartRewrite(srv)
			fakeserver.WaitRewrite(srv)
			srv.Close()
			if recs := records(dir); !fakeserver.PassTimesKept(recs) {
				t.Error("the rewritten directory does not say when the webhook books last pruned")
			}
			olderDataDir(t, dir)
			if fakeserver.PassTimesKept(records(dir)) {
				t.Error("olderDataDir left the pass times")
			}
		})
	}
}
