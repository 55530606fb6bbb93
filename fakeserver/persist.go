package fakeserver

import (
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// The data directory (WithDataDir, the binary's -data): memory stays the
// source of every answer; the directory is written at the one place every
// operation commits, the release of s.mu (stateMu.Unlock), and read once,
// by NewUnstartedServer.
//
// An operation marks what it changed (markAccount, markKey,
// markTransfer, markHeld; the ledger tracks its own touched books). When
// it lets go of s.mu, the marks become one record, the whole new state of
// each changed thing, appended to the journal in commit order; then,
// outside s.mu, the operation waits until the journal is fsynced up to
// there, so that its answer is only written once its effect is durable.
// One fsync covers every operation that committed while the previous one
// ran (group commit). A read waits too, for whatever it may have seen.
//
// The rule: nothing is shown before it is durable, and what is shown is
// waited for once. Each section computes its bound, a mark: its own
// record, else every record committed before it (appended, or held in
// the commit queue behind an Idempotency-Key request that made its
// effect and has not answered; see persist_hooks.go). A section outside an HTTP call (the direct API, a
// timer, a delivery attempt) waits for its bound at Unlock. A section an
// HTTP call runs takes the lock with lockFor: its bound joins the call's
// (call.seen), and the answer waits for that once (durableFor, in
// writeJSON and writeRaw). Sections of a request under an
// Idempotency-Key must be taken so (from its first record on, its records
// are held behind the request's own slot until its answer is known; the
// first section that writes one puts the slot in the commit order, at
// its Unlock). State read outside s.mu
// (the webhook state under hooks.mu, the Idempotency-Key answers) is
// written and bounded by a section taken after the read (sawOutside,
// hooksDurable; a replayed answer is kept only once its record is in the
// commit order, and its replay bounds it likewise), and a delivery attempt
// waits before it sends its event.
//
// At start the snapshot and the journal are replayed record by record
// (later states of a thing replace earlier ones; persist_codec.go has the
// binary encoding) and the indexes and timers rebuilt. The journal is
// folded into a new snapshot only once it outgrows the snapshot: at
// start (journal.Rewrite, under s.mu), or while running (rewriteLocked: a
// fuzzy snapshot encoded in chunks, persist_rewrite.go).

// stateMu is s.mu: a mutex whose Unlock commits (see above).
type stateMu struct {
	sync.Mutex
	s *Server
	// answer, set by lockFor for one section, is the HTTP call whose
	// answer waits for what the section saw, in place of Unlock.
	answer *call
}

// Unlock writes what the critical section changed to the journal, lets go,
// and waits until everything the section saw is durable: its own record
// if it wrote one, else every record committed before it, appended or
// held behind an Idempotency-Key request's slot (a read shows nothing a
// crash could take back). A section taken with lockFor adds that to its
// call's answer wait instead; when its call is under an Idempotency-Key
// and the section writes a record, the call's slot enters the commit
// order first, if it has not yet (persist_hooks.go). The wait is free when a flush already
// covered it. A journal that cannot be written stops the server from
// answering: the operation panics (net/http drops the connection) rather
// than acknowledge what may be lost.
func (m *stateMu) Unlock() {
	s := m.s
	c := m.answer
	m.answer = nil
	if s == nil || s.jr == nil || s.jrDone.Load() {
		m.Mutex.Unlock()
		return
	}
	var enter *slot
	if c != nil {
		enter = c.slot // enters the commit order with its request's first record
	}
	mk := s.flushLocked(enter)
	if mk == (mark{}) {
		mk = s.boundLocked()
	}
	m.Mutex.Unlock()
	if c != nil {
		c.seen = c.seen.max(mk)
		return
	}
	s.waitMark(mk)
}

// lockFor takes s.mu for a section that HTTP call c runs: rather than
// wait at Unlock, the section's bound joins c's answer wait (durableFor),
// so that a request waits once, before its answer. Every section a
// request under an Idempotency-Key runs between openSlot and closeSlot
// must be taken so: its first record puts the request's slot in the
// commit order (stateMu.Unlock), what it wrote from then on is held
// behind that slot, and a wait for it there would never end.
func (s *Server) lockFor(c *call) {
	s.mu.Lock()
	s.mu.answer = c
}

// waitDurable waits until journal record seq is durable.
func (s *Server) waitDurable(seq uint64) {
	if err := s.jr.Wait(seq); err != nil {
		panic(fmt.Sprintf("confpay-fakeserver: the data directory cannot be written (%v); stopping rather than acknowledging what may be lost", err))
	}
}

// durableFor waits, before c's answer is written, until what c's
// lockFor sections, its Idempotency-Key slot and its replay saw is
// durable. Every other section waited at its Unlock.
func (s *Server) durableFor(c *call) {
	if s.jr != nil && !s.jrDone.Load() {
		s.waitMark(c.seen)
	}
}

// sawOutside adds to c's answer wait everything committed so far, the
// webhook changes noted under hooks.mu alone included (they are written
// now): a handler that read state outside s.mu (the webhook state, a
// kept Idempotency-Key answer) calls it after reading.
func (s *Server) sawOutside(c *call) {
	if s.jr == nil {
		return
	}
	s.lockFor(c)
	s.mu.Unlock()
}

// hooksDurable is sawOutside for a caller without an HTTP answer (the
// direct API, a delivery attempt): it waits there and then.
func (s *Server) hooksDurable() {
	if s.jr == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock() // Unlock writes the noted changes and waits for all
}

// dirtySet is what the critical section changed. Guarded by s.mu.
type dirtySet struct {
	any       bool // something that must be written now
	reset     bool
	assets    bool
	accounts  map[*account]struct{}
	keys      map[*apiKey]struct{} // lazy when only usage changed
	transfers map[*transfer]*network
	held      map[*heldTx]*network
	heldGone  []heldGoneRec // held payments pruned from the history
	// heldPruned is the networks whose held payments were pruned (a
	// pass ran: heldBook.lastPrune).
	heldPruned []*network
	policies   map[policyKey]struct{}
}

// policyKey names an agent's policy on a network.
type policyKey struct {
	n     *network
	agent string
}

// clear empties d for the next section, keeping its maps: a section
// that marks something would otherwise make them anew.
func (d *dirtySet) clear() {
	*d = dirtySet{accounts: d.accounts, keys: d.keys, transfers: d.transfers, held: d.held, policies: d.policies, heldGone: d.heldGone[:0],
		heldPruned: d.heldPruned[:0]}
	clear(d.accounts)
	clear(d.keys)
	clear(d.transfers)
	clear(d.held)
	clear(d.policies)
}

func (s *Server) markAccount(a *account) {
	if s.jr == nil {
		return
	}
	if s.dirty.accounts == nil {
		s.dirty.accounts = map[*account]struct{}{}
	}
	s.dirty.accounts[a] = struct{}{}
	s.dirty.any = true
}

// markKey marks k changed; usageOnly (its last use and request count)
// rides with the next change rather than forcing a write.
func (s *Server) markKey(k *apiKey, usageOnly bool) {
	if s.jr == nil {
		return
	}
	if s.dirty.keys == nil {
		s.dirty.keys = map[*apiKey]struct{}{}
	}
	s.dirty.keys[k] = struct{}{}
	if !usageOnly {
		s.dirty.any = true
	}
}

func (s *Server) markTransfer(n *network, t *transfer) {
	if s.jr == nil {
		return
	}
	if s.dirty.transfers == nil {
		s.dirty.transfers = map[*transfer]*network{}
	}
	s.dirty.transfers[t] = n
	s.dirty.any = true
}

func (s *Server) markPolicy(n *network, agentID string) {
	if s.jr == nil {
		return
	}
	if s.dirty.policies == nil {
		s.dirty.policies = map[policyKey]struct{}{}
	}
	s.dirty.policies[policyKey{n, agentID}] = struct{}{}
	s.dirty.any = true
}

func (s *Server) markHeld(n *network, h *heldTx) {
	if s.jr == nil {
		return
	}
	if s.dirty.held == nil {
		s.dirty.held = map[*heldTx]*network{}
	}
	s.dirty.held[h] = n
	s.dirty.any = true
}

// markHeldPruned records that n's held payments were pruned now
// (heldBook.pruneLocked), forgetting gone: the record says so, so that
// neither an older record nor a snapshot chunk taken before brings them
// back (persist_rewrite.go), and a restart prunes next when memory would.
func (s *Server) markHeldPruned(n *network, gone []string) {
	if s.jr == nil {
		return
	}
	for _, id := range gone {
		s.dirty.heldGone = append(s.dirty.heldGone, heldGoneRec{Network: n.name, ID: id})
	}
	s.dirty.heldPruned = append(s.dirty.heldPruned, n)
	s.dirty.any = true
}

// markClock records the clock's time (it moved).
func (s *Server) markClock() {
	if s.jr != nil {
		s.dirty.any = true
	}
}

// ---- records ----

// batch is one journal record: everything one critical section changed,
// each thing in its whole new state (persist_codec.go encodes it). A
// snapshot is a series of batches.
type batch struct {
	Reset     bool
	Now       time.Time
	Seq       [3]uint64 // transfers, accounts, keys
	HeldSeq   map[string]int
	Accounts  []accountRec
	Keys      []keyRec
	Books     []bookRec
	Transfers []transferRec
	Held      []heldRec
	HeldGone  []heldGoneRec
	// HeldPruned is when each network's held payments were last pruned
	// (itemHeldPruned): in a record of a pass, and in a snapshot's head.
	HeldPruned []heldPrunedRec
	Policies   []policyRec
	Assets     []Asset
	// Hooks is the webhook changes (persist_hooks.go), Idem the kept
	// Idempotency-Key answers.
	Hooks *hooks.Changes
	Idem  []idempotency.Record
	// IdemGone is the Idempotency-Keys the store forgot past their TTL
	// (itemIdemGone; decoded before Idem, a later key of the same name).
	IdemGone []idempotency.Gone
}

type accountRec struct {
	ID        string              `json:"id"`
	Handle    string              `json:"handle"`
	Type      confpay.AccountType `json:"type"`
	Address   string              `json:"address"`
	KYC       confpay.KYCStatus   `json:"kyc,omitempty"`
	CreatedAt time.Time           `json:"created_at"`
	Seq       uint64              `json:"seq"`
	EncKey    string              `json:"enc_key,omitempty"`
	Domains   []string            `json:"domains,omitempty"`
	Owner     string              `json:"owner,omitempty"`
	AgentName string              `json:"agent_name,omitempty"`
	Status    confpay.AgentStatus `json:"agent_status,omitempty"`
	PolicyID  string              `json:"policy_id,omitempty"`
}

// policyRec is an agent's spend policy on one network; limits 0 and 0 is
// rules.Closed (no key of the network has set it yet).
type policyRec struct {
	Network    confpay.Network `json:"n"`
	Agent      string          `json:"agent"`
	ID         string          `json:"id"`
	UpdatedAt  time.Time       `json:"updated_at"`
	Daily      int64           `json:"daily"`
	PerTx      int64           `json:"per_tx"`
	Recipients []string        `json:"recipients"`
	Assets     []string        `json:"assets"`
	Hours      string          `json:"hours"`
	Threshold  int64           `json:"threshold"` // -1: none
}

type keyRec struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Network   confpay.Network `json:"network"`
	Acct      string          `json:"acct"`
	Hash      [32]byte        `json:"hash"` // SHA-256 of the key: the key itself is never stored
	CreatedAt time.Time       `json:"created_at"`
	LastUsed  *time.Time      `json:"last_used,omitempty"`
	Revoked   *time.Time      `json:"revoked,omitempty"`
	Requests  int64           `json:"requests,omitempty"`
	USDGMoved string          `json:"usdg_moved"`
	Seq       uint64          `json:"seq"`
}

