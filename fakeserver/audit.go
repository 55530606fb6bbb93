package fakeserver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/audit"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// The audit of the code under test: the server keeps a bounded record of
// each account's /v1 requests (recordCall, from the request pipeline) and
// reads it, with the delivery records and its own books, through the rule
// functions of internal/audit. docs/fakeserver.md ("Audit") documents
// each rule and the bug it catches.

// AuditFinding is one thing the audit found in the traffic of the code
// under test (or, for an invariant_ rule, in the fake itself). It names
// requests, deliveries and transfers by id, never an amount or a memo.
type AuditFinding struct {
	// Rule names the rule, such as missing_idempotency_key.
	Rule string `json:"rule"`
	// Account is the handle of the account whose traffic it is ("" for a
	// network's invariant).
	Account string          `json:"account,omitempty"`
	Network confpay.Network `json:"network"`
	// RequestIDs are the X-Request-Id of the requests behind it.
	RequestIDs []string `json:"request_ids,omitempty"`
	// DeliveryIDs are the webhook deliveries behind it.
	DeliveryIDs []string `json:"delivery_ids,omitempty"`
	// TransferIDs are the transfers behind it.
	TransferIDs []string `json:"transfer_ids,omitempty"`
	// Param is the request parameter a malformed request got wrong.
	Param string `json:"param,omitempty"`
	// Message says what happened and what to change.
	Message string `json:"message"`
}

// String is the finding on one line.
func (f AuditFinding) String() string {
	var b strings.Builder
	b.WriteString(f.Rule)
	if f.Account != "" {
		b.WriteString(" " + f.Account)
	}
	b.WriteString(" (" + string(f.Network) + ")")
	for _, ids := range [][]string{f.RequestIDs, f.DeliveryIDs, f.TransferIDs} {
		if len(ids) > 0 {
			b.WriteString(" " + strings.Join(ids, ","))
		}
	}
	b.WriteString(": " + f.Message)
	return b.String()
}

// AuditConfig holds the audit's thresholds; a zero field takes its
// default.
type AuditConfig struct {
	// RetryFloor is the shortest wait, in real time, between an answer
	// and the next send of the same request under the same
	// Idempotency-Key that is not a finding (default
	// DefaultAuditRetryFloor). A Retry-After on the answer replaces it.
	RetryFloor time.Duration
	// MaxSends is the most sends of one Idempotency-Key that are not a
	// finding (default DefaultAuditMaxSends).
	MaxSends int
	// DoublePaymentWindow is how close, in server time, two payments with
	// the same sender, recipient, asset, amount and memo under different
	// keys must be to be a finding (default
	// DefaultAuditDoublePaymentWindow).
	DoublePaymentWindow time.Duration
	// MaxRequests is how many requests the audit keeps per account and
	// network (default DefaultMaxAuditRequests); past it the oldest are
	// forgotten, and so are their findings.
	MaxRequests int
}

// Defaults of AuditConfig.
const (
	DefaultAuditRetryFloor          = audit.DefaultRetryFloor
	DefaultAuditMaxSends            = audit.DefaultMaxSends
	DefaultAuditDoublePaymentWindow = audit.DefaultDoublePaymentWindow
	DefaultMaxAuditRequests         = audit.DefaultMaxRequests
)

// WithAuditConfig sets the audit's thresholds and bound.
func WithAuditConfig(c AuditConfig) Option { return func(o *options) { o.audit = c } }

// recordCall keeps what the audit needs of an authenticated /v1 call
// once it is answered, before the client can see the answer (or its
// drop): a test that asks the audit next finds the call. Reads are kept
// too: a malformed list query is a finding. A call is recorded once.
func (s *Server) recordCall(c *call) {
	if c.recorded {
		return
	}
	c.recorded = true
	r := audit.Request{
		ID:         c.reqID,
		Route:      c.route,
		Arrived:    c.arrived,
		Answered:   clock.Mono(),
		At:         c.at,
		Status:     c.status,
		Code:       string(c.code),
		Param:      c.param,
		TransferID: c.transferID,
		Replayed:   c.replayed,
		Cut:        c.drop || c.reset,
		RetryAfter: -1,
	}
	if keys := c.r.Header.Values("Idempotency-Key"); len(keys) == 1 {
		r.Key = keys[0]
		r.Digest = c.fingerprint()
	}
	if ra := c.w.Header().Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(ra); err == nil && n >= 0 {
			r.RetryAfter = time.Duration(n) * time.Second
		}
	}
	s.audits.Add(c.owner(), r)
}

