package fakeserver

import (
	"fmt"
	"time"

	"golang.org/x/crypto/cryptobyte"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
)

// The data directory's record encoding (journal format version 2; see
// persist.go). A record is a series of items, each a kind byte and a
// 24-bit length-prefixed body; a group of records (persist_hooks.go) is
// their concatenation. Inside a body: strings and byte strings are 24-bit
// length-prefixed, integers 64-bit big-endian, a time is its Unix seconds
// and nanoseconds (restored in UTC), an optional value is a presence byte
// then the value.
//
// Adding a kind of item: a constant below, an encode function (called
// from batch.encode) and a decode function (in itemDecoders).

// Item kinds. A kind is never reused for another meaning.
const (
	itemHead     = 1 // reset, clock, sequences: first in a record
	itemAccount  = 2
	itemKey      = 3
	itemBook     = 4
	itemTransfer = 5
	itemHeld     = 6
	itemPolicy   = 7
	itemAssets   = 8
	itemSub      = 9
	itemEvent    = 10
	itemDelivery = 11
	itemIdem     = 12
)

// itemDecoders decodes one item's body into l, by kind.
var itemDecoders = [...]func(*dec, *loaded) error{
	itemHead:     decHead,
	itemAccount:  decAccount,
	itemKey:      decKey,
	itemBook:     decBook,
	itemTransfer: decTransfer,
	itemHeld:     decHeld,
	itemPolicy:   decPolicy,
	itemAssets:   decAssets,
	itemSub:      decSub,
	itemEvent:    decEvent,
	itemDelivery: decDelivery,
	itemIdem:     decIdem,
}

// encode is b as one record.
func (b *batch) encode() []byte {
	w := cryptobyte.NewBuilder(make([]byte, 0, 512))
	item(w, itemHead, func(c *cryptobyte.Builder) { encHead(c, b) })
	if b.Assets != nil {
		item(w, itemAssets, func(c *cryptobyte.Builder) { encAssets(c, b.Assets) })
	}
	items(w, itemAccount, b.Accounts, encAccount)
	items(w, itemKey, b.Keys, encKey)
	items(w, itemPolicy, b.Policies, encPolicy)
	items(w, itemBook, b.Books, encBook)
	items(w, itemTransfer, b.Transfers, encTransfer)
	items(w, itemHeld, b.Held, encHeld)
	if b.Hooks != nil {
		items(w, itemSub, b.Hooks.Subs, encSub)
		items(w, itemEvent, b.Hooks.Events, encEvent)
		items(w, itemDelivery, b.Hooks.Deliveries, encDelivery)
	}
	items(w, itemIdem, b.Idem, encIdem)
	p, err := w.Bytes()
	if err != nil {
		panic("confpay-fakeserver: cannot encode a journal record: " + err.Error())
	}
	return p
}

// decodeRecord replays one record (or a group of them) into l.
func decodeRecord(p []byte, l *loaded) error {
	s := cryptobyte.String(p)
	for !s.Empty() {
		var kind uint8
		var body cryptobyte.String
		if !s.ReadUint8(&kind) || !s.ReadUint24LengthPrefixed(&body) {
			return fmt.Errorf("a record is cut short")
		}
		if int(kind) >= len(itemDecoders) || itemDecoders[kind] == nil {
			return fmt.Errorf("a record holds an item of unknown kind %d", kind)
		}
		d := dec{s: body, ok: true}
		if err := itemDecoders[kind](&d, l); err != nil {
			return err
		}
		if !d.ok || !d.s.Empty() {
			return fmt.Errorf("an item of kind %d does not decode", kind)
		}
	}
	return nil
}

func item(w *cryptobyte.Builder, kind uint8, f cryptobyte.BuilderContinuation) {
	w.AddUint8(kind)
	w.AddUint24LengthPrefixed(f)
}

func items[T any](w *cryptobyte.Builder, kind uint8, rs []T, enc func(*cryptobyte.Builder, *T)) {
	for i := range rs {
		item(w, kind, func(c *cryptobyte.Builder) { enc(c, &rs[i]) })
	}
}

// ---- field helpers ----

