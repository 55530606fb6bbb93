package fakeserver

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
	"github.com/confpay/confpay-go/webhookverify"
)

// The money path: the only code that moves money. Each operation below
// (pay, approve, reject, confirm, expire, fail, settle) is one critical
// section that takes s.mu itself: it checks, decides, moves money and
// emits its events, in the order they are announced, before it lets go.
// Handlers parse outside the lock, call one operation and render what it
// returns (views built inside the critical section). The *Locked helpers
// after the operations need s.mu held.

// ---- the operations ----

// callerLocked is the account and network of API key k, checked again
// inside the operation's critical section: a key revoked after the request
// was authenticated moves nothing (the revocation and the payment are
// ordered, never interleaved).
func (s *Server) callerLocked(k *apiKey) (*account, *network, *apiError) {
	if k.revokedAt != nil {
		return nil, nil, errUnauthorized()
	}
	return k.acct, s.nets[k.network], nil
}

// pay is POST /v1/transfers by key k: the checks of a payment in the
// decided order (KYC, an agent's status, recipient, self-payment,
// confidential readiness; for an agent its policy and threshold, which may
// hold it), then the balance and the reservation. It answers 201 with the
// transfer, or 202 with the held payment. failAtConfirm marks the transfer
// to fail when its block comes (a scripted fault).
func (s *Server) pay(c *call, p *payment, failAtConfirm bool) (int, any, error) {
	k := c.key
	p.eventIDs = newEventIDs() // random: drawn outside the critical section
	s.lockFor(c)
	defer s.mu.Unlock()
	from, n, apiErr := s.callerLocked(k)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if !from.kycOK() {
		return 0, nil, errKYC()
	}
	if from.isAgent() && from.agentStatus != confpay.AgentActive {
		// An agent's status is its first check (decisions.md), before the
		// recipient is looked at.
		return 0, nil, refusal(rules.NotActive)
	}
	to, addr, apiErr := s.resolveRecipientLocked(p.toText)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if to == from || addr == from.address {
		return 0, nil, errInvalid("to", "a payment to yourself is not allowed")
	}
	if p.confidential && !confidentialReady(to) {
		return 0, nil, newError(http.StatusUnprocessableEntity, confpay.CodeRecipientNotConfidentialReady,
			"the recipient wallet lacks confidential token support; resend with confidential set to false to pay publicly").withParam("to")
	}
	p.from, p.to, p.toAddr = from, to, addr
	p.toText = recipientText(p.toText, to, addr)

	var t *transfer
	if from.isAgent() {
		var h *heldTx
		t, h, apiErr = s.agentPayLocked(n, p, k)
		if apiErr != nil {
			return 0, nil, apiErr
		}
		if h != nil {
			return http.StatusAccepted, heldCreateAnswer(h), nil
		}
	} else {
		t, apiErr = s.submitLocked(n, p, k)
		if apiErr != nil {
			return 0, nil, apiErr
		}
	}
	if failAtConfirm {
		t.failAtConfirm = true
	}
	s.markTransfer(n, t) // after its spend window entry and fault
	c.created = t
	return http.StatusCreated, createView(t, t.status.wire()), nil
}

// approve is the owner's approval of held payment id, by key k. It re-checks
// the payment against its network's policy in force now (asset, recipient,
// per-transaction limit, daily limit, balance; and the agent's KYC status,
// as for any transfer) and submits it at once. A failed check answers that
// check's error and the payment stays held.
func (s *Server) approve(c *call, id string) (int, any, error) {
	k := c.key
	s.lockFor(c)
	defer s.mu.Unlock()
	caller, n, apiErr := s.callerLocked(k)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	h, apiErr := s.approveLocked(n, caller, id)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	return http.StatusOK, h.view(), nil
}

// approveLocked is caller's approval of held payment id on n: the one
// rule of approve, for the owner's key and the direct API alike.
func (s *Server) approveLocked(n *network, caller *account, id string) (*heldTx, *apiError) {
	h, apiErr := s.decisionLocked(n, caller, id)
	if apiErr != nil {
		return nil, apiErr
	}
	if !h.agent.kycOK() {
		// No money moves for an account whose verification lapsed, not
		// even by approval; the payment stays held.
		return nil, errKYC()
	}
	o, amount, apiErr := s.judgeLocked(n, h.p, rules.Approval)
	if apiErr != nil {
		return nil, apiErr
	}
	if o != rules.Submit {
		return nil, refusal(o)
	}
	t, apiErr := s.recordTransferLocked(n, h.p, h.key)
	if apiErr != nil {
		return nil, apiErr
	}
	n.held.window(h.agent).add(s.clock.Now(), amount, t, n.policyOf(h.agent.id).rules)
	h.transfer = t
	s.markTransfer(n, t)
	s.decidedLocked(n, h, heldApproved)
	// The approval is announced first, then the transfer it submitted.
	s.emitAgentTransactionLocked(n, webhookverify.KindAgentTransactionApproved, h)
	s.emitTransferLocked(n, webhookverify.KindTransferInitiated, t)
	return h, nil
}

