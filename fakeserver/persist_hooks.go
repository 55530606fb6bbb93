package fakeserver

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
// under a key opens a slot in the commit order when its handler starts
// (openSlot): every record committed from then on, its own and others',
// is held in commit order behind the slot until the request's answer is
// known (closeSlot); then the slot's answer and everything held up to the
// next slot still open are appended as one journal record (a group). A
// crash keeps all of it or none of it, so a request whose effect is
// durable has its answer durable too, and a retry after a restart
// replays it. Its sections take s.mu with lockFor (their records are
// held behind its own slot: it cannot wait for them before its answer),
// and its answer is kept in the store only once its record is in the
// commit order, so that a replay's wait (its bound) covers it. The price:
// while a request under a key runs, the records committed after it start
// wait for it to finish (microseconds, but the DNS lookup of a new
// subscription's host too).

// payloadRec is an event's payload as stored: a transfer event by its
// facts (rebuilt, to the same bytes, from the restored transfer), any
// other by its bytes.
type payloadRec struct {
	Transfer string          `json:"t,omitempty"`
	Side     string          `json:"s,omitempty"`
	Received bool            `json:"r,omitempty"`
	Body     json.RawMessage `json:"b,omitempty"`
}

// storedPayload is a payload restored as bytes.
type storedPayload []byte

// Build returns the stored bytes (hooks.Payload).
func (p storedPayload) Build(string, string, time.Time) []byte { return p }

// encodePayload is how a payload is stored (hooks.TakeChanges, Dump).
func encodePayload(p hooks.Payload) []byte {
	var r payloadRec
	switch p := p.(type) {
	case *sentPayload:
		t := (*transfer)(p)
		r = payloadRec{Transfer: t.id, Side: t.from.id}
	case *receivedPayload:
		t := (*transfer)(p)
		r = payloadRec{Transfer: t.id, Side: t.to.id, Received: true}
	case fixedPayload:
		r.Body = marshalPayload(p.v)
	case storedPayload:
		r.Body = json.RawMessage(p)
	default:
		panic(fmt.Sprintf("confpay-fakeserver: an event payload of type %T cannot be stored", p))
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic("confpay-fakeserver: cannot encode an event payload record")
	}
	return b
}

// decodePayloadLocked turns a stored payload back into one (s.mu held,
// transfers installed).
func (s *Server) decodePayloadLocked(r hooks.EventRecordP) (hooks.Payload, error) {
	var p payloadRec
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return nil, fmt.Errorf("event %s: its payload does not decode", r.ID)
	}
	if p.Transfer == "" {
		if len(p.Body) == 0 {
			return nil, fmt.Errorf("event %s has no payload", r.ID)
		}
		return storedPayload(p.Body), nil
	}
	n := s.nets[r.Network]
	if n == nil {
		return nil, fmt.Errorf("event %s names network %q", r.ID, r.Network)
	}
	t := n.transfers.byID[p.Transfer]
	switch {
	case t != nil && !p.Received && t.from != nil && t.from.id == p.Side:
		return (*sentPayload)(t), nil
	case t != nil && p.Received && t.to != nil && t.to.id == p.Side:
		return (*receivedPayload)(t), nil
	}
	return nil, fmt.Errorf("event %s is inconsistent", r.ID)
}

// loadedHooks is one network's replayed webhook records.
type loadedHooks struct {
	subs       map[string]hooks.SubRecord
	events     map[string]hooks.EventRecordP
	deliveries map[string]hooks.DeliveryRecordP
}

func newLoadedHooks() map[confpay.Network]*loadedHooks {
	out := map[confpay.Network]*loadedHooks{}
	for _, n := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		out[n] = &loadedHooks{subs: map[string]hooks.SubRecord{}, events: map[string]hooks.EventRecordP{}, deliveries: map[string]hooks.DeliveryRecordP{}}
	}
	return out
}

// applyHooks replays a record's webhook changes.
func (l *loaded) applyHooks(c *hooks.Changes) error {
	for _, r := range c.Subs {
		if !validNet(r.Network) {
			return fmt.Errorf("a subscription names network %q", r.Network)
		}
		l.hooks[r.Network].subs[r.ID] = r
	}
	for _, r := range c.Events {
		if !validNet(r.Network) {
			return fmt.Errorf("an event names network %q", r.Network)
		}
		l.hooks[r.Network].events[r.ID] = r
	}
	for _, r := range c.Deliveries {
		if !validNet(r.Network) {
			return fmt.Errorf("a delivery names network %q", r.Network)
		}
		if r.Dropped {
			delete(l.hooks[r.Network].deliveries, r.ID)
			continue
		}
		l.hooks[r.Network].deliveries[r.ID] = r
	}
	return nil
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
		for _, r := range lh.events {
			c.Events = append(c.Events, r)
		}
		for _, r := range lh.deliveries {
			c.Deliveries = append(c.Deliveries, r)
		}
		if err := s.hooks.Restore(name, c, s.decodePayloadLocked); err != nil {
			return err
		}
	}
	now := s.clock.Now()
	for _, r := range l.idem {
		s.idempotent.Restore(r, now)
	}
	return nil
}

