package hooks

import (
	"slices"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// Reading the records for the server's direct API and for tests.

// EventRecord is a recorded event.
type EventRecord struct {
	ID       string
	Kind     string
	At       time.Time
	Audience [2]string
	// Built reports whether the payload had been built (for a
	// delivery) before this read.
	Built bool
	// Payload is the exact bytes every delivery of the event signs.
	Payload []byte
}

// Events returns net's recorded events in the order they happened: those
// whose audience includes acct, or all of them when acct is "".
func (h *Hooks) Events(net confpay.Network, acct string) []EventRecord {
	h.mu.Lock()
	var evs []*event
	var built []bool
	for _, e := range h.books[net].order {
		if (acct == "" && !e.gone) || e.concerns(acct) {
			evs = append(evs, e)
			built = append(built, e.body != nil)
		}
	}
	h.mu.Unlock()
	out := make([]EventRecord, len(evs))
	for i, e := range evs {
		out[i] = EventRecord{ID: e.ID, Kind: e.Kind(), At: e.At, Audience: *e.aud, Built: built[i], Payload: h.payload(e)}
	}
	return out
}

// payload returns e's bytes, building them (outside the lock) if no
// delivery has yet.
func (h *Hooks) payload(e *event) []byte {
	h.mu.Lock()
	body := e.built()
	h.mu.Unlock()
	if body != nil {
		return body
	}
	body = e.Payload.Build(e.ID, e.Kind(), e.At)
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.body == nil {
		e.body = &body
	}
	return *e.body
}

// DeliveryRecord is a delivery record with the subscription it belongs to
// and every attempt made so far, oldest first.
type DeliveryRecord struct {
	WebhookID string
	confpay.Delivery
	Log []Attempt
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	// At is when the attempt was made (server time).
	At time.Time `json:"at"`
	// Status is the HTTP status recorded for it, 0 for none.
	Status int `json:"code,omitempty"`
	// Duration is how long the POST took until its answer (real time,
	// whatever the server's clock).
	Duration time.Duration `json:"ns"`
	// Fault is the delivery fault applied to it, "" for none.
	Fault string `json:"fault,omitempty"`
}

// DeliveryRecords returns the delivery records of acct's subscriptions on
// net (every subscription's when acct is ""), oldest first per
// subscription, subscriptions in creation order. A deleted subscription's
// records are gone with it.
func (h *Hooks) DeliveryRecords(net confpay.Network, acct string) []DeliveryRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.books[net]
	var subs []*subscription
	if acct != "" {
		subs = b.byAcct[acct]
	} else {
		for _, list := range b.byAcct {
			subs = append(subs, list...)
		}
	}
	var out []DeliveryRecord
	for _, sub := range subs {
		for _, d := range sub.deliveries {
			out = append(out, DeliveryRecord{WebhookID: sub.id, Delivery: *d.view(), Log: slices.Clone(d.log)})
		}
	}
	return out
}

// SetJitter replaces the retry jitter (tests assert exact instants).
func (h *Hooks) SetJitter(f func(time.Duration) time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg.Jitter = f
}

// Running reports whether deliveries are being made (not stopped).
func (h *Hooks) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pool != nil
}