// reject is the owner's rejection of held payment id, by key k: nothing
// moves.
func (s *Server) reject(c *call, id string) (int, any, error) {
	k := c.key
	s.lockFor(c)
	defer s.mu.Unlock()
	caller, n, apiErr := s.callerLocked(k)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	h, apiErr := s.rejectLocked(n, caller, id)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	return http.StatusOK, h.view(), nil
}

// rejectLocked is caller's rejection of held payment id on n.
func (s *Server) rejectLocked(n *network, caller *account, id string) (*heldTx, *apiError) {
	h, apiErr := s.decisionLocked(n, caller, id)
	if apiErr != nil {
		return nil, apiErr
	}
	s.decidedLocked(n, h, heldRejected)
	s.emitAgentTransactionLocked(n, webhookverify.KindAgentTransactionRejected, h)
	return h, nil
}

// confirm is a transfer's block arriving at now (its timer).
func (s *Server) confirm(n *network, t *transfer, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.confirmLocked(n, t, now)
}

// expire is a held payment's approval window closing (its timer).
func (s *Server) expire(n *network, h *heldTx) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(n, h)
}

// Settle confirms every pending transfer on both networks now, oldest
// first, as if their blocks had all been mined, and returns how many it
// confirmed. A transfer scripted to fail at confirmation fails instead.
func (s *Server) Settle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	count := 0
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		ts := make([]*transfer, 0, n.transfers.pending.len())
		for t := range n.transfers.pending.all {
			ts = append(ts, t)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].before(ts[j]) })
		for _, t := range ts {
			s.confirmLocked(n, t, now)
			if t.status == stateConfirmed {
				count++
			}
		}
	}
	return count
}

// FailTransfer fails a pending transfer now: its reservation goes back to
// the sender, nothing moves, and transfer.failed is emitted. A transfer
// that is not pending is a 409-style error.
func (s *Server) FailTransfer(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, t, err := s.pendingTransferLocked(id)
	if err != nil {
		return err
	}
	s.failLocked(n, t, s.clock.Now())
	return nil
}

// FailTransferAtConfirmation scripts a pending transfer to fail when its
// confirmation comes, instead of settling.
func (s *Server) FailTransferAtConfirmation(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, t, err := s.pendingTransferLocked(id)
	if err != nil {
		return err
	}
	t.failAtConfirm = true
	s.markTransfer(n, t)
	return nil
}

// pendingTransferLocked finds a pending transfer by id on either network:
// 404 when there is none, 409 when it is no longer pending.
func (s *Server) pendingTransferLocked(id string) (*network, *transfer, error) {
	n, t := s.findTransferLocked(id)
	if t == nil {
		return nil, nil, errNotFound("no transfer " + id)
	}
	if t.status != statePending {
		return nil, nil, newError(http.StatusConflict, confpay.CodeInvalidRequest, "the transfer is "+string(t.status.wire())+", not pending")
	}
	return n, t, nil
}

// ---- the steps, under s.mu ----

// resolveRecipientLocked resolves a handle, agent handle, 0x address or
// registered domain: 404 recipient_not_found, or 400 for a bad address.
// An unknown address is an external wallet: (nil, address, nil).
func (s *Server) resolveRecipientLocked(text string) (*account, common.Address, *apiError) {
	kind, key, addr, apiErr := parseRecipient(text)
	if apiErr != nil {
		return nil, common.Address{}, apiErr
	}
	switch kind {
	case toHandle:
		if a := s.byHandle[key]; a != nil {
			return a, a.address, nil
		}
		return nil, common.Address{}, errRecipientNotFound()
	case toAddress:
		if a := s.byAddr[key]; a != nil {
			return a, a.address, nil
		}
		return nil, addr, nil
	default:
		if a := s.domains[key]; a != nil {
			return a, a.address, nil
		}
		return nil, common.Address{}, errRecipientNotFound()
	}
}

func errRecipientNotFound() *apiError {
	return newError(http.StatusNotFound, confpay.CodeRecipientNotFound, "no account behind that recipient").withParam("to")
}

