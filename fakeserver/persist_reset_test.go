package fakeserver_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestDataDirResetEmptiesDisk: after POST /_fake/reset (and
// reset?to=seed) and the fold it starts, no file of the data directory
// holds a byte of the state before the reset: not a webhook's secret, an
// account's handle or a domain (the journal kept every earlier record
// until a fold that came only after 64 MiB more). A restart loads the
// state after the reset. Also when a fold was running at the reset (its
// journal.next and its chunks hold records from before it), when the
// last fold had failed (the next one keeps its journal.next, which holds
// records from before the reset), and when the server closed before the
// fold ended (the next start folds).
func TestDataDirResetEmptiesDisk(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		before     string // "", "running" (a fold held at its switch), "failed" (the last fold failed), "closed"
	}{
		{"empty", "/_fake/reset", ""},
		{"seed", "/_fake/reset?to=seed", ""},
		{"fold-running", "/_fake/reset", "running"},
		{"fold-failed", "/_fake/reset?to=seed", "failed"},
		{"closed-mid-fold", "/_fake/reset", "closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithoutListener(),
				fakeserver.WithResetSeed(func(s *fakeserver.Server) (any, error) {
					info, err := s.CreateAccount(fakeserver.AccountParams{Handle: "@seeded"})
					return map[string]any{"handle": info.Handle}, err
				})}
			srv := fakeserver.New(t, opts...)
			var secrets [][]byte
			addSecrets := func(handle, domain string) {
				t.Helper()
				p := newAccount(t, srv, handle)
				if err := srv.RegisterDomain(p.info.AccountID, domain); err != nil {
					t.Fatal(err)
				}
				c := newClient(t, srv, p.test(), nil, noRetry)
				wh, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: "http://127.0.0.1:1/h", Events: []confpay.EventKind{"transfer.initiated"}})
				if err != nil {
					t.Fatal(err)
				}
				secrets = append(secrets, []byte(wh.Secret.Reveal()), []byte(handle[1:]), []byte(domain))
			}
			addSecrets("@zanzibar", "zanzibar.example")
			onDisk := func() (found []string) {
				for _, name := range dirNames(t, dir) {
					b := readFile(t, dir, name)
					for _, s := range secrets {
						if bytes.Contains(b, s) {
							found = append(found, name+": "+string(s[:min(len(s), 10)])+"…")
						}
					}
				}
				return found
			}
			if len(onDisk()) == 0 {
				t.Fatal("the state is not on disk before the reset")
			}

			var release func()
			switch tc.before {
			case "running", "closed":
				held, reached := make(chan struct{}), make(chan struct{})
				var once sync.Once
				fakeserver.SetRewriteHook(srv, func(step string) error {
					if step == "switched" {
						once.Do(func() { close(reached); <-held })
					}
					return nil
				})
				release = sync.OnceFunc(func() { close(held) })
				t.Cleanup(release)
				if tc.before == "running" {
					fakeserver.StartRewrite(srv)
					<-reached
					addSecrets("@quixotic", "quixotic.example") // in journal.next, before the reset
				}
			case "failed":
				var once sync.Once
				fakeserver.SetRewriteHook(srv, func(step string) error {
					var err error
					if step == "chunk" {
						once.Do(func() { err = errors.New("a full disk") })
					}
					return err
				})
				fakeserver.StartRewrite(srv)
				fakeserver.WaitRewrite(srv)
				addSecrets("@quixotic", "quixotic.example") // in journal.next, which the next fold keeps
			}

			want := map[string]int{"/_fake/reset": 204, "/_fake/reset?to=seed": 200}[tc.path]
			if a := serve(srv.Handler(), "POST", tc.path, "", ""); a.status != want {
				t.Fatalf("%s: %d %s", tc.path, a.status, a.body)
			}
			after := srv.Snapshot()
			if tc.before == "closed" {
				// The fold the reset started is held at its switch; Close
				// stops it before its snapshot.
				closed := make(chan struct{})
				go func() { srv.Close(); close(closed) }()
				release()
				<-closed
			} else {
				if release != nil {
					release()
				}
				fakeserver.WaitRewrite(srv)
				if found := onDisk(); len(found) > 0 {
					t.Fatalf("after the reset and its fold, the directory still holds %v", found)
				}
			}
			srv.Close()

			srv2 := fakeserver.New(t, opts...)
			if diff := cmp.Diff(after, srv2.Snapshot(), restartOptions); diff != "" {
				t.Fatalf("after the reset and a restart (-before +after):\n%s", diff)
			}
			if found := onDisk(); len(found) > 0 {
				t.Fatalf("after the reset and a restart, the directory still holds %v", found)
			}
		})
	}
}

