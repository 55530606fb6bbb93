package confpay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/confpay/confpay-go"
)

// heldServer stands in for the service with an agent whose approval
// threshold is 50 USDG: above it, a payment is held (202).
func heldServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			To     string         `json:"to"`
			Amount confpay.Amount `json:"amount"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		if in.Amount.Cmp(confpay.MustParseAmount("50")) > 0 {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"transaction_id":"atx_7h8j9k0l1m2n","status":"pending_approval","to":%q,"asset":"USDG","confidential":true,"requested_at":"2026-07-02T14:23:09Z","expires_at":"2026-07-03T14:23:09Z"}`, in.To)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"transfer_id":"tr_3k9d8f7g6h5j","status":"pending","to":%q,"confidential":true,"tx_hash":"0x8f2a","created_at":"2026-07-02T14:23:09Z"}`, in.To)
	}))
}

// An agent's payment above its approval threshold is held for the owner:
// Create returns no Transfer but a *HeldError carrying the held payment,
// so a held payment can never be taken for a submitted one.
func ExampleHeldError() {
	srv := heldServer()
	defer srv.Close()
	agent, err := confpay.NewClient("hc_test_4eC39HqLyjWDarjtT1zdp7dcAgEnTkEy", confpay.WithBaseURL(srv.URL))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	for _, amount := range []string{"20", "120"} {
		t, err := agent.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@cloudshop", Amount: confpay.MustParseAmount(amount)})
		var held *confpay.HeldError
		switch {
		case errors.As(err, &held):
			// Nothing moved: the owner approves or rejects it with
			// Agents.Approve or Agents.Reject before it expires.
			fmt.Println(amount, "held:", held.Payment.TransactionID, held.Payment.Status, "until", held.Payment.ExpiresAt.Format("2006-01-02 15:04"))
		case err != nil:
			fmt.Println(amount, "refused:", err)
		default:
			fmt.Println(amount, "sent:", t.TransferID, t.Status)
		}
	}
	// Output:
	// 20 sent: tr_3k9d8f7g6h5j pending
	// 120 held: atx_7h8j9k0l1m2n pending_approval until 2026-07-03 14:23
}
