package fakeserver_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
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
