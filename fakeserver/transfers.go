package fakeserver

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/internal/strictjson"
)

// transfer is one payment on one network. It is kept lean: a million of
// them must fit in well under 2 KiB each.
//
// Every byte a transfer keeps is heap the server grows into (BENCHMARKS.md,
// issue 27 item 5): the fields are ordered so that it is 208 bytes, the
// status and the flags in the padding after the 20-byte address.
type transfer struct {
	id     string
	from   *account
	to     *account       // nil for an external wallet
	toAddr common.Address // the recipient's address

	status        transferState
	confidential  bool
	failAtConfirm bool // a scripted fault: fail instead of confirming

	toText    string // the recipient as the payer wrote it (normalised)
	asset     string
	units     *big.Int // never changed in place: it may be shared with the payment
	memo      string
	txHash    [32]byte // rendered "0x" and lower-case hex (hashHex) where shown
	createdAt time.Time
	// settledAt is when it was confirmed or failed (status says which),
	// nil while pending.
	settledAt *time.Time

	key   *apiKey      // the key that sent it (nil for an approval), for its usage figures
	timer *clock.Timer // the confirmation, while pending
	note  string       // the sealed note (base64url), made on first read
}

// confirmedAt is when t was confirmed, nil if it was not.
func (t *transfer) confirmedAt() *time.Time {
	if t.status != stateConfirmed {
		return nil
	}
	return t.settledAt
}

// failedAt is when t failed, nil if it did not.
func (t *transfer) failedAt() *time.Time {
	if t.status != stateFailed {
		return nil
	}
	return t.settledAt
}

// transferState is a transfer's status in one byte; wire is the API's
// string.
type transferState uint8

const (
	statePending transferState = iota
	stateConfirmed
	stateFailed
)

var transferStatuses = [...]confpay.TransferStatus{
	statePending:   confpay.StatusPending,
	stateConfirmed: confpay.StatusConfirmed,
	stateFailed:    confpay.StatusFailed,
}

// wire is the status as the API writes it.
func (st transferState) wire() confpay.TransferStatus { return transferStatuses[st] }

// parseTransferState is wire's inverse; ok is false for any other string.
func parseTransferState(s confpay.TransferStatus) (st transferState, ok bool) {
	for i, w := range transferStatuses {
		if w == s {
			return transferState(i), true
		}
	}
	return 0, false
}

// hashHex renders a tx hash as the API writes it: "0x" and lower-case hex,
// as common.Bytes2Hex.
func hashHex(h [32]byte) string {
	var out [2 + 2*len(h)]byte
	out[0], out[1] = '0', 'x'
	hex.Encode(out[2:], h[:])
	return string(out[:])
}

// parseHashHex is hashHex's inverse.
func parseHashHex(s string) (h [32]byte, ok bool) {
	if len(s) != 2+2*len(h) || s[0] != '0' || s[1] != 'x' {
		return h, false
	}
	for _, c := range s[2:] { // lower case only, as hashHex writes it
		if c >= 'A' && c <= 'F' {
			return h, false
		}
	}
	if _, err := hex.Decode(h[:], []byte(s[2:])); err != nil {
		return h, false
	}
	return h, true
}

// transferBook holds one network's transfers.
//
// byAcct is the listing index: for each account, the transfers it sent or
// received, sorted oldest first by (created_at, id). Transfer ids start
// with a server-wide sequence number, so within one instant id order is
// creation order and a new transfer is appended; only a clock set
// backwards makes an insertion. A page newest first at offset k is then a
// slice from the end.
type transferBook struct {
	byID    transferIndex
	byAcct  map[*account][]*transfer
	pending pendingList
}

func (b *transferBook) init() {
	b.byID = transferIndex{}
	b.byAcct = map[*account][]*transfer{}
	b.pending = pendingList{}
}

// pendingList holds a network's pending transfers: appended when made
// (cheaper than a set's insert and delete), and left in place when settled
// until settled ones are most of the list, when it is swept. It holds at
// most twice the pending transfers, plus 64.
type pendingList struct {
	ts []*transfer // every pending transfer, and settled ones not yet swept
	n  int         // how many of ts are pending
}

