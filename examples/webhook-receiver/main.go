// Command webhook-receiver receives signed webhook deliveries with
// webhookverify's handler: it subscribes a local endpoint on the embedded
// fakeserver, makes a payment, and prints every verified event as it
// arrives. Deliveries with a bad signature never reach the handler, and a
// redelivered event id is handled once.
//
//	go run ./examples/webhook-receiver
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	srv := fakeserver.NewServer(fakeserver.WithRealClock(), fakeserver.WithBlockTime(200*time.Millisecond))
	defer srv.Close()
	alice, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		return err
	}
	if _, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true}); err != nil {
		return err
	}
	if err := srv.Fund("@alice", confpay.NetworkTest, confpay.AssetUSDG, "50"); err != nil {
		return err
	}
	client := srv.Client(alice.TestKey)

	// The receiver listens first, so that the subscription has a URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	events := make(chan webhookverify.Event, 16)
	var secret string
	mux := http.NewServeMux()
	receiver := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	defer receiver.Close()

	sub, err := client.Webhooks.Create(ctx, &confpay.WebhookCreateParams{
		URL:    "http://" + ln.Addr().String() + "/webhooks",
		Events: []confpay.EventKind{confpay.EventTransferInitiated, confpay.EventTransferConfirmed},
	})
	if err != nil {
		return err
	}
	secret = sub.Secret.Reveal() // shown once: store it like a password
	fmt.Fprintf(out, "subscribed %s to %v\n", sub.WebhookID, sub.Events)

	mux.Handle("/webhooks", webhookverify.Handler(webhookverify.HandlerOptions{
		Secrets: []string{secret},
		Store:   webhookverify.NewMemoryStore(0),
	}, func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
		events <- ev
	}))
	go func() { _ = receiver.Serve(ln) }()

	t, err := client.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "paid @bob: %s\n", t.TransferID)

	for seen := 0; seen < 2; seen++ {
		select {
		case ev := <-events:
			if te, ok := ev.(*webhookverify.TransferEvent); ok {
				fmt.Fprintf(out, "verified %s %s: %s %s %s, %s\n", te.Kind(), te.ID(), te.Account, te.Direction, te.Counterparty, te.TransferID)
			} else {
				fmt.Fprintf(out, "verified %s %s\n", ev.Kind(), ev.ID())
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for deliveries: %w", ctx.Err())
		}
	}

	for d, err := range client.Webhooks.AllDeliveries(ctx, sub.WebhookID, nil) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "delivery %s of %s: %s after %d attempt(s), last answer %d\n", d.DeliveryID, d.Event, d.Status, d.Attempts, d.ResponseStatus)
	}
	return nil
}
