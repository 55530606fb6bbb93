package fakeserver

import (
	"fmt"
	"io"
	"log/slog"
	"math/big"

	confpay "github.com/confpay/confpay-go"
)

// Held payments on the direct API: every agent payment held for its
// owner's decision stays readable by id, with its status, whatever became
// of it (pending_approval, approved, rejected or expired). The /v1
// interface shows a held payment only while it waits (the pending list)
// and in the answer of its decision; expiry has no /v1 event or endpoint
// (decisions.md): a service learns of it when the payment leaves the
// pending list and a decision answers 409 transaction_expired.

// heldRecord is a held payment with what it was for, kept for the
// direct API after the payment itself lets go of its amount and memo.
type heldRecord struct {
	h     *heldTx
	units *big.Int
	memo  string
	seq   int // creation order on the network
}

// record keeps h for the direct API. s.mu is held.
func (b *heldBook) record(h *heldTx) {
	b.seq++
	b.all[h.id] = heldRecord{h: h, units: h.p.units, memo: h.p.memo, seq: b.seq}
	b.order = append(b.order, h)
}

// HeldPayment is an agent payment held for its owner's decision, as the
// server's books hold it: the fields of the /v1 held payment (without the
// sealed note), its status including DecisionExpired, which the /v1
// interface never shows, its network, and its amount and memo. It exists
// for test assertions.
type HeldPayment struct {
	confpay.AgentTransaction
	Network confpay.Network `json:"network"`
	// AgentID is the agent's account id (Agent is its handle).
	AgentID string         `json:"agent_id"`
	Amount  confpay.Amount `json:"amount"`
	Memo    string         `json:"memo,omitempty"`
}

// String describes the held payment without its amount and memo, so that
// one printed by accident does not leak them; read the fields instead.
func (p HeldPayment) String() string {
	return fmt.Sprintf("fakeserver.HeldPayment{%s %s %s %s -> %s %s, amount and memo REDACTED}",
		p.TransactionID, p.Network, p.Status, p.Agent, p.To, p.Asset)
}

// GoString is String.
func (p HeldPayment) GoString() string { return p.String() }

// Format prints String for every verb.
func (p HeldPayment) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

// LogValue is what log/slog writes for a HeldPayment: never the amount or
// the memo.
func (p HeldPayment) LogValue() slog.Value {
	return slog.GroupValue(slog.String("transaction_id", p.TransactionID), slog.String("network", string(p.Network)),
		slog.String("status", string(p.Status)), slog.String("agent", p.Agent), slog.String("amount", "REDACTED"))
}

// heldViewLocked renders a held payment for the direct API. A payment
// still waiting at or after its expires_at is expired first, as a
// decision would find it (a real clock's timer may trail by a moment).
func (s *Server) heldViewLocked(n *network, r heldRecord) *HeldPayment {
	h := r.h
	if h.status == heldPending && !s.clock.Now().Before(h.expiresAt) {
		s.expireLocked(n, h)
	}
	v := h.view()
	dec, _ := s.assets.decimals(h.asset)
	return &HeldPayment{
		AgentTransaction: *v,
		Network:          n.name,
		AgentID:          h.agent.id,
		Amount:           confpay.AmountFromUnits(r.units, dec),
		Memo:             r.memo,
	}
}