// snapshotHooksLocked adds the webhook state and the kept answers to a
// snapshot.
func (s *Server) snapshotHooksLocked(enc func(*batch), head *batch) {
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		c := s.hooks.Dump(name, encodePayload)
		if !c.Empty() {
			b := &batch{Now: head.Now, Seq: head.Seq, HeldSeq: head.HeldSeq, Hooks: &c}
			enc(b)
		}
	}
	if recs := s.idempotent.Records(s.clock.Now()); len(recs) > 0 {
		enc(&batch{Now: head.Now, Seq: head.Seq, HeldSeq: head.HeldSeq, Idem: recs})
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

// slot is a request under an Idempotency-Key, in the commit order.
type slot struct{ closed bool }

// queued is one held item: a slot, or an encoded batch with its ticket.
type queued struct {
	slot   *slot
	p      []byte
	ticket uint64
}

// commitQueue holds records behind open slots. items and issued are
// guarded by s.mu; done and doneSeq by mu (a leaf), which waiters use,
// and written under s.mu too (boundLocked reads done under s.mu alone).
type commitQueue struct {
	items  []queued
	issued atomic.Uint64 // the last ticket issued

	mu      sync.Mutex
	cond    *sync.Cond
	done    uint64 // tickets up to done are appended
	doneSeq uint64 // the journal record that appended them
}

// queueLocked queues p behind an open slot, or returns false when none is
// open (the caller appends it).
func (s *Server) queueLocked(p []byte) (mark, bool) {
	if len(s.q.items) == 0 {
		return mark{}, false
	}
	t := s.q.issued.Add(1)
	s.q.items = append(s.q.items, queued{p: p, ticket: t})
	return mark{ticket: t}, true
}

// openSlot starts a request under an Idempotency-Key in the commit order
// (nil without a data directory).
func (s *Server) openSlot() *slot {
	if s.jr == nil {
		return nil
	}
	sl := &slot{}
	s.mu.Mutex.Lock()
	s.flushLocked() // what committed before belongs before the slot (its owners wait for it)
	s.q.items = append(s.q.items, queued{slot: sl})
	s.mu.Mutex.Unlock()
	return sl
}

// closeSlot ends sl's request, call c: its answer rec (nil when not
// kept) goes in the commit order after its effects, and everything held
// up to the next open slot is appended as one record. c's answer waits
// for the answer's record and everything the request may have seen
// (durableFor).
func (s *Server) closeSlot(c *call, sl *slot, rec *idempotency.Record) {
	if sl == nil {
		return
	}
	s.mu.Mutex.Lock()
	m := s.flushLocked()
	if rec != nil {
		b := s.batchHeadLocked()
		b.Idem = []idempotency.Record{*rec}
		p, err := json.Marshal(b)
		if err != nil {
			panic("confpay-fakeserver: cannot encode a journal record: " + err.Error())
		}
		m, _ = s.queueLocked(p)
	}
	sl.closed = true
	s.drainLocked()
	m = m.max(s.boundLocked())
	s.mu.Mutex.Unlock()
	c.seen = c.seen.max(m)
}

// drainLocked appends the held records up to the first open slot as one
// journal record.
func (s *Server) drainLocked() {
	var group []json.RawMessage
	var last uint64
	i := 0
	for ; i < len(s.q.items); i++ {
		it := s.q.items[i]
		if it.slot != nil {
			if !it.slot.closed {
				break
			}
			continue
		}
		group = append(group, it.p)
		last = it.ticket
	}
	clear(s.q.items[:i])
	s.q.items = s.q.items[i:]
	if len(s.q.items) == 0 {
		s.q.items = nil
	}
	if len(group) == 0 {
		return
	}
	p := group[0]
	if len(group) > 1 {
		// {"group":[…]} by hand: each member is already valid JSON, and
		// json.Marshal would scan every one again.
		n := len(`{"group":[]}`) + len(group) - 1
		for _, g := range group {
			n += len(g)
		}
		p = make([]byte, 0, n)
		p = append(p, `{"group":[`...)
		for i, g := range group {
			if i > 0 {
				p = append(p, ',')
			}
			p = append(p, g...)
		}
		p = append(p, "]}"...)
	}
	seq := s.jr.Append(p)
	s.q.mu.Lock()
	s.q.done, s.q.doneSeq = last, seq
	s.q.cond.Broadcast()
	s.q.mu.Unlock()
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
	m := s.flushLocked()
	s.mu.Mutex.Unlock()
	if m.seq > 0 {
		s.waitDurable(m.seq)
	}
}
