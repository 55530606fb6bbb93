package fakeserver_test

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// The sequential model of the money path that the linearizability test
// (linearizability_test.go) checks the fakeserver against. It follows
// docs/interface.md and the design decisions, not the server's code.
//
// Everything in a state is a fixed-size, pointer-free value, so that a
// step copies little and Equal is a plain comparison: the ids the server
// invents (tr_..., atx_...) and the idempotency keys are numbered densely
// once the history is recorded, and each table is a slice of that length.
// Amounts are exact integers of a model unit per asset: micro-USDG, and
// micro-ETH (the generator never uses finer ETH amounts), whose USDG
// equivalent at the default 3000 USDG per ETH is exact.

// Model indices: accounts, networks, assets.
const (
	mAlice    = iota // @alice: owns @alice/bot
	mBob             // @bob: owns @bob/bot
	mCarol           // @carol
	mAliceBot        // @alice/bot: agent with an approval threshold
	mBobBot          // @bob/bot: agent without one
	mDave            // @dave: no encryption key, never confidential-ready
	mAccounts
)

const (
	mTest = iota
	mLive
	mNetworks
)

const (
	mUSDG = iota
	mETH
	mAssets
)

// mGhost is a recipient handle with no account behind it; mSelf stands
// for the payer's own handle.
const (
	mGhost = -1
)

var (
	mHandles   = [mAccounts]string{"@alice", "@bob", "@carol", "@alice/bot", "@bob/bot", "@dave"}
	mOwner     = [mAccounts]int{-1, -1, -1, mAlice, mBob, -1}
	mReady     = [mAccounts]bool{true, true, true, true, true, false}
	mAssetCode = [mAssets]string{"USDG", "ETH"}
)

// ethMicroUSDG is the USDG equivalent of one micro-ETH in micro-USDG at
// the default rate of 3000 USDG per ETH.
const ethMicroUSDG = 3000

// mPolicy is an agent's spend policy on one network, in micro-USDG. The
// zero value is the policy that allows nothing (both limits 0, USDG only):
// an agent's policy on the network other than the one it was created on,
// until a key of that network sets both limits.
type mPolicy struct {
	daily, perTx, threshold int64
	hasThreshold            bool
	eth                     bool // ETH allowed besides USDG
}

// mCreated are the agents' policies as created over /v1: @alice/bot by
// @alice's test key, @bob/bot by @bob's live key. The other network's
// starts as the zero mPolicy; the harness sets it for some histories
// (mOtherNet), and the histories change both with PATCHes (opPolicy).
var mCreated = map[int]struct {
	net int
	p   mPolicy
}{
	mAliceBot: {mTest, mPolicy{daily: 50_000000, perTx: 20_000000, threshold: 5_000000, hasThreshold: true, eth: true}},
	mBobBot:   {mLive, mPolicy{daily: 25_000000, perTx: 10_000000}},
}

// mOtherNet are the policies the harness sets, in some histories, on the
// network each agent was not created on.
var mOtherNet = map[int]mPolicy{
	mAliceBot: {daily: 30_000000, perTx: 12_000000, threshold: 8_000000, hasThreshold: true},
	mBobBot:   {daily: 40_000000, perTx: 15_000000, eth: true},
}

// isAgent reports whether model account a is an agent.
func isAgent(a int) bool { return a >= 0 && mOwner[a] >= 0 }

// mPatch is a PATCH of a spend policy: the fields it sends.
type mPatch struct {
	daily, perTx, threshold   int64 // sent when > 0 (threshold: when setThreshold)
	setThreshold, noThreshold bool
	setAssets, eth            bool
}

// apply merges patch q into p as the server does, validating the merged
// result: both limits set (not 0), per-transaction at most daily (naming
// the field sent when only one was). It answers the new policy, or the
// param of a 400 invalid_policy.
func (q mPatch) apply(p mPolicy) (mPolicy, string) {
	if q.daily > 0 {
		p.daily = q.daily
	}
	if q.perTx > 0 {
		p.perTx = q.perTx
	}
	switch {
	case q.setThreshold:
		p.threshold, p.hasThreshold = q.threshold, true
	case q.noThreshold:
		p.threshold, p.hasThreshold = 0, false
	}
	if q.setAssets {
		p.eth = q.eth
	}
	switch {
	case p.daily == 0:
		return mPolicy{}, "daily_limit_usdg"
	case p.perTx == 0:
		return mPolicy{}, "per_transaction_limit_usdg"
	case p.perTx > p.daily && q.daily > 0 && q.perTx == 0:
		return mPolicy{}, "daily_limit_usdg"
	case p.perTx > p.daily:
		return mPolicy{}, "per_transaction_limit_usdg"
	}
	return p, ""
}