type bookRec struct {
	Network confpay.Network `json:"n"`
	Acct    string          `json:"acct"`
	Rows    []ledger.Row    `json:"rows"`
}

type transferRec struct {
	Network       confpay.Network        `json:"n"`
	ID            string                 `json:"id"`
	From          string                 `json:"from"`
	To            string                 `json:"to,omitempty"`
	ToAddr        string                 `json:"to_addr"`
	ToText        string                 `json:"to_text"`
	Asset         string                 `json:"asset"`
	Units         string                 `json:"units"`
	Confidential  bool                   `json:"conf,omitempty"`
	Memo          string                 `json:"memo,omitempty"`
	Status        confpay.TransferStatus `json:"status"`
	TxHash        string                 `json:"tx"`
	CreatedAt     time.Time              `json:"created_at"`
	ConfirmedAt   *time.Time             `json:"confirmed_at,omitempty"`
	FailedAt      *time.Time             `json:"failed_at,omitempty"`
	Key           string                 `json:"key,omitempty"`
	FailAtConfirm bool                   `json:"fail_at_confirm,omitempty"`
	Note          string                 `json:"note,omitempty"`
	Spend         *spendRec              `json:"spend,omitempty"` // the agent's spend window entry
}

// heldGoneRec is a held payment pruned from the history (itemHeldGone).
type heldGoneRec struct {
	Network confpay.Network
	ID      string
}

