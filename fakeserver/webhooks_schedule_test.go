package fakeserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestWithoutDeliveryJitter checks, from outside the package, that a
// receiver that always fails sees every attempt at its exact nominal
// instant, and none after the 24 h mark.
func TestWithoutDeliveryJitter(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")

	var mu sync.Mutex
	var at []time.Duration
	var start time.Time
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, srv.Now().Sub(start))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer receiver.Close()

	c := newClient(t, srv, alice.test(), nil)
	ctx := context.Background()
	sub, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: receiver.URL, Events: []confpay.EventKind{webhookverify.KindTransferInitiated}})
	if err != nil {
		t.Fatal(err)
	}
	start = srv.Now()
	send(t, c, "@bob", "1")
	srv.Sync()
	srv.Advance(48 * time.Hour)

	want := []time.Duration{0, 5 * time.Second}
	for _, d := range []time.Duration{5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour} {
		want = append(want, want[len(want)-1]+d)
	}
	want = append(want, 24*time.Hour)
	mu.Lock()
	got := slices.Clone(at)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("attempts at %v, want %v", got, want)
	}
	ds, err := allDeliveries(ctx, c, sub.WebhookID)
	if err != nil || len(ds) != 1 || ds[0].Status != confpay.DeliveryFailed || ds[0].Attempts != 8 || ds[0].ResponseStatus != 503 {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}
}