func auditOwner(acct string, n confpay.Network) string { return acct + "\x00" + string(n) }

// ownerKey is auditOwner(k.acct.id, k.network), one string per key: the
// key's account and network never change.
func (k *apiKey) ownerKey() string {
	if p := k.owner.Load(); p != nil {
		return *p
	}
	o := auditOwner(k.acct.id, k.network)
	k.owner.Store(&o)
	return o
}

// answeredTransfer is the transfer a handler's answer made or names: a
// 201 payment's, or an approval's.
func answeredTransfer(status int, v any) string {
	switch t := v.(type) {
	case *confpay.Transfer:
		if status == http.StatusCreated {
			return t.TransferID
		}
	case *confpay.AgentTransaction:
		if status == http.StatusOK {
			return t.TransferID
		}
	}
	return ""
}

// replayedTransfer is answeredTransfer for a stored answer.
func replayedTransfer(status int, body []byte) string {
	if status != http.StatusCreated && status != http.StatusOK {
		return ""
	}
	var v struct {
		TransferID string `json:"transfer_id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.TransferID
}

// Audit runs every rule over the traffic of every account on both
// networks and the server's own books, and returns the findings: none
// when the code under test used the API as documented. See
// docs/fakeserver.md ("Audit") for the rules.
func (s *Server) Audit() []AuditFinding {
	out, _ := s.audit("", "")
	return out
}

// AuditAccount is Audit for one account (a handle or an id) on network n
// ("" for both), with the invariants of the network (or both).
func (s *Server) AuditAccount(accountRef string, n confpay.Network) ([]AuditFinding, error) {
	return s.audit(accountRef, n)
}

// CheckAudit fails the test, listing every finding, unless Audit finds
// nothing. On a virtual clock it first runs the deliveries due now (Sync).
func (s *Server) CheckAudit(t Tester) {
	t.Helper()
	if s.clock.Virtual() {
		s.Sync()
	}
	fs := s.Audit()
	if len(fs) == 0 {
		return
	}
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = "  " + f.String()
	}
	t.Fatalf("fakeserver: the audit found %d problem(s) in the code under test (docs/fakeserver.md, Audit):\n%s", len(fs), strings.Join(lines, "\n"))
}

// auditSubject is one account on one network, as the audit reads it.
type auditSubject struct {
	id, handle string
	net        confpay.Network
	payments   map[string]audit.Payment
}

func (s *Server) audit(ref string, only confpay.Network) ([]AuditFinding, error) {
	nets := []confpay.Network{confpay.NetworkTest, confpay.NetworkLive}
	if only != "" {
		if only != confpay.NetworkTest && only != confpay.NetworkLive {
			return nil, errInvalid("network", "network must be test or live")
		}
		nets = []confpay.Network{only}
	}
	cfg := audit.Config{RetryFloor: s.opts.audit.RetryFloor, MaxSends: s.opts.audit.MaxSends,
		DoublePaymentWindow: s.opts.audit.DoublePaymentWindow}.WithDefaults()

	// Under s.mu: the subjects, what their payments were, and the
	// invariants. The request log and the hooks are read after, each
	// under its own lock.
	var subjects []*auditSubject
	var out []AuditFinding
	reqs := map[*auditSubject][]audit.Request{}
	s.mu.Lock()
	var accts []*account
	if ref != "" {
		a, err := s.lookupAccountLocked(ref)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		accts = []*account{a}
	} else {
		for _, a := range s.accounts {
			accts = append(accts, a)
		}
		sort.Slice(accts, func(i, j int) bool { return accts[i].seq < accts[j].seq })
	}
	for _, name := range nets {
		n := s.nets[name]
		for _, a := range accts {
			sub := &auditSubject{id: a.id, handle: a.handle, net: name, payments: map[string]audit.Payment{}}
			rs := s.audits.Requests(auditOwner(a.id, name)) // the log's lock is a leaf
			for _, r := range rs {
				if t := n.transfers.byID.get(r.TransferID); t != nil && r.Route == "POST /v1/transfers" {
					sub.payments[t.id] = audit.Payment{TransferID: t.id, Digest: paymentDigest(t), At: t.createdAt}
				}
			}
			reqs[sub] = rs
			subjects = append(subjects, sub)
		}
		for _, f := range s.invariantsLocked(n) {
			out = append(out, finding(f, "", name))
		}
	}
	s.mu.Unlock()

	defer s.hooksDurable() // the delivery records are read outside s.mu (persist.go)
	for _, sub := range subjects {
		rs := reqs[sub]
		var fs []audit.Finding
		fs = append(fs, audit.MissingKey(rs)...)
		fs = append(fs, audit.KeyReused(rs)...)
		fs = append(fs, audit.DoublePayment(rs, sub.payments, cfg.DoublePaymentWindow)...)
		fs = append(fs, audit.Retries(rs, cfg.RetryFloor, cfg.MaxSends)...)
		fs = append(fs, audit.Malformed(rs)...)
		fs = append(fs, audit.OneTransferPerKey(rs)...)
		var ds []audit.Delivery
		for _, d := range s.hooks.DeliveryRecords(sub.net, sub.id) {
			ds = append(ds, audit.Delivery{ID: d.DeliveryID, WebhookID: d.WebhookID, EventID: d.EventID, Event: string(d.Event),
				Status: string(d.Status), Attempts: d.Attempts, ResponseStatus: d.ResponseStatus})
		}
		fs = append(fs, audit.Unacknowledged(ds)...)
		for _, f := range fs {
			out = append(out, finding(f, sub.handle, sub.net))
		}
	}
	if out == nil {
		out = []AuditFinding{}
	}
	return out, nil
}

func finding(f audit.Finding, handle string, n confpay.Network) AuditFinding {
	return AuditFinding{Rule: f.Rule, Account: handle, Network: n, RequestIDs: f.RequestIDs, DeliveryIDs: f.DeliveryIDs,
		TransferIDs: f.TransferIDs, Param: f.Param, Message: f.Message}
}

// paymentDigest is a digest of what makes two payments the same
// payment: recipient, asset, amount, memo and confidentiality. It never
// leaves the audit.
func paymentDigest(t *transfer) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, part := range [][]byte{t.toAddr.Bytes(), []byte(t.asset), t.units.Bytes(), []byte(t.memo), {boolByte(t.confidential)}} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// invariantsLocked checks the fake's own books on network n: each
// asset's supply is what its accounts hold; no balance or reservation is
// negative or over the balance; each account's reservation is exactly
// its pending outgoing transfers. A finding is a bug in the fake.
func (s *Server) invariantsLocked(n *network) []audit.Finding {
	var out []audit.Finding
	bad := func(msg string) {
		out = append(out, audit.Finding{Rule: audit.RuleMoneyConserved,
			Message: msg + ": a bug in the fakeserver, not in your code; please report it."})
	}
	pending := map[string]map[string]*big.Int{} // account id → asset → units
	for t := range n.transfers.pending.all {
		m := pending[t.from.id]
		if m == nil {
			m = map[string]*big.Int{}
			pending[t.from.id] = m
		}
		if m[t.asset] == nil {
			m[t.asset] = new(big.Int)
		}
		m[t.asset].Add(m[t.asset], t.units)
	}
	held := map[string]*big.Int{}
	for _, id := range n.ledger.Accounts() {
		for _, e := range n.ledger.Entries(id) {
			if held[e.Asset] == nil {
				held[e.Asset] = new(big.Int)
			}
			held[e.Asset].Add(held[e.Asset], e.Units)
			want := pending[id][e.Asset]
			if want == nil {
				want = new(big.Int)
			}
			switch {
			case e.Units.Sign() < 0 || e.Reserved.Sign() < 0 || e.Available.Sign() < 0:
				bad("account " + id + " holds a negative " + e.Asset + " balance or reservation")
			case e.Reserved.Cmp(want) != 0:
				bad("account " + id + "'s " + e.Asset + " reservation differs from its pending outgoing transfers")
			}
		}
	}
	out = append(out, s.policyInvariantsLocked(n)...)
	for asset, sup := range n.ledger.Supply() {
		h := held[asset]
		if h == nil {
			h = new(big.Int)
		}
		if h.String() != sup {
			bad(string(n.name) + " " + asset + ": the accounts hold other than what was funded, less what left for external wallets")
		}
	}
	return out
}

// policyInvariantsLocked checks that every agent payment on n kept the
// spend policy it was judged under, as the linearizability test's model
// does: each payment made (submitted, or approved) was within the
// per-transaction limit, and with the payments before it in its 24 hours
// within the daily limit (skipped for an agent whose clock was set
// backwards, where "before" is ambiguous); each payment waiting for a
// decision is within the per-transaction limit and over the approval
// threshold. A failed transfer no longer counts, as for the policy
// itself. A finding is a bug in the fake.
func (s *Server) policyInvariantsLocked(n *network) []audit.Finding {
	var out []audit.Finding
	bad := func(agent *account, ids []string, msg string) {
		out = append(out, audit.Finding{Rule: audit.RulePolicyBounds, TransferIDs: ids,
			Message: "agent " + agent.handle + ": " + msg + ": a bug in the fakeserver, not in your code; please report it."})
	}
	agents := make([]*account, 0, len(n.held.spend))
	for a := range n.held.spend {
		agents = append(agents, a)
	}
	sort.Slice(agents, func(i, j int) bool { return agents[i].seq < agents[j].seq })
	counts := func(e *spendEntry) bool { return e.t == nil || e.t.status != stateFailed }
	for _, a := range agents {
		w := n.held.spend[a]
		var sum int64 // the counting entries in (entries[i].at-24h, entries[i].at]
		lo := 0
		for i := range w.entries {
			e := &w.entries[i]
			if counts(e) {
				sum = rules.AddSpend(sum, e.amount)
			}
			for cutoff := e.at.Add(-rules.Window); !w.entries[lo].at.After(cutoff); lo++ {
				if x := &w.entries[lo]; counts(x) {
					sum -= x.amount
				}
			}
			if !e.bounded || !counts(e) {
				continue
			}
			var id []string
			if e.t != nil {
				id = []string{e.t.id}
			}
			switch {
			case e.amount > e.perTx:
				bad(a, id, "a payment over the per-transaction limit it was judged under was made")
			case !w.unordered && sum > e.daily:
				bad(a, id, "a payment took the spend of its 24 hours over the daily limit it was judged under")
			}
		}
	}
	held := make([]*heldTx, 0)
	for _, h := range n.held.byID {
		if h.status == heldPending && h.judged.bounded {
			held = append(held, h)
		}
	}
	sort.Slice(held, func(i, j int) bool { return held[i].seq < held[j].seq })
	for _, h := range held {
		switch {
		case h.judged.amount > h.judged.perTx:
			bad(h.agent, nil, "held payment "+h.id+" is over the per-transaction limit it was judged under")
		case h.judged.amount <= h.judged.threshold:
			bad(h.agent, nil, "held payment "+h.id+" is not over the approval threshold it was judged under")
		}
	}
	return out
}

// adminAudit answers GET /_fake/audit?account=&network=: the findings
// of Audit, for one account or all, on one network or both.
func (s *Server) adminAudit(c *call) (int, any, error) {
	q := c.r.URL.Query()
	fs, err := s.audit(q.Get("account"), confpay.Network(q.Get("network")))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"findings": fs}, nil
}