// recipientText is how a transfer names its recipient: the registered
// handle for a handle, the checksummed address for an address, the domain
// in lower case for a domain.
func recipientText(text string, to *account, addr common.Address) string {
	switch {
	case strings.HasPrefix(text, "@") && to != nil:
		return to.handle
	case strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X"):
		return addr.Hex()
	}
	return strings.ToLower(text)
}

// confidentialReady reports whether a recipient can receive a confidential
// transfer: an account with an encryption key (an agent uses its owner's).
// External wallets never are.
func confidentialReady(to *account) bool { return to != nil && to.encryptionKey() != nil }

// submitLocked checks the balance (402), reserves the amount, records the
// transfer as pending, schedules its confirmation, counts it on the key and
// emits transfer.initiated. k may be nil (approval by the owner: counted on
// the approving key is the caller's choice).
func (s *Server) submitLocked(n *network, p *payment, k *apiKey) (*transfer, *apiError) {
	t, apiErr := s.recordTransferLocked(n, p, k)
	if apiErr != nil {
		return nil, apiErr
	}
	s.emitTransferIDsLocked(n, webhookverify.KindTransferInitiated, t, p.eventIDs)
	return t, nil
}

// recordTransferLocked is submitLocked without the transfer.initiated
// event, for a caller that must announce something first (an approval is
// announced before the transfer it submits).
func (s *Server) recordTransferLocked(n *network, p *payment, k *apiKey) (*transfer, *apiError) {
	// The payment's units, shared: no amount is ever changed in place (the
	// held payment's record shares them too).
	units := p.units
	if n.ledger.Reserve(p.from.id, p.asset, units) != nil {
		return nil, newError(http.StatusPaymentRequired, confpay.CodeInsufficientBalance,
			"the account does not hold enough "+p.asset+" for this payment")
	}
	now := s.clock.Now()
	t := &transfer{
		id:           s.newTransferIDLocked(),
		from:         p.from,
		to:           p.to,
		toAddr:       p.toAddr,
		toText:       p.toText,
		asset:        p.asset,
		units:        units,
		confidential: p.confidential,
		memo:         p.memo,
		status:       statePending,
		createdAt:    now,
		key:          k,
	}
	t.txHash = txHash(n.chainID, t)
	n.transfers.byID.put(t)
	n.transfers.pending.add(t)
	n.transfers.index(t.from, t)
	if t.to != nil && t.to != t.from {
		n.transfers.index(t.to, t)
	}
	t.timer = s.clock.At(now.Add(s.opts.blockTime), func(at time.Time) { s.confirm(n, t, at) })
	s.markTransfer(n, t)
	return t, nil
}

// confirmLocked settles a pending transfer at now (or fails it, when a
// fault says so). Anything but a pending transfer is left alone.
func (s *Server) confirmLocked(n *network, t *transfer, now time.Time) {
	if t.status != statePending {
		return
	}
	if t.failAtConfirm {
		s.failLocked(n, t, now)
		return
	}
	n.transfers.pending.settle(t)
	t.timer.Stop()
	t.timer = nil
	to := ""
	if t.to != nil { // else an external wallet
		to = t.to.id
	}
	n.ledger.Settle(t.from.id, to, t.asset, t.units)
	t.status = stateConfirmed
	t.settledAt = &now
	if t.key != nil && t.asset == confpay.AssetUSDG {
		t.key.usdgMoved.Add(t.key.usdgMoved, t.units)
		s.markKey(t.key, false)
	}
	s.markTransfer(n, t)
	s.emitTransferLocked(n, webhookverify.KindTransferConfirmed, t)
}

// failLocked fails a pending transfer: its reservation goes back to the
// sender and nothing moves.
func (s *Server) failLocked(n *network, t *transfer, now time.Time) {
	if t.status != statePending {
		return
	}
	n.transfers.pending.settle(t)
	t.timer.Stop()
	t.timer = nil
	n.ledger.Release(t.from.id, t.asset, t.units)
	t.status = stateFailed
	t.settledAt = &now
	s.markTransfer(n, t)
	s.emitTransferLocked(n, webhookverify.KindTransferFailed, t)
}

func errKYC() *apiError {
	return newError(http.StatusForbidden, confpay.CodeKYCRequired, "identity verification is incomplete: kyc_status must be verified or enhanced")
}

// recipientOf names a payment's recipient for the policy: every name of
// the account (handle, address, domains), or the bare address of an
// external wallet.
func recipientOf(p *payment) rules.Recipient {
	if p.to == nil {
		return rules.Recipient{Address: p.toAddr}
	}
	return rules.Recipient{Handle: p.to.handle, Address: p.to.address, Domains: p.to.domains}
}

