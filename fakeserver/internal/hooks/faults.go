package hooks

// Delivery faults: a script of what goes wrong with the next deliveries,
// matched by subscription, event kind and count. A fault is matched when
// an attempt falls due (dispatchLocked, the one place attempts fall due):
// delay and reorder hold the attempt there; lose_answer and duplicate ride
// with it to the POST (postFaulted). The script lives under Hooks.mu.

import (
	"context"
	"time"
)

// Delivery fault actions.
const (
	// FaultLoseAnswer makes the attempt (the receiver runs), then discards
	// its answer: the attempt counts as unanswered and is retried on the
	// schedule, as when a connection drops after the receiver's work.
	FaultLoseAnswer = "lose_answer"
	// FaultDuplicate makes the attempt twice at once, the same request
	// (event id, signature, attempt number) concurrently; the original's
	// answer is recorded, once both have answered.
	FaultDuplicate = "duplicate"
	// FaultDelay holds the attempt for Fault.Delay of server time before
	// it is made. Meanwhile the subscription's other attempts go ahead of
	// it (it does not hold the subscription's turn).
	FaultDelay = "delay"
	// FaultReorder holds the attempt back until another attempt to the
	// same subscription falls due, and sends it right after that one: the
	// two swap places. Nothing is held for ever: past Fault.Delay of
	// server time (DefaultReorderHold when 0) it goes anyway. While one
	// is held, a reorder fault does not hold the subscription's next
	// attempt (that one releases it).
	FaultReorder = "reorder"
)

// FaultActions are the delivery fault actions, in the order documented.
var FaultActions = []string{FaultLoseAnswer, FaultDuplicate, FaultDelay, FaultReorder}

const (
	// DefaultReorderHold is the longest FaultReorder holds an attempt
	// when its fault sets no Delay.
	DefaultReorderHold = time.Minute
	// MaxFaultDelay bounds Fault.Delay (a hold longer than the retry
	// window would outlive the delivery it holds).
	MaxFaultDelay = RetryWindow
)

// Fault is one scripted delivery fault: the next Times attempts of
// deliveries matching WebhookID and Event get Action.
type Fault struct {
	ID        string
	WebhookID string // "" for every subscription
	Event     string // an event kind, "" for every kind
	Times     int    // 0: every matching attempt until cleared
	Action    string // one of FaultActions
	// Delay is how long FaultDelay holds an attempt, and the longest
	// FaultReorder does (0: DefaultReorderHold); 0 for the others.
	Delay time.Duration
	Used  int // attempts it applied to so far
}

// AddFault adds f, of any action (its ID set and its fields checked by
// the caller), to the end of the script: the one way a fault is added.
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

// ClearFaults empties the script. Attempts already held stay held.
func (h *Hooks) ClearFaults() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = nil
}

// faultLocked returns (a copy of) the first fault that applies to the
// attempt of d falling due and counts the use, or nil. A reorder fault
// does not apply while another attempt to the subscription is held by
// one: this attempt is the one that releases it.
func (h *Hooks) faultLocked(d *delivery) *Fault {
	for _, f := range h.faults {
		if f.Times > 0 && f.Used >= f.Times {
			continue
		}
		if (f.WebhookID != "" && f.WebhookID != d.sub.id) || (f.Event != "" && f.Event != d.ev.Kind()) {
			continue
		}
		if f.Action == FaultReorder && len(d.sub.held) > 0 {
			continue
		}
		f.Used++
		cp := *f
		return &cp
	}
	return nil
}

// dispatchLocked makes d's next attempt due now. A delivery fault may
// hold it (delay, reorder); otherwise it is queued (queueLocked) and
// the attempts a reorder fault held on the subscription go right after
// it.
func (h *Hooks) dispatchLocked(d *delivery) {
	if h.pool == nil || d.cancelled {
		return
	}
	action := ""
	f := h.faultLocked(d)
	if f == nil && h.cfg.Chaos != nil {
		f = h.cfg.Chaos(d.sub.acct, d.ev.Kind())
	}
	if f != nil {
		switch f.Action {
		case FaultDelay:
			h.holdLocked(d, f.Delay, FaultDelay)
			return
		case FaultReorder:
			hold := f.Delay
			if hold <= 0 {
				hold = DefaultReorderHold
			}
			h.holdLocked(d, hold, FaultReorder)
			d.sub.held = append(d.sub.held, d)
			return
		}
		action = f.Action
	}
	h.dueLocked(d, action)
}

// dueLocked queues d's attempt (made under action) and then those a
// reorder fault held on its subscription, in the order they were held.
func (h *Hooks) dueLocked(d *delivery, action string) {
	h.queueLocked(d, action)
	sub := d.sub
	held := sub.held
	sub.held = nil
	now := h.cfg.Clock.Now()
	for _, x := range held {
		if x.timer != nil {
			x.timer.Stop()
			x.timer = nil
		}
		x.nextAttemptAt = &now
		h.queueLocked(x, FaultReorder)
	}
}

// holdLocked holds d's attempt for hold of server time (for action): its
// record shows the instant it goes at the latest as its next attempt.
// When the time comes the attempt falls due without matching the script
// again (a reorder-held one is taken off its subscription's held list).
func (h *Hooks) holdLocked(d *delivery, hold time.Duration, action string) {
	at := h.cfg.Clock.Now().Add(hold)
	d.nextAttemptAt = &at
	d.timer = h.cfg.Clock.At(at, func(time.Time) {
		h.mu.Lock()
		defer h.mu.Unlock()
		d.timer = nil
		if h.pool == nil || d.cancelled {
			return
		}
		if action == FaultReorder {
			sub := d.sub
			for i, x := range sub.held {
				if x == d {
					sub.held = append(sub.held[:i:i], sub.held[i+1:]...)
					break
				}
			}
			h.queueLocked(d, action)
			return
		}
		h.dueLocked(d, action)
	})
}

// postFaulted makes one attempt under fault (an action, or "" for none)
// and returns the status to record. The holding actions (delay, reorder)
// were applied before the attempt fell due: it is made as any other.
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
