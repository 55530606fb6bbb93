package fakeserver_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// TestDataDirRewriteFailureContinues: a rewrite that fails at one of its
// background steps (a step of the fuzzy snapshot, or the snapshot's
// write before or after its rename, or the last step), or whose new
// journal file cannot be made (a full disk: journal.next a link to
// /dev/full), costs that
// snapshot only: the server logs one warning without record contents,
// keeps answering creates (each durable), tries a rewrite again only
// after the journal has grown, and that one succeeds; a restart then
// loads exactly the acknowledged state. Before, the journal stopped and
// every later write failed.
func TestDataDirRewriteFailureContinues(t *testing.T) {
	for _, step := range []string{"switched", "chunk", "barrier", "snapshot-synced", "snapshot-renamed", "journal-renamed", "journal.next"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			var logMu sync.Mutex
			var logged strings.Builder
			logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
				logMu.Lock()
				defer logMu.Unlock()
				return logged.Write(p)
			}), nil))
			opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithoutListener(), fakeserver.WithDataDirRewriteAt(8 << 10), fakeserver.WithLogger(logger)}
			srv := fakeserver.New(t, opts...)
			alice := newAccount(t, srv, "@alice")
			newAccount(t, srv, "@bob")
			fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")

			fail := errors.New("injected: no space left on device")
			if step == "journal.next" {
				if _, err := os.Stat("/dev/full"); err != nil {
					t.Skip("no /dev/full")
				}
				if err := os.Symlink("/dev/full", filepath.Join(dir, journal.NextFile)); err != nil {
					t.Fatal(err)
				}
				fail = syscall.ENOSPC
			}
			var mu sync.Mutex
			creates := 0       // answered so far
			failedAt := -1     // creates answered when the step failed
			retriedAt := -1    // creates answered when the next rewrite switched
			succeeded := false // a rewrite after the failed one ended
			fakeserver.SetRewriteHook(srv, func(s string) error {
				mu.Lock()
				defer mu.Unlock()
				if step == "journal.next" && failedAt < 0 {
					failedAt = 0 // BeginRewrite failed: this is the next one
				}
				switch {
				case failedAt < 0 && s == step:
					failedAt = creates
					return fail
				case failedAt >= 0 && s == "switched" && retriedAt < 0:
					retriedAt = creates
				case failedAt >= 0 && retriedAt >= 0 && s == "journal-renamed":
					succeeded = true
				}
				return nil
			})
			h := srv.Handler()
			for i := 0; ; i++ {
				mu.Lock()
				done := succeeded
				mu.Unlock()
				if done {
					break
				}
				if i == 3000 {
					t.Fatalf("no rewrite succeeded after the failed one (%d creates; failed at %d, retried at %d)", i, failedAt, retriedAt)
				}
				if a := serveRecover(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`); a.status != 201 {
					t.Fatalf("create %d after the rewrite failed at %s: status %d %s", i, step, a.status, a.body)
				}
				mu.Lock()
				creates++
				mu.Unlock()
			}
			fakeserver.WaitRewrite(srv)
			mu.Lock()
			if step != "journal.next" && retriedAt-failedAt < 2 {
				t.Errorf("the rewrite was tried again %d creates after it failed", retriedAt-failedAt)
			}
			mu.Unlock()
			want := srv.Snapshot()
			if _, err := os.Lstat(filepath.Join(dir, journal.SnapshotFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a partial snapshot is left: %v", err)
			}
			srv.Close()
			logMu.Lock()
			log := logged.String()
			logMu.Unlock()
			if n := strings.Count(log, "level=WARN"); n != 1 || !strings.Contains(log, fail.Error()) {
				t.Errorf("%d warnings logged, want 1 naming the error:\n%s", n, log)
			}
			for _, secret := range []string{"@alice", "@bob", alice.info.AccountID} {
				if strings.Contains(log, secret) {
					t.Errorf("the log holds %q:\n%s", secret, log)
				}
			}

			srv2 := fakeserver.New(t, opts[:2]...)
			if diff := cmp.Diff(want, srv2.Snapshot(), restartOptions); diff != "" {
				t.Fatalf("state after restart (-acknowledged +loaded):\n%s", diff)
			}
		})
	}
}

// serveRecover is serve, with a handler's panic (the server refusing to
// answer once its journal stopped) as status 0.
func serveRecover(h http.Handler, method, path, key, body string, headers ...string) (a answer) {
	defer func() {
		if p := recover(); p != nil {
			a = answer{body: []byte(fmt.Sprint(p))}
		}
	}()
	return serve(h, method, path, key, body, headers...)
}