// add records t, pending.
func (p *pendingList) add(t *transfer) {
	p.ts = append(p.ts, t)
	p.n++
}

// settle records that t, in the list, is no longer pending (its status may
// not say so yet).
func (p *pendingList) settle(t *transfer) {
	p.n--
	if len(p.ts) <= 2*p.n+64 {
		return
	}
	kept := p.ts[:0]
	for _, u := range p.ts {
		if u != t && u.status == statePending {
			kept = append(kept, u)
		}
	}
	clear(p.ts[len(kept):])
	p.ts = kept
}

// len is how many transfers are pending.
func (p *pendingList) len() int { return p.n }

// all yields the pending transfers, oldest in the list first.
func (p *pendingList) all(yield func(*transfer) bool) {
	for _, t := range p.ts {
		if t.status == statePending && !yield(t) {
			return
		}
	}
}

// transferIndex finds a network's transfers by id, as a map from id to
// transfer would (the last put of an id wins; nothing is removed), at the
// cost of an array read: a transfer id carries the server-wide sequence
// number it was made with (newTransferIDLocked), so a transfer is kept in
// the slot of its number, in chunks of seqChunk slots. A slot answers only
// for the exact id it holds: any other id that reads as the same number
// (another server's, upper-case digits, more leading zeros) is not found
// there. An id that does not read as a number, whose slot holds another
// id, or whose number is far beyond the slots so far (ids restored from a
// data directory are whatever was stored) goes to the map other instead.
type transferIndex struct {
	chunks []*[seqChunk]*transfer // chunk i holds numbers i*seqChunk…
	other  map[string]*transfer
	n      int
}

// seqChunk is how many numbers a chunk holds: 8 KiB of pointers.
const seqChunk = 1024

// seqChunkGap bounds how far beyond its slots so far the index makes room
// for a number (a directory of 8 B a chunk: 32 KiB at most per growth).
const seqChunkGap = 4096

// idSeq reads the sequence number of an id made by newTransferIDLocked:
// "tr_", at least 8 lower-case base-36 digits, 12 more characters.
func idSeq(id string) (uint64, bool) {
	const prefix, random = len("tr_"), 12
	if len(id) < prefix+8+random || id[:prefix] != "tr_" {
		return 0, false
	}
	var v uint64
	for _, c := range []byte(id[prefix : len(id)-random]) {
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'z':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if v > (math.MaxUint64-d)/36 {
			return 0, false
		}
		v = v*36 + d
	}
	return v, true
}

// slot is where the transfer numbered seq is kept, nil if that number has
// no slot (and grow is false, or the number is too far out).
func (x *transferIndex) slot(seq uint64, grow bool) **transfer {
	c := seq / seqChunk
	if c >= uint64(len(x.chunks)) {
		if !grow || c >= uint64(2*len(x.chunks)+seqChunkGap) {
			return nil
		}
		x.chunks = append(x.chunks, make([]*[seqChunk]*transfer, int(c)+1-len(x.chunks))...)
	}
	if x.chunks[c] == nil {
		if !grow {
			return nil
		}
		x.chunks[c] = new([seqChunk]*transfer)
	}
	return &x.chunks[c][seq%seqChunk]
}

// get returns the transfer with exactly this id, nil if there is none.
func (x *transferIndex) get(id string) *transfer {
	if seq, ok := idSeq(id); ok {
		if p := x.slot(seq, false); p != nil && *p != nil && (*p).id == id {
			return *p
		}
	}
	return x.other[id]
}

// put keeps t under its id, in place of any transfer with the same id.
func (x *transferIndex) put(t *transfer) {
	if _, ok := x.other[t.id]; ok {
		x.other[t.id] = t
		return
	}
	if seq, ok := idSeq(t.id); ok {
		if p := x.slot(seq, true); p != nil && (*p == nil || (*p).id == t.id) {
			if *p == nil {
				x.n++
			}
			*p = t
			return
		}
	}
	if x.other == nil {
		x.other = map[string]*transfer{}
	}
	x.other[t.id] = t
	x.n++
}

// len is how many transfers the index holds.
func (x *transferIndex) len() int { return x.n }