// heldPrunedRec is when a network's held payments were last pruned
// (itemHeldPruned).
type heldPrunedRec struct {
	Network confpay.Network
	At      time.Time
}

type spendRec struct {
	At     time.Time `json:"at"`
	Amount int64     `json:"amount"`
}

type heldRec struct {
	Network      confpay.Network                `json:"n"`
	ID           string                         `json:"id"`
	Seq          int                            `json:"seq"`
	Agent        string                         `json:"agent"`
	To           string                         `json:"to,omitempty"`
	ToAddr       string                         `json:"to_addr"`
	ToText       string                         `json:"to_text"`
	Asset        string                         `json:"asset"`
	Units        string                         `json:"units"`
	Memo         string                         `json:"memo,omitempty"`
	Confidential bool                           `json:"conf,omitempty"`
	Payable      bool                           `json:"payable,omitempty"` // the payment is still kept (h.p)
	Transfer     string                         `json:"transfer,omitempty"`
	Key          string                         `json:"key,omitempty"`
	Status       confpay.AgentTransactionStatus `json:"status"`
	RequestedAt  time.Time                      `json:"requested_at"`
	ExpiresAt    time.Time                      `json:"expires_at"`
	DecidedAt    *time.Time                     `json:"decided_at,omitempty"`
	Note         string                         `json:"note,omitempty"`
	NoteReader   string                         `json:"note_reader,omitempty"`
}

func accountRecOf(a *account) accountRec {
	r := accountRec{ID: a.id, Handle: a.handle, Type: a.typ, Address: a.addressHex(), KYC: a.kyc, CreatedAt: a.createdAt,
		Seq: a.seq, Domains: a.domains, AgentName: a.agentName, Status: a.agentStatus}
	if a.encKey != nil {
		r.EncKey = a.encKey.Hex()
	}
	if a.owner != nil {
		r.Owner = a.owner.id
	}
	r.PolicyID = a.policyID
	return r
}

func policyRecOf(n *network, agentID string, p *policy) policyRec {
	th, ok := p.rules.Threshold()
	if !ok {
		th = -1
	}
	return policyRec{Network: n.name, Agent: agentID, ID: p.id, UpdatedAt: p.updatedAt, Daily: p.rules.DailyLimit(), PerTx: p.rules.PerTransactionLimit(),
		Recipients: p.rules.Recipients(), Assets: p.rules.Assets(), Hours: p.rules.ActiveHours().String(), Threshold: th}
}

func (r *policyRec) policy() (*policy, error) {
	pr := rules.Closed()
	if r.Daily != 0 || r.PerTx != 0 {
		var err error
		if pr, err = rules.New(r.Daily, r.PerTx, r.Recipients, r.Assets, r.Hours, r.Threshold); err != nil {
			return nil, err
		}
	}
	return &policy{id: r.ID, rules: pr, updatedAt: r.UpdatedAt}, nil
}

func keyRecOf(k *apiKey) keyRec {
	return keyRec{ID: k.id, Name: k.name, Network: k.network, Acct: k.acct.id, Hash: k.hash, CreatedAt: k.createdAt,
		LastUsed: k.lastUsedAt, Revoked: k.revokedAt, Requests: k.requestCount, USDGMoved: k.usdgMoved.String(), Seq: k.seq}
}