func putStr(b *cryptobyte.Builder, s string) {
	if len(s) >= 1<<24 {
		b.SetError(fmt.Errorf("a string of %d bytes is too long", len(s)))
		return
	}
	b.AddUint24(uint32(len(s)))
	b.AddBytes([]byte(s))
}

func putBytes(b *cryptobyte.Builder, p []byte) {
	if len(p) >= 1<<24 {
		b.SetError(fmt.Errorf("%d bytes are too long", len(p)))
		return
	}
	b.AddUint24(uint32(len(p)))
	b.AddBytes(p)
}

func putStrs(b *cryptobyte.Builder, ss []string) {
	b.AddUint32(uint32(len(ss)))
	for _, s := range ss {
		putStr(b, s)
	}
}

func putU64(b *cryptobyte.Builder, v uint64) { b.AddUint64(v) }
func putI64(b *cryptobyte.Builder, v int64)  { b.AddUint64(uint64(v)) }

func putBool(b *cryptobyte.Builder, v bool) {
	if v {
		b.AddUint8(1)
	} else {
		b.AddUint8(0)
	}
}

func putTime(b *cryptobyte.Builder, t time.Time) {
	b.AddUint64(uint64(t.Unix()))
	b.AddUint32(uint32(t.Nanosecond()))
}

func putPTime(b *cryptobyte.Builder, t *time.Time) {
	putBool(b, t != nil)
	if t != nil {
		putTime(b, *t)
	}
}

// dec reads an item's fields; the first failure sets ok false and every
// read after it returns zero values.
type dec struct {
	s  cryptobyte.String
	ok bool
}

func (d *dec) bytes() []byte {
	var v cryptobyte.String
	if d.ok && !d.s.ReadUint24LengthPrefixed(&v) {
		d.ok = false
	}
	return v
}

func (d *dec) str() string {
	v := d.bytes()
	if len(v) == 0 {
		return ""
	}
	return string(v)
}

// net is a network name (the two known ones without allocating).
func (d *dec) net() confpay.Network {
	v := d.bytes()
	switch string(v) {
	case string(confpay.NetworkTest):
		return confpay.NetworkTest
	case string(confpay.NetworkLive):
		return confpay.NetworkLive
	}
	return confpay.Network(v)
}

// asset is an asset code (the common ones without allocating).
func (d *dec) asset() string {
	v := d.bytes()
	switch string(v) {
	case confpay.AssetUSDG:
		return confpay.AssetUSDG
	case confpay.AssetUSDC:
		return confpay.AssetUSDC
	case confpay.AssetETH:
		return confpay.AssetETH
	}
	return string(v)
}

func (d *dec) strs() []string {
	n := d.u32()
	if n == 0 || !d.ok {
		return nil
	}
	if uint64(n) > uint64(len(d.s)) { // each takes at least 3 bytes
		d.ok = false
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *dec) u8() uint8 {
	var v uint8
	if d.ok && !d.s.ReadUint8(&v) {
		d.ok = false
	}
	return v
}

func (d *dec) u32() uint32 {
	var v uint32
	if d.ok && !d.s.ReadUint32(&v) {
		d.ok = false
	}
	return v
}

func (d *dec) u64() uint64 {
	var v uint64
	if d.ok && !d.s.ReadUint64(&v) {
		d.ok = false
	}
	return v
}

func (d *dec) i64() int64 { return int64(d.u64()) }

func (d *dec) bool() bool {
	switch d.u8() {
	case 0:
		return false
	case 1:
		return true
	}
	d.ok = false
	return false
}

func (d *dec) time() time.Time {
	sec, ns := d.i64(), d.u32()
	if ns >= 1e9 {
		d.ok = false
		return time.Time{}
	}
	return time.Unix(sec, int64(ns)).UTC()
}

func (d *dec) ptime() *time.Time {
	if !d.bool() {
		return nil
	}
	t := d.time()
	return &t
}

func (d *dec) hash() (h [32]byte) {
	var v []byte
	if d.ok && !d.s.ReadBytes(&v, 32) {
		d.ok = false
	}
	copy(h[:], v)
	return h
}

// ---- items ----

func encHead(b *cryptobyte.Builder, r *batch) {
	putBool(b, r.Reset)
	putTime(b, r.Now)
	for _, v := range r.Seq {
		putU64(b, v)
	}
	b.AddUint8(uint8(len(r.HeldSeq)))
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		if v, ok := r.HeldSeq[string(name)]; ok {
			putStr(b, string(name))
			putI64(b, int64(v))
		}
	}
}

