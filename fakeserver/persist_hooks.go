package fakeserver

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/cryptobyte"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
)

// The data directory's webhook and Idempotency-Key records (persist.go
// has the rest).
//
// Webhooks live in internal/hooks under hooks.mu. Once the server has a
// data directory, hooks notes every change (a subscription created or
// deleted, an event recorded or forgotten, a delivery record made,
// attempted, finished or dropped), and flushLocked takes the notes under
// s.mu (server → hooks, the lock order) into the record it writes: an
// event emitted by an operation is in the operation's own record, and a
// change made under hooks.mu alone rides with the next record. A reader
// of the webhook state (a /v1/webhooks handler, the direct API) takes
// s.mu after reading (sawOutside, hooksDurable), which writes the notes
// waiting, and waits for everything it may have seen, so a
// subscription's creation or deletion, a replay, an event and a delivery
// record are durable before they are shown; a delivery attempt waits so
// before it sends its event (Config.Durable). An attempt's result is
// written by the attempt's goroutine once recorded (Config.Changed),
// without anyone waiting for it: a crash may lose the last results, and then the
// delivery is attempted again after the restart, which at-least-once
// delivery allows. A pending delivery comes back with its retry timer on
// the restored clock; one whose attempt was under way is attempted again
// at once.
//
// Idempotency-Key answers are written in the same journal record as the
// effect of the request they answer. The answer is known only once the
// handler returned, after its critical sections committed, so a request
// under a key has a slot in the commit order (openSlot notes it on the
// call). The slot enters the commit queue with the request's first
// record: at the Unlock of its first section that writes one, just before
// that record (stateMu.Unlock, appendLocked), or before the request
// changes state outside s.mu, whose record another section's flush may
// write (enterSlot: a webhook created, deleted or replayed). Every record
// committed from then on, its own and others', is held in commit order
// behind the slot until the request's answer is known (closeSlot); then
// the slot's answer and everything held up to the next slot still in
// the queue are appended as one journal record (a group). A crash keeps
// all of it or none of it, so a request whose effect is durable has its
// answer durable too, and a retry after a restart replays it. What was
// committed before the slot entered (a section of the request that wrote
// nothing, others' records) is appended as usual: it comes before the
// request's effect anyway, and the request's answer waits for what it
// saw (durableFor). A request that wrote nothing never enters: its answer
// is appended, or held behind another slot, like any record. Its
// sections take s.mu with lockFor (once it entered, their records are
// held behind its own slot: it cannot wait for them before its answer),
// and its answer is kept in the store only once its record is in the
// commit order, so that a replay's wait (its bound) covers it. The price:
// once a request under a key has made its effect, the records committed
// after it wait for it to finish (rendering its answer; for a new
// webhook, from its creation on). No wait closes a cycle: a section
// taken with lockFor never waits, and a request never waits before its
// answer is kept and its slot closed, so whatever waits behind a slot
// (another request's answer, a timer, a delivery attempt at its Unlock)
// waits for a request that waits for nothing.

// An event's payload as stored: a transfer event by its facts (rebuilt,
// to the same bytes, from the restored transfer): a kind byte, the
// transfer's id and the side's account id; any other by its bytes.
const (
	payloadBody     = 0
	payloadSent     = 1
	payloadReceived = 2
)

// storedPayload is a payload restored as bytes.
type storedPayload []byte

// Build returns the stored bytes (hooks.Payload).
func (p storedPayload) Build(string, string, time.Time) []byte { return p }

// encodePayload is how a payload is stored (hooks.Dump; the journal's
// hot path appends it to a reused buffer, payloadArena).
func encodePayload(p hooks.Payload) []byte {
	w := wbuf{b: make([]byte, 0, 64)}
	appendPayload(&w, p)
	return w.done()
}

// appendPayload appends payload p as stored to w.
func appendPayload(w *wbuf, p hooks.Payload) {
	switch p := p.(type) {
	case *sentPayload:
		t := (*transfer)(p)
		w.u8(payloadSent)
		w.str(t.id)
		w.str(t.from.id)
	case *receivedPayload:
		t := (*transfer)(p)
		w.u8(payloadReceived)
		w.str(t.id)
		w.str(t.to.id)
	case fixedPayload:
		w.u8(payloadBody)
		w.b = append(w.b, marshalPayload(p.v)...)
	case storedPayload:
		w.u8(payloadBody)
		w.b = append(w.b, p...)
	default:
		panic(fmt.Sprintf("confpay-fakeserver: an event payload of type %T cannot be stored", p))
	}
}

