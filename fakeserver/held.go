package fakeserver

import (
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"slices"
	"sort"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// An agent's spending and its held payments.
//
// An agent is an account owned by a personal or business account. Its
// identity and spend policy are shared by both networks; what it spends
// (the rolling daily window) and what it has waiting for a decision (held
// payments) are per network, in the network's heldBook.
//
// Limits are in USDG. A payment in another asset counts at the server's
// reference rate (WithETHRate, default 3000 USDG per ETH), converted with
// exact integer arithmetic and rounded UP to the next micro-USDG, so a
// limit is never under-counted: 1 wei at 3000 USDG/ETH counts as 0.000001
// USDG. The daily limit is a rolling 24-hour window over the agent's
// pending and confirmed payments on the network; a failed transfer drops
// out at once, and a payment made at T stops counting at exactly T+24h.
//
// Every agent payment goes through judgeLocked, which gathers the facts
// and asks the one rule function (rules.Policy.Judge): the agent's own
// payment (agentPayLocked) and the owner's approval of a held one
// (approve) alike, in pay.go. The check and the reservation that follows
// it happen in one critical section under s.mu, so concurrent payments can
// never pass the daily limit together.
//
// A held payment expires at its expires_at by a timer on the server's
// clock (one heap entry per held payment, cancelled on decision), never by
// scanning the held payments. A decision made at or after expires_at is
// refused even if the timer has not run yet (a real clock's timer may
// trail the request by a moment).

// heldBook holds one network's agent state: the payments held for a
// decision and each agent's rolling spend window. Guarded by s.mu.
type heldBook struct {
	// byID holds payments awaiting a decision and expired ones (which
	// answer 409 for the 30-day history window, then are forgotten: 404
	// like any unknown id). A decided payment is removed: a second
	// decision is 404.
	byID map[string]*heldTx
	// pending is each owner's payments awaiting a decision.
	pending map[*account]map[string]*heldTx
	// waiting counts each agent's payments awaiting a decision, for the
	// cap (Server.SetMaxHeldPerAgent).
	waiting map[*account]int
	// spend is each agent's rolling window.
	spend map[*account]*spendWindow
	// all is every payment ever held on the network, decided ones
	// included, for the direct API (held.go).
	all map[string]heldRecord
	// order is the payments of all in the order they were held, for
	// pruning; lastPrune is when the book was last pruned (server time).
	order     []*heldTx
	lastPrune time.Time
	seq       int // numbers the payments held on the network (heldTx.seq)
}

func (b *heldBook) init() {
	b.byID = map[string]*heldTx{}
	b.pending = map[*account]map[string]*heldTx{}
	b.waiting = map[*account]int{}
	b.spend = map[*account]*spendWindow{}
	b.all = map[string]heldRecord{}
	b.order = nil
	b.lastPrune = time.Time{}
	b.seq = 0
}

// pruneLocked forgets the payments decided or expired before the 30-day
// history window at now (the direct API's records and the expired ones'
// 409), at most once per hour of server time, so that an agent held at
// its cap for months keeps memory flat. Payments still waiting stay. It
// returns the ids forgotten and whether the pass ran (the data directory
// writes both).
func (b *heldBook) pruneLocked(now time.Time) (gone []string, ran bool) {
	if now.Sub(b.lastPrune) < time.Hour && !now.Before(b.lastPrune) {
		return nil, false
	}
	b.lastPrune = now
	cutoff := now.Add(-hooks.HistoryWindow)
	i := 0
	for ; i < len(b.order); i++ {
		h := b.order[i]
		if h.status == heldPending || !h.expiresAt.Before(cutoff) {
			break
		}
		delete(b.all, h.id)
		delete(b.byID, h.id)
		gone = append(gone, h.id)
	}
	if i > 0 {
		clear(b.order[:i])
		b.order = append(b.order[:0:0], b.order[i:]...)
	}
	return gone, true
}

// window returns the agent's spend window, creating it.
func (b *heldBook) window(agent *account) *spendWindow {
	w := b.spend[agent]
	if w == nil {
		w = &spendWindow{}
		b.spend[agent] = w
	}
	return w
}

// Held payment states.
const (
	heldPending  = confpay.DecisionPending
	heldApproved = confpay.DecisionApproved
	heldRejected = confpay.DecisionRejected
	heldExpired  = confpay.DecisionExpired
)

// heldTx is an agent payment held for the owner's decision.
type heldTx struct {
	id           string
	seq          int // the order held in on the network: ties of requestedAt
	agent        *account
	p            *payment
	toText       string
	asset        string
	confidential bool
	transfer     *transfer // set once approved and submitted

	key         *apiKey                        // the agent's key that asked; the approved payment counts on it
	status      confpay.AgentTransactionStatus // heldPending, heldApproved, heldRejected or heldExpired
	requestedAt time.Time
	expiresAt   time.Time
	decidedAt   *time.Time
	timer       *clock.Timer // the expiry; stopped on decision
	// judged is what the hold was decided on, for the audit's policy
	// invariant: the payment's micro-USDG equivalent and the policy's
	// per-transaction limit and approval threshold then (bounded false:
	// unknown, as for a held payment read from an older data directory).
	judged struct {
		amount, perTx, threshold int64
		bounded                  bool
	}
	note       string // base64url note sealed to the owner, made on first listing
	noteReader string // hex of the key the note is sealed to
}

// spendWindow is one agent's payments on one network, sorted by the time
// they were made, for the daily limit. An entry refers to its transfer, so
// a transfer that fails stops counting at once. Entries are kept for the
// agent's life (a few words each, beside the transfer they refer to): the
// clock may be set backwards, and a payment that left the window must
// count again when the clock returns to within 24 hours of it.
type spendWindow struct {
	entries []spendEntry
	// unordered is set once an entry was inserted before another (the
	// clock was set backwards): the audit's daily-limit invariant, which
	// sums the entries before each, then skips the agent.
	unordered bool
}

type spendEntry struct {
	at     time.Time
	amount int64 // micro-USDG equivalent, rounded up
	t      *transfer
	// The limits of the policy the payment was judged under, for the
	// audit's policy invariant; bounded is false when unknown (an entry
	// from a data directory written before they were kept).
	perTx, daily int64
	bounded      bool
}

// total is the spend that counts at now: every pending or confirmed
// payment made after now-24h. (After the clock is set backwards, payments
// from the "future" keep counting until they age out: the limit is never
// under-counted.)
func (w *spendWindow) total(now time.Time) int64 {
	cutoff := now.Add(-rules.Window)
	first := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].at.After(cutoff) })
	var sum int64
	for i := first; i < len(w.entries); i++ {
		e := &w.entries[i]
		if e.t != nil && e.t.status == stateFailed {
			continue
		}
		sum = rules.AddSpend(sum, e.amount)
	}
	return sum
}