// all yields every transfer: those in slots by number, then the others.
func (x *transferIndex) all(yield func(*transfer) bool) {
	for _, c := range x.chunks {
		if c == nil {
			continue
		}
		for _, t := range c {
			if t != nil && !yield(t) {
				return
			}
		}
	}
	for _, t := range x.other {
		if !yield(t) {
			return
		}
	}
}

// before orders transfers by (created_at, id).
func (t *transfer) before(u *transfer) bool {
	if !t.createdAt.Equal(u.createdAt) {
		return t.createdAt.Before(u.createdAt)
	}
	return t.id < u.id
}

func (b *transferBook) index(a *account, t *transfer) {
	list := b.byAcct[a]
	if n := len(list); n == 0 || list[n-1].before(t) {
		b.byAcct[a] = append(list, t)
		return
	}
	i := sort.Search(len(list), func(i int) bool { return t.before(list[i]) })
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = t
	b.byAcct[a] = list
}

// ---- recipients ----

// recipient kinds.
const (
	toHandle = iota + 1
	toAddress
	toDomain
)

// parseRecipient checks the syntax of a recipient: an @handle, an
// @owner/agent handle, a 0x address (EIP-55 checked when mixed case) or a
// domain name. It returns the kind and the lookup key (lower case).
func parseRecipient(text string) (kind int, key string, addr common.Address, apiErr *apiError) {
	switch {
	case text == "":
		return 0, "", addr, errInvalid("to", "to is required")
	case strings.HasPrefix(text, "@"):
		if !names.IsHandle(text) && !names.IsAgentHandle(text) {
			return 0, "", addr, errInvalid("to", "to is not a valid handle: @ then 3 to 20 of A-Z a-z 0-9 _, optionally /agent-name")
		}
		return toHandle, strings.ToLower(text), addr, nil
	case strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X"):
		a, err := names.ParseAddress(text)
		if err != nil {
			return 0, "", addr, errInvalid("to", "to: "+err.Error())
		}
		return toAddress, strings.ToLower(a.Hex()), a, nil
	case names.IsDomain(text):
		return toDomain, strings.ToLower(text), addr, nil
	}
	return 0, "", addr, errInvalid("to", "to must be an @handle, an @owner/agent handle, a 0x address or a registered domain name")
}

// ---- submission and lifecycle ----

// newTransferIDLocked returns "tr_", 8 base-36 digits of a server-wide
// sequence, and 12 random lowercase alphanumerics: opaque to clients, and
// sorting in creation order.
func (s *Server) newTransferIDLocked() string {
	s.transferSeq++
	var b [3 + 13 + 12]byte // "tr_", a uint64 in base 36, the random part
	id := append(b[:0], "tr_"...)
	var digits [13]byte
	seq := strconv.AppendUint(digits[:0], s.transferSeq, 36)
	for range 8 - min(8, len(seq)) {
		id = append(id, '0')
	}
	id = append(id, seq...)
	names.FillID(id[len(id) : len(id)+12])
	return string(id[:len(id)+12]) // one allocation
}

// txHash is the keccak-256 of the transfer's canonical encoding with the
// chain id:
//
//	lp("cpay/v1/transfer") ∥ u64 chain id ∥ lp(transfer id) ∥ from address
//	∥ to address ∥ lp(asset) ∥ u8 confidential ∥ u64 created_at (Unix ns)
//
// The amount is deliberately not part of it: a hash over a low-entropy
// figure and public fields could be inverted by trying every amount.
func txHash(chainID uint64, t *transfer) [32]byte {
	w := txHashers.Get().(*txHasher)
	defer txHashers.Put(w)
	b := w.buf[:0]
	b = appendLP(b, "cpay/v1/transfer")
	b = binary.BigEndian.AppendUint64(b, chainID)
	b = appendLP(b, t.id)
	b = append(b, t.from.address[:]...)
	b = append(b, t.toAddr[:]...)
	b = appendLP(b, t.asset)
	if t.confidential {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(t.createdAt.UnixNano()))
	// crypto.HashData's steps, reading into w.sum: its result, read
	// through the interface, would be a fresh heap copy each call.
	w.kh.Reset()
	_, _ = w.kh.Write(b)
	_, _ = w.kh.Read(w.sum[:])
	return w.sum
}