func decHead(d *dec, l *loaded) error {
	if d.bool() {
		l.reset()
	}
	l.now = d.time()
	for i := range l.seq {
		l.seq[i] = d.u64()
	}
	n := d.u8()
	if n > 2 {
		return fmt.Errorf("a record names %d networks", n)
	}
	hs := make(map[string]int, n)
	for range n {
		name := d.net()
		hs[string(name)] = int(d.i64())
	}
	l.heldSeq = hs
	return nil
}

func encAssets(b *cryptobyte.Builder, as []Asset) {
	b.AddUint32(uint32(len(as)))
	for _, a := range as {
		putStr(b, a.Code)
		putI64(b, int64(a.Decimals))
		putStr(b, a.USDGRate.String())
	}
}

func decAssets(d *dec, l *loaded) error {
	n := d.u32()
	if !d.ok || uint64(n) > uint64(len(d.s)) {
		return fmt.Errorf("an asset list does not decode")
	}
	as := make([]Asset, 0, n)
	for range n {
		code, decimals, rate := d.str(), d.i64(), d.str()
		lim, err := confpay.ParseLimit(rate)
		if !d.ok || err != nil || decimals < 0 || decimals > 77 {
			return fmt.Errorf("an asset does not decode")
		}
		as = append(as, Asset{Code: code, Decimals: int(decimals), USDGRate: lim})
	}
	l.assets = as
	return nil
}

func encAccount(b *cryptobyte.Builder, r *accountRec) {
	putStr(b, r.ID)
	putStr(b, r.Handle)
	putStr(b, string(r.Type))
	putStr(b, r.Address)
	putStr(b, string(r.KYC))
	putTime(b, r.CreatedAt)
	putU64(b, r.Seq)
	putStr(b, r.EncKey)
	putStrs(b, r.Domains)
	putStr(b, r.Owner)
	putStr(b, r.AgentName)
	putStr(b, string(r.Status))
	putStr(b, r.PolicyID)
}

func decAccount(d *dec, l *loaded) error {
	r := accountRec{ID: d.str(), Handle: d.str(), Type: confpay.AccountType(d.str()), Address: d.str(), KYC: confpay.KYCStatus(d.str()),
		CreatedAt: d.time(), Seq: d.u64(), EncKey: d.str(), Domains: d.strs(), Owner: d.str(), AgentName: d.str(),
		Status: confpay.AgentStatus(d.str()), PolicyID: d.str()}
	l.accounts[r.ID] = r
	return nil
}

func encKey(b *cryptobyte.Builder, r *keyRec) {
	putStr(b, r.ID)
	putStr(b, r.Name)
	putStr(b, string(r.Network))
	putStr(b, r.Acct)
	b.AddBytes(r.Hash[:])
	putTime(b, r.CreatedAt)
	putPTime(b, r.LastUsed)
	putPTime(b, r.Revoked)
	putI64(b, r.Requests)
	putStr(b, r.USDGMoved)
	putU64(b, r.Seq)
}

func decKey(d *dec, l *loaded) error {
	r := keyRec{ID: d.str(), Name: d.str(), Network: d.net(), Acct: d.str(), Hash: d.hash(), CreatedAt: d.time(),
		LastUsed: d.ptime(), Revoked: d.ptime(), Requests: d.i64(), USDGMoved: d.str(), Seq: d.u64()}
	l.keys[r.ID] = r
	return nil
}

func encPolicy(b *cryptobyte.Builder, r *policyRec) {
	putStr(b, string(r.Network))
	putStr(b, r.Agent)
	putStr(b, r.ID)
	putTime(b, r.UpdatedAt)
	putI64(b, r.Daily)
	putI64(b, r.PerTx)
	putStrs(b, r.Recipients)
	putStrs(b, r.Assets)
	putStr(b, r.Hours)
	putI64(b, r.Threshold)
}