// decodePayloadLocked turns a stored payload back into one (s.mu held,
// transfers installed).
func (s *Server) decodePayloadLocked(r hooks.EventRecordP) (hooks.Payload, error) {
	if len(r.Payload) == 0 {
		return nil, fmt.Errorf("event %s has no payload", r.ID)
	}
	if r.Payload[0] == payloadBody {
		if len(r.Payload) == 1 {
			return nil, fmt.Errorf("event %s has no payload", r.ID)
		}
		return storedPayload(r.Payload[1:]), nil
	}
	d := dec{s: cryptobyte.String(r.Payload[1:]), ok: true}
	id, side := d.bytes(), d.bytes()
	if !d.ok || !d.s.Empty() || r.Payload[0] > payloadReceived {
		return nil, fmt.Errorf("event %s: its payload does not decode", r.ID)
	}
	n := s.nets[r.Network]
	if n == nil {
		return nil, fmt.Errorf("event %s names network %q", r.ID, r.Network)
	}
	t := n.transfers.byID.get(string(id))
	switch {
	case t != nil && r.Payload[0] == payloadSent && t.from != nil && t.from.id == string(side):
		return (*sentPayload)(t), nil
	case t != nil && r.Payload[0] == payloadReceived && t.to != nil && t.to.id == string(side):
		return (*receivedPayload)(t), nil
	}
	return nil, fmt.Errorf("event %s is inconsistent", r.ID)
}

// loadedHooks is one network's replayed webhook records.
type loadedHooks struct {
	subs       map[string]hooks.SubRecord
	events     latest[hooks.EventRecordP]
	deliveries latest[hooks.DeliveryRecordP]
	pruned     time.Time // when the book last pruned (zero: never)
}

func newLoadedHooks() map[confpay.Network]*loadedHooks {
	out := map[confpay.Network]*loadedHooks{}
	for _, n := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		out[n] = &loadedHooks{subs: map[string]hooks.SubRecord{}}
	}
	return out
}

// installHooksLocked restores the webhook state and the kept answers (s.mu
// held, everything else installed).
func (s *Server) installHooksLocked(l *loaded) error {
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		lh := l.hooks[name]
		var c hooks.Changes
		for _, r := range lh.subs {
			if r.Deleted == nil && s.accounts[r.Acct] == nil {
				return fmt.Errorf("subscription %s is inconsistent", r.ID)
			}
			c.Subs = append(c.Subs, r)
		}
		c.Events = lh.events.live()
		c.Deliveries = lh.deliveries.live()
		if l.passTimes { // else an older build's: hooks.Restore does as it did
			c.Pruned = []hooks.Pruned{{Network: name, At: lh.pruned}}
		}
		if err := s.hooks.Restore(name, c, s.decodePayloadLocked); err != nil {
			return err
		}
	}
	for _, r := range l.idem {
		if r.Owner != "" {
			s.idempotent.Restore(r)
		}
	}
	return nil
}

// snapshotHooksLocked adds the webhook state and the kept answers to a
// snapshot, in records of at most chunk items each: the subscriptions,
// then the events, then the deliveries, as one record would hold them
// (the loader gathers each kind across records). One record for all of a
// network's events cost a large share of a rewrite, in copies as the
// record grew (BENCHMARKS.md).
func (s *Server) snapshotHooksLocked(enc func(*batch), head *batch) {
	const chunk = 512
	rec := func() *batch { return &batch{Now: head.Now, Seq: head.Seq, HeldSeq: head.HeldSeq} }
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		c, _ := s.hooks.Dump(name, encodePayload)
		for subs := range slices.Chunk(c.Subs, chunk) {
			b := rec()
			b.Hooks = &hooks.Changes{Subs: subs}
			enc(b)
		}
		if len(c.Pruned) > 0 {
			b := rec()
			b.Hooks = &hooks.Changes{Pruned: c.Pruned}
			enc(b)
		}
		for events := range slices.Chunk(c.Events, chunk) {
			b := rec()
			b.Hooks = &hooks.Changes{Events: events}
			enc(b)
		}
		for ds := range slices.Chunk(c.Deliveries, chunk) {
			b := rec()
			b.Hooks = &hooks.Changes{Deliveries: ds}
			enc(b)
		}
	}
	for recs := range slices.Chunk(s.idempotent.Records(), chunk) {
		b := rec()
		b.Idem = recs
		enc(b)
	}
}

