package confpay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/confpay/confpay-go/webhookverify"
)

// TestUnknownValuesDecode checks that a status, trigger or event kind the
// SDK does not know yet still decodes, as its own value.
func TestUnknownValuesDecode(t *testing.T) {
	var tr Transfer
	var at AgentTransaction
	var d Delivery
	var w Webhook
	for _, c := range []struct {
		body string
		v    any
	}{
		{`{"status":"reversed","to":"@bob","confidential":true}`, &tr},
		{`{"transaction_id":"atx_1","status":"escalated","requested_at":"2026-07-02T14:23:09Z","expires_at":"2026-07-03T14:23:09Z"}`, &at},
		{`{"delivery_id":"dlv_1","event":"account.frozen","status":"abandoned","trigger":"manual"}`, &d},
		{`{"webhook_id":"wh_1","events":["transfer.confirmed","account.frozen"],"created_at":"2026-07-02T14:23:09Z"}`, &w},
	} {
		if err := json.Unmarshal([]byte(c.body), c.v); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
	}
	if tr.Status != "reversed" || at.Status != "escalated" || d.Event != "account.frozen" || d.Status != "abandoned" ||
		d.Trigger != "manual" || !slices.Equal(w.Events, []EventKind{EventTransferConfirmed, "account.frozen"}) {
		t.Errorf("decoded %+v %+v %+v %+v", tr, at, d, w)
	}
}

// TestEventKindsAreWebhookverifys checks that the root package's event
// kinds are webhookverify's, in the same order.
func TestEventKindsAreWebhookverifys(t *testing.T) {
	kinds := EventKinds()
	want := webhookverify.Kinds()
	if len(kinds) != 7 || len(kinds) != len(want) {
		t.Fatalf("EventKinds() = %v", kinds)
	}
	for i, k := range kinds {
		if string(k) != want[i] {
			t.Errorf("EventKinds()[%d] = %s, webhookverify says %s", i, k, want[i])
		}
	}
	named := []EventKind{EventTransferInitiated, EventTransferConfirmed, EventTransferFailed, EventAgentTransactionPendingApproval,
		EventAgentTransactionApproved, EventAgentTransactionRejected, EventAgentPolicyUpdated}
	if !slices.Equal(kinds, named) {
		t.Errorf("EventKinds() = %v, constants %v", kinds, named)
	}
	kinds[0] = "changed"
	if EventKinds()[0] != EventTransferInitiated {
		t.Error("EventKinds shares its slice")
	}
}

// TestCreateHeld checks that a 202 answer of POST /v1/transfers is never
// a Transfer: Create returns a nil Transfer and a HeldError, whose message
// names the transaction and never the amount, and the same body with 201
// is a Transfer.
func TestCreateHeld(t *testing.T) {
	status := http.StatusAccepted
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, status, golden(t, "responses/transfer_held.json"))
	})
	var meta Response
	tr, err := c.Transfers.Create(context.Background(), &TransferCreateParams{To: "@shop", Amount: MustParseAmount("777.25")}, WithResponse(&meta))
	var held *HeldError
	if tr != nil || !errors.As(err, &held) {
		t.Fatalf("Create = %+v, %v; want nil and a HeldError", tr, err)
	}
	var ae *APIError
	var te *TransportError
	if errors.As(err, &ae) || errors.As(err, &te) || errors.Is(err, ErrInvalidRequest) {
		t.Errorf("HeldError %v matches an API or transport error", err)
	}
	if held.Payment.TransactionID != "atx_5t6y7u8i9o0p" || held.Payment.Status != DecisionPending || held.Payment.ExpiresAt.IsZero() || meta.StatusCode != 202 {
		t.Errorf("held payment %+v, status %d", held.Payment, meta.StatusCode)
	}
	if msg := err.Error(); !strings.Contains(msg, "atx_5t6y7u8i9o0p") || !strings.Contains(msg, "2026-07-03T14:23:09Z") || strings.Contains(msg, "777") {
		t.Errorf("HeldError message %q", msg)
	}

	status = http.StatusCreated
	tr, err = c.Transfers.Create(context.Background(), &TransferCreateParams{To: "@shop", Amount: MustParseAmount("1")})
	if err != nil || tr == nil || tr.Status != "pending_approval" {
		t.Errorf("201 answer: %+v, %v", tr, err)
	}
}