func decPolicy(d *dec, l *loaded) error {
	r := policyRec{Network: d.net(), Agent: d.str(), ID: d.str(), UpdatedAt: d.time(), Daily: d.i64(), PerTx: d.i64(),
		Recipients: d.strs(), Assets: d.strs(), Hours: d.str(), Threshold: d.i64()}
	if !validNet(r.Network) {
		return fmt.Errorf("a policy names network %q", r.Network)
	}
	l.policies[r.Network][r.Agent] = r
	return nil
}

func encBook(b *cryptobyte.Builder, r *bookRec) {
	putStr(b, string(r.Network))
	putStr(b, r.Acct)
	b.AddUint32(uint32(len(r.Rows)))
	for _, row := range r.Rows {
		putStr(b, row.Asset)
		putStr(b, row.Units)
		putStr(b, row.Reserved)
		putU64(b, row.Version)
		putBytes(b, row.CT)
		putU64(b, row.CTVersion)
	}
}

func decBook(d *dec, l *loaded) error {
	name, acct, n := d.net(), d.str(), d.u32()
	if !d.ok || uint64(n) > uint64(len(d.s)) {
		return fmt.Errorf("a book does not decode")
	}
	if !validNet(name) {
		return fmt.Errorf("a book names network %q", name)
	}
	rows := make([]ledger.Row, 0, n)
	for range n {
		row := ledger.Row{Asset: d.asset(), Units: d.str(), Reserved: d.str(), Version: d.u64()}
		if ct := d.bytes(); len(ct) > 0 {
			row.CT = append([]byte(nil), ct...)
		}
		row.CTVersion = d.u64()
		rows = append(rows, row)
	}
	l.books[name][acct] = rows
	return nil
}

func encTransfer(b *cryptobyte.Builder, r *transferRec) {
	putStr(b, string(r.Network))
	putStr(b, r.ID)
	putStr(b, r.From)
	putStr(b, r.To)
	putStr(b, r.ToAddr)
	putStr(b, r.ToText)
	putStr(b, r.Asset)
	putStr(b, r.Units)
	putBool(b, r.Confidential)
	putStr(b, r.Memo)
	putStr(b, string(r.Status))
	putStr(b, r.TxHash)
	putTime(b, r.CreatedAt)
	putPTime(b, r.ConfirmedAt)
	putPTime(b, r.FailedAt)
	putStr(b, r.Key)
	putBool(b, r.FailAtConfirm)
	putStr(b, r.Note)
	putBool(b, r.Spend != nil)
	if r.Spend != nil {
		putTime(b, r.Spend.At)
		putI64(b, r.Spend.Amount)
	}
}

func decTransfer(d *dec, l *loaded) error {
	r := transferRec{Network: d.net(), ID: d.str(), From: d.str(), To: d.str(), ToAddr: d.str(), ToText: d.str(), Asset: d.asset(),
		Units: d.str(), Confidential: d.bool(), Memo: d.str(), Status: confpay.TransferStatus(d.str()), TxHash: d.str(),
		CreatedAt: d.time(), ConfirmedAt: d.ptime(), FailedAt: d.ptime(), Key: d.str(), FailAtConfirm: d.bool(), Note: d.str()}
	if d.bool() {
		r.Spend = &spendRec{At: d.time(), Amount: d.i64()}
	}
	if !validNet(r.Network) {
		return fmt.Errorf("a transfer names network %q", r.Network)
	}
	l.transfers[r.Network].put(r.ID, r)
	return nil
}

func encHeld(b *cryptobyte.Builder, r *heldRec) {
	putStr(b, string(r.Network))
	putStr(b, r.ID)
	putI64(b, int64(r.Seq))
	putStr(b, r.Agent)
	putStr(b, r.To)
	putStr(b, r.ToAddr)
	putStr(b, r.ToText)
	putStr(b, r.Asset)
	putStr(b, r.Units)
	putStr(b, r.Memo)
	putBool(b, r.Confidential)
	putBool(b, r.Payable)
	putStr(b, r.Transfer)
	putStr(b, r.Key)
	putStr(b, string(r.Status))
	putTime(b, r.RequestedAt)
	putTime(b, r.ExpiresAt)
	putPTime(b, r.DecidedAt)
	putStr(b, r.Note)
	putStr(b, r.NoteReader)
}

