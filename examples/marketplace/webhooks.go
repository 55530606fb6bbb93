package marketplace

import (
	"context"
	"net/http"
	"sync"

	"github.com/confpay/confpay-go/webhookverify"
)

// Notice is what the service tells a seller when a payout settles: the side
// effect that must happen once per event, whatever the deliveries do.
type Notice struct {
	EventID string
	OrderID string
	Status  PayoutStatus
}

// Receiver applies the webhook events of the marketplace's account to its
// payouts: transfer.confirmed marks a payout paid and notifies the seller,
// transfer.failed marks it failed. Each event is applied once: the handler
// dedupes by the verified event id (webhookverify.Handler with a SeenStore),
// and a delivery whose notification fails answers 500, so the service
// retries it and the retry applies it.
type Receiver struct {
	payouts *Payouts
	notify  func(context.Context, Notice) error
}

// NewReceiver returns a receiver that settles payouts and sends notices with
// notify.
func NewReceiver(payouts *Payouts, notify func(context.Context, Notice) error) *Receiver {
	return &Receiver{payouts: payouts, notify: notify}
}

// Handler returns the http.Handler to mount at the subscription's URL: it
// verifies signatures with secret and remembers processed events in store
// (a webhookverify.MemoryStore in one process, a database across replicas).
func (rc *Receiver) Handler(secret string, store webhookverify.SeenStore) http.Handler {
	return webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{secret}, Store: store},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			if err := rc.apply(r.Context(), ev); err != nil {
				http.Error(w, "try again later", http.StatusInternalServerError)
			}
		})
}

// apply applies one event.
func (rc *Receiver) apply(ctx context.Context, ev webhookverify.Event) error {
	te, ok := ev.(*webhookverify.TransferEvent)
	if !ok || te.Direction != webhookverify.DirectionSent {
		return nil
	}
	var status PayoutStatus
	switch te.Kind() {
	case webhookverify.KindTransferConfirmed:
		status = PayoutPaid
	case webhookverify.KindTransferFailed:
		status = PayoutFailed
	default:
		return nil
	}
	po := rc.payouts.settle(te.TransferID, status)
	if po == nil {
		return nil // not a payout of ours
	}
	return rc.notify(ctx, Notice{EventID: te.EventID, OrderID: po.OrderID, Status: status})
}

// Outbox is a notify function for tests and small deployments: it keeps the
// notices in order. It is safe for concurrent use.
type Outbox struct {
	mu      sync.Mutex
	notices []Notice
	// Fail, when set, is consulted before each notice is kept: an error
	// refuses it (a mail relay that is down).
	Fail func(Notice) error
}

// Send keeps n, unless Fail refuses it.
func (o *Outbox) Send(_ context.Context, n Notice) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.Fail != nil {
		if err := o.Fail(n); err != nil {
			return err
		}
	}
	o.notices = append(o.notices, n)
	return nil
}

// Notices returns the notices sent so far, oldest first.
func (o *Outbox) Notices() []Notice {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Notice(nil), o.notices...)
}
