package hooks

// Delivery faults: a script of what goes wrong with the next deliveries,
// matched by subscription, event kind and count, applied in attempt (the
// one place deliveries are made). It lives under Hooks.mu.

import "context"

// Delivery fault actions.
const (
	// FaultLoseAnswer makes the attempt (the receiver runs), then discards
	// its answer: the attempt counts as unanswered and is retried on the
	// schedule, as when a connection drops after the receiver's work.
	FaultLoseAnswer = "lose_answer"
	// FaultDuplicate makes the attempt twice at once, the same request
	// (event id, signature, attempt number) concurrently; the first
	// answer is recorded.
	FaultDuplicate = "duplicate"
)

// Fault is one scripted delivery fault: the next Times attempts of
// deliveries matching WebhookID and Event get Action.
type Fault struct {
	ID        string
	WebhookID string // "" for every subscription
	Event     string // an event kind, "" for every kind
	Times     int    // 0: every matching attempt until cleared
	Action    string // FaultLoseAnswer or FaultDuplicate
	Used      int    // attempts it applied to so far
}

// AddFault adds f to the script (its ID set by the caller).
func (h *Hooks) AddFault(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.Used = 0
	h.faults = append(h.faults, &f)
}

// Faults returns the script with the use counts, in order.
func (h *Hooks) Faults() []Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Fault, 0, len(h.faults))
	for _, f := range h.faults {
		out = append(out, *f)
	}
	return out
}

// ClearFaults empties the script.
func (h *Hooks) ClearFaults() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = nil
}

// faultLocked returns the action of the first fault that applies to an
// attempt of d and counts the use, or "".
func (h *Hooks) faultLocked(d *delivery) string {
	for _, f := range h.faults {
		if f.Times > 0 && f.Used >= f.Times {
			continue
		}
		if (f.WebhookID != "" && f.WebhookID != d.sub.id) || (f.Event != "" && f.Event != d.ev.Kind) {
			continue
		}
		f.Used++
		return f.Action
	}
	return ""
}

// postFaulted makes one attempt under fault (an action, or "" for none)
// and returns the status to record.
func (p *pool) postFaulted(ctx context.Context, out *outgoing, fault string) int {
	switch fault {
	case FaultLoseAnswer:
		p.post(ctx, out)
		return 0
	case FaultDuplicate:
		twin := *out
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.post(ctx, &twin)
		}()
		code := p.post(ctx, out)
		<-done
		return code
	}
	return p.post(ctx, out)
}