// addressHex is a.address.Hex(), kept on the account since it was
// indexed.
func (a *account) addressHex() string {
	if a.addrHex == "" {
		return a.address.Hex()
	}
	return a.addrHex
}

// addressHex is addr.Hex(), taken from account a (which may be nil) when
// addr is a's address.
func addressHex(a *account, addr common.Address) string {
	if a != nil && a.address == addr {
		return a.addressHex()
	}
	return addr.Hex()
}

func (s *Server) transferRecLocked(n *network, t *transfer) transferRec {
	r := transferRec{Network: n.name, ID: t.id, From: t.from.id, ToAddr: addressHex(t.to, t.toAddr), ToText: t.toText, Asset: t.asset,
		Units: t.units.String(), Confidential: t.confidential, Memo: t.memo, Status: t.status.wire(), TxHash: hashHex(t.txHash),
		CreatedAt: t.createdAt, ConfirmedAt: t.confirmedAt(), FailedAt: t.failedAt(), FailAtConfirm: t.failAtConfirm, Note: t.note}
	if t.to != nil {
		r.To = t.to.id
	}
	if t.key != nil {
		r.Key = t.key.id
	}
	if t.from.isAgent() {
		if w := n.held.spend[t.from]; w != nil {
			for i := len(w.entries) - 1; i >= 0; i-- {
				if e := w.entries[i]; e.t == t {
					r.Spend = &spendRec{At: e.at, Amount: e.amount}
					break
				}
			}
		}
	}
	return r
}

func heldRecOf(n *network, h *heldTx) heldRec {
	r := heldRec{Network: n.name, ID: h.id, Seq: h.seq, Agent: h.agent.id, ToText: h.toText, Asset: h.asset,
		Confidential: h.confidential, Status: h.status, RequestedAt: h.requestedAt, ExpiresAt: h.expiresAt,
		DecidedAt: h.decidedAt, Note: h.note, NoteReader: h.noteReader}
	if rec, ok := n.held.all[h.id]; ok {
		r.Units, r.Memo = rec.units.String(), rec.memo
	}
	if h.p != nil {
		r.Payable = true
		r.Units, r.Memo, r.ToAddr = h.p.units.String(), h.p.memo, h.p.toAddr.Hex()
		if h.p.to != nil {
			r.To = h.p.to.id
		}
	}
	if h.transfer != nil {
		r.Transfer = h.transfer.id
	}
	if h.key != nil {
		r.Key = h.key.id
	}
	return r
}

// recScratch is the journal record being made, kept from record to
// record so that making one allocates little (guarded by s.mu): the
// batch and its lists, the webhook changes, the ledger rows, the event
// payloads and the encoded bytes.
type recScratch struct {
	b        batch
	hooks    hooks.Changes
	rows     []ledger.Row
	w        wbuf
	payloads wbuf
	payEnc   func(hooks.Payload) []byte // appends to payloads
	idemGone []idempotency.Gone
}

// batchLocked is the record scratch's batch, emptied, with the head set
// (s.mu held).
func (s *Server) batchLocked() *batch {
	r := &s.rec
	b := &r.b
	*b = batch{Accounts: b.Accounts[:0], Keys: b.Keys[:0], Books: b.Books[:0], Transfers: b.Transfers[:0], Held: b.Held[:0],
		HeldGone: b.HeldGone[:0], HeldPruned: b.HeldPruned[:0], Policies: b.Policies[:0], Idem: b.Idem[:0], HeldSeq: b.HeldSeq}
	s.headLocked(b)
	return b
}

// flushLocked turns the marks into one journal record and returns where
// it stands (zero when nothing changed). A record puts slot enter, when
// not nil, in the commit order first (appendLocked).
func (s *Server) flushLocked(enter *slot) mark {
	var touched [2][]string
	for i, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		if n := s.nets[name]; n != nil {
			touched[i] = n.ledger.Touched()
			if len(touched[i]) > 0 {
				s.dirty.any = true
			}
		}
	}
	d := &s.dirty
	r := &s.rec
	if r.payEnc == nil {
		r.payEnc = func(p hooks.Payload) []byte {
			st := len(r.payloads.b)
			appendPayload(&r.payloads, p)
			return r.payloads.b[st:len(r.payloads.b):len(r.payloads.b)]
		}
	}
	r.payloads.b = r.payloads.b[:0] // the last record's payloads are encoded
	hc := &r.hooks
	s.hooks.TakeChangesInto(hc, r.payEnc)
	// The Idempotency-Keys forgotten past their TTL (under the store's
	// lock alone, in Begin): each noted before any later key of its
	// name began, so before that key's record, which is made after.
	r.idemGone = s.idempotent.TakeGone(r.idemGone[:0])
	if d.reset {
		*hc = hooks.Changes{Subs: hc.Subs[:0], Events: hc.Events[:0], Deliveries: hc.Deliveries[:0]} // the reset says it all
		r.idemGone = r.idemGone[:0]
	}
	if !d.any && hc.Empty() && len(r.idemGone) == 0 {
		return mark{}
	}
	b := s.batchLocked()
	if !hc.Empty() {
		b.Hooks = hc
	}
	b.IdemGone = r.idemGone
	b.Reset = d.reset
	for a := range d.accounts {
		if s.accounts[a.id] == a { // else created and forgotten (a seed's rollback)
			b.Accounts = append(b.Accounts, accountRecOf(a))
		}
	}
	for k := range d.keys {
		if s.keysByID[k.id] == k {
			b.Keys = append(b.Keys, keyRecOf(k))
		}
	}
	r.rows = r.rows[:0]
	for i, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		for _, id := range touched[i] {
			st := len(r.rows)
			r.rows = s.nets[name].ledger.AppendRows(r.rows, id)
			b.Books = append(b.Books, bookRec{Network: name, Acct: id, Rows: r.rows[st:len(r.rows):len(r.rows)]})
		}
	}
	for t, n := range d.transfers {
		b.Transfers = append(b.Transfers, s.transferRecLocked(n, t))
	}
	for h, n := range d.held {
		b.Held = append(b.Held, heldRecOf(n, h))
	}
	b.HeldGone = append(b.HeldGone, d.heldGone...)
	for _, n := range d.heldPruned {
		b.HeldPruned = append(b.HeldPruned, heldPrunedRec{Network: n.name, At: n.held.lastPrune})
	}
	for k := range d.policies {
		if p := k.n.policies[k.agent]; p != nil && s.accounts[k.agent] != nil {
			b.Policies = append(b.Policies, policyRecOf(k.n, k.agent, p))
		}
	}
	if d.reset || d.assets {
		b.Assets = s.assets.list()
	}
	d.clear()
	return s.appendLocked(b, enter)
}

