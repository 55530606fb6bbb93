package fakeserver

import (
	"encoding/json"
	"time"

	"github.com/ethereum/go-ethereum/common"

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
}

func (b *hookBook) init() {
	b.pool = nil
	b.subs = map[string]*subscription{}
	b.byAcct = map[string][]*subscription{}
	b.events = map[string]*event{}
}

// event is one emitted event with its exact payload bytes.
type event struct {
	id       string
	kind     string
	at       time.Time
	body     []byte     // the JSON payload, marshalled once
	audience []*account // whose subscriptions receive it
}

// concerns reports whether a's subscriptions may receive e.
func (e *event) concerns(a *account) bool {
	for _, x := range e.audience {
		if x == a {
			return true
		}
	}
	return false
}

// withOwner is a and, for an agent, its owner: the audience of a
// transfer side.
func withOwner(a *account) []*account {
	if a.owner != nil {
		return []*account{a, a.owner}
	}
	return []*account{a}
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
	side := func(acct *account, direction, counterparty string) {
		id := newID("evt_")
		s.recordEventLocked(n, &event{id: id, kind: kind, at: now, audience: withOwner(acct)}, &webhookverify.TransferEvent{
			Event:        kind,
			EventID:      id,
			Account:      acct.handle,
			Direction:    direction,
			Counterparty: counterparty,
			Asset:        t.asset,
			Confidential: t.confidential,
			TxHash:       t.txHash,
			TransferID:   t.id,
			Timestamp:    now,
		})
	}
	side(t.from, webhookverify.DirectionSent, recipientName(t.toText, t.to, t.toAddr))
	if t.to != nil {
		side(t.to, webhookverify.DirectionReceived, t.from.handle)
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
	id := newID("evt_")
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
	s.recordEventLocked(n, &event{id: id, kind: kind, at: now, audience: []*account{owner}}, ev)
}

// emitPolicyUpdatedLocked emits agent.policy.updated to the owner. changed
// lists the spend-policy fields that changed, by their JSON names.
func (s *Server) emitPolicyUpdatedLocked(n *network, agent *account, changed []string) {
	owner := agent.owner
	if owner == nil {
		return
	}
	now := s.clock.Now()
	id := newID("evt_")
	if changed == nil {
		changed = []string{}
	}
	s.recordEventLocked(n, &event{id: id, kind: webhookverify.KindAgentPolicyUpdated, at: now, audience: []*account{owner}}, &webhookverify.PolicyUpdatedEvent{
		Event:         webhookverify.KindAgentPolicyUpdated,
		EventID:       id,
		Account:       owner.handle,
		Agent:         agent.handle,
		PolicyID:      agent.spendPolicyID(),
		ChangedFields: append([]string(nil), changed...),
		Timestamp:     now,
	})
}

// recordEventLocked marshals the payload once, records the event and
// starts a delivery to every live subscription of its audience that
// subscribed to its kind.
func (s *Server) recordEventLocked(n *network, e *event, payload any) {
	body, err := json.Marshal(payload)
	if err != nil {
		// The payloads are plain structs of strings, bools and times:
		// marshalling cannot fail.
		panic("fakeserver: cannot encode an event payload")
	}
	e.body = body
	b := &n.hooks
	b.events[e.id] = e
	for _, a := range e.audience {
		for _, sub := range b.byAcct[a.id] {
			if sub.wants(e.kind) {
				s.startDeliveryLocked(n, sub, e, triggerEvent)
			}
		}
	}
}
