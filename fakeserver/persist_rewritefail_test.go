package fakeserver_test

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
// snapshot only: the server logs one warning without record contents
// that says what follows (a retry, or, after the last step, that the
// rewrite stood), keeps answering creates (each durable), tries a
// rewrite again only after the journal has grown by the threshold again,
// and that one succeeds; a restart then loads exactly the acknowledged
// state. Before, the journal stopped and every later write failed.
func TestDataDirRewriteFailureContinues(t *testing.T) {
	for _, step := range []string{"switched", "chunk", "barrier", "snapshot-synced", "snapshot-renamed", "journal-renamed", "journal.next"} {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data") // 0700: no warning about its mode
			logger, logged := newTextLog()
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
			firstAt := -1      // creates answered when the first rewrite switched
			retriedAt := -1    // creates answered when the next rewrite switched
			succeeded := false // a rewrite after the failed one ended
			fakeserver.SetRewriteHook(srv, func(s string) error {
				mu.Lock()
				defer mu.Unlock()
				if step == "journal.next" && failedAt < 0 {
					failedAt = 0 // BeginRewrite failed: this is the next one
				}
				if s == "switched" && firstAt < 0 {
					firstAt = creates
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
			// The first rewrite was due once the journal, holding the
			// setup's records, had grown past the threshold: a retry waits
			// for as much growth since the failure, so at least as many
			// creates (less one that may have been under way at a step).
			// A rewrite that stood (journal-renamed) is due as any.
			if step != "journal.next" && step != "journal-renamed" && retriedAt-failedAt < firstAt-1 {
				t.Errorf("the rewrite was tried again %d creates after it failed; the first was due after %d", retriedAt-failedAt, firstAt)
			}
			mu.Unlock()
			want := srv.Snapshot()
			if _, err := os.Lstat(filepath.Join(dir, journal.SnapshotFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a partial snapshot is left: %v", err)
			}
			srv.Close()
			log := logged.String()
			if n := strings.Count(log, "level=WARN"); n != 1 || !strings.Contains(log, fail.Error()) {
				t.Errorf("%d warnings logged, want 1 naming the error:\n%s", n, log)
			}
			// The warning says what follows: the rewrite stood (its last
			// step failed), or the server tries again.
			if stood := step == "journal-renamed"; strings.Contains(log, "tries again") == stood || strings.Contains(log, "the snapshot was rewritten") != stood {
				t.Errorf("the warning after a failure at %s:\n%s", step, log)
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

// TestDataDirRewriteRetryForgets: a rewrite fails (at its switch, or
// once its snapshot stands), state changes, and a forgetting (a reset,
// or the five other ways of TestDataDirRewriteForgets in turn) happens while
// the retry is pending or during the retry (after its chunks are
// encoded); the retry keeps journal.next, which holds every record since
// the failed rewrite's switch. A kill -9 while pending, and at the
// retry's snapshot-synced and snapshot-renamed steps, and a clean
// restart after it, each load exactly the acknowledged state, the held
// payments, events and webhooks included. (The retry's journal-renamed
// state is the clean restart's: nothing is committed after it.)
func TestDataDirRewriteRetryForgets(t *testing.T) {
	reset := forgettings[0].forget
	// The other five ways of TestDataDirRewriteForgets, one after another.
	others := func(t *testing.T, e *forgetEnv) {
		for _, f := range forgettings[1:] {
			f.forget(t, e)
		}
	}
	type testCase struct{ failed, when, forget string }
	var cases []testCase
	for _, failed := range []string{"switched", "snapshot-renamed"} {
		for _, when := range []string{"pending", "retry"} {
			for _, forget := range []string{"reset", "others"} {
				cases = append(cases, testCase{failed, when, forget})
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.failed+"/"+tc.when+"/"+tc.forget, func(t *testing.T) {
			forget := others
			if tc.forget == "reset" {
				forget = reset
			}
			dir := t.TempDir()
			e, opts := newForgetEnv(t, dir)
			srv := e.srv
			restart := func(d string) *fakeserver.Server {
				return fakeserver.New(t, append([]fakeserver.Option{fakeserver.WithDataDir(d)}, opts[1:]...)...)
			}
			ac := newClient(t, srv, e.alice, nil, noRetry)
			fakeserver.SetRewriteHook(srv, func(step string) error {
				if step == tc.failed {
					return errors.New("injected")
				}
				return nil
			})
			fakeserver.StartRewrite(srv)
			fakeserver.WaitRewrite(srv)
			// Changes after the failed rewrite's switch, in journal.next.
			send(t, ac, "@bob", "0.03")
			newAccount(t, srv, "@erin")
			if tc.when == "pending" {
				forget(t, e)
				if tc.forget != "reset" {
					send(t, ac, "@bob", "0.04")
				}
				// A reset folds at once, in the background: the copy
				// below stands for a kill -9 only with no fold running.
				fakeserver.WaitRewrite(srv)
			}
			pendingWant := viewOf(t, srv)
			pending := t.TempDir()
			copyDataDir(t, dir, pending) // a kill -9 while the retry is pending

			crashes := map[string]string{} // a kill -9 at a step of the retry
			var once sync.Once
			fakeserver.SetRewriteHook(srv, func(step string) error {
				switch step {
				case "encoded":
					if tc.when == "retry" {
						once.Do(func() { forget(t, e) })
					}
				case "snapshot-synced", "snapshot-renamed":
					crashes[step] = t.TempDir()
					copyDataDir(t, dir, crashes[step])
				}
				return nil
			})
			fakeserver.StartRewrite(srv)
			fakeserver.WaitRewrite(srv)
			want := viewOf(t, srv)
			srv.Close()
			if len(crashes) != 2 {
				t.Fatalf("the retry did not finish: crash copies at %v", slices.Sorted(maps.Keys(crashes)))
			}
			srv2 := restart(pending)
			if diff := cmp.Diff(pendingWant, viewOf(t, srv2), restartOptions); diff != "" {
				t.Errorf("after a kill -9 while the retry was pending (-before +after):\n%s", diff)
			}
			srv2.Close()
			crashes["a clean restart"] = dir
			for step, d := range crashes {
				srv2 := restart(d)
				if diff := cmp.Diff(want, viewOf(t, srv2), restartOptions); diff != "" {
					t.Errorf("after a kill -9 at the retry's %s (-before +after):\n%s", step, diff)
				}
				srv2.Close()
			}
		})
	}
}