func decHeld(d *dec, l *loaded) error {
	r := heldRec{Network: d.net(), ID: d.str(), Seq: int(d.i64()), Agent: d.str(), To: d.str(), ToAddr: d.str(), ToText: d.str(),
		Asset: d.asset(), Units: d.str(), Memo: d.str(), Confidential: d.bool(), Payable: d.bool(), Transfer: d.str(), Key: d.str(),
		Status: confpay.AgentTransactionStatus(d.str()), RequestedAt: d.time(), ExpiresAt: d.time(), DecidedAt: d.ptime(),
		Note: d.str(), NoteReader: d.str()}
	if !validNet(r.Network) {
		return fmt.Errorf("a held payment names network %q", r.Network)
	}
	l.held[r.Network].put(r.ID, r)
	return nil
}

func encSub(b *cryptobyte.Builder, r *hooks.SubRecord) {
	putStr(b, string(r.Network))
	putStr(b, r.ID)
	putStr(b, r.Acct)
	putStr(b, r.URL)
	putStrs(b, r.Events)
	putStr(b, r.Secret)
	putTime(b, r.CreatedAt)
	putU64(b, r.Seq)
	putPTime(b, r.Deleted)
}

func decSub(d *dec, l *loaded) error {
	r := hooks.SubRecord{Network: d.net(), ID: d.str(), Acct: d.str(), URL: d.str(), Events: d.strs(), Secret: d.str(),
		CreatedAt: d.time(), Seq: d.u64(), Deleted: d.ptime()}
	if !validNet(r.Network) {
		return fmt.Errorf("a subscription names network %q", r.Network)
	}
	l.hooks[r.Network].subs[r.ID] = r
	return nil
}

func encEvent(b *cryptobyte.Builder, r *hooks.EventRecordP) {
	putStr(b, string(r.Network))
	putStr(b, r.ID)
	putStr(b, r.Kind)
	putTime(b, r.At)
	putStr(b, r.Audience[0])
	putStr(b, r.Audience[1])
	putU64(b, r.Seq)
	putBool(b, r.Forgotten[0])
	putBool(b, r.Forgotten[1])
	putBool(b, r.Gone)
	putBytes(b, r.Payload)
}

func decEvent(d *dec, l *loaded) error {
	r := hooks.EventRecordP{Network: d.net(), ID: d.str(), Kind: d.str(), At: d.time(), Audience: [2]string{d.str(), d.str()},
		Seq: d.u64(), Forgotten: [2]bool{d.bool(), d.bool()}, Gone: d.bool()}
	if p := d.bytes(); len(p) > 0 {
		r.Payload = append([]byte(nil), p...)
	}
	if !validNet(r.Network) {
		return fmt.Errorf("an event names network %q", r.Network)
	}
	l.hooks[r.Network].events.put(r.ID, r)
	return nil
}

func encDelivery(b *cryptobyte.Builder, r *hooks.DeliveryRecordP) {
	putStr(b, string(r.Network))
	putStr(b, r.ID)
	putStr(b, r.Sub)
	putStr(b, r.Event)
	putU64(b, r.Seq)
	putStr(b, string(r.Trigger))
	putTime(b, r.CreatedAt)
	putStr(b, string(r.Status))
	putI64(b, int64(r.Attempts))
	putI64(b, int64(r.ResponseStatus))
	putTime(b, r.FirstAttemptAt)
	putTime(b, r.LastAttemptAt)
	putPTime(b, r.NextAttemptAt)
	putBool(b, r.Dropped)
	b.AddUint32(uint32(len(r.Log)))
	for _, a := range r.Log {
		putTime(b, a.At)
		putI64(b, int64(a.Status))
		putI64(b, int64(a.Duration))
		putStr(b, a.Fault)
	}
}