const (
	blockTime      = int64(time.Second)
	approvalWindow = int64(24 * time.Hour)
	dayWindow      = int64(24 * time.Hour)
	idemTTL        = int64(24 * time.Hour)
)

// Transfer and held payment states (0 is "not created yet").
const (
	sNone uint8 = iota
	sPending
	sConfirmed
	sFailed
	hPending
	hApproved
	hRejected
	hExpired
)

var mStatusName = map[uint8]string{
	sPending: "pending", sConfirmed: "confirmed", sFailed: "failed",
	hPending: "pending_approval", hApproved: "approved", hRejected: "rejected", hExpired: "expired",
}

type mBalance struct{ units, reserved int64 }

type mTransfer struct {
	status        uint8
	net, from, to int8
	asset         int8
	units, eq, at int64 // amount, USDG equivalent, created_at
	agent         bool  // counts in the sender's daily window
}

type mHeld struct {
	status           uint8
	net, agent, to   int8
	asset            int8
	conf             bool
	units, eq, until int64 // until is expires_at
}

type mIdem struct {
	used bool
	at   int64  // when the first request came
	sig  string // method, path and body of the first request
	ans  mAnswer
}

// mAnswer is the part of an answer the model predicts. tr and held are
// dense indices (-1: none); at is a timestamp as an offset from the
// server's start.
type mAnswer struct {
	status            int
	code, rule, param string
	tr, held          int32
	at                int64
	tstatus           string
	count             int
	pol               mPolicy // a policy answer's figures
}

// mState is the model's state. Arrays are copied by value; a slice is
// cloned before a step changes it.
type mState struct {
	now     int64
	bal     [mAccounts][mNetworks][mAssets]mBalance
	pol     [mAccounts][mNetworks]mPolicy // agents' spend policies, per network
	revoked uint64
	tr      []mTransfer
	held    []mHeld
	idem    []mIdem
}

// Operation kinds.
const (
	opPay = iota + 1
	opApprove
	opReject
	opGet
	opFail
	opSettle
	opAdvance
	opFault
	opRevoke
	opPolicy
	opRestart // the server closed and a new one opened on its data directory
)

var opNames = map[int]string{opPay: "pay", opApprove: "approve", opReject: "reject", opGet: "get",
	opFail: "fail", opSettle: "settle", opAdvance: "advance", opFault: "fault", opRevoke: "revoke", opPolicy: "policy", opRestart: "restart"}

// mInput is an operation as called. acct and net are the API key's; key
// is the key's dense index (for revocation).
type mInput struct {
	kind      int
	client    int
	acct, net int
	key       int
	idem      int32  // dense idempotency key index, -1 for none
	sig       string // method, path and body, for idempotency
	to        int    // recipient account, mGhost
	asset     int
	units     int64
	conf      bool
	tr, held  int32  // the transfer or held payment the call names (-1: unknown id)
	d         int64  // advance
	retried   bool   // the client resent it after a transport error or an injected fault
	agent     int    // the agent whose policy a PATCH changes
	patch     mPatch // what it sends

	// The raw ids and key the call named, numbered into tr, held and
	// idem once the history is recorded.
	trRaw, heldRaw, idemRaw string

	// Wire text, for the report.
	desc string
}

// mOutput is an answer as received.
type mOutput struct {
	ans      mAnswer
	replayed bool
	// raw ids, numbered into ans.tr / ans.held after the run.
	trID, heldID string
	body         string
}

// modelConfig selects the rules the model follows.
type modelConfig struct {
	// oldOrder checks an agent's balance before its approval threshold
	// (the order before the "no balance oracle" decision); the default is
	// the decided order: threshold (hold, balance not looked at), then
	// balance.
	oldOrder bool
	// keep400 keeps 400 answers in the idempotency store (the rule before
	// the "idempotency store" decision); the default keeps none.
	keep400 bool
	// mutant is a deliberate model bug for the mutation test: "forget
	// reservation" (a pending transfer reserves nothing).
	mutant string
}

func (m modelConfig) init(nTr, nHeld, nIdem int) *mState {
	return &mState{
		tr:   make([]mTransfer, nTr),
		held: make([]mHeld, nHeld),
		idem: make([]mIdem, nIdem),
	}
}

func (s *mState) available(a, n, asset int) int64 {
	b := s.bal[a][n][asset]
	return b.units - b.reserved
}

