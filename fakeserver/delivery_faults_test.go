package fakeserver_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// shopHandler is a service's handler of transfer.confirmed: it credits
// the order once per event, if it is right.
type shopHandler struct {
	mu       sync.Mutex
	seen     map[string]bool
	credited int
	// claim makes "seen before?" and "now seen" one step (the right
	// way); without it they are two, the work between them.
	claim bool
	// dedup makes the handler check the event id at all.
	dedup bool
	// checked, when not nil, is where a two-step handler waits between
	// its check and its mark until both copies of a duplicate checked,
	// so the race a duplicate delivery exposes happens every time.
	checked *sync.WaitGroup
}

func (h *shopHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(webhookverify.EventIDHeader)
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	seen := h.dedup && h.seen[id]
	if h.claim {
		h.seen[id] = true
	}
	h.mu.Unlock()
	if h.checked != nil {
		h.checked.Done()
		h.checked.Wait()
	}
	if seen {
		return // already applied: acknowledge
	}
	h.mu.Lock()
	h.credited++
	h.seen[id] = true
	h.mu.Unlock()
}

func (h *shopHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.credited
}

// paidShop is a server with @shop subscribed with h to
// transfer.confirmed, and one payment from outside confirmed (its
// delivery made, faults and all).
func paidShop(t *testing.T, h http.Handler, fault string) *fakeserver.Server {
	t.Helper()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	hook := srv.AddWebhook(t, "@shop", h, "whsec_test_0123456789abcdefghij", confpay.EventTransferConfirmed)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Event: confpay.EventTransferConfirmed, Times: 1, Action: fault})
	srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "25", Memo: "order-7"})
	srv.Advance(time.Second)     // the block: transfer.confirmed is delivered
	srv.Advance(5 * time.Second) // the first retry, if any
	return srv
}

// TestDeliveryLoseAnswer: the handler runs, its answer is lost, the
// delivery is retried. A handler that does its work on every delivery
// credits the order twice; one that remembers the event id, once.
func TestDeliveryLoseAnswer(t *testing.T) {
	t.Parallel()
	wrong := &shopHandler{}
	srv := paidShop(t, wrong, fakeserver.DeliveryLoseAnswer)
	if got := wrong.count(); got != 2 {
		t.Fatalf("the non-idempotent handler credited %d times under lose_answer, want 2 (the bug exposed)", got)
	}
	ds, err := srv.Deliveries("@shop", confpay.NetworkTest)
	if err != nil || len(ds) != 1 || ds[0].Attempts != 2 || ds[0].Status != confpay.DeliverySucceeded {
		t.Fatalf("deliveries = %v, %v; want one, succeeded on its second attempt", ds, err)
	}
	if fs := srv.DeliveryFaults(); len(fs) != 1 || fs[0].Used != 1 {
		t.Fatalf("faults = %+v, want one used once", fs)
	}

	right := &shopHandler{dedup: true}
	paidShop(t, right, fakeserver.DeliveryLoseAnswer)
	if got := right.count(); got != 1 {
		t.Fatalf("the idempotent handler credited %d times, want 1", got)
	}
}

// TestDeliveryDuplicate: the same delivery twice at once. A handler that
// checks the event id and records it in two steps credits twice; one
// that claims the id in one step, once.
func TestDeliveryDuplicate(t *testing.T) {
	t.Parallel()
	var both sync.WaitGroup
	both.Add(2)
	wrong := &shopHandler{dedup: true, checked: &both}
	paidShop(t, wrong, fakeserver.DeliveryDuplicate)
	if got := wrong.count(); got != 2 {
		t.Fatalf("the check-then-mark handler credited %d times under duplicate, want 2 (the bug exposed)", got)
	}

	right := &shopHandler{dedup: true, claim: true}
	paidShop(t, right, fakeserver.DeliveryDuplicate)
	if got := right.count(); got != 1 {
		t.Fatalf("the claiming handler credited %d times, want 1", got)
	}
}

// TestDeliveryFaultsOverHTTP: POST, GET and DELETE /_fake/delivery-faults.
func TestDeliveryFaultsOverHTTP(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	a := rawCall(t, srv, "POST", "/_fake/delivery-faults", "", `{"event":"transfer.confirmed","times":2,"action":"duplicate"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	var list struct {
		Faults []fakeserver.DeliveryFault `json:"faults"`
	}
	g := rawCall(t, srv, "GET", "/_fake/delivery-faults", "", "")
	g.decode(t, &list)
	if len(list.Faults) != 1 || list.Faults[0].Action != "duplicate" || list.Faults[0].Times != 2 || list.Faults[0].Event != confpay.EventTransferConfirmed {
		t.Fatalf("GET: %s", g.body)
	}
	if d := rawCall(t, srv, "DELETE", "/_fake/delivery-faults", "", ""); d.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", d.status, d.body)
	}
	if fs := srv.DeliveryFaults(); len(fs) != 0 {
		t.Fatalf("after DELETE: %+v", fs)
	}
}