// batchHeadLocked is a new batch with the head set (s.mu held).
func (s *Server) batchHeadLocked() *batch {
	b := &batch{}
	s.headLocked(b)
	return b
}

// snapshotHeadLocked is a snapshot's first record (s.mu held): a reset,
// the head, the assets and when each network's held payments were last
// pruned (zero: never).
func (s *Server) snapshotHeadLocked() *batch {
	head := s.batchHeadLocked()
	head.Reset = true
	head.Assets = s.assets.list()
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		head.HeldPruned = append(head.HeldPruned, heldPrunedRec{Network: name, At: s.nets[name].held.lastPrune})
	}
	return head
}

// headLocked sets b's clock and sequences (s.mu held).
func (s *Server) headLocked(b *batch) {
	b.Now, b.Seq = s.clock.Now(), [3]uint64{s.transferSeq, s.accountSeq, s.keySeq}
	if b.HeldSeq == nil {
		b.HeldSeq = make(map[string]int, len(s.nets))
	}
	for name, n := range s.nets {
		b.HeldSeq[string(name)] = n.held.seq
	}
}

// appendLocked appends record b to the journal, or queues it behind an
// entered slot; slot enter, when not nil, enters first, so that b is held
// behind it. b is encoded into the record scratch, which the journal
// copies (Append), or, held, into a buffer of the queue's.
func (s *Server) appendLocked(b *batch, enter *slot) mark {
	s.enterLocked(enter)
	if len(s.q.items) > 0 {
		w := wbuf{b: s.q.buffer()}
		b.appendTo(&w)
		m := s.queueLocked(w.done())
		s.q.items[len(s.q.items)-1].reset = b.Reset
		return m
	}
	w := &s.rec.w
	w.b, w.err = w.b[:0], nil
	b.appendTo(w)
	m := mark{seq: s.jr.Append(w.done())}
	if b.Reset {
		s.jr.FoldSoon() // the records before it leave the directory (persist_rewrite.go)
	}
	s.rewriteLocked()
	return m
}

// snapshotLocked emits the whole state as batches: the head (clock,
// sequences, assets), then the accounts (owners before their agents),
// keys, books, transfers and held payments, in chunks.
func (s *Server) snapshotLocked(emit func([]byte)) {
	enc := func(b *batch) { emit(b.encode()) }
	head := s.snapshotHeadLocked()
	enc(head)
	const chunk = 512
	b := &batch{}
	flush := func(force bool) {
		size := len(b.Accounts) + len(b.Keys) + len(b.Books) + len(b.Transfers) + len(b.Held) + len(b.Policies)
		if force || size >= chunk {
			if size > 0 {
				b.Now, b.Seq, b.HeldSeq = head.Now, head.Seq, head.HeldSeq
				enc(b)
			}
			b = &batch{}
		}
	}
	accts := make([]*account, 0, len(s.accounts))
	for _, a := range s.accounts {
		accts = append(accts, a)
	}
	sort.Slice(accts, func(i, j int) bool { return accts[i].seq < accts[j].seq })
	for _, a := range accts {
		b.Accounts = append(b.Accounts, accountRecOf(a))
		flush(false)
	}
	keys := make([]*apiKey, 0, len(s.keysByID))
	for _, k := range s.keysByID {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].seq < keys[j].seq })
	for _, k := range keys {
		b.Keys = append(b.Keys, keyRecOf(k))
		flush(false)
	}
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		ids := make([]string, 0, len(n.policies))
		for id := range n.policies {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			b.Policies = append(b.Policies, policyRecOf(n, id, n.policies[id]))
			flush(false)
		}
		for _, id := range n.ledger.Accounts() {
			b.Books = append(b.Books, bookRec{Network: name, Acct: id, Rows: n.ledger.Rows(id)})
			flush(false)
		}
		ts := make([]*transfer, 0, n.transfers.byID.len())
		for t := range n.transfers.byID.all {
			ts = append(ts, t)
		}
		slices.SortFunc(ts, func(a, b *transfer) int { // install order: no sort at start
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
		for _, t := range ts {
			b.Transfers = append(b.Transfers, s.transferRecLocked(n, t))
			flush(false)
		}
		for _, h := range n.held.order {
			b.Held = append(b.Held, heldRecOf(n, h))
			flush(false)
		}
	}
	flush(true)
	s.snapshotHooksLocked(enc, head)
	// The ledger's touched marks are written: forget them.
	for _, n := range s.nets {
		n.ledger.Touched()
	}
}

