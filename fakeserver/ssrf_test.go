package fakeserver_test

import (
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
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
