package fakeserver_test

import (
	"net/http"
	"testing"

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