// txHasher is txHash's work space: the encoding's buffer and the hash's
// output (on the heap once, as the hash's Write and Read would put them
// there each time) and a Keccak state.
type txHasher struct {
	buf [128]byte
	sum [32]byte
	kh  crypto.KeccakState
}

var txHashers = sync.Pool{New: func() any { return &txHasher{kh: crypto.NewKeccakState()} }}

func appendLP(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// ---- notes ----

// noteReaders returns the keys a transfer's note is sealed to: the
// sender's, then the recipient's (an agent's is its owner's), skipping a
// party without a key and a repeat.
func noteReaders(t *transfer) []*decrypt.PublicKey {
	var out []*decrypt.PublicKey
	if k := t.from.encryptionKey(); k != nil {
		out = append(out, k)
	}
	if t.to != nil {
		if k := t.to.encryptionKey(); k != nil && (len(out) == 0 || !out[0].Equal(k)) {
			out = append(out, k)
		}
	}
	return out
}

// noteReaderHex is noteReaders as hex, from the accounts' cached hex.
func noteReaderHex(t *transfer) []string {
	from := t.from.encryptionKeyHex()
	to := ""
	if t.to != nil {
		to = t.to.encryptionKeyHex()
	}
	switch {
	case from != "" && to != "" && to != from:
		return []string{from, to}
	case from != "":
		return []string{from}
	case to != "":
		return []string{to}
	}
	return nil
}

// noteJob is a note to seal outside the lock.
type noteJob struct {
	t      *transfer
	ctx    decrypt.NoteContext
	amount *big.Int
	memo   string
	note   string
}

// noteJobsLocked lists the notes the given transfers still need.
func noteJobsLocked(n *network, ts []*transfer) []*noteJob {
	var jobs []*noteJob
	for _, t := range ts {
		if t.note != "" {
			continue
		}
		readers := noteReaders(t)
		if len(readers) == 0 {
			continue
		}
		jobs = append(jobs, &noteJob{
			t:      t,
			ctx:    decrypt.NoteContext{ChainID: n.chainID, Reference: t.id, Asset: t.asset, Readers: readers},
			amount: t.units,
			memo:   t.memo,
		})
	}
	return jobs
}

// sealNotes seals the notes the transfers lack, outside s.mu, and stores
// them. Sealing is the expensive part of a read, so it is done once per
// transfer.
func (s *Server) sealNotes(n *network, ts []*transfer) error {
	s.mu.Lock()
	jobs := noteJobsLocked(n, ts)
	s.mu.Unlock()
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		note, err := decrypt.SealNote(nil, j.ctx, j.amount, j.memo)
		if err != nil {
			return err
		}
		j.note = decrypt.EncodeBase64(note)
	}
	s.mu.Lock()
	for _, j := range jobs {
		if j.t.note == "" {
			j.t.note = j.note
			s.markTransfer(n, j.t)
		}
	}
	s.mu.Unlock()
	return nil
}

// ---- visibility ----

// visibleTo reports whether a may read t: its sender, its recipient, or the
// owner of an agent that is either.
func visibleTo(a *account, t *transfer) bool {
	if t.from == a || t.to == a || t.from.owner == a {
		return true
	}
	return t.to != nil && t.to.owner == a
}

// ---- parsing a payment ----

// payment is a request to move money: a direct transfer, an agent payment,
// or an approved held payment being submitted.
type payment struct {
	from         *account
	to           *account       // nil for an external wallet
	toAddr       common.Address // the recipient's address
	toText       string         // the recipient as the payer wrote it
	asset        string
	units        *big.Int // base units of asset, > 0
	confidential bool
	memo         string
	// eventIDs are transfer.initiated's (the payer's event, the payee's),
	// drawn before the operation took s.mu (pay); empty ones are drawn
	// when it is emitted.
	eventIDs [2]string
}