// spent is an agent's rolling 24-hour spend on a network at now: its
// pending and confirmed payments made after now-24h.
func (s *mState) spent(agent, n int) int64 {
	var sum int64
	for _, t := range s.tr {
		if t.agent && int(t.from) == agent && int(t.net) == n && (t.status == sPending || t.status == sConfirmed) && t.at > s.now-dayWindow {
			sum += t.eq
		}
	}
	return sum
}

func equivalent(asset int, units int64) int64 {
	if asset == mETH {
		return units * ethMicroUSDG
	}
	return units
}

func refusal(status int, code, rule string) mAnswer {
	return mAnswer{status: status, code: code, rule: rule, tr: -1, held: -1}
}

// step applies in to s, given the answer out. It reports whether out is
// an answer the model allows, and the next state.
func (m modelConfig) step(s *mState, in *mInput, out *mOutput) (bool, *mState) {
	ns := *s
	switch in.kind {
	case opSettle:
		count := 0
		for i, t := range s.tr {
			if t.status == sPending {
				ns.confirm(i)
				count++
			}
		}
		return out.ans.status == 200 && out.ans.count == count, &ns
	case opAdvance:
		target := s.now + in.d
		for i, t := range s.tr {
			if t.status == sPending && t.at+blockTime <= target {
				ns.confirm(i)
			}
		}
		for i, h := range s.held {
			if h.status == hPending && h.until <= target {
				ns.cloneHeld()
				ns.held[i].status = hExpired
			}
		}
		ns.now = target
		return out.ans.status == 200 && out.ans.at == target, &ns
	case opFault:
		return out.ans.status == 201, s
	case opRestart: // nothing happens to committed state
		return out.ans.status == 200, s
	case opRevoke:
		ns.revoked |= 1 << in.key
		return out.ans.status == 204, &ns
	case opFail:
		if in.tr < 0 || s.tr[in.tr].status == sNone {
			return out.ans.status == 404, s
		}
		if s.tr[in.tr].status != sPending {
			return out.ans.status == 409, s
		}
		ns.failTransfer(int(in.tr))
		return out.ans.status == 200 && out.ans.tstatus == "failed", &ns
	}

	// The /v1 pipeline: authentication, then idempotency, then the call.
	if s.revoked&(1<<in.key) != 0 {
		return out.ans.status == 401 && out.ans.code == "unauthorized" && !out.replayed, s
	}
	if in.kind == opGet {
		want := m.get(s, in)
		return out.ans == want && !out.replayed, s
	}
	if in.kind == opPolicy {
		return m.policy(&ns, in, out)
	}
	if in.idem >= 0 {
		if rec := s.idem[in.idem]; rec.used && s.now-rec.at < idemTTL {
			if rec.sig != in.sig {
				return out.ans == refusal(422, "idempotency_key_reused", "") && !out.replayed, s
			}
			return out.ans == rec.ans && out.replayed, s
		}
	}
	var ok, kept bool
	var next *mState
	switch in.kind {
	case opPay:
		ok, next, kept = m.pay(&ns, in, out)
	case opApprove, opReject:
		ok, next, kept = m.decide(&ns, in, out)
	default:
		panic(fmt.Sprintf("linz model: unknown operation %d", in.kind))
	}
	if !ok || (out.replayed && !in.retried) {
		return false, s
	}
	if in.idem >= 0 && kept {
		next.cloneIdem()
		next.idem[in.idem] = mIdem{used: true, at: s.now, sig: in.sig, ans: out.ans}
	}
	return true, next
}

// kept reports whether the idempotency store keeps an answer: everything
// decided on the state; not 400 (the request never ran) unless the
// config says the old rule.
func (m modelConfig) kept(status int) bool {
	return status < 500 && (status != 400 || m.keep400)
}

