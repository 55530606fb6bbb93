// Command receiver is the webhook receiver of examples/compose: it listens
// on ADDR (default 127.0.0.1:8080), verifies each delivery's signature with
// the subscription's secret (CONFPAY_WEBHOOK_SECRET) through webhookverify,
// and prints the event. Without the secret every delivery is refused (400):
// an unverified delivery is never handled.
//
// In the compose file it shares the fakeserver's network namespace, so the
// fakeserver reaches it on loopback, the only plain-http webhook address it
// accepts.
package main

import (
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/confpay/confpay-go/webhookverify"
)

func main() {
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	secret := os.Getenv("CONFPAY_WEBHOOK_SECRET")
	var h http.Handler
	if secret == "" {
		log.Print("CONFPAY_WEBHOOK_SECRET is not set: every delivery is refused until it is")
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no secret configured", http.StatusBadRequest)
		})
	} else {
		h = webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{secret}, ErrorLog: slog.Default()}, func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			fmt.Printf("%s %s %s\n", ev.Time().UTC().Format(time.RFC3339), ev.Kind(), ev.ID())
		})
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks", h)
	log.Printf("receiving deliveries at http://%s/hooks", addr)
	s := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(s.ListenAndServe())
}