func decDelivery(d *dec, l *loaded) error {
	r := hooks.DeliveryRecordP{Network: d.net(), ID: d.str(), Sub: d.str(), Event: d.str(), Seq: d.u64(),
		Trigger: confpay.DeliveryTrigger(d.str()), CreatedAt: d.time(), Status: confpay.DeliveryStatus(d.str()),
		Attempts: int(d.i64()), ResponseStatus: int(d.i64()), FirstAttemptAt: d.time(), LastAttemptAt: d.time(),
		NextAttemptAt: d.ptime(), Dropped: d.bool()}
	n := d.u32()
	if !d.ok || uint64(n) > uint64(len(d.s)) {
		return fmt.Errorf("a delivery does not decode")
	}
	for range n {
		r.Log = append(r.Log, hooks.Attempt{At: d.time(), Status: int(d.i64()), Duration: time.Duration(d.i64()), Fault: d.str()})
	}
	if !validNet(r.Network) {
		return fmt.Errorf("a delivery names network %q", r.Network)
	}
	ds := &l.hooks[r.Network].deliveries
	if r.Dropped {
		ds.drop(r.ID)
		return nil
	}
	ds.put(r.ID, r)
	return nil
}

func encIdem(b *cryptobyte.Builder, r *idempotency.Record) {
	putStr(b, r.Owner)
	putStr(b, r.Key)
	b.AddBytes(r.FP[:])
	putTime(b, r.Created)
	putI64(b, int64(r.Status))
	putBytes(b, r.Body)
}

func decIdem(d *dec, l *loaded) error {
	r := idempotency.Record{Owner: d.str(), Key: d.str(), FP: d.hash(), Created: d.time(), Status: int(d.i64())}
	if p := d.bytes(); len(p) > 0 {
		r.Body = append([]byte(nil), p...)
	}
	l.idem = append(l.idem, r)
	return nil
}

// ---- the latest record of each thing ----

// latest keeps the latest record of each thing by id, in the order each
// was first seen (a later record takes its first one's place). The
// records are kept in chunks of at most latestChunk: one growing slice
// copied every record again and again as it grew (a million transfers
// made a restart spend seconds in memmove and the page faults of the new
// arrays, and doubled its peak memory; BENCHMARKS.md).
type latest[T any] struct {
	chunks [][]T
	at     map[string]int
	gone   []bool // by index, when dropped (deliveries)
	n      int    // live records
	total  int    // records, live or dropped
}

// latestChunk is the most records a chunk holds.
const latestChunk = 4096

func (l *latest[T]) rec(i int) *T { return &l.chunks[i/latestChunk][i%latestChunk] }

func (l *latest[T]) put(id string, r T) {
	if l.at == nil {
		l.at = map[string]int{}
	}
	if i, ok := l.at[id]; ok {
		*l.rec(i) = r
		if l.gone != nil && l.gone[i] {
			l.gone[i] = false
			l.n++
		}
		return
	}
	l.at[id] = l.total
	if l.total%latestChunk == 0 {
		var c []T // the first chunk grows as records come, the next ones are made whole
		if l.total > 0 {
			c = make([]T, 0, latestChunk)
		}
		l.chunks = append(l.chunks, c)
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, r)
	l.total++
	if l.gone != nil {
		l.gone = append(l.gone, false)
	}
	l.n++
}

func (l *latest[T]) drop(id string) {
	i, ok := l.at[id]
	if !ok {
		return
	}
	if l.gone == nil {
		l.gone = make([]bool, l.total)
	}
	if !l.gone[i] {
		l.gone[i] = true
		l.n--
	}
}

// all yields the records not dropped, in order, without copying them.
func (l *latest[T]) all(yield func(*T) bool) {
	for c, chunk := range l.chunks {
		for j := range chunk {
			if (l.gone == nil || !l.gone[c*latestChunk+j]) && !yield(&chunk[j]) {
				return
			}
		}
	}
}

// live returns the records not dropped, in order, in one new slice (the
// only chunk when it holds them all).
func (l *latest[T]) live() []T {
	if l.gone == nil && len(l.chunks) == 1 {
		return l.chunks[0]
	}
	out := make([]T, 0, l.n)
	for c, chunk := range l.chunks {
		for j := range chunk {
			if l.gone == nil || !l.gone[c*latestChunk+j] {
				out = append(out, chunk[j])
			}
		}
	}
	return out
}