// judgeLocked gathers the facts of an agent's payment on n and judges it
// under the agent's policy on n in force now (never the other network's).
// It returns the outcome and the payment's USDG equivalent in
// micro-USDG. mode is rules.Payment for the agent paying and
// rules.Approval for the owner's approval re-check.
func (s *Server) judgeLocked(n *network, p *payment, mode rules.Mode) (rules.Outcome, int64, *apiError) {
	agent := p.from
	pol := n.policyOf(agent.id)
	if pol == nil {
		return 0, 0, newError(http.StatusInternalServerError, confpay.CodeInternal, "the agent has no spend policy")
	}
	amount, err := s.assets.equivalent(p.asset, p.units)
	if err != nil {
		return 0, 0, errInvalid("asset", "asset must be USDG or ETH")
	}
	now := s.clock.Now()
	f := rules.Facts{
		Active: agent.agentStatus == confpay.AgentActive,
		Asset:  p.asset,
		Amount: amount,
		To:     recipientOf(p),
		Now:    now,
		Spent:  n.held.window(agent).total(now),
		Funded: n.ledger.Available(agent.id, p.asset).Cmp(p.units) >= 0,
	}
	return pol.rules.Judge(&f, mode), amount, nil
}

// refusal is the error answer of a refusing outcome.
func refusal(o rules.Outcome) *apiError {
	switch o {
	case rules.NotActive:
		return newError(http.StatusForbidden, confpay.CodeAgentNotActive, "the agent is not active")
	case rules.InsufficientBalance:
		return newError(http.StatusPaymentRequired, confpay.CodeInsufficientBalance, "the available balance does not cover the payment")
	}
	return newError(http.StatusForbidden, confpay.CodePolicyViolation, "the payment breaks the agent's spend policy: "+o.Rule()).withRule(o.Rule())
}

// agentPayLocked judges an agent's payment (the one place every rule is
// enforced), then holds it, or submits it and records its spend. Exactly
// one of the transfer and the held payment is set on success.
func (s *Server) agentPayLocked(n *network, p *payment, k *apiKey) (*transfer, *heldTx, *apiError) {
	o, amount, apiErr := s.judgeLocked(n, p, rules.Payment)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	switch o {
	case rules.Submit:
		t, apiErr := s.submitLocked(n, p, k)
		if apiErr != nil {
			return nil, nil, apiErr
		}
		n.held.window(p.from).add(s.clock.Now(), amount, t, n.policyOf(p.from.id).rules)
		return t, nil, nil
	case rules.Hold:
		if n.held.waiting[p.from] >= s.maxHeld {
			return nil, nil, errHeldCap()
		}
		h := s.holdLocked(n, p, k)
		pr := n.policyOf(p.from.id).rules
		h.judged.amount, h.judged.perTx, h.judged.bounded = amount, pr.PerTransactionLimit(), true
		h.judged.threshold, _ = pr.Threshold()
		return nil, h, nil
	}
	return nil, nil, refusal(o)
}

// heldCapRetryAfter is the Retry-After of a payment refused by the cap:
// room comes back only when the owner decides or a payment expires.
const heldCapRetryAfter = "60"

// errHeldCap is the answer to a payment that would be held while the agent
// already has the most payments waiting for a decision: 429 rate_limited,
// and nothing is held (decisions.md).
func errHeldCap() *apiError {
	e := newError(http.StatusTooManyRequests, confpay.CodeRateLimited,
		"the agent has too many payments waiting for the owner's decision; retry once some are decided")
	e.retryAfter = heldCapRetryAfter
	return e
}

// holdLocked records a payment for the owner's decision, schedules its
// expiry and emits agent.transaction.pending_approval. Nothing is
// reserved.
func (s *Server) holdLocked(n *network, p *payment, k *apiKey) *heldTx {
	p.eventIDs = [2]string{} // not the approval's: a held payment keeps none
	now := s.clock.Now()
	h := &heldTx{
		id:           names.NewID("atx_"),
		agent:        p.from,
		p:            p,
		toText:       p.toText,
		asset:        p.asset,
		confidential: p.confidential,
		key:          k,
		status:       heldPending,
		requestedAt:  now,
		expiresAt:    now.Add(s.opts.approvalWindow),
	}
	if gone, ran := n.held.pruneLocked(now); ran {
		s.markHeldPruned(n, gone)
	}
	n.held.byID[h.id] = h
	n.held.record(h)
	owner := h.agent.owner
	if n.held.pending[owner] == nil {
		n.held.pending[owner] = map[string]*heldTx{}
	}
	n.held.pending[owner][h.id] = h
	n.held.waiting[h.agent]++
	h.timer = s.clock.At(h.expiresAt, func(time.Time) { s.expire(n, h) })
	s.markHeld(n, h)
	s.emitAgentTransactionLocked(n, webhookverify.KindAgentTransactionPendingApproval, h)
	return h
}