// createTransferRequest is the create body. Pointers tell "absent" from
// "empty"; a wrong JSON type is a 400 naming the field.
type createTransferRequest struct {
	To           *string `json:"to"`
	Amount       *string `json:"amount"`
	Asset        *string `json:"asset"`
	Confidential *bool   `json:"confidential"`
	// Memo must reach the recipient byte for byte: text that decoding
	// would alter is refused (internal/strictjson, decisions.md "Memos").
	Memo *strictjson.ExactString `json:"memo"`
}

// parseCreateTransfer checks a create body as far as it can without state.
func parseCreateTransfer(body []byte, assets *assetBook) (*payment, *apiError) {
	var req createTransferRequest
	if apiErr := decodeStrict(body, &req); apiErr != nil {
		return nil, apiErr
	}
	if req.To == nil {
		return nil, errInvalid("to", "to is required")
	}
	if req.Amount == nil {
		return nil, errInvalid("amount", "amount is required")
	}
	p := &payment{asset: confpay.AssetUSDG, confidential: true}
	if req.Asset != nil {
		p.asset = *req.Asset
	}
	units, apiErr := assets.parseUnits("amount", p.asset, *req.Amount)
	if apiErr != nil {
		return nil, apiErr
	}
	p.units = units
	if req.Confidential != nil {
		p.confidential = *req.Confidential
	}
	if req.Memo != nil {
		if len(*req.Memo) > decrypt.MaxMemoBytes {
			return nil, errInvalid("memo", "memo is longer than 1024 bytes")
		}
		p.memo = string(*req.Memo)
	}
	if _, _, _, apiErr := parseRecipient(*req.To); apiErr != nil {
		return nil, apiErr
	}
	p.toText = *req.To
	return p, nil
}

// ---- listing ----

// listQuery is a parsed list request.
type listQuery struct {
	limit, offset int
	status        confpay.TransferStatus
	from, to      time.Time // zero when absent; exclusive bounds
}

// parsePageQuery reads the paging parameters every list shares: limit (1
// to 100, default 20) and offset (at least 0). The pipeline (checkQuery)
// has refused any parameter the route does not take, and one given twice.
func parsePageQuery(q url.Values) (limit, offset int, apiErr *apiError) {
	limit = 20
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > confpay.MaxPageSize || !plainInt(v[0]) {
			return 0, 0, errInvalid("limit", "limit must be an integer from 1 to 100")
		}
		limit = n
	}
	if v, ok := q["offset"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 || !plainInt(v[0]) {
			return 0, 0, errInvalid("offset", "offset must be an integer of at least 0")
		}
		offset = n
	}
	return limit, offset, nil
}

// parseListQuery checks the list parameters: limit 1..100 (default 20),
// offset >= 0, status one of the three, from/to RFC 3339 (checkQuery has
// refused unknown and repeated ones).
func parseListQuery(q url.Values) (listQuery, *apiError) {
	lq := listQuery{}
	var apiErr *apiError
	lq.limit, lq.offset, apiErr = parsePageQuery(q)
	if apiErr != nil {
		return lq, apiErr
	}
	if v, ok := q["status"]; ok {
		switch st := confpay.TransferStatus(v[0]); st {
		case confpay.StatusPending, confpay.StatusConfirmed, confpay.StatusFailed:
			lq.status = st
		default:
			return lq, errInvalid("status", "status must be pending, confirmed or failed")
		}
	}
	for _, name := range []string{"from", "to"} {
		v, ok := q[name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v[0])
		if err != nil {
			// A date alone means midnight UTC of that day.
			t, err = time.Parse(time.DateOnly, v[0])
		}
		if err != nil {
			return lq, errInvalid(name, name+" must be an RFC 3339 timestamp such as 2026-07-02T14:23:09Z or a date such as 2026-07-02")
		}
		if name == "from" {
			lq.from = t
		} else {
			lq.to = t
		}
	}
	return lq, nil
}

// plainInt reports whether s is digits only (no sign, no spaces).
func plainInt(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != "" && len(s) <= 18
}

