package webhookverify_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/confpay/confpay-go/webhookverify"
)

// secret is the one shown once when the subscription was created. Real code reads
// it from configuration, never from source.
const secret = "whsec_Q2x1c3RlclNlY3JldEV4YW1wbGUx"

// signedRequest builds a delivery the way the service sends one.
func signedRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewBufferString(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhookverify.SignatureHeader, webhookverify.Sign(secret, []byte(body)))
	r.Header.Set(webhookverify.EventIDHeader, "evt_8k2m")
	r.Header.Set(webhookverify.AttemptHeader, "1")
	return r
}

const confirmedBody = `{"event":"transfer.confirmed","event_id":"evt_8k2m","account":"@alice","direction":"received","counterparty":"@bob","asset":"USDG","confidential":true,"tx_hash":"0x5e1f","transfer_id":"tr_4h7q","timestamp":"2026-07-02T14:23:09Z"}`

// Verifying a delivery by hand: read the raw body, check the signature over
// exactly those bytes, and only then decode it.
func Example_verify() {
	r := signedRequest(confirmedBody)

	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		fmt.Println("read:", err)
		return
	}
	if err := webhookverify.Verify(secret, body, r.Header.Get(webhookverify.SignatureHeader)); err != nil {
		fmt.Println("rejected:", err) // answer 401
		return
	}
	ev, err := webhookverify.ParseEvent(body)
	if err != nil {
		fmt.Println("bad payload:", err) // answer 400
		return
	}
	fmt.Println("verified", ev.Kind(), ev.ID())

	// The same signature does not cover a changed body.
	tampered := bytes.Replace(body, []byte("@bob"), []byte("@eve"), 1)
	err = webhookverify.Verify(secret, tampered, r.Header.Get(webhookverify.SignatureHeader))
	fmt.Println(errors.Is(err, webhookverify.ErrSignatureMismatch))
	// Output:
	// verified transfer.confirmed evt_8k2m
	// true
}

// The Handler middleware verifies, parses and deduplicates; the function it
// wraps only sees verified events, each once.
func ExampleHandler() {
	h := webhookverify.Handler(webhookverify.HandlerOptions{
		Secrets: []string{secret},                // add the new one here while rotating
		Store:   webhookverify.NewMemoryStore(0), // keeps ids for 25 h
	}, func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
		fmt.Println("handling", ev.Kind(), ev.ID())
		w.WriteHeader(http.StatusNoContent)
	})
	// In a server: http.Handle("POST /webhooks", h)

	for attempt := 1; attempt <= 2; attempt++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signedRequest(confirmedBody))
		fmt.Println("attempt", attempt, "->", w.Code)
	}

	forged := signedRequest(confirmedBody)
	forged.Header.Set(webhookverify.SignatureHeader, webhookverify.Sign("whsec_guess", []byte(confirmedBody)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, forged)
	fmt.Println("forged ->", w.Code)
	// Output:
	// handling transfer.confirmed evt_8k2m
	// attempt 1 -> 204
	// attempt 2 -> 200
	// forged -> 401
}

// ConstructEvent verifies and parses in one call; a type switch then gives
// the kind-specific fields.
func ExampleConstructEvent() {
	r := signedRequest(confirmedBody)
	body, _ := io.ReadAll(r.Body)

	ev, err := webhookverify.ConstructEvent(body, r.Header.Get(webhookverify.SignatureHeader), "whsec_old_secret", secret)
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	switch e := ev.(type) {
	case *webhookverify.TransferEvent:
		fmt.Printf("%s: %s %s with %s (confidential: %v)\n", e.Event, e.Account, e.Direction, e.Counterparty, e.Confidential)
	case *webhookverify.AgentTransactionEvent:
		fmt.Println("agent payment", e.TransactionID, "by", e.Agent)
	case *webhookverify.PolicyUpdatedEvent:
		fmt.Println("policy", e.PolicyID, "changed:", e.ChangedFields)
	case *webhookverify.UnknownEvent:
		fmt.Println("new kind, raw payload of", len(e.Raw), "bytes")
	}
	// Output:
	// transfer.confirmed: @alice received with @bob (confidential: true)
}

// Sign is what the service (and the fakeserver) computes; tests use it to
// build deliveries.
func ExampleSign() {
	fmt.Println(webhookverify.Sign("whsec_example", []byte(`{"event":"transfer.confirmed"}`)))
	// Output: c60c3f34db13b4059b0b15621ed43bb2f64652d359a7afa744dea1beaafce07b
}

// A receiver that verifies many deliveries keys the HMAC once: build a
// Verifier at start (with the new secret first during a rotation) and share
// it between requests.
func ExampleNewVerifier() {
	v, err := webhookverify.NewVerifier(secret, "whsec_previous_secret_kept_for_24h")
	if err != nil {
		panic(err) // an empty secret: a configuration mistake
	}
	body := []byte(confirmedBody)
	fmt.Println(v.Verify(body, webhookverify.Sign(secret, body)))
	fmt.Println(errors.Is(v.Verify(body, webhookverify.Sign("whsec_forged", body)), webhookverify.ErrSignatureMismatch))
	fmt.Println(v) // never prints a secret
	// Output:
	// <nil>
	// true
	// webhookverify.Verifier{Secrets: [2 redacted]}
}
