package fakeserver_test

import (
	"context"
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
