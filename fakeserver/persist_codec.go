package fakeserver

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/crypto/cryptobyte"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
)

// The data directory's record encoding (journal format versions 2 and
// 3, which adds itemHeldGone, then itemSubOrder, itemIdemGone,
// itemSubGone, itemHooksPruned and itemHeldPruned, which an older build
// refuses as of unknown kind; see persist.go). A record is a series of items, each a kind byte and a
// 24-bit length-prefixed body; a group of records (persist_hooks.go) is
// their concatenation. Inside a body: strings and byte strings are 24-bit
// length-prefixed, integers 64-bit big-endian, a time is its Unix seconds
// and nanoseconds (restored in UTC), an optional value is a presence byte
// then the value.
//
// Adding a kind of item: a constant below, an encode function (called
// from batch.appendTo) and a decode function (in itemDecoders). Records
// are written with wbuf (appends, no builder) and read with cryptobyte.

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
	itemHeldGone = 13 // format version 3
	// itemSubOrder follows the itemSub of a deleted subscription: its
	// place in the order of deletions (hooks.SubRecord.DeletedSeq). A
	// record without it (older) leaves the place 0.
	itemSubOrder = 14
	// itemIdemGone is an Idempotency-Key the store forgot past its TTL
	// (batch.IdemGone).
	itemIdemGone = 15
	// itemSubGone is a deleted subscription's id the webhooks forgot
	// (hooks.SubGone), after that subscription's itemSub.
	itemSubGone = 16
	// itemHooksPruned is when a network's webhook book last pruned
	// (hooks.Pruned); itemHeldPruned the same of its held payments
	// (batch.HeldPruned). Every snapshot holds both for each network (a
	// zero time: the pass never ran). A directory without itemHooksPruned
	// is an older build's (loaded.passTimes); without itemHeldPruned, its
	// held payments' pass never ran, as that build loaded them.
	itemHooksPruned = 17
	itemHeldPruned  = 18
)

// itemDecoders decodes one item's body into l, by kind.
var itemDecoders = [...]func(*dec, *loaded) error{
	itemHead:        decHead,
	itemAccount:     decAccount,
	itemKey:         decKey,
	itemBook:        decBook,
	itemTransfer:    decTransfer,
	itemHeld:        decHeld,
	itemPolicy:      decPolicy,
	itemAssets:      decAssets,
	itemSub:         decSub,
	itemEvent:       decEvent,
	itemDelivery:    decDelivery,
	itemIdem:        decIdem,
	itemHeldGone:    decHeldGone,
	itemSubOrder:    decSubOrder,
	itemIdemGone:    decIdemGone,
	itemSubGone:     decSubGone,
	itemHooksPruned: decHooksPruned,
	itemHeldPruned:  decHeldPruned,
}

// encode is b as one record.
func (b *batch) encode() []byte {
	w := wbuf{b: make([]byte, 0, 512)}
	b.appendTo(&w)
	return w.done()
}

// appendTo appends b, as one record, to w.
func (b *batch) appendTo(w *wbuf) {
	st := w.open(itemHead)
	encHead(w, b)
	w.close(st)
	if b.Assets != nil {
		st := w.open(itemAssets)
		encAssets(w, b.Assets)
		w.close(st)
	}
	items(w, itemAccount, b.Accounts, encAccount)
	items(w, itemKey, b.Keys, encKey)
	items(w, itemPolicy, b.Policies, encPolicy)
	items(w, itemBook, b.Books, encBook)
	items(w, itemTransfer, b.Transfers, encTransfer)
	items(w, itemHeld, b.Held, encHeld)
	items(w, itemHeldGone, b.HeldGone, encHeldGone)
	items(w, itemHeldPruned, b.HeldPruned, encHeldPruned)
	if b.Hooks != nil {
		for i := range b.Hooks.Subs {
			r := &b.Hooks.Subs[i]
			item(w, itemSub, r, encSub)
			if r.Deleted != nil && r.DeletedSeq > 0 {
				item(w, itemSubOrder, r, encSubOrder)
			}
		}
		items(w, itemSubGone, b.Hooks.SubsGone, encSubGone)
		items(w, itemEvent, b.Hooks.Events, encEvent)
		items(w, itemDelivery, b.Hooks.Deliveries, encDelivery)
		items(w, itemHooksPruned, b.Hooks.Pruned, encHooksPruned)
	}
	items(w, itemIdemGone, b.IdemGone, encIdemGone)
	items(w, itemIdem, b.Idem, encIdem)
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

// item appends one item of kind, r encoded by enc.
func item[T any](w *wbuf, kind uint8, r *T, enc func(*wbuf, *T)) {
	st := w.open(kind)
	enc(w, r)
	w.close(st)
}

func items[T any](w *wbuf, kind uint8, rs []T, enc func(*wbuf, *T)) {
	for i := range rs {
		item(w, kind, &rs[i], enc)
	}
}

// ---- field helpers ----

// wbuf is records being encoded, appended to one buffer (which the
// journal's hot path reuses from record to record): the same bytes
// cryptobyte's Builder wrote, without a builder, closure or copy per
// item. The first failure (a field or an item too long for its 24-bit
// length) is kept in err.
type wbuf struct {
	b   []byte
	err error
}

func (w *wbuf) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// done is the bytes encoded; a failure panics (the record cannot be
// written, and the server must not answer as if it were).
func (w *wbuf) done() []byte {
	if w.err != nil {
		panic("confpay-fakeserver: cannot encode a journal record: " + w.err.Error())
	}
	return w.b
}

func (w *wbuf) u8(v uint8)   { w.b = append(w.b, v) }
func (w *wbuf) u24(v int)    { w.b = append(w.b, byte(v>>16), byte(v>>8), byte(v)) }
func (w *wbuf) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *wbuf) u64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *wbuf) i64(v int64)  { w.u64(uint64(v)) }