// expireLocked closes a held payment's window: it leaves the pending list
// and every later decision answers 409. It does nothing to a payment that
// is no longer awaiting a decision.
func (s *Server) expireLocked(n *network, h *heldTx) {
	if h.status != heldPending {
		return
	}
	h.status = heldExpired
	h.timer.Stop()
	h.p = nil // the amount and memo are not needed any more
	s.markHeld(n, h)
	n.held.leavePendingLocked(h)
}

// decidedLocked records a decision: the payment leaves the book, so a
// second decision is 404.
func (s *Server) decidedLocked(n *network, h *heldTx, status confpay.AgentTransactionStatus) {
	now := s.clock.Now()
	h.status = status
	h.decidedAt = &now
	s.markHeld(n, h)
	h.timer.Stop()
	delete(n.held.byID, h.id)
	n.held.leavePendingLocked(h)
}

// decisionLocked finds the held payment a decision is about: 404
// transaction_not_found when unknown (or already decided, or of the other
// network), 403 not_agent_owner when the caller is not the agent's owner,
// 409 transaction_expired once expires_at is reached.
func (s *Server) decisionLocked(n *network, caller *account, id string) (*heldTx, *apiError) {
	h, ok := n.held.byID[id]
	if !ok {
		return nil, newError(http.StatusNotFound, confpay.CodeTransactionNotFound, "no held transaction with that id awaits a decision")
	}
	if h.agent.owner != caller {
		return nil, newError(http.StatusForbidden, confpay.CodeNotAgentOwner, "only the agent's owner may decide its held payments")
	}
	if h.status == heldPending && !s.clock.Now().Before(h.expiresAt) {
		s.expireLocked(n, h)
	}
	if h.status == heldExpired {
		return nil, newError(http.StatusConflict, confpay.CodeTransactionExpired, "the approval window has closed")
	}
	return h, nil
}

// inbound is a payment into account toRef on network nw from outside the
// API (Inbound): from an external wallet, fromAddr when fromHandle is
// empty, whose money enters the simulated chain at submission; or from
// the wallet of the account fromHandle (or behind fromAddr), a payment
// from its books like one it sends (402 when they fall short, 403 when
// its identity is unverified; never an agent, which pays under its
// policy). p holds the asset, units, confidentiality and memo. The
// transfer is then recorded, announced, confirmed at its block and
// sealed like every other; an external sender has no account (id "").
func (s *Server) inbound(nw confpay.Network, toRef, fromHandle string, fromAddr common.Address, p *payment) (TransferRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to, n, err := s.accountOnLocked(toRef, nw)
	if err != nil {
		return TransferRecord{}, err
	}
	from := s.byAddr[strings.ToLower(fromAddr.Hex())]
	if fromHandle != "" {
		if from = s.byHandle[strings.ToLower(fromHandle)]; from == nil {
			return TransferRecord{}, errNotFound("no account " + fromHandle).withParam("from")
		}
	}
	switch {
	case from == to || fromAddr == to.address:
		return TransferRecord{}, errInvalid("from", "from is the recipient: a payment to yourself is not allowed")
	case from != nil && from.isAgent():
		return TransferRecord{}, errInvalid("from", "an agent pays under its spend policy: send its payment with its API key")
	case from != nil && !from.kycOK():
		return TransferRecord{}, errKYC()
	case p.confidential && !confidentialReady(to):
		return TransferRecord{}, newError(http.StatusUnprocessableEntity, confpay.CodeRecipientNotConfidentialReady,
			"the recipient has no encryption key; set confidential to false to pay it publicly").withParam("to")
	}
	if from == nil {
		// The outside world: credited with exactly what it pays, so that
		// the transfer reserves and settles as any other does.
		from = &account{handle: fromAddr.Hex(), address: fromAddr}
		if apiErr := s.fundLocked(n, from, p.asset, p.units); apiErr != nil {
			return TransferRecord{}, apiErr
		}
	}
	p.from, p.to, p.toAddr, p.toText = from, to, to.address, to.handle
	t, apiErr := s.submitLocked(n, p, nil)
	if apiErr != nil {
		return TransferRecord{}, apiErr
	}
	return s.recordLocked(n, t), nil
}
