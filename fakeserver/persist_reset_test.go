package fakeserver_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
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
