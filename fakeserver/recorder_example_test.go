package fakeserver_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// A service's own webhook handler, built with its secret before any event
// exists, receives signed deliveries in process: no URL, no socket. In a
// test, srv.AddWebhook(t, ...) does the same and fails the test on error,
// and srv.Record(t, "@alice") subscribes a recorder to assert on.
func ExampleServer_SubscribeHandler() {
	srv := fakeserver.NewUnstartedServer() // in a test: fakeserver.New(t, fakeserver.WithoutListener())
	defer srv.Close()
	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	_ = srv.Fund("@alice", confpay.NetworkTest, "USDG", "100")

	const secret = "whsec_example0123456789abcdef" // your service's configuration
	var mu sync.Mutex
	var seen []string
	handler := webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{secret}},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ev.Kind())
		})
	_, _ = srv.SubscribeHandler("@alice", confpay.NetworkTest, handler, secret,
		confpay.EventTransferInitiated, confpay.EventTransferConfirmed)

	_, _ = srv.Client(alice.TestKey).Transfers.Create(context.Background(),
		&confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")})
	srv.Advance(time.Second) // one block: the transfer confirms; Advance waits for the deliveries
	mu.Lock()
	fmt.Println(seen)
	mu.Unlock()
	// Output: [transfer.initiated transfer.confirmed]
}
