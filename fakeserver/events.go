package fakeserver

import (
	"encoding/json"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// Events and their fan-out to subscriptions.
//
// An event is one thing that happened, as seen from one side: a transfer
// between two accounts is two events (direction sent for the payer,
// received for the payee), each with its own evt_ id, so a receiver that
// deduplicates by event_id never drops one side because it saw the other.
// The payload is marshalled once, from the webhookverify structs (the wire
// format), and those exact bytes are what every attempt and every replay
// sends and signs.
//
// An event's audience is the accounts whose subscriptions receive it: the
// side's account, plus its owner when that account is an agent. Agent
// events (agent.transaction.*, agent.policy.updated) go to the owner only.
// A subscription may replay any event whose audience includes its account
// on its network.
//
// Everything here runs under s.mu: the emit functions are called from
// domain operations (transfers, agents) that hold it.

// hookBook holds one network's subscriptions, events and delivery records.
// It is guarded by s.mu.
type hookBook struct {
	// pool is the server's delivery pool (shared by both networks' books;
	// set by startDeliveries, nil once stopped).
	pool *deliveryPool

	subs   map[string]*subscription   // live subscriptions by id
	byAcct map[string][]*subscription // live subscriptions by account id, in creation order
	events map[string]*event          // by event id
	// order is the events in the order they were recorded, for pruning;
	// lastPrune is when the book was last pruned (server time).
	order     []*event
	lastPrune time.Time
	// deleted maps the id of a deleted subscription to its account, so
	// that the same account deleting it again answers 204.
	deleted map[string]*account
}

func (b *hookBook) init() {
	b.pool = nil
	b.subs = map[string]*subscription{}
	b.byAcct = map[string][]*subscription{}
	b.events = map[string]*event{}
	b.order = nil
	b.lastPrune = time.Time{}
	b.deleted = map[string]*account{}
}

// event is one emitted event. Its payload is rendered from immutable facts
// (the transfer, the side, the id and the instant) when it is first
// delivered, and those bytes are kept for every later attempt and replay:
// rendering is deterministic, so an event that is never delivered costs
// no JSON at all. This keeps a stored transfer small.
type event struct {
	id   string
	kind string
	at   time.Time
	// side is the account whose subscriptions receive the event; for a
	// transfer event its owner's subscriptions do too, when side is an
	// agent (alsoOwner).
	side      *account
	alsoOwner bool
	// t and received describe a transfer event's side; other is the
	// payload of any other kind of event, built when it was emitted.
	t        *transfer
	received bool
	other    any
	body     []byte // the JSON payload, rendered on first delivery
}

// concerns reports whether a's subscriptions may receive e.
func (e *event) concerns(a *account) bool {
	return a == e.side || (e.alsoOwner && e.side.owner == a)
}

// audience lists the accounts whose subscriptions receive e.
func (e *event) audience() []*account {
	if e.alsoOwner && e.side.owner != nil {
		return []*account{e.side, e.side.owner}
	}
	return []*account{e.side}
}

// payload returns the exact bytes every attempt sends and signs.
func (e *event) payload() []byte {
	if e.body != nil {
		return e.body
	}
	v := e.other
	if e.t != nil {
		t := e.t
		direction, counterparty := webhookverify.DirectionSent, recipientName(t.toText, t.to, t.toAddr)
		if e.received {
			direction, counterparty = webhookverify.DirectionReceived, t.from.handle
		}
		v = &webhookverify.TransferEvent{
			Event:        e.kind,
			EventID:      e.id,
			Account:      e.side.handle,
			Direction:    direction,
			Counterparty: counterparty,
			Asset:        t.asset,
			Confidential: t.confidential,
			TxHash:       t.txHash,
			TransferID:   t.id,
			Timestamp:    e.at,
		}
	}
	body, err := json.Marshal(v)
	if err != nil {
		// The payloads are plain structs of strings, bools and times:
		// marshalling cannot fail.
		panic("fakeserver: cannot encode an event payload")
	}
	e.body = body
	return body
}

// recipientName is how an event names a payment's recipient: as the
// transfer itself does (text, the recipient as the payer wrote it,
// normalised), or else by handle, or an external wallet by its address.
func recipientName(text string, a *account, addr common.Address) string {
	switch {
	case text != "":
		return text
	case a != nil:
		return a.handle
	}
	return addr.Hex()
}

// emitTransferLocked emits a transfer event (transfer.initiated, .confirmed,
// .failed) to the subscriptions of both sides, each with its direction. An
// external wallet has no side.
func (s *Server) emitTransferLocked(n *network, kind string, t *transfer) {
	now := s.clock.Now()
	s.recordEventLocked(n, &event{id: names.NewID("evt_"), kind: kind, at: now, side: t.from, alsoOwner: true, t: t})
	if t.to != nil {
		s.recordEventLocked(n, &event{id: names.NewID("evt_"), kind: kind, at: now, side: t.to, alsoOwner: true, t: t, received: true})
	}
}

// emitAgentTransactionLocked emits agent.transaction.* to the owner.
func (s *Server) emitAgentTransactionLocked(n *network, kind string, h *heldTx) {
	owner := h.agent.owner
	if owner == nil {
		return
	}
	now := s.clock.Now()
	counterparty := h.toText
	if counterparty == "" && h.p != nil {
		counterparty = recipientName(h.p.toText, h.p.to, h.p.toAddr)
	}
	id := names.NewID("evt_")
	ev := &webhookverify.AgentTransactionEvent{
		Event:         kind,
		EventID:       id,
		Account:       h.agent.handle,
		Direction:     webhookverify.DirectionSent,
		Counterparty:  counterparty,
		Asset:         h.asset,
		Confidential:  h.confidential,
		TransactionID: h.id,
		Agent:         h.agent.handle,
		Timestamp:     now,
	}
	if h.transfer != nil {
		ev.TxHash = h.transfer.txHash
		ev.TransferID = h.transfer.id
	}
	s.recordEventLocked(n, &event{id: id, kind: kind, at: now, side: owner, other: ev})
}

// emitPolicyUpdatedLocked emits agent.policy.updated to the owner. changed
// lists the spend-policy fields that changed, by their JSON names.
func (s *Server) emitPolicyUpdatedLocked(n *network, agent *account, changed []string) {
	owner := agent.owner
	if owner == nil {
		return
	}
	now := s.clock.Now()
	id := names.NewID("evt_")
	if changed == nil {
		changed = []string{}
	}
	s.recordEventLocked(n, &event{id: id, kind: webhookverify.KindAgentPolicyUpdated, at: now, side: owner, other: &webhookverify.PolicyUpdatedEvent{
		Event:         webhookverify.KindAgentPolicyUpdated,
		EventID:       id,
		Account:       owner.handle,
		Agent:         agent.handle,
		PolicyID:      agent.spendPolicyID(),
		ChangedFields: append([]string(nil), changed...),
		Timestamp:     now,
	}})
}

// recordEventLocked records the event and starts a delivery to every live
// subscription of its audience that subscribed to its kind.
func (s *Server) recordEventLocked(n *network, e *event) {
	b := &n.hooks
	b.pruneLocked(e.at)
	b.events[e.id] = e
	b.order = append(b.order, e)
	for _, a := range e.audience() {
		for _, sub := range b.byAcct[a.id] {
			if sub.wants(e.kind) {
				s.startDeliveryLocked(n, sub, e, triggerEvent)
			}
		}
	}
}

// pruneInterval is how often (server time) a book drops what left the
// history window: often enough that memory stays flat, rarely enough that
// the cost of a pass is spread over many events.
const pruneInterval = time.Hour

// pruneLocked drops the events and delivery records older than the 30-day
// history window at now (nothing can list, replay or retry them any more),
// at most once per pruneInterval. A delivery still pending is kept, and
// so is its event.
func (b *hookBook) pruneLocked(now time.Time) {
	if now.Sub(b.lastPrune) < pruneInterval && !now.Before(b.lastPrune) {
		return
	}
	b.lastPrune = now
	cutoff := now.Add(-historyWindow)
	keep := map[*event]bool{}
	for _, sub := range b.subs {
		i := 0
		for ; i < len(sub.deliveries); i++ {
			d := sub.deliveries[i]
			if !d.createdAt.Before(cutoff) || d.status == confpay.DeliveryPending {
				break
			}
		}
		if i > 0 {
			clear(sub.deliveries[:i])
			sub.deliveries = append(sub.deliveries[:0:0], sub.deliveries[i:]...)
		}
		for _, d := range sub.deliveries {
			if d.status == confpay.DeliveryPending {
				keep[d.ev] = true
			}
		}
	}
	i := 0
	for ; i < len(b.order); i++ {
		e := b.order[i]
		if !e.at.Before(cutoff) || keep[e] {
			break
		}
		delete(b.events, e.id)
	}
	if i > 0 {
		clear(b.order[:i])
		b.order = append(b.order[:0:0], b.order[i:]...)
	}
}