// pay is POST /v1/transfers by the key's account.
func (m modelConfig) pay(s *mState, in *mInput, out *mOutput) (ok bool, next *mState, kept bool) {
	from, n := in.acct, in.net
	refuse := func(status int, code, rule string) (bool, *mState, bool) {
		return out.ans == refusal(status, code, rule), s, m.kept(status)
	}
	switch {
	case in.to == mGhost:
		return refuse(404, "recipient_not_found", "")
	case in.to == from:
		return refuse(400, "invalid_request", "")
	case in.conf && !mReady[in.to]:
		return refuse(422, "recipient_not_confidential_ready", "")
	}
	eq := equivalent(in.asset, in.units)
	if isAgent(from) {
		p := s.pol[from][n] // the payment's network's policy only
		switch {
		case in.asset == mETH && !p.eth:
			return refuse(403, "policy_violation", "asset_not_allowed")
		case eq > p.perTx:
			return refuse(403, "policy_violation", "per_transaction_limit")
		case s.spent(from, n)+eq > p.daily:
			return refuse(403, "policy_violation", "daily_limit")
		}
		funded := m.fundedFor(s, from, n, in.asset, in.units)
		if m.oldOrder && !funded {
			return refuse(402, "insufficient_balance", "")
		}
		if p.hasThreshold && eq > p.threshold {
			// Held: nothing reserved, the balance not looked at.
			h := out.ans.held
			if out.ans.status != 202 || h < 0 || s.held[h].status != sNone || out.ans.tr != -1 ||
				out.ans.code != "" || out.ans.at != s.now || out.ans.tstatus != "pending_approval" {
				return false, s, false
			}
			s.cloneHeld()
			s.held[h] = mHeld{status: hPending, net: int8(n), agent: int8(from), to: int8(in.to), asset: int8(in.asset),
				conf: in.conf, units: in.units, eq: eq, until: s.now + approvalWindow}
			return true, s, true
		}
	}
	if !m.fundedFor(s, from, n, in.asset, in.units) {
		return refuse(402, "insufficient_balance", "")
	}
	return m.submit(s, out, 201, n, from, in.to, in.asset, in.units, eq), s, true
}

// fundedFor is the balance check of a payment: available covers it.
func (m modelConfig) fundedFor(s *mState, a, n, asset int, units int64) bool {
	return s.available(a, n, asset) >= units
}

// submit records a new pending transfer named by the answer, reserving
// its amount, and checks the answer's status and created_at.
func (m modelConfig) submit(s *mState, out *mOutput, status, n, from, to, asset int, units, eq int64) bool {
	t := out.ans.tr
	if out.ans.status != status || t < 0 || s.tr[t].status != sNone || out.ans.code != "" {
		return false
	}
	if status == 201 && (out.ans.at != s.now || out.ans.tstatus != "pending" || out.ans.held != -1) {
		return false
	}
	s.cloneTr()
	s.tr[t] = mTransfer{status: sPending, net: int8(n), from: int8(from), to: int8(to), asset: int8(asset),
		units: units, eq: eq, at: s.now, agent: isAgent(from)}
	if m.mutant != "forget reservation" {
		s.bal[from][n][asset].reserved += units
	}
	return true
}

// decide is an owner's approval or rejection of a held payment.
func (m modelConfig) decide(s *mState, in *mInput, out *mOutput) (ok bool, next *mState, kept bool) {
	refuse := func(status int, code, rule string) (bool, *mState, bool) {
		return out.ans == refusal(status, code, rule), s, m.kept(status)
	}
	hi := in.held
	if hi < 0 {
		return refuse(404, "transaction_not_found", "")
	}
	h := s.held[hi]
	if (h.status != hPending && h.status != hExpired) || int(h.net) != in.net {
		return refuse(404, "transaction_not_found", "")
	}
	if mOwner[h.agent] != in.acct {
		return refuse(403, "not_agent_owner", "")
	}
	if h.status == hExpired || s.now >= h.until {
		if h.status != hExpired {
			s.cloneHeld()
			s.held[hi].status = hExpired
		}
		return out.ans == refusal(409, "transaction_expired", ""), s, true
	}
	if in.kind == opReject {
		if out.ans != (mAnswer{status: 200, tr: -1, held: hi, at: s.now, tstatus: "rejected"}) {
			return false, s, false
		}
		s.cloneHeld()
		s.held[hi].status = hRejected
		return true, s, true
	}
	p := s.pol[h.agent][in.net] // the held payment's network's policy, in force now
	switch {
	case h.asset == mETH && !p.eth:
		return refuse(403, "policy_violation", "asset_not_allowed")
	case h.eq > p.perTx:
		return refuse(403, "policy_violation", "per_transaction_limit")
	case s.spent(int(h.agent), in.net)+h.eq > p.daily:
		return refuse(403, "policy_violation", "daily_limit")
	case !m.fundedFor(s, int(h.agent), in.net, int(h.asset), h.units):
		return refuse(402, "insufficient_balance", "")
	}
	if out.ans.held != hi || out.ans.at != s.now || out.ans.tstatus != "approved" {
		return false, s, false
	}
	if !m.submit(s, out, 200, in.net, int(h.agent), int(h.to), int(h.asset), h.units, h.eq) {
		return false, s, false
	}
	s.cloneHeld()
	s.held[hi].status = hApproved
	return true, s, true
}

