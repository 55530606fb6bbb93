package fakeserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestDeliveryToATLSReceiver delivers to an https receiver whose
// certificate only WithDeliveryTLSConfig trusts, and checks that without
// the option the same delivery fails.
func TestDeliveryToATLSReceiver(t *testing.T) {
	t.Parallel()
	var got atomic.Int32
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
	}))
	defer receiver.Close()
	pool := x509.NewCertPool()
	pool.AddCert(receiver.Certificate())

	for _, tc := range []struct {
		name    string
		opts    []fakeserver.Option
		status  confpay.DeliveryStatus
		answer  int
		arrived int32
	}{
		{"trusted", []fakeserver.Option{fakeserver.WithDeliveryTLSConfig(&tls.Config{RootCAs: pool})}, confpay.DeliverySucceeded, 200, 1},
		{"untrusted", nil, confpay.DeliveryPending, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got.Store(0)
			srv := fakeserver.New(t, tc.opts...)
			alice := newAccount(t, srv, "@alice")
			newAccount(t, srv, "@bob")
			srv.AddFunds(t, "@alice", "USDG", "10")
			c := newClient(t, srv, alice.test(), nil)
			ctx := context.Background()
			sub, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: receiver.URL + "/hook", Events: []confpay.EventKind{webhookverify.KindTransferInitiated}})
			if err != nil {
				t.Fatal(err)
			}
			send(t, c, "@bob", "1")
			srv.Sync()
			ds, err := allDeliveries(ctx, c, sub.WebhookID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries = %v, %v", ds, err)
			}
			if ds[0].Status != tc.status || ds[0].ResponseStatus != tc.answer || got.Load() != tc.arrived {
				t.Errorf("delivery %+v, %d arrived; want %s with answer %d, %d arrived", ds[0], got.Load(), tc.status, tc.answer, tc.arrived)
			}
		})
	}
}