func (w *wbuf) bool(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

// open starts an item of kind (its body follows) and returns where the
// body starts, for close.
func (w *wbuf) open(kind uint8) int {
	w.b = append(w.b, kind, 0, 0, 0)
	return len(w.b)
}

// close ends the item whose body started at st: it writes the body's
// length in front of it.
func (w *wbuf) close(st int) {
	n := len(w.b) - st
	if n >= 1<<24 {
		w.fail(fmt.Errorf("an item of %d bytes is too long", n))
		return
	}
	w.b[st-3], w.b[st-2], w.b[st-1] = byte(n>>16), byte(n>>8), byte(n)
}

func (w *wbuf) str(s string) {
	if len(s) >= 1<<24 {
		w.fail(fmt.Errorf("a string of %d bytes is too long", len(s)))
		return
	}
	w.u24(len(s))
	w.b = append(w.b, s...)
}

func (w *wbuf) bytes(p []byte) {
	if len(p) >= 1<<24 {
		w.fail(fmt.Errorf("%d bytes are too long", len(p)))
		return
	}
	w.u24(len(p))
	w.b = append(w.b, p...)
}

func (w *wbuf) strs(ss []string) {
	w.u32(uint32(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *wbuf) time(t time.Time) {
	w.u64(uint64(t.Unix()))
	w.u32(uint32(t.Nanosecond()))
}

func (w *wbuf) ptime(t *time.Time) {
	w.bool(t != nil)
	if t != nil {
		w.time(*t)
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

func encHead(w *wbuf, r *batch) {
	w.bool(r.Reset)
	w.time(r.Now)
	for _, v := range r.Seq {
		w.u64(v)
	}
	w.u8(uint8(len(r.HeldSeq)))
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		if v, ok := r.HeldSeq[string(name)]; ok {
			w.str(string(name))
			w.i64(int64(v))
		}
	}
}

func decHead(d *dec, l *loaded) error {
	if d.bool() {
		l.reset()
		l.resets++
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

func encAssets(w *wbuf, as []Asset) {
	w.u32(uint32(len(as)))
	for _, a := range as {
		w.str(a.Code)
		w.i64(int64(a.Decimals))
		w.str(a.USDGRate.String())
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

func encAccount(w *wbuf, r *accountRec) {
	w.str(r.ID)
	w.str(r.Handle)
	w.str(string(r.Type))
	w.str(r.Address)
	w.str(string(r.KYC))
	w.time(r.CreatedAt)
	w.u64(r.Seq)
	w.str(r.EncKey)
	w.strs(r.Domains)
	w.str(r.Owner)
	w.str(r.AgentName)
	w.str(string(r.Status))
	w.str(r.PolicyID)
}

func decAccount(d *dec, l *loaded) error {
	r := accountRec{ID: d.str(), Handle: d.str(), Type: confpay.AccountType(d.str()), Address: d.str(), KYC: confpay.KYCStatus(d.str()),
		CreatedAt: d.time(), Seq: d.u64(), EncKey: d.str(), Domains: d.strs(), Owner: d.str(), AgentName: d.str(),
		Status: confpay.AgentStatus(d.str()), PolicyID: d.str()}
	l.accounts[r.ID] = r
	return nil
}

func encKey(w *wbuf, r *keyRec) {
	w.str(r.ID)
	w.str(r.Name)
	w.str(string(r.Network))
	w.str(r.Acct)
	w.b = append(w.b, r.Hash[:]...)
	w.time(r.CreatedAt)
	w.ptime(r.LastUsed)
	w.ptime(r.Revoked)
	w.i64(r.Requests)
	w.str(r.USDGMoved)
	w.u64(r.Seq)
}

func decKey(d *dec, l *loaded) error {
	r := keyRec{ID: d.str(), Name: d.str(), Network: d.net(), Acct: d.str(), Hash: d.hash(), CreatedAt: d.time(),
		LastUsed: d.ptime(), Revoked: d.ptime(), Requests: d.i64(), USDGMoved: d.str(), Seq: d.u64()}
	l.keys[r.ID] = r
	return nil
}

func encPolicy(w *wbuf, r *policyRec) {
	w.str(string(r.Network))
	w.str(r.Agent)
	w.str(r.ID)
	w.time(r.UpdatedAt)
	w.i64(r.Daily)
	w.i64(r.PerTx)
	w.strs(r.Recipients)
	w.strs(r.Assets)
	w.str(r.Hours)
	w.i64(r.Threshold)
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

func encBook(w *wbuf, r *bookRec) {
	w.str(string(r.Network))
	w.str(r.Acct)
	w.u32(uint32(len(r.Rows)))
	for _, row := range r.Rows {
		w.str(row.Asset)
		w.str(row.Units)
		w.str(row.Reserved)
		w.u64(row.Version)
		w.bytes(row.CT)
		w.u64(row.CTVersion)
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

func encTransfer(w *wbuf, r *transferRec) {
	w.str(string(r.Network))
	w.str(r.ID)
	w.str(r.From)
	w.str(r.To)
	w.str(r.ToAddr)
	w.str(r.ToText)
	w.str(r.Asset)
	w.str(r.Units)
	w.bool(r.Confidential)
	w.str(r.Memo)
	w.str(string(r.Status))
	w.str(r.TxHash)
	w.time(r.CreatedAt)
	w.ptime(r.ConfirmedAt)
	w.ptime(r.FailedAt)
	w.str(r.Key)
	w.bool(r.FailAtConfirm)
	w.str(r.Note)
	w.bool(r.Spend != nil)
	if r.Spend != nil {
		w.time(r.Spend.At)
		w.i64(r.Spend.Amount)
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

func encHeld(w *wbuf, r *heldRec) {
	w.str(string(r.Network))
	w.str(r.ID)
	w.i64(int64(r.Seq))
	w.str(r.Agent)
	w.str(r.To)
	w.str(r.ToAddr)
	w.str(r.ToText)
	w.str(r.Asset)
	w.str(r.Units)
	w.str(r.Memo)
	w.bool(r.Confidential)
	w.bool(r.Payable)
	w.str(r.Transfer)
	w.str(r.Key)
	w.str(string(r.Status))
	w.time(r.RequestedAt)
	w.time(r.ExpiresAt)
	w.ptime(r.DecidedAt)
	w.str(r.Note)
	w.str(r.NoteReader)
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

func encHeldGone(w *wbuf, r *heldGoneRec) {
	w.str(string(r.Network))
	w.str(r.ID)
}

// decHeldGone forgets a held payment pruned from the history.
func decHeldGone(d *dec, l *loaded) error {
	net, id := d.net(), d.str()
	if !validNet(net) {
		return fmt.Errorf("a held payment names network %q", net)
	}
	l.held[net].drop(id)
	return nil
}

func encHeldPruned(w *wbuf, r *heldPrunedRec) {
	w.str(string(r.Network))
	w.time(r.At)
}

// decHeldPruned sets when the network's held payments were last pruned.
func decHeldPruned(d *dec, l *loaded) error {
	net, at := d.net(), d.time()
	if !validNet(net) {
		return fmt.Errorf("a held payments' pruning time names network %q", net)
	}
	l.heldPruned[net] = at
	return nil
}

func encSubGone(w *wbuf, r *hooks.SubGone) {
	w.str(string(r.Network))
	w.str(r.ID)
}

// decSubGone forgets a deleted subscription the webhooks forgot: neither
// its record before nor a snapshot chunk taken before brings it back.
func decSubGone(d *dec, l *loaded) error {
	net, id := d.net(), d.str()
	if !validNet(net) {
		return fmt.Errorf("a subscription names network %q", net)
	}
	if r, ok := l.hooks[net].subs[id]; ok && r.Deleted != nil {
		delete(l.hooks[net].subs, id)
	}
	return nil
}

func encHooksPruned(w *wbuf, r *hooks.Pruned) {
	w.str(string(r.Network))
	w.time(r.At)
}

// decHooksPruned sets when the network's webhook book last pruned.
func decHooksPruned(d *dec, l *loaded) error {
	net, at := d.net(), d.time()
	if !validNet(net) {
		return fmt.Errorf("a webhooks' pruning time names network %q", net)
	}
	l.hooks[net].pruned = at
	l.passTimes = true
	return nil
}

func encSub(w *wbuf, r *hooks.SubRecord) {
	w.str(string(r.Network))
	w.str(r.ID)
	w.str(r.Acct)
	w.str(r.URL)
	w.strs(r.Events)
	w.str(r.Secret)
	w.time(r.CreatedAt)
	w.u64(r.Seq)
	w.ptime(r.Deleted)
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

func encSubOrder(w *wbuf, r *hooks.SubRecord) {
	w.str(string(r.Network))
	w.str(r.ID)
	w.u64(r.DeletedSeq)
}

// decSubOrder gives the deleted subscription its itemSub just named its
// place in the order of deletions.
func decSubOrder(d *dec, l *loaded) error {
	n, id, seq := d.net(), d.str(), d.u64()
	if !d.ok {
		return nil // reported by the caller
	}
	if !validNet(n) {
		return fmt.Errorf("a subscription names network %q", n)
	}
	r, ok := l.hooks[n].subs[id]
	if !ok || r.Deleted == nil {
		return fmt.Errorf("subscription %s: a deletion's place without its deletion", id)
	}
	r.DeletedSeq = seq
	l.hooks[n].subs[id] = r
	return nil
}

func encEvent(w *wbuf, r *hooks.EventRecordP) {
	w.str(string(r.Network))
	w.str(r.ID)
	w.str(r.Kind)
	w.time(r.At)
	w.str(r.Audience[0])
	w.str(r.Audience[1])
	w.u64(r.Seq)
	w.bool(r.Forgotten[0])
	w.bool(r.Forgotten[1])
	w.bool(r.Gone)
	w.bytes(r.Payload)
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

func encDelivery(w *wbuf, r *hooks.DeliveryRecordP) {
	w.str(string(r.Network))
	w.str(r.ID)
	w.str(r.Sub)
	w.str(r.Event)
	w.u64(r.Seq)
	w.str(string(r.Trigger))
	w.time(r.CreatedAt)
	w.str(string(r.Status))
	w.i64(int64(r.Attempts))
	w.i64(int64(r.ResponseStatus))
	w.time(r.FirstAttemptAt)
	w.time(r.LastAttemptAt)
	w.ptime(r.NextAttemptAt)
	w.bool(r.Dropped)
	w.u32(uint32(len(r.Log)))
	for _, a := range r.Log {
		w.time(a.At)
		w.i64(int64(a.Status))
		w.i64(int64(a.Duration))
		w.str(a.Fault)
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

func encIdem(w *wbuf, r *idempotency.Record) {
	w.str(r.Owner)
	w.str(r.Key)
	w.b = append(w.b, r.FP[:]...)
	w.time(r.Created)
	w.i64(int64(r.Status))
	w.bytes(r.Body)
}

func decIdem(d *dec, l *loaded) error {
	r := idempotency.Record{Owner: d.str(), Key: d.str(), FP: d.hash(), Created: d.time(), Status: int(d.i64())}
	if p := d.bytes(); len(p) > 0 {
		r.Body = append([]byte(nil), p...)
	}
	k := [2]string{r.Owner, r.Key}
	if i, ok := l.idemAt[k]; ok {
		l.idem[i] = idempotency.Record{} // a later record of the key replaces it
	}
	l.idemAt[k] = len(l.idem)
	l.idem = append(l.idem, r)
	return nil
}

func encIdemGone(w *wbuf, g *idempotency.Gone) {
	w.str(g.Owner)
	w.str(g.Key)
}

// decIdemGone forgets a key the store forgot past its TTL: neither its
// record before nor a snapshot chunk taken before brings it back.
func decIdemGone(d *dec, l *loaded) error {
	k := [2]string{d.str(), d.str()}
	if i, ok := l.idemAt[k]; ok {
		l.idem[i] = idempotency.Record{}
		delete(l.idemAt, k)
	}
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
