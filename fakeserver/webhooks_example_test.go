package fakeserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// A local receiver subscribed to transfer.confirmed gets a signed event
// when a payment settles. Sync and Advance return once every delivery due
// has been attempted, so the test needs no sleeping.
func ExampleServer_webhooks() {
	srv := fakeserver.NewServer()
	defer srv.Close()

	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	_ = srv.Fund(alice.AccountID, confpay.NetworkTest, "USDG", "100")
	client := srv.Client(alice.TestKey)
	ctx := context.Background()

	// The receiver verifies every delivery with the subscription's secret,
	// which the create answer shows once.
	var (
		mu      sync.Mutex
		handler http.Handler
		got     []webhookverify.Event
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := handler
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer receiver.Close()
	hook, err := client.Webhooks.Create(ctx, &confpay.WebhookCreateParams{
		URL:    receiver.URL + "/webhooks",
		Events: []confpay.EventKind{webhookverify.KindTransferConfirmed},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	mu.Lock()
	handler = webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{hook.Secret.Reveal()}},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
		})
	mu.Unlock()

	if _, err := client.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("12.50")}); err != nil {
		fmt.Println(err)
		return
	}
	srv.Advance(time.Second) // the transfer confirms; its event is delivered

	mu.Lock()
	for _, ev := range got {
		te := ev.(*webhookverify.TransferEvent)
		fmt.Println(te.Event, te.Account, te.Direction, te.Counterparty, te.Asset)
	}
	mu.Unlock()
	page, _ := client.Webhooks.Deliveries(ctx, hook.WebhookID, nil)
	ds := page.Deliveries
	fmt.Println(len(ds), ds[0].Status, ds[0].Attempts, ds[0].ResponseStatus)
	// Output:
	// transfer.confirmed @alice sent @bob USDG
	// 1 succeeded 1 200
}