// add records a submitted payment, in time order.
func (w *spendWindow) add(at time.Time, amount int64, t *transfer, judged *rules.Policy) {
	e := spendEntry{at: at, amount: amount, t: t}
	if judged != nil {
		e.perTx, e.daily, e.bounded = judged.PerTransactionLimit(), judged.DailyLimit(), true
	}
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].at.After(at) })
	if i < len(w.entries) {
		w.unordered = true
	}
	w.entries = slices.Insert(w.entries, i, e)
}

// DefaultMaxHeldPerAgent is how many payments may wait for a decision per
// agent and network unless WithMaxHeldPerAgent or SetMaxHeldPerAgent says
// otherwise.
const DefaultMaxHeldPerAgent = 1000

// leavePendingLocked takes a held payment off its owner's pending list and
// its agent's count.
func (b *heldBook) leavePendingLocked(h *heldTx) {
	delete(b.pending[h.agent.owner], h.id)
	if b.waiting[h.agent]--; b.waiting[h.agent] <= 0 {
		delete(b.waiting, h.agent)
	}
}

// ---- held payments on the direct API ----

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
}

// record keeps h for the direct API. s.mu is held.
func (b *heldBook) record(h *heldTx) {
	b.seq++
	h.seq = b.seq
	b.all[h.id] = heldRecord{h: h, units: h.p.units, memo: h.p.memo}
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