// ---- loading ----

// loaded is the replayed directory: the latest record of each thing.
type loaded struct {
	now       time.Time
	seq       [3]uint64
	heldSeq   map[string]int
	assets    []Asset
	accounts  map[string]accountRec
	keys      map[string]keyRec
	books     map[confpay.Network]map[string][]ledger.Row
	transfers map[confpay.Network]*latest[transferRec]
	held      map[confpay.Network]*latest[heldRec]
	// heldPruned is when each network's held payments were last pruned
	// (none: never).
	heldPruned map[confpay.Network]time.Time
	policies   map[confpay.Network]map[string]policyRec
	hooks      map[confpay.Network]*loadedHooks
	idem       []idempotency.Record // Owner "" when replaced or gone
	idemAt     map[[2]string]int    // by owner and key: its index in idem
	// passTimes is whether the directory holds when a webhook book last
	// pruned (itemHooksPruned: every snapshot holds it for each network,
	// zero when it never ran). A directory of an older build does not:
	// it forgot a deleted webhook's id past the 30 days without a record,
	// so its load does as it did (hooks.Restore). A reset record keeps it.
	passTimes bool
	// resets counts the reset records read (a snapshot starts with one).
	resets int
}

func newLoaded() *loaded {
	l := &loaded{}
	l.reset()
	return l
}

// reset forgets everything but the clock and sequences (a reset record).
func (l *loaded) reset() {
	l.accounts, l.keys = map[string]accountRec{}, map[string]keyRec{}
	l.books = map[confpay.Network]map[string][]ledger.Row{confpay.NetworkTest: {}, confpay.NetworkLive: {}}
	l.transfers = map[confpay.Network]*latest[transferRec]{confpay.NetworkTest: {}, confpay.NetworkLive: {}}
	l.held = map[confpay.Network]*latest[heldRec]{confpay.NetworkTest: {}, confpay.NetworkLive: {}}
	l.heldPruned = map[confpay.Network]time.Time{}
	l.policies = map[confpay.Network]map[string]policyRec{confpay.NetworkTest: {}, confpay.NetworkLive: {}}
	l.hooks, l.idem, l.idemAt = newLoadedHooks(), nil, map[[2]string]int{}
}

func validNet(n confpay.Network) bool { return n == confpay.NetworkTest || n == confpay.NetworkLive }

func parseUnits(s string) (*big.Int, bool) {
	u, ok := new(big.Int).SetString(s, 10)
	if !ok || u.Sign() < 0 || u.Cmp(ledger.MaxUnits) >= 0 {
		return nil, false
	}
	return u, true
}

// installLocked builds the server's state from l: accounts, keys, books,
// transfers (indexes, spend windows, confirmation timers) and held
// payments (books, expiry timers). s.mu is held; the clock stands at
// l.now.
func (s *Server) installLocked(l *loaded) error {
	bad := func(what, id string) error { return fmt.Errorf("%s %s is inconsistent", what, id) }
	recs := make([]accountRec, 0, len(l.accounts))
	for _, r := range l.accounts {
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	for _, r := range recs {
		if !common.IsHexAddress(r.Address) || r.Handle == "" {
			return bad("account", r.ID)
		}
		a := &account{id: r.ID, handle: r.Handle, typ: r.Type, address: common.HexToAddress(r.Address), kyc: r.KYC,
			createdAt: r.CreatedAt, domains: r.Domains, agentName: r.AgentName, agentStatus: r.Status}
		if r.EncKey != "" {
			k, err := decrypt.ParsePublicKeyHex(r.EncKey)
			if err != nil {
				return bad("account", r.ID)
			}
			a.encKey = k
		}
		if r.Owner != "" {
			o := s.accounts[r.Owner]
			if o == nil || o.isAgent() || r.PolicyID == "" {
				return bad("agent", r.ID)
			}
			a.owner, a.policyID = o, r.PolicyID
			o.agents = append(o.agents, a)
			for _, n := range s.nets {
				pr, ok := l.policies[n.name][a.id]
				if !ok {
					return fmt.Errorf("agent %s has no policy on %s", a.id, n.name)
				}
				p, err := pr.policy()
				if err != nil {
					return fmt.Errorf("agent %s's policy on %s: %w", a.id, n.name, err)
				}
				n.policies[a.id] = p
			}
		}
		if _, dup := s.byHandle[strings.ToLower(a.handle)]; dup {
			return bad("account", r.ID)
		}
		s.addAccountLocked(a)
		a.seq = r.Seq
		for _, d := range a.domains {
			s.domains[strings.ToLower(d)] = a
		}
	}
	s.accountSeq = l.seq[1]
	keys := make([]keyRec, 0, len(l.keys))
	for _, r := range l.keys {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Seq < keys[j].Seq })
	for _, r := range keys {
		a := s.accounts[r.Acct]
		moved, ok := parseUnits(r.USDGMoved)
		if a == nil || !ok || !validNet(r.Network) {
			return bad("key", r.ID)
		}
		k := &apiKey{id: r.ID, name: r.Name, network: r.Network, acct: a, hash: r.Hash, createdAt: r.CreatedAt,
			lastUsedAt: r.LastUsed, revokedAt: r.Revoked, requestCount: r.Requests, usdgMoved: moved, seq: r.Seq}
		s.keys[k.hash] = k
		s.keysByID[k.id] = k
	}
	s.keySeq = l.seq[2]
	s.transferSeq = l.seq[0]
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		for id, rows := range l.books[name] {
			if s.accounts[id] == nil {
				return bad("book", id)
			}
			if err := n.ledger.Restore(id, rows); err != nil {
				return err
			}
		}
		if err := s.installTransfersLocked(n, l.transfers[name]); err != nil {
			return err
		}
		if err := s.installHeldLocked(n, l.held[name]); err != nil {
			return err
		}
		n.held.seq = l.heldSeq[string(name)]
		n.held.lastPrune = l.heldPruned[name]
		n.ledger.Touched()
	}
	return s.installHooksLocked(l)
}