// ---- the commit queue (Idempotency-Key answers) ----

// mark is where a critical section's record stands, or what a section
// saw: a journal record number, and a ticket in the queue (held behind a
// slot). It is durable once both are.
type mark struct{ seq, ticket uint64 }

// max is the later of m and o in each part.
func (m mark) max(o mark) mark { return mark{max(m.seq, o.seq), max(m.ticket, o.ticket)} }

// boundLocked is everything committed so far: every record appended, and
// every one held in the queue (s.mu held).
func (s *Server) boundLocked() mark {
	m := mark{seq: s.jr.Appended()}
	if t := s.q.issued.Load(); t > s.q.done { // done is written under s.mu too
		m.ticket = t
	}
	return m
}

// slot is a request under an Idempotency-Key in the commit order. It
// enters the queue (entered) with the request's first record, or before
// a change it makes outside s.mu (enterSlot), and holds every record
// committed after it until the request's answer is known (closed).
// Guarded by s.mu.
type slot struct {
	entered, closed bool
	keeping         bool // its answer was appended and counted in keeping
}

// queued is one held item: a slot, or an encoded batch with its ticket.
type queued struct {
	slot   *slot
	p      []byte
	ticket uint64
	reset  bool // p is a reset's record (journal.FoldSoon once appended)
}

// commitQueue holds records behind entered slots. items and issued are
// guarded by s.mu; done and doneSeq by mu (a leaf), which waiters use,
// and written under s.mu too (boundLocked reads done under s.mu alone).
type commitQueue struct {
	items  []queued
	issued atomic.Uint64 // the last ticket issued
	// group and free (s.mu) are drainLocked's list of records to append
	// and the held records' buffers to reuse.
	group [][]byte
	free  [][]byte

	// keeping counts the answers appended (closeSlot) and not yet kept
	// in the store: a rewrite that switched journals meanwhile would have
	// them in neither its snapshot nor its journal (rewriteLocked starts
	// when there is none).
	keeping atomic.Int32

	mu      sync.Mutex
	cond    *sync.Cond
	done    uint64 // tickets up to done are appended
	doneSeq uint64 // the journal record that appended them
}

// queueLocked queues p, a buffer from buffer, behind the entered slot
// in the queue (s.mu held, the queue not empty).
func (s *Server) queueLocked(p []byte) mark {
	t := s.q.issued.Add(1)
	s.q.items = append(s.q.items, queued{p: p, ticket: t})
	if s.testHook != nil {
		s.testHook("held")
	}
	return mark{ticket: t}
}

// buffer is a buffer for a record to hold: one a drained record gave back,
// or a new one (s.mu held).
func (q *commitQueue) buffer() []byte {
	if n := len(q.free); n > 0 {
		p := q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
		return p
	}
	return make([]byte, 0, 2048)
}

// release gives back the buffers of records now appended (s.mu held);
// it keeps a bounded number of them, none large.
func (q *commitQueue) release(ps [][]byte) {
	for i, p := range ps {
		if len(q.free) < 256 && cap(p) <= 64<<10 {
			q.free = append(q.free, p[:0])
		}
		ps[i] = nil
	}
}

// openSlot starts call c, a request under an Idempotency-Key, in the
// commit order (nothing without a data directory). It only notes the
// slot on c: the slot enters the queue with the request's first record
// (enterLocked, from stateMu.Unlock), so that what others commit while
// the request has changed nothing yet is not held behind it.
func (s *Server) openSlot(c *call) {
	if s.jr != nil {
		c.slot = &slot{}
	}
}

// enterLocked puts sl in the commit order, after everything committed
// so far, if it is not there yet and its request has not answered (s.mu
// held).
func (s *Server) enterLocked(sl *slot) {
	if sl != nil && !sl.entered && !sl.closed {
		sl.entered = true
		s.q.items = append(s.q.items, queued{slot: sl})
	}
}

// enterSlot puts c's slot in the commit order now: a request under an
// Idempotency-Key calls it before it changes state outside s.mu (the
// webhook state), whose record another section's flush may write, so
// that the record is held behind the slot like the request's own.
func (s *Server) enterSlot(c *call) {
	if c.slot == nil || c.slot.entered {
		return
	}
	s.mu.Mutex.Lock()
	s.flushLocked(nil) // what changed before belongs before the slot (its owners wait for it)
	s.enterLocked(c.slot)
	s.mu.Mutex.Unlock()
}

