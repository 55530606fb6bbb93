package fakeserver

import (
	"encoding/json"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// Events: what the domain operations announce, handed to internal/hooks.
//
// An event is one thing that happened, as seen from one side: a transfer
// between two accounts is two events (direction sent for the payer,
// received for the payee), each with its own evt_ id, so a receiver that
// deduplicates by event_id never drops one side because it saw the other.
// The payload is built from the webhookverify structs (the wire format)
// on first delivery, from facts that never change, and those exact bytes
// are what every attempt and every replay sends and signs.
//
// An event's audience is the accounts whose subscriptions receive it: the
// side's account, plus its owner when that account is an agent. Agent
// events (agent.transaction.*, agent.policy.updated) go to the owner only.
// A subscription may replay any event whose audience includes its account
// on its network.
//
// The emit functions run under s.mu, in the operation that announces the
// event, so events are recorded in the order they happen; hooks takes its
// own lock inside.

// sentPayload and receivedPayload build a transfer event's payload for
// the payer's side and the payee's. A transfer's parties, asset, hash and
// id never change after it is created. (Pointer types: an event holds one
// without an allocation of its own.)
type (
	sentPayload     transfer
	receivedPayload transfer
)

// Build renders the payload (hooks.Payload).
func (p *sentPayload) Build(id, kind string, at time.Time) []byte {
	t := (*transfer)(p)
	return transferEvent(t, t.from, false, id, kind, at)
}

// Build renders the payload (hooks.Payload).
func (p *receivedPayload) Build(id, kind string, at time.Time) []byte {
	t := (*transfer)(p)
	return transferEvent(t, t.to, true, id, kind, at)
}

// transferEvent renders a transfer event's payload for side.
func transferEvent(t *transfer, side *account, received bool, id, kind string, at time.Time) []byte {
	direction, counterparty := webhookverify.DirectionSent, recipientName(t.toText, t.to, t.toAddr)
	if received {
		direction, counterparty = webhookverify.DirectionReceived, t.from.handle
	}
	return marshalPayload(&webhookverify.TransferEvent{
		Event:        kind,
		EventID:      id,
		Account:      side.handle,
		Direction:    direction,
		Counterparty: counterparty,
		Asset:        t.asset,
		Confidential: t.confidential,
		TxHash:       hashHex(t.txHash),
		TransferID:   t.id,
		Timestamp:    at,
	})
}

// fixedPayload is a payload built when the event was emitted.
type fixedPayload struct{ v any }

// Build renders the payload (hooks.Payload).
func (p fixedPayload) Build(string, string, time.Time) []byte { return marshalPayload(p.v) }

func marshalPayload(v any) []byte {
	body, err := json.Marshal(v)
	if err != nil {
		// The payloads are plain structs of strings, bools and times:
		// marshalling cannot fail.
		panic("fakeserver: cannot encode an event payload")
	}
	return body
}

// audience is who receives events about a: a, and its owner when a is an
// agent.
func audience(a *account) [2]string {
	if a.owner != nil {
		return [2]string{a.id, a.owner.id}
	}
	return [2]string{a.id}
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
	s.emitTransferIDsLocked(n, kind, t, [2]string{})
}

// newEventIDs draws the ids of a transfer event's two sides. An id is
// random and says nothing of the order of events, so an operation draws
// them before it takes s.mu.
func newEventIDs() [2]string { return [2]string{names.NewID("evt_"), names.NewID("evt_")} }

// eventID is ids[i], drawn now when none was.
func eventID(ids *[2]string, i int) string {
	if ids[i] == "" {
		ids[i] = names.NewID("evt_")
	}
	return ids[i]
}

// emitTransferIDsLocked is emitTransferLocked with the ids of the payer's
// event and the payee's, drawn before the operation took s.mu (an empty
// one is drawn here).
func (s *Server) emitTransferIDsLocked(n *network, kind string, t *transfer, ids [2]string) {
	now := s.clock.Now()
	evs := [2]hooks.Event{{ID: eventID(&ids, 0), Kind: kind, At: now, Audience: audience(t.from), Payload: (*sentPayload)(t)}}
	k := 1
	if t.to != nil {
		evs[1] = hooks.Event{ID: eventID(&ids, 1), Kind: kind, At: now, Audience: audience(t.to), Payload: (*receivedPayload)(t)}
		k = 2
	}
	s.hooks.Emit(n.name, evs[:k]...)
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
		ev.TxHash = hashHex(h.transfer.txHash)
		ev.TransferID = h.transfer.id
	}
	s.hooks.Emit(n.name, hooks.Event{ID: id, Kind: kind, At: now, Audience: [2]string{owner.id}, Payload: fixedPayload{ev}})
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
	s.hooks.Emit(n.name, hooks.Event{ID: id, Kind: webhookverify.KindAgentPolicyUpdated, At: now, Audience: [2]string{owner.id}, Payload: fixedPayload{&webhookverify.PolicyUpdatedEvent{
		Event:         webhookverify.KindAgentPolicyUpdated,
		EventID:       id,
		Account:       owner.handle,
		Agent:         agent.handle,
		PolicyID:      agent.spendPolicyID(),
		ChangedFields: append([]string(nil), changed...),
		Timestamp:     now,
	}}})
}