func (s *Server) installTransfersLocked(n *network, recs *latest[transferRec]) error {
	// Snapshots and the journal hold transfers in creation order: copy
	// and sort them only when a clock set backwards made it differ.
	cmpRec := func(a, b *transferRec) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	ordered := recs.all
	var prev *transferRec
	for r := range recs.all {
		if prev != nil && cmpRec(prev, r) > 0 {
			ts := slices.Clone(recs.live()) // live may be the records' own chunk
			slices.SortFunc(ts, func(a, b transferRec) int { return cmpRec(&a, &b) })
			ordered = func(yield func(*transferRec) bool) {
				for i := range ts {
					if !yield(&ts[i]) {
						return
					}
				}
			}
			break
		}
		prev = r
	}
	for r := range ordered {
		from := s.accounts[r.From]
		units, ok := parseUnits(r.Units)
		hash, okHash := parseHashHex(r.TxHash)
		if from == nil || !ok || !okHash || !common.IsHexAddress(r.ToAddr) {
			return fmt.Errorf("transfer %s is inconsistent", r.ID)
		}
		status, ok := parseTransferState(r.Status)
		if !ok {
			return fmt.Errorf("transfer %s has status %q", r.ID, r.Status)
		}
		settledAt, ok := settledAtOf(status, r.ConfirmedAt, r.FailedAt)
		if !ok {
			return fmt.Errorf("transfer %s is inconsistent", r.ID)
		}
		t := &transfer{id: r.ID, from: from, toAddr: common.HexToAddress(r.ToAddr), toText: r.ToText, asset: r.Asset,
			units: units, confidential: r.Confidential, memo: r.Memo, status: status, txHash: hash, createdAt: r.CreatedAt,
			settledAt: settledAt, failAtConfirm: r.FailAtConfirm, note: r.Note}
		if r.To != "" {
			if t.to = s.accounts[r.To]; t.to == nil {
				return fmt.Errorf("transfer %s is inconsistent", r.ID)
			}
		}
		if r.Key != "" {
			if t.key = s.keysByID[r.Key]; t.key == nil {
				return fmt.Errorf("transfer %s is inconsistent", r.ID)
			}
		}
		n.transfers.byID.put(t)
		n.transfers.index(t.from, t)
		if t.to != nil && t.to != t.from {
			n.transfers.index(t.to, t)
		}
		if r.Spend != nil {
			n.held.window(t.from).add(r.Spend.At, r.Spend.Amount, t, nil)
		}
		if t.status == statePending {
			n.transfers.pending.add(t)
			t.timer = s.clock.At(t.createdAt.Add(s.opts.blockTime), func(at time.Time) { s.confirm(n, t, at) })
		}
	}
	return nil
}

func (s *Server) installHeldLocked(n *network, recs *latest[heldRec]) error {
	hs := slices.Clone(recs.live())
	sort.Slice(hs, func(i, j int) bool { return hs[i].Seq < hs[j].Seq })
	for _, r := range hs {
		agent := s.accounts[r.Agent]
		units, ok := parseUnits(r.Units)
		if agent == nil || !agent.isAgent() || !ok {
			return fmt.Errorf("held payment %s is inconsistent", r.ID)
		}
		h := &heldTx{id: r.ID, seq: r.Seq, agent: agent, toText: r.ToText, asset: r.Asset, confidential: r.Confidential,
			status: r.Status, requestedAt: r.RequestedAt, expiresAt: r.ExpiresAt, decidedAt: r.DecidedAt, note: r.Note, noteReader: r.NoteReader}
		if r.Key != "" {
			if h.key = s.keysByID[r.Key]; h.key == nil {
				return fmt.Errorf("held payment %s is inconsistent", r.ID)
			}
		}
		if r.Transfer != "" {
			if h.transfer = n.transfers.byID.get(r.Transfer); h.transfer == nil {
				return fmt.Errorf("held payment %s is inconsistent", r.ID)
			}
		}
		if r.Payable {
			if !common.IsHexAddress(r.ToAddr) {
				return fmt.Errorf("held payment %s is inconsistent", r.ID)
			}
			h.p = &payment{from: agent, toAddr: common.HexToAddress(r.ToAddr), toText: r.ToText, asset: r.Asset, units: units,
				confidential: r.Confidential, memo: r.Memo}
			if r.To != "" {
				if h.p.to = s.accounts[r.To]; h.p.to == nil {
					return fmt.Errorf("held payment %s is inconsistent", r.ID)
				}
			}
		}
		n.held.all[h.id] = heldRecord{h: h, units: units, memo: r.Memo}
		n.held.order = append(n.held.order, h)
		switch h.status {
		case heldPending:
			if h.p == nil {
				return fmt.Errorf("held payment %s is inconsistent", r.ID)
			}
			n.held.byID[h.id] = h
			owner := agent.owner
			if n.held.pending[owner] == nil {
				n.held.pending[owner] = map[string]*heldTx{}
			}
			n.held.pending[owner][h.id] = h
			n.held.waiting[agent]++
			h.timer = s.clock.At(h.expiresAt, func(time.Time) { s.expire(n, h) })
		case heldExpired:
			n.held.byID[h.id] = h
		case heldApproved, heldRejected:
		default:
			return fmt.Errorf("held payment %s has status %q", r.ID, r.Status)
		}
	}
	return nil
}

