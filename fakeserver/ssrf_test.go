package fakeserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/internal/tcpforward"
)

// TestWebhookCannotResetTheServer is the self-SSRF exploit, over HTTP
// against the real listener: a caller holding nothing but a test API key
// subscribes a webhook to the server's own /_fake/reset and makes one
// transfer. The subscription is refused, and the state survives.
func TestWebhookCannotResetTheServer(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")

	a := rawCall(t, srv, "POST", "/v1/webhooks", alice.test(),
		`{"url":"`+srv.URL()+`/_fake/reset","events":["transfer.initiated","transfer.confirmed"]}`)
	if e := a.err(); a.status != 400 || e.Code != confpay.CodeInvalidRequest || e.Param != "url" {
		t.Errorf("subscribing to the server's own /_fake/reset: got %d %s (param %q), want 400 invalid_request (param url)", a.status, e.Code, e.Param)
	}
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "1")
	srv.Sync()
	srv.Advance(2 * time.Second) // past the 1 s block time
	if n := len(srv.Accounts()); n != 2 {
		t.Fatalf("after one transfer the server holds %d accounts, want 2: a delivery reset it", n)
	}
	if got := settled(t, srv, "@bob", confpay.NetworkTest, "USDG"); got != "1" {
		t.Fatalf("bob's settled USDG is %s, want 1", got)
	}
}

// hookedTransfer subscribes the payer to url and makes one transfer from
// it to @bob on srv, then runs everything due (the delivery included). It
// returns the subscription's deliveries.
func hookedTransfer(t *testing.T, srv *fakeserver.Server, payer party, url string) []*confpay.Delivery {
	t.Helper()
	c := newClient(t, srv, payer.test(), nil)
	w, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: url, Events: []confpay.EventKind{"transfer.initiated"}})
	if err != nil {
		t.Fatalf("subscribing %s: %v", url, err)
	}
	send(t, c, "@bob", "1")
	srv.Sync()
	if len(srv.Accounts()) == 0 {
		t.Fatalf("the delivery to %s reset the server that sent it", url)
	}
	ds, err := allDeliveries(context.Background(), c, w.WebhookID)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// wantRefusedDelivery fails the test unless ds is one attempt that the
// admin interface answered 403.
func wantRefusedDelivery(t *testing.T, what string, ds []*confpay.Delivery) {
	t.Helper()
	if len(ds) != 1 || ds[0].Attempts != 1 || ds[0].ResponseStatus != http.StatusForbidden {
		t.Errorf("%s: deliveries %+v, want one attempt answered 403", what, ds)
	}
}

// TestWebhookThroughForwarderCannotReset: a webhook pointed at a local TCP
// forwarder (the address check sees a port that is not the server's) whose
// other end is the server's own /_fake/reset is refused 403 by /_fake and
// resets nothing, whether the server listens itself or is mounted through
// Handler() in another http.Server.
func TestWebhookThroughForwarderCannotReset(t *testing.T) {
	t.Parallel()
	for _, mount := range []string{"listener", "Handler()"} {
		t.Run(mount, func(t *testing.T) {
			t.Parallel()
			srv := fakeserver.New(t)
			base := srv.URL()
			if mount == "Handler()" {
				hs := httptest.NewServer(srv.Handler())
				t.Cleanup(hs.Close)
				base = hs.URL
			}
			alice := newAccount(t, srv, "@alice")
			newAccount(t, srv, "@bob")
			srv.AddFunds(t, "@alice", "USDG", "100")
			fwd := tcpforward.Start(t, strings.TrimPrefix(base, "http://"))
			ds := hookedTransfer(t, srv, alice, "http://"+fwd+"/_fake/reset")
			if n := len(srv.Accounts()); n != 2 {
				t.Errorf("the server holds %d accounts, want 2", n)
			}
			wantRefusedDelivery(t, "through the forwarder", ds)
		})
	}
}

// TestWebhookCannotResetAnotherServer: two fakeservers on one host (two CI
// jobs on one runner). A test key on server A points a webhook at server
// B's /_fake/reset: B refuses it 403 and keeps its state.
func TestWebhookCannotResetAnotherServer(t *testing.T) {
	t.Parallel()
	for _, mount := range []string{"listener", "Handler()"} {
		t.Run(mount, func(t *testing.T) {
			t.Parallel()
			a, b := fakeserver.New(t), fakeserver.New(t)
			bURL := b.URL()
			if mount == "Handler()" {
				hs := httptest.NewServer(b.Handler())
				t.Cleanup(hs.Close)
				bURL = hs.URL
			}
			newAccount(t, b, "@carol")
			b.AddFunds(t, "@carol", "USDG", "5")
			before := b.Snapshot()
			alice := newAccount(t, a, "@alice")
			newAccount(t, a, "@bob")
			a.AddFunds(t, "@alice", "USDG", "100")
			ds := hookedTransfer(t, a, alice, bURL+"/_fake/reset")
			checkUnchanged(t, b, before, "a delivery from another server")
			wantRefusedDelivery(t, "to another server", ds)
		})
	}
}