// closeSlot ends c's slot: the request's answer rec (nil when not kept)
// goes in the commit order after its effects, and everything held up to
// the next entered slot is appended as one record. A slot that never
// entered (the request wrote nothing) holds nothing: its answer is
// appended, or queued behind another slot, like any record. c's answer
// waits for the answer's record and everything the request may have
// seen (durableFor). An answer whose key e a reset dropped meanwhile is
// not written: it belongs to the state before the reset, which the
// journal already emptied.
func (s *Server) closeSlot(c *call, e *idempotency.Entry, rec *idempotency.Record) {
	sl := c.slot
	if sl == nil {
		return
	}
	s.mu.Mutex.Lock()
	m := s.flushLocked(nil)
	if rec != nil && s.idempotent.Live(e) { // Reset drops keys under s.mu
		b := s.batchLocked()
		b.Idem = append(b.Idem, *rec)
		s.q.keeping.Add(1) // until keptSlot; before appendLocked, which may rewrite
		sl.keeping = true
		m = m.max(s.appendLocked(b, nil))
	}
	sl.closed = true
	if sl.entered {
		s.drainLocked()
	}
	m = m.max(s.boundLocked())
	s.mu.Mutex.Unlock()
	c.seen = c.seen.max(m)
}

// keptSlot notes that c's answer, appended by closeSlot, is now kept in
// the store (a snapshot shows it).
func (s *Server) keptSlot(c *call) {
	if c.slot != nil && c.slot.keeping && s.q.keeping.Add(-1) == 0 {
		s.rewriteIfDue() // one this answer held back (a reset's fold)
	}
}

// drainLocked appends the held records up to the first slot still open
// as one journal record.
func (s *Server) drainLocked() {
	group := s.q.group[:0]
	var last uint64
	reset := false
	i := 0
	for ; i < len(s.q.items); i++ {
		it := s.q.items[i]
		if it.slot != nil {
			if !it.slot.closed {
				break
			}
			continue
		}
		if it.p != nil { // nil: a rewrite's barrier (persist_rewrite.go)
			group = append(group, it.p)
			reset = reset || it.reset
		}
		last = it.ticket
	}
	// The rest moves to the front: the queue keeps its array.
	n := copy(s.q.items, s.q.items[i:])
	clear(s.q.items[n:])
	s.q.items = s.q.items[:n]
	s.q.group = group
	if len(group) == 0 {
		if last > 0 { // only barriers
			s.q.mu.Lock()
			s.q.done, s.q.doneSeq = last, max(s.q.doneSeq, s.jr.Appended())
			s.q.cond.Broadcast()
			s.q.mu.Unlock()
		}
		return
	}
	// A group is its records one after the other (persist_codec.go),
	// appended as one record.
	seq := s.jr.AppendParts(group)
	if reset {
		s.jr.FoldSoon() // the records before it leave the directory (persist_rewrite.go)
	}
	s.q.release(group)
	s.q.mu.Lock()
	s.q.done, s.q.doneSeq = last, seq
	s.q.cond.Broadcast()
	s.q.mu.Unlock()
	s.rewriteLocked()
}

// waitMark waits until m is durable.
func (s *Server) waitMark(m mark) {
	if m.ticket > 0 {
		s.q.mu.Lock()
		for s.q.done < m.ticket {
			s.q.cond.Wait()
		}
		m.seq = max(m.seq, s.q.doneSeq)
		s.q.mu.Unlock()
	}
	if m.seq > 0 {
		s.waitDurable(m.seq)
	}
}

// writeHooks writes the webhook changes noted under hooks.mu alone (a
// delivery attempt's result, Config.Changed) and waits for their record
// unless it is held behind an open slot: no answer shows them (a reader
// waits with sawOutside or hooksDurable), and at-least-once delivery
// allows a result lost to a crash.
func (s *Server) writeHooks() {
	if s.jr == nil || s.jrDone.Load() || !s.hooks.Dirty() {
		return
	}
	s.mu.Mutex.Lock()
	m := s.flushLocked(nil)
	s.mu.Mutex.Unlock()
	if m.seq > 0 {
		s.waitDurable(m.seq)
	}
}