// openDataDir opens dir and replays it into s. It writes a new snapshot
// (and empties the journal) only when the journal has outgrown the
// snapshot (journal.RewriteDue): a restart after a short run costs the
// replay alone. It reports whether the directory held no state (for
// -seed).
func (s *Server) openDataDir(dir string, noSync bool) (empty bool, err error) {
	jr, c, err := journal.Open(dir, noSync)
	if err != nil {
		return false, err
	}
	for _, d := range c.Damage {
		// Complete records after a bad one: a power loss mid-flush, or
		// damage to what was acknowledged. Never called a torn tail.
		records := strconv.Itoa(d.Records)
		if d.Partial {
			records = "at least " + records
		}
		attrs := []any{"data", dir, "file", d.File, "offset", d.Offset, "bytes", d.Bytes, "records", records, "saved", d.Saved}
		if d.Reused {
			attrs = append(attrs, "reused", "an earlier copy holds the same bytes: no second copy made")
		}
		s.log.Error("data directory: damaged journal: dropped the bad record and every byte after it, complete records included; they may hold acknowledged changes (if so, restore a backup); the server starts from the records before it, and a copy of what was dropped is saved",
			attrs...)
	}
	for _, l := range c.Loose {
		s.log.Warn("data directory: readable or writable by group or others, though it holds webhook secrets and API key hashes; the server changes no mode: run the chmod",
			"path", l.Path, "mode", fmt.Sprintf("%04o", l.Mode), "chmod", l.Chmod)
	}
	if len(c.Damage) == 0 && c.Dropped > 0 {
		s.log.Warn("data directory: dropped a torn tail, the part of a write a crash interrupted (nothing acknowledged was in it)", "data", dir, "bytes", c.Dropped)
	}
	if s.opts.dataRewriteAt > 0 {
		jr.SetRewriteAt(s.opts.dataRewriteAt)
	}
	// s.jr is set before the state is installed: a delivery that comes
	// back due is attempted at once, and reads it. After a failure the
	// journal is closed and done (jrDone), so that nothing waits for it.
	s.jr = jr
	fail := func(err error) (bool, error) {
		s.jrDone.Store(true)
		jr.Close()
		return false, err
	}
	l := newLoaded()
	s.hooks.Track()
	s.idempotent.Track()
	n, snapResets := 0, 0
	for i, recs := range [][][]byte{c.Snapshot, c.Journal} {
		if i == 1 {
			snapResets = l.resets
		}
		for _, p := range recs {
			n++
			if err := decodeRecord(p, l); err != nil {
				return fail(fmt.Errorf("data directory %s: record %d: %w", dir, n, err))
			}
		}
	}
	c.Snapshot, c.Journal = nil, nil // the file contents go before the state is built
	if n > 0 {
		if !s.opts.realClock {
			s.clock.Set(l.now)
		}
		for _, a := range l.assets {
			if apiErr := s.assets.set(a); apiErr != nil {
				return fail(fmt.Errorf("data directory %s: asset %s: %s", dir, a.Code, apiErr.Error()))
			}
		}
		s.mu.Mutex.Lock()
		err = s.installLocked(l)
		s.mu.Mutex.Unlock()
		if err != nil {
			return fail(fmt.Errorf("data directory %s: %w", dir, err))
		}
	}
	if n == 0 || !l.passTimes || jr.RewriteDue() || l.resets > snapResets {
		// A new directory gets its snapshot (a file of the current
		// format); a long journal is folded into one, and so is one
		// that holds a reset (the fold the reset started did not end:
		// the state before it leaves the directory); so is an older
		// build's directory (!l.passTimes), loaded as that build did,
		// so that the records of this build's passes appended to it do
		// not make the next load take it for one of this build's (which
		// would bring back the deleted webhook ids its load dropped).
		s.mu.Mutex.Lock()
		err = jr.Rewrite(s.snapshotLocked)
		s.mu.Mutex.Unlock()
		if err != nil {
			return fail(err)
		}
	}
	return len(l.accounts) == 0, nil
}

// WithDataDir keeps the server's state in directory dir (created 0700 if
// missing; the files it writes are 0600; a looser mode it finds is kept
// and warned about at start), so that it survives a restart and a crash:
// every answer is written only once its effect is fsynced there. A
// second server on the same directory is refused. Without it nothing
// touches the disk. See docs/fakeserver.md, "A data directory".
func WithDataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// WithDataDirNoSync makes WithDataDir write without fsync: every answer
// still follows the write of its effect to the operating system, so a
// crash of the process (kill -9) loses nothing, but a crash of the machine
// may lose the last writes. It is several times faster on most disks.
func WithDataDirNoSync() Option { return func(o *options) { o.dataNoSync = true } }

// DataDirWasEmpty reports whether the data directory held no state when
// the server opened it (false without WithDataDir): the binary seeds only
// then.
func (s *Server) DataDirWasEmpty() bool { return s.dataEmpty }

// clockMoved records the clock's new time after Advance or Set.
func (s *Server) clockMoved() {
	if s.jr == nil {
		return
	}
	s.mu.Lock()
	s.markClock()
	s.mu.Unlock()
}
