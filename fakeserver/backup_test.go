package fakeserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// restoreFrom starts a server on a new data directory holding only
// snapshot (GET /_fake/snapshot's answer).
func restoreFrom(t *testing.T, snapshot []byte) *fakeserver.Server {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, journal.SnapshotFile), snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	return fakeserver.New(t, fakeserver.WithDataDir(dir))
}

// TestSnapshotBackup: GET /_fake/snapshot taken while clients pay each
// other starts a server (-data) with a consistent state: every amount
// funded is still somewhere (money conserved per asset), every transfer
// it holds is one the server made; taken while quiet, it starts a server
// with exactly the same state, webhooks included.
func TestSnapshotBackup(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithDataDir(t.TempDir()))
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	fundOn(t, srv, bob.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	ac, bc := newClient(t, srv, alice.test(), nil, noRetry), newClient(t, srv, bob.test(), nil, noRetry)
	if _, err := ac.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: "https://example.com/h", Events: []confpay.EventKind{"transfer.confirmed"}}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, pair := range []struct {
		c  *confpay.Client
		to string
	}{{ac, "@bob"}, {bc, "@alice"}, {ac, "@bob"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := pay(pair.c, pair.to, "0.01"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var mid answer
	for range 3 { // let the load get going, then take the copy
		send(t, ac, "@bob", "1")
	}
	mid = rawCall(t, srv, "GET", "/_fake/snapshot", "", "")
	close(stop)
	wg.Wait()
	if mid.status != http.StatusOK || mid.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET /_fake/snapshot: %d %s", mid.status, mid.header.Get("Content-Type"))
	}
	final := srv.Snapshot()
	restored := restoreFrom(t, mid.body).Snapshot()
	ns := restored.Networks[confpay.NetworkTest]
	var sum confpay.Amount
	for _, entries := range ns.Balances {
		for _, e := range entries {
			if e.Asset == "USDG" {
				sum = sum.Add(e.Balance)
			}
		}
	}
	if units, err := sum.UnitsOf("USDG"); err != nil || units.String() != ns.Supply["USDG"] || sum.String() != "2000" {
		t.Errorf("restored balances sum to %s USDG, supply %s, funded 2000", sum, ns.Supply["USDG"])
	}
	if len(ns.Transfers) < 3 {
		t.Errorf("the copy holds %d transfers, want at least the 3 made before it", len(ns.Transfers))
	}
	for id, tr := range ns.Transfers {
		if _, ok := final.Networks[confpay.NetworkTest].Transfers[id]; !ok {
			t.Errorf("the copy holds transfer %s (%+v), which the server never made", id, tr)
		}
	}

	// Quiet: the copy is the state.
	quiet := rawCall(t, srv, "GET", "/_fake/snapshot", "", "")
	if diff := cmp.Diff(srv.Snapshot(), restoreFrom(t, quiet.body).Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state started from a quiet copy (-server +copy):\n%s", diff)
	}
}

// TestBackupWhileKeyedRequestRuns: a backup taken while a request under an
// Idempotency-Key has made its transfer but not yet kept its answer must
// not hold the transfer without the answer: restored, a retry of the key
// replays the answer and moves no money again. (The backup waits for the
// requests under a key that are running.) With and without a data
// directory.
func TestBackupWhileKeyedRequestRuns(t *testing.T) {
	for _, withDir := range []bool{false, true} {
		t.Run(fmt.Sprintf("data-dir=%v", withDir), func(t *testing.T) {
			var opts []fakeserver.Option
			if withDir {
				opts = append(opts, fakeserver.WithDataDir(t.TempDir()), fakeserver.WithDataDirNoSync())
			}
			ran, release, gate := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
			srv := fakeserver.NewUnstartedServer(opts...)
			fakeserver.SetTestHook(srv, func(point string) {
				switch point {
				case "keyed-ran":
					close(ran)
					<-release
				case "backup-gate":
					gate <- struct{}{}
				}
			})
			srv.Start()
			t.Cleanup(srv.Close)
			alice := newAccount(t, srv, "@alice")
			newAccount(t, srv, "@bob")
			fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
			const body = `{"to":"@bob","amount":"1","asset":"USDG","memo":"once"}`

			first := make(chan answer, 1)
			go func() {
				req := newRequest("POST", srv.URL()+"/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
				req.RequestURI = ""
				a := answer{}
				if resp, err := http.DefaultClient.Do(req); err == nil {
					a.status, a.header = resp.StatusCode, resp.Header
					a.body, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				first <- a
			}()
			<-ran // the transfer is made, its answer not yet kept
			backup := make(chan []byte, 1)
			go func() { backup <- srv.Backup() }()
			var snap []byte
			select {
			case snap = <-backup: // taken while the request runs
				close(release)
			case <-gate: // the backup waits for the request
				close(release)
				snap = <-backup
			}
			a := <-first
			if a.status != http.StatusCreated {
				t.Fatalf("first request: %d %s", a.status, a.body)
			}

			restored := restoreFrom(t, snap)
			r := rawCall(t, restored, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", "k1")
			if r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, a.body) {
				t.Errorf("retry on the restored server: %d replayed=%q %s, want the first answer replayed: %s",
					r.status, r.header.Get("Idempotent-Replayed"), r.body, a.body)
			}
			ts, err := restored.Transfers("@alice", confpay.NetworkTest)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != 1 {
				t.Errorf("the restored server holds %d transfers from @alice, want 1: the key moved money twice", len(ts))
			}
		})
	}
}

// TestBackupManyEvents: a copy whose webhook state spans several of the
// snapshot's records (more than 512 events and kept answers) starts a
// server with the same state, each event and kept answer once.
func TestBackupManyEvents(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithDataDir(t.TempDir()), fakeserver.WithDataDirNoSync())
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	h := srv.Handler()
	const n = 600 // 1,200 events, 600 kept answers
	for i := range n {
		if a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`, "Idempotency-Key", fmt.Sprint("k", i), "User-Agent", fakeserver.BulkUserAgent); a.status != 201 {
			t.Fatalf("status %d %s", a.status, a.body)
		}
	}
	restored := restoreFrom(t, srv.Backup())
	want := srv.Snapshot()
	if want.Networks[confpay.NetworkTest].Events < 2*n {
		t.Fatalf("%d events, want at least %d", want.Networks[confpay.NetworkTest].Events, 2*n)
	}
	if diff := cmp.Diff(want, restored.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state started from the copy (-server +copy):\n%s", diff)
	}
	if got, want := fakeserver.IdempotencyKeys(restored), fakeserver.IdempotencyKeys(srv); got != want {
		t.Errorf("the copy holds %d Idempotency-Keys, the server %d", got, want)
	}
	first := serve(restored.Handler(), "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`, "Idempotency-Key", "k0")
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the first key on the copy: %d replayed=%q", first.status, first.header.Get("Idempotent-Replayed"))
	}
}
