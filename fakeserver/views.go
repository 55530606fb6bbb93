package fakeserver

import (
	"cmp"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Views: the domain rendered as the wire types (the SDK's exported types),
// and the /v1 reads that answer with them. Each read is one critical
// section under s.mu (two for the pending list, whose notes are sealed
// outside the lock between them); a conversion needs s.mu held by its
// caller. What the direct API shows is in direct.go.

// ---- conversions ----

// view renders the account as GET /v1/accounts/me shows it.
func (a *account) view() *confpay.Account {
	v := &confpay.Account{
		AccountID: a.id,
		Handle:    a.handle,
		Type:      a.typ,
		PublicKey: a.address.Hex(),
		KYCStatus: a.kycStatus(),
		CreatedAt: a.createdAt,
	}
	if k := a.encryptionKey(); k != nil {
		v.EncryptionKey = k.Hex()
	}
	return v
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

// view renders the policy as the wire type.
func (p *policy) view() *confpay.SpendPolicy {
	r := p.rules
	v := &confpay.SpendPolicy{
		PolicyID:                p.id,
		DailyLimitUSDG:          limitOf(r.DailyLimit()),
		PerTransactionLimitUSDG: limitOf(r.PerTransactionLimit()),
		AllowedRecipients:       r.Recipients(),
		Assets:                  r.Assets(),
		ActiveHours:             r.ActiveHours().String(),
		UpdatedAt:               p.updatedAt,
	}
	if th, ok := r.Threshold(); ok {
		l := limitOf(th)
		v.HITLThresholdUSDG = &l
	}
	return v
}

// limitOf converts micro-USDG to the wire's exact Limit.
func limitOf(micro int64) confpay.Limit {
	return confpay.MustParseLimit(rules.FormatMicro(micro))
}

// transferViewLocked is a transfer as the API shows it (retrieve and list
// items): never the amount.
func transferViewLocked(t *transfer) *confpay.Transfer {
	v := &confpay.Transfer{
		TransferID:   t.id,
		Status:       t.status.wire(),
		From:         t.from.handle,
		To:           t.toText,
		Asset:        t.asset,
		Confidential: t.confidential,
		TxHash:       hashHex(t.txHash),
		CreatedAt:    t.createdAt,
		ConfirmedAt:  t.confirmedAt(),
		FailedAt:     t.failedAt(),
	}
	if t.note != "" {
		v.EncryptedNote = t.note
		v.NoteReaders = noteReaderHex(t)
	}
	return v
}

// createView is the create answer: the spec's fields plus asset, with
// status (the transfer's when created; createAnswer renders it again).
func createView(t *transfer, status confpay.TransferStatus) *confpay.Transfer {
	return &confpay.Transfer{
		TransferID:   t.id,
		Status:       status,
		To:           t.toText,
		Asset:        t.asset,
		Confidential: t.confidential,
		TxHash:       hashHex(t.txHash),
		CreatedAt:    t.createdAt,
	}
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
		v.TxHash = hashHex(h.transfer.txHash)
	}
	return v
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

// ---- the /v1 reads ----

// accountView is a as GET /v1/accounts/me shows it.
func (s *Server) accountView(a *account) *confpay.Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.view()
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

// agentPolicy is the policy on n of owner's agent agentID.
func (s *Server) agentPolicy(n *network, owner *account, agentID string) (*confpay.SpendPolicy, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, apiErr := s.ownedAgentLocked(owner, agentID)
	if apiErr != nil {
		return nil, apiErr
	}
	return n.policyOf(a.id).view(), nil
}

// transferFor is transfer id on n as acct sees it (sender, recipient, or
// the owner of an agent party; anything else is 404), its note sealed.
func (s *Server) transferFor(n *network, acct *account, id string) (*confpay.Transfer, error) {
	s.mu.Lock()
	t := n.transfers.byID.get(id)
	ok := t != nil && visibleTo(acct, t)
	s.mu.Unlock()
	if !ok {
		return nil, errNotFound("no transfer " + id)
	}
	if err := s.sealNotes(n, []*transfer{t}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return transferViewLocked(t), nil
}

// transfersFor is the page q of acct's transfers on n, notes sealed.
func (s *Server) transfersFor(n *network, acct *account, q listQuery) (*confpay.TransferList, error) {
	s.mu.Lock()
	page, more := pageLocked(n, acct, q)
	s.mu.Unlock()
	if err := s.sealNotes(n, page); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &confpay.TransferList{Transfers: make([]*confpay.Transfer, 0, len(page)), HasMore: more}
	for _, t := range page {
		out.Transfers = append(out.Transfers, transferViewLocked(t))
	}
	return out, nil
}

// sealJob is a note to seal outside the lock.
type sealJob struct {
	h      *heldTx
	ctx    decrypt.NoteContext
	amount *big.Int
	memo   string
}

// pendingFor lists owner's held payments on n waiting for a decision,
// oldest first (within one instant, in the order they were held), each
// with a note sealed to owner (sealed outside the lock, once per payment).
func (s *Server) pendingFor(n *network, owner *account) (*confpay.PendingList, error) {
	s.mu.Lock()
	items := make([]*heldTx, 0, len(n.held.pending[owner]))
	for _, h := range n.held.pending[owner] {
		items = append(items, h)
	}
	slices.SortFunc(items, func(a, b *heldTx) int {
		return cmp.Or(a.requestedAt.Compare(b.requestedAt), cmp.Compare(a.seq, b.seq))
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
			s.markHeld(n, j.h)
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

// ---- encoding ----

// appendTransferJSON appends v as json.NewEncoder(...).Encode(v) writes it
// (newline included), without reflection: the create answer is the hottest
// answer the server renders. It reports false, having appended nothing,
// when v holds something it does not write byte for byte as
// encoding/json does (a string needing an escape, a time not in UTC or
// outside years 0–9999); the caller then encodes v with encoding/json.
// TestAppendTransferJSON holds it to encoding/json's bytes, and to the
// fields of confpay.Transfer.
func appendTransferJSON(b []byte, v *confpay.Transfer) ([]byte, bool) {
	if !plainJSON(v.TransferID) || !plainJSON(string(v.Status)) || !plainJSON(v.From) || !plainJSON(v.To) ||
		!plainJSON(v.Asset) || !plainJSON(v.TxHash) || !plainJSON(v.EncryptedNote) ||
		!plainTime(v.CreatedAt) || (v.ConfirmedAt != nil && !plainTime(*v.ConfirmedAt)) ||
		(v.FailedAt != nil && !plainTime(*v.FailedAt)) {
		return b, false
	}
	for _, r := range v.NoteReaders {
		if !plainJSON(r) {
			return b, false
		}
	}
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	str := func(name, s string) {
		field(name)
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	tm := func(name string, t time.Time) {
		field(name)
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if v.TransferID != "" {
		str("transfer_id", v.TransferID)
	}
	str("status", string(v.Status))
	if v.From != "" {
		str("from", v.From)
	}
	str("to", v.To)
	if v.Asset != "" {
		str("asset", v.Asset)
	}
	field("confidential")
	b = strconv.AppendBool(b, v.Confidential)
	if v.TxHash != "" {
		str("tx_hash", v.TxHash)
	}
	if !v.CreatedAt.IsZero() {
		tm("created_at", v.CreatedAt)
	}
	if v.ConfirmedAt != nil {
		tm("confirmed_at", *v.ConfirmedAt)
	}
	if v.FailedAt != nil {
		tm("failed_at", *v.FailedAt)
	}
	if v.EncryptedNote != "" {
		str("encrypted_note", v.EncryptedNote)
	}
	if len(v.NoteReaders) > 0 {
		field("note_readers")
		b = append(b, '[')
		for i, r := range v.NoteReaders {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, r...)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	return append(b, '}', '\n'), true
}

// plainJSON reports whether encoding/json writes s as itself between
// quotes: printable ASCII without '"', '\\' and the three characters it
// escapes for HTML ('<', '>', '&').
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// plainTime reports whether t's JSON is its RFC 3339 form as AppendFormat
// writes it: in UTC (no offset for encoding/json to check) and within the
// years encoding/json accepts.
func plainTime(t time.Time) bool {
	y := t.Year()
	return t.Location() == time.UTC && y >= 0 && y <= 9999
}
