package confpay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/confpay/confpay-go"
)

// exampleServer is a tiny stand-in for the service, enough for the examples.
func exampleServer() *httptest.Server {
	mux := http.NewServeMux()
	var mu sync.Mutex
	replies := map[string]string{} // idempotency key -> stored answer
	mux.HandleFunc("POST /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_example")
		key := r.Header.Get("Idempotency-Key")
		if body, ok := replies[key]; ok {
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(201)
			fmt.Fprint(w, body)
			return
		}
		var in struct {
			To           string `json:"to"`
			Confidential *bool  `json:"confidential"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.To == "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb" && (in.Confidential == nil || *in.Confidential) {
			w.WriteHeader(422)
			fmt.Fprint(w, `{"code":"recipient_not_confidential_ready","message":"the recipient wallet cannot hold confidential tokens"}`)
			return
		}
		body := fmt.Sprintf(`{"transfer_id":"tr_%d","status":"pending","to":%q,"confidential":%v,"tx_hash":"0x00","created_at":"2026-07-02T14:23:09Z"}`,
			len(replies)+1, in.To, in.Confidential == nil || *in.Confidential)
		replies[key] = body
		w.WriteHeader(201)
		fmt.Fprint(w, body)
	})
	mux.HandleFunc("GET /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		const total = 5
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"transfers":[`)
		for i := offset; i < min(offset+limit, total); i++ {
			if i > offset {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"transfer_id":"tr_%d","status":"confirmed","to":"@bob","confidential":true}`, total-i)
		}
		fmt.Fprintf(w, `],"has_more":%v}`, offset+limit < total)
	})
	return httptest.NewServer(mux)
}

func ExampleNewClient() {
	client, err := confpay.NewClient("hc_test_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.Network(), client.ChainID())
	fmt.Println(client) // the key is never printed

	_, err = confpay.NewClient("sk_4eC39HqLyjWDarjtT1zdp7dc")
	fmt.Println(err)
	// Output:
	// test 46630
	// confpay.Client(network=test, base=https://api.confpay.example)
	// confpay: API key must start with hc_test_ or hc_live_
}

// A transfer to a wallet without confidential token support is refused;
// the caller decides to send it publicly instead.
func ExampleTransfersService_Create() {
	srv := exampleServer()
	defer srv.Close()
	client, err := confpay.NewClient("hc_test_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh", confpay.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	amount, err := confpay.ParseAmount("12.50")
	if err != nil {
		log.Fatal(err)
	}
	params := &confpay.TransferCreateParams{To: "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb", Amount: amount}
	t, err := client.Transfers.Create(ctx, params)
	switch {
	case errors.Is(err, confpay.ErrRecipientNotConfidentialReady):
		fmt.Println("recipient is not confidential-ready; sending publicly")
		params.Confidential = confpay.Ptr(false)
		t, err = client.Transfers.Create(ctx, params)
		if err != nil {
			log.Fatal(err)
		}
	case errors.Is(err, confpay.ErrInsufficientBalance):
		log.Fatal("top up first")
	case err != nil:
		var apiErr *confpay.APIError
		if errors.As(err, &apiErr) {
			log.Fatalf("refused: %s (request %s)", apiErr.Code, apiErr.RequestID)
		}
		log.Fatal(err)
	}
	fmt.Println(t.TransferID, t.Status, "confidential:", t.Confidential)

	// Client-side checks send nothing.
	_, err = client.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("0.0000001")})
	fmt.Println(err, errors.Is(err, confpay.ErrInvalidRequest))
	// Output:
	// recipient is not confidential-ready; sending publicly
	// tr_1 pending confidential: false
	// confpay: amount has more than 6 decimals, the most USDG allows true
}

func ExampleTransfersService_All() {
	srv := exampleServer()
	defer srv.Close()
	client, err := confpay.NewClient("hc_test_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh", confpay.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	// Pages of two, fetched as the loop needs them.
	for t, err := range client.Transfers.All(context.Background(), &confpay.TransferListParams{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.TransferID, t.Status)
	}
	// Output:
	// tr_5 confirmed
	// tr_4 confirmed
	// tr_3 confirmed
	// tr_2 confirmed
	// tr_1 confirmed
}

// Passing your own idempotency key makes a retry of the whole call safe:
// the service replays the first answer instead of paying twice.
func ExampleWithIdempotencyKey() {
	srv := exampleServer()
	defer srv.Close()
	client, err := confpay.NewClient("hc_test_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh", confpay.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	params := &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")}
	for range 2 {
		var resp confpay.Response
		t, err := client.Transfers.Create(context.Background(), params,
			confpay.WithIdempotencyKey("order-1234"), confpay.WithResponse(&resp))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.TransferID, "replayed:", resp.IdempotentReplayed)
	}
	// Output:
	// tr_1 replayed: false
	// tr_1 replayed: true
}
