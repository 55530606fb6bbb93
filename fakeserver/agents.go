package fakeserver

import (
	"cmp"
	"math/big"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Agents, agent payments and held payments.
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
// (handleApprove) alike. The check and the reservation that follows it happen in
// one critical section under s.mu, so concurrent payments can never pass
// the daily limit together.
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
	seq       int // numbers the payments held, for the direct API's order
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
// its cap for months keeps memory flat. Payments still waiting stay.
func (b *heldBook) pruneLocked(now time.Time) {
	if now.Sub(b.lastPrune) < time.Hour && !now.Before(b.lastPrune) {
		return
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
	}
	if i > 0 {
		clear(b.order[:i])
		b.order = append(b.order[:0:0], b.order[i:]...)
	}
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
	note        string       // base64url note sealed to the owner, made on first listing
	noteReader  string       // hex of the key the note is sealed to
}

// spendWindow is one agent's payments on one network, sorted by the time
// they were made, for the daily limit. An entry refers to its transfer, so
// a transfer that fails stops counting at once. Entries are kept for the
// agent's life (a few words each, beside the transfer they refer to): the
// clock may be set backwards, and a payment that left the window must
// count again when the clock returns to within 24 hours of it.
type spendWindow struct {
	entries []spendEntry
}

type spendEntry struct {
	at     time.Time
	amount int64 // micro-USDG equivalent, rounded up
	t      *transfer
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
		if e.t != nil && e.t.status == confpay.StatusFailed {
			continue
		}
		sum = rules.AddSpend(sum, e.amount)
	}
	return sum
}

// add records a submitted payment, in time order.
func (w *spendWindow) add(at time.Time, amount int64, t *transfer) {
	e := spendEntry{at: at, amount: amount, t: t}
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].at.After(at) })
	w.entries = slices.Insert(w.entries, i, e)
}

// ---- the one judge ----

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

// heldCreateAnswer is the 202 body of POST /v1/transfers for a payment
// held for approval.
func heldCreateAnswer(h *heldTx) any {
	return &struct {
		TransactionID string                         `json:"transaction_id"`
		Status        confpay.AgentTransactionStatus `json:"status"`
		To            string                         `json:"to"`
		Asset         string                         `json:"asset,omitempty"`
		Confidential  bool                           `json:"confidential"`
		RequestedAt   time.Time                      `json:"requested_at"`
		ExpiresAt     time.Time                      `json:"expires_at"`
	}{h.id, heldPending, h.toText, h.asset, h.confidential, h.requestedAt, h.expiresAt}
}

// view renders a held payment: a pending item, or a decision's answer.
func (h *heldTx) view() *confpay.AgentTransaction {
	v := &confpay.AgentTransaction{
		TransactionID: h.id,
		Agent:         h.agent.handle,
		To:            h.toText,
		Asset:         h.asset,
		Confidential:  h.confidential,
		Status:        h.status,
		RequestedAt:   h.requestedAt,
		ExpiresAt:     h.expiresAt,
		DecidedAt:     h.decidedAt,
	}
	if h.transfer != nil {
		v.TransferID = h.transfer.id
		v.TxHash = h.transfer.txHash
	}
	return v
}

// ---- creating agents ----

// parsePolicy reads a spend-policy object for an agent's creation (rules
// and known assets), naming a field at fault under prefix (whole for the
// object itself).
func (s *Server) parsePolicy(raw []byte, prefix, whole string) (*rules.Policy, *apiError) {
	pr, err := rules.Parse(raw)
	if err == nil {
		err = s.assets.policyAssetsKnown(pr)
	}
	if err != nil {
		return nil, policyError(err, prefix, whole)
	}
	return pr, nil
}