// policy is PATCH /v1/agents/{id}/spend-policy by the key's account: it
// changes the agent's policy on the key's network only, validated as the
// merged result, and answers the whole policy.
func (m modelConfig) policy(s *mState, in *mInput, out *mOutput) (bool, *mState) {
	if out.replayed {
		return false, s
	}
	if mOwner[in.agent] != in.acct {
		return out.ans == refusal(403, "not_agent_owner", ""), s
	}
	p, param := in.patch.apply(s.pol[in.agent][in.net])
	if param != "" {
		want := refusal(400, "invalid_policy", "")
		want.param = param
		return out.ans == want, s
	}
	if out.ans != (mAnswer{status: 200, tr: -1, held: -1, pol: p}) {
		return false, s
	}
	s.pol[in.agent][in.net] = p
	return true, s
}

// get is GET /v1/transfers/{id}: visible to its sender, its recipient and
// the owner of an agent that is either, on the transfer's network.
func (m modelConfig) get(s *mState, in *mInput) mAnswer {
	notFound := refusal(404, "not_found", "")
	if in.tr < 0 {
		return notFound
	}
	t := s.tr[in.tr]
	if t.status == sNone || int(t.net) != in.net {
		return notFound
	}
	a := in.acct
	if int(t.from) != a && int(t.to) != a && mOwner[t.from] != a && mOwner[t.to] != a {
		return notFound
	}
	return mAnswer{status: 200, tr: in.tr, held: -1, at: t.at, tstatus: mStatusName[t.status]}
}

func (s *mState) cloneTr()   { s.tr = slices.Clone(s.tr) }
func (s *mState) cloneHeld() { s.held = slices.Clone(s.held) }
func (s *mState) cloneIdem() { s.idem = slices.Clone(s.idem) }

// confirm settles pending transfer i: the sender's units and reservation
// drop together, the recipient is credited.
func (s *mState) confirm(i int) {
	s.cloneTr()
	t := &s.tr[i]
	t.status = sConfirmed
	b := &s.bal[t.from][t.net][t.asset]
	b.units -= t.units
	b.reserved -= t.units
	s.bal[t.to][t.net][t.asset].units += t.units
}

// failTransfer fails pending transfer i: the reservation goes back.
func (s *mState) failTransfer(i int) {
	s.cloneTr()
	t := &s.tr[i]
	t.status = sFailed
	s.bal[t.from][t.net][t.asset].reserved -= t.units
}

func (s *mState) equal(o *mState) bool {
	return s.now == o.now && s.bal == o.bal && s.pol == o.pol && s.revoked == o.revoked &&
		slices.Equal(s.tr, o.tr) && slices.Equal(s.held, o.held) && slices.Equal(s.idem, o.idem)
}

// hash covers the cheap part of the state; equal decides.
func (s *mState) hash() uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, s.now, s.revoked, s.bal)
	var used uint64
	for _, t := range s.tr {
		used = used*31 + uint64(t.status)
	}
	for _, x := range s.held {
		used = used*37 + uint64(x.status)
	}
	for _, x := range s.idem {
		if x.used {
			used = used*41 + 1
		}
	}
	for _, a := range s.pol {
		for _, p := range a {
			used = used*43 + uint64(p.daily) ^ uint64(p.perTx)<<1 ^ uint64(p.threshold)<<2
		}
	}
	return h.Sum64() ^ used
}

// porcupine returns the model for a history with the given table sizes,
// initial balances and initial policies.
func (m modelConfig) porcupine(nTr, nHeld, nIdem int, funded [mAccounts][mNetworks][mAssets]int64, pol [mAccounts][mNetworks]mPolicy) porcupine.Model {
	return porcupine.Model{
		Init: func() any {
			s := m.init(nTr, nHeld, nIdem)
			s.pol = pol
			for a := range funded {
				for n := range funded[a] {
					for x := range funded[a][n] {
						s.bal[a][n][x].units = funded[a][n][x]
					}
				}
			}
			return s
		},
		Step: func(state, input, output any) (bool, any) {
			return m.step(state.(*mState), input.(*mInput), output.(*mOutput))
		},
		Equal: func(a, b any) bool { return a.(*mState).equal(b.(*mState)) },
		Hash:  func(s any) uint64 { return s.(*mState).hash() },
		DescribeOperation: func(input, output any) string {
			in, out := input.(*mInput), output.(*mOutput)
			return fmt.Sprintf("c%d %s -> %d %s%s", in.client, in.desc, out.ans.status, out.ans.code, replayMark(out.replayed))
		},
	}
}

func replayMark(r bool) string {
	if r {
		return " (replayed)"
	}
	return ""
}