// TestDataDirResetFoldBehindKeyedRequest: a reset while a request under
// an Idempotency-Key is in flight still folds the state before it off
// the disk. "answer-pending": the reset comes between the keyed answer's
// append and its keeping (test point "keyed-closed"), so its fold is
// held back (a fold then would lose the answer); once the answer is kept
// (keptSlot) the fold runs, with no further commit. A copy of the
// directory taken at the reset (as a kill -9 leaves it: one journal
// holding the reset, no fold begun) is folded at the next start.
// "queued": the reset's record is held behind the keyed request's open
// slot (test point "keyed-ran"); once the slot closes, the record is
// appended and the fold starts (drainLocked's FoldSoon).
func TestDataDirResetFoldBehindKeyedRequest(t *testing.T) {
	// Not covered yet: "keyed-ran" (the reset's record queued behind the
	// open slot; drainLocked's FoldSoon). Its test did not wait for the
	// reset's own commit, which may start the fold too, so it failed by
	// timing and did not catch FoldSoon's removal.
	for _, at := range []string{"keyed-closed"} {
		t.Run(map[string]string{"keyed-closed": "answer-pending", "keyed-ran": "queued"}[at], func(t *testing.T) {
			dir, copyDir := t.TempDir(), t.TempDir()
			srv := fakeserver.NewUnstartedServer(fakeserver.WithDataDir(dir))
			held := make(chan struct{}, 1)
			var once sync.Once
			var armed atomic.Bool // the keyed transfer below (the SDK keys its POSTs too)
			fakeserver.SetTestHook(srv, func(point string) {
				if !armed.Load() {
					return
				}
				switch point {
				case "held":
					select {
					case held <- struct{}{}:
					default:
					}
				case at:
					once.Do(func() {
						if at == "keyed-closed" {
							srv.Reset() // returns once its record is durable
							for _, name := range dirNames(t, dir) {
								if name != "LOCK" {
									if err := os.WriteFile(filepath.Join(copyDir, name), readFile(t, dir, name), 0o600); err != nil {
										t.Error(err)
									}
								}
							}
							return
						}
						go srv.Reset()
						<-held // the reset's record waits behind this request's slot
					})
				}
			})
			srv.Start()
			t.Cleanup(srv.Close)
			alice := newAccount(t, srv, "@alice")
			newAccount(t, srv, "@bob")
			fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
			if err := srv.RegisterDomain(alice.info.AccountID, "zanzibar.example"); err != nil {
				t.Fatal(err)
			}
			c := newClient(t, srv, alice.test(), nil, noRetry)
			wh, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: "http://127.0.0.1:1/h", Events: []confpay.EventKind{"transfer.initiated"}})
			if err != nil {
				t.Fatal(err)
			}
			secrets := [][]byte{[]byte(wh.Secret.Reveal()), []byte("zanzibar")}
			onDisk := func(dir string) (found []string) {
				for _, name := range dirNames(t, dir) {
					b := readFile(t, dir, name)
					for _, s := range secrets {
						if bytes.Contains(b, s) {
							found = append(found, name+": "+string(s[:min(len(s), 10)])+"…")
						}
					}
				}
				return found
			}
			fakeserver.WaitRewrite(srv)
			if len(onDisk(dir)) == 0 {
				t.Fatal("the state is not on disk before the reset")
			}
			armed.Store(true)
			rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1","asset":"USDG"}`, "Idempotency-Key", "k1")
			fakeserver.WaitRewrite(srv)
			if found := onDisk(dir); len(found) > 0 {
				t.Fatalf("after the reset and the keyed request, the directory still holds %v", found)
			}
			if srv.Snapshot().Accounts != nil && len(srv.Snapshot().Accounts) != 0 {
				t.Fatalf("%d accounts after the reset", len(srv.Snapshot().Accounts))
			}
			if at != "keyed-closed" {
				return
			}
			if len(onDisk(copyDir)) == 0 {
				t.Fatal("the copy taken at the reset holds no state before it: nothing for the start to fold")
			}
			srv2 := fakeserver.New(t, fakeserver.WithDataDir(copyDir))
			if n := len(srv2.Snapshot().Accounts); n != 0 {
				t.Fatalf("%d accounts after a restart from the copy", n)
			}
			if found := onDisk(copyDir); len(found) > 0 {
				t.Fatalf("after a start from the copy taken at the reset, the directory still holds %v", found)
			}
		})
	}
}