// createAgentLocked creates owner's agent name with policy pr: the one
// path of POST /v1/accounts/me/agents, CreateAgent and seeds. Its checks,
// in order: the owner is no agent (403), its KYC is complete (403), the
// name is valid (400), then policyErr (pr's parse error, if any), then the
// name is free (409).
func (s *Server) createAgentLocked(owner *account, name string, pr *rules.Policy, policyErr *apiError) (*account, *apiError) {
	if owner.isAgent() {
		return nil, newError(http.StatusForbidden, confpay.CodeNotAgentOwner, "an agent cannot own agents")
	}
	if !owner.kycOK() {
		return nil, newError(http.StatusForbidden, confpay.CodeKYCRequired, "identity verification must be complete to create an agent")
	}
	if !names.IsAgentName(name) {
		return nil, errInvalid("name", "name must be 1 to 32 of a-z 0-9 - _")
	}
	if policyErr != nil {
		return nil, policyErr
	}
	handle := owner.handle + "/" + name
	if _, taken := s.byHandle[strings.ToLower(handle)]; taken {
		return nil, newError(http.StatusConflict, confpay.CodeAgentNameTaken, "the account already has an agent of that name").withParam("name")
	}
	now := s.clock.Now()
	a := &account{
		id:          names.NewID("acct_"),
		handle:      handle,
		typ:         confpay.AccountAgent,
		address:     newAddress(),
		createdAt:   now,
		owner:       owner,
		agentName:   name,
		agentStatus: confpay.AgentActive,
		policy:      &policy{id: names.NewID("policy_"), rules: pr, updatedAt: now},
	}
	s.addAccountLocked(a)
	owner.agents = append(owner.agents, a)
	return a, nil
}

// agentView renders an agent as the wire type.
func agentView(a *account) *confpay.Agent {
	return &confpay.Agent{
		AccountID:     a.id,
		Handle:        a.handle,
		PublicKey:     a.address.Hex(),
		Status:        a.agentStatus,
		SpendPolicyID: a.spendPolicyID(),
		CreatedAt:     a.createdAt,
	}
}

// ---- the pending list ----

// sealJob is a note to seal outside the lock.
type sealJob struct {
	h      *heldTx
	ctx    decrypt.NoteContext
	amount *big.Int
	memo   string
}

// ---- operations of the agent handlers ----

// createOwnAgent creates owner's agent name with the parsed policy pr (or
// answers policyErr, the parse's error, in the documented order).
func (s *Server) createOwnAgent(owner *account, name string, pr *rules.Policy, policyErr *apiError) (*confpay.Agent, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, apiErr := s.createAgentLocked(owner, name, pr, policyErr)
	if apiErr != nil {
		return nil, apiErr
	}
	return agentView(a), nil
}

// agentsOf lists owner's agents, oldest first.
func (s *Server) agentsOf(owner *account) *confpay.AgentList {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &confpay.AgentList{Agents: make([]*confpay.Agent, 0, len(owner.agents))}
	for _, a := range owner.agents {
		l.Agents = append(l.Agents, agentView(a))
	}
	return l
}

// pendingFor lists owner's held payments on n waiting for a decision,
// oldest first, each with a note sealed to owner (sealed outside the lock,
// once per payment).
func (s *Server) pendingFor(n *network, owner *account) (*confpay.PendingList, error) {
	s.mu.Lock()
	items := make([]*heldTx, 0, len(n.held.pending[owner]))
	for _, h := range n.held.pending[owner] {
		items = append(items, h)
	}
	slices.SortFunc(items, func(a, b *heldTx) int {
		return cmp.Or(a.requestedAt.Compare(b.requestedAt), strings.Compare(a.id, b.id))
	})
	var jobs []sealJob
	if key := owner.encryptionKey(); key != nil {
		for _, h := range items {
			if h.note == "" {
				jobs = append(jobs, sealJob{
					h:      h,
					ctx:    decrypt.NoteContext{ChainID: n.chainID, Reference: h.id, Asset: h.p.asset, Readers: []*decrypt.PublicKey{key}},
					amount: new(big.Int).Set(h.p.units),
					memo:   h.p.memo,
				})
			}
		}
	}
	s.mu.Unlock()

	sealed := make([]string, len(jobs))
	for i, j := range jobs {
		note, err := decrypt.SealNote(nil, j.ctx, j.amount, j.memo)
		if err != nil {
			return nil, newError(http.StatusInternalServerError, confpay.CodeInternal, "could not seal a note")
		}
		sealed[i] = decrypt.EncodeBase64(note)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for i, j := range jobs {
		if j.h.note == "" {
			j.h.note, j.h.noteReader = sealed[i], j.ctx.Readers[0].Hex()
		}
	}
	l := &confpay.PendingList{Pending: make([]*confpay.AgentTransaction, 0, len(items))}
	now := s.clock.Now()
	for _, h := range items {
		if h.status != heldPending || !now.Before(h.expiresAt) {
			continue // decided or expired while the notes were sealed
		}
		v := h.view()
		if h.note != "" {
			v.EncryptedNote, v.NoteReaders = h.note, []string{h.noteReader}
		}
		l.Pending = append(l.Pending, v)
	}
	return l, nil
}