// pageLocked returns one page of a's transfers, newest first, and whether
// more follow.
func pageLocked(n *network, a *account, q listQuery) ([]*transfer, bool) {
	list := n.transfers.byAcct[a]
	lo, hi := 0, len(list)
	if !q.from.IsZero() {
		lo = sort.Search(len(list), func(i int) bool { return list[i].createdAt.After(q.from) })
	}
	if !q.to.IsZero() {
		hi = sort.Search(len(list), func(i int) bool { return !list[i].createdAt.Before(q.to) })
	}
	if hi < lo {
		hi = lo
	}
	var page []*transfer
	if q.status == "" {
		// A slice from the end: no scan.
		if q.offset >= hi-lo {
			return nil, false
		}
		top := hi - 1 - q.offset
		bottom := max(lo, top-q.limit+1)
		for i := top; i >= bottom; i-- {
			page = append(page, list[i])
		}
		return page, bottom > lo
	}
	skipped := 0
	for i := hi - 1; i >= lo; i-- {
		t := list[i]
		if t.status.wire() != q.status {
			continue
		}
		if skipped < q.offset {
			skipped++
			continue
		}
		if len(page) == q.limit {
			return page, true
		}
		page = append(page, t)
	}
	return page, false
}

// ---- transfer records ----

// TransferRecord is a transfer as the server's books hold it, amount and
// memo included. It exists for test assertions; the /v1 interface never
// shows the amount or the memo.
type TransferRecord struct {
	TransferID    string                 `json:"transfer_id"`
	Network       confpay.Network        `json:"network"`
	Status        confpay.TransferStatus `json:"status"`
	From          string                 `json:"from"`
	FromAccountID string                 `json:"from_account_id"`
	To            string                 `json:"to"`
	// ToAccountID is empty for an external wallet.
	ToAccountID  string         `json:"to_account_id,omitempty"`
	ToAddress    string         `json:"to_address"`
	Asset        string         `json:"asset"`
	Amount       confpay.Amount `json:"amount"`
	Confidential bool           `json:"confidential"`
	Memo         string         `json:"memo,omitempty"`
	TxHash       string         `json:"tx_hash"`
	CreatedAt    time.Time      `json:"created_at"`
	ConfirmedAt  *time.Time     `json:"confirmed_at,omitempty"`
	FailedAt     *time.Time     `json:"failed_at,omitempty"`
}

// String describes the record without its amount and memo, so that a
// record printed by accident does not leak them; read the fields instead.
func (r TransferRecord) String() string {
	return fmt.Sprintf("fakeserver.TransferRecord{%s %s %s %s -> %s %s, amount and memo REDACTED}",
		r.TransferID, r.Network, r.Status, r.From, r.To, r.Asset)
}

// GoString is String.
func (r TransferRecord) GoString() string { return r.String() }

// Format prints String for every verb.
func (r TransferRecord) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, r.String()) }

func (s *Server) recordLocked(n *network, t *transfer) TransferRecord {
	dec, _ := s.assets.decimals(t.asset)
	r := TransferRecord{
		TransferID: t.id, Network: n.name, Status: t.status.wire(),
		From: t.from.handle, FromAccountID: t.from.id,
		To: t.toText, ToAddress: t.toAddr.Hex(),
		Asset: t.asset, Amount: confpay.AmountFromUnits(t.units, dec),
		Confidential: t.confidential, Memo: t.memo, TxHash: hashHex(t.txHash),
		CreatedAt: t.createdAt, ConfirmedAt: t.confirmedAt(), FailedAt: t.failedAt(),
	}
	if t.to != nil {
		r.ToAccountID = t.to.id
	}
	return r
}

func (s *Server) findTransferLocked(id string) (*network, *transfer) {
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		if t := n.transfers.byID.get(id); t != nil {
			return n, t
		}
	}
	return nil, nil
}

// settledAtOf is a transfer's settledAt from the two times of its record:
// the one its status has, the other nil (ok is false otherwise).
func settledAtOf(st transferState, confirmedAt, failedAt *time.Time) (*time.Time, bool) {
	switch st {
	case statePending:
		return nil, confirmedAt == nil && failedAt == nil
	case stateConfirmed:
		return confirmedAt, confirmedAt != nil && failedAt == nil
	default:
		return failedAt, failedAt != nil && confirmedAt == nil
	}
}
