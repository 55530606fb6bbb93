// Package idempotency is the fakeserver's Idempotency-Key store: first
// answers by (owner, key) for 24 hours of server time, each request known
// only by a fixed-size fingerprint (a SHA-256 of its method, path, query
// and body), so that memory per key is bounded whatever the request. The
// store has its own lock and never holds it while a request runs.
package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// TTL is how long a first answer is kept for replay.
const TTL = 24 * time.Hour

// DefaultMaxPerOwner is how many keys one owner (an account on a network)
// may hold in the store at once unless the server says otherwise. A key
// with an answer of about 220 B (a typical error or held payment) costs
// about 420 B, so the bound is about 42 MB per account and network; a
// key whose answer a Source renders again (the fakeserver's 201 payment)
// costs about 210 B (BenchmarkIdempotencyKeyMemory). A busy account may
// send 100,000 writes in any 24 hours (more than one a second all day)
// before it is refused.
const DefaultMaxPerOwner = 100_000

// Fingerprint identifies a request: its method, its path and query as
// sent, and its body. Two requests under one key are the same request when
// their fingerprints are equal.
func Fingerprint(method, target string, body []byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, part := range [][]byte{[]byte(method), []byte(target), body} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Verdict is what the store says about a request under a key.
type Verdict int

// Verdicts of Begin.
const (
	// Run: the key is new; run the request, then Keep or Forget.
	Run Verdict = iota
	// Replay: the same request ran before; send its stored answer.
	Replay
	// Reused: the key was used with another request (422).
	Reused
	// InUse: the first request under the key still runs (409).
	InUse
	// Full: the owner holds the most keys it may (429); the oldest
	// expires at the time Begin returns with it.
	Full
)

// Answer is a stored first answer: its status and its body, or instead of
// the body a Source that renders the same bytes again.
type Answer struct {
	Status int
	Body   []byte
	Source Source
}

// Source renders a kept answer's body again: the bytes first sent, every
// time, whatever happened since. It is called without the store's lock
// held (a replay), or with it (Records).
type Source interface {
	AnswerBody() []byte
}

// Bytes is the answer's body, rendered by its Source if it has one.
func (a Answer) Bytes() []byte {
	if a.Source != nil {
		return a.Source.AnswerBody()
	}
	return a.Body
}

// Entry is a key's place in the store, returned by Begin with Run.
//
// One is kept per key for a day, so it is kept small (112 bytes, a size
// class below Answer's fields side by side): the answer is its status and
// one Source, a body kept as bytes being a bodySource.
type Entry struct {
	owner, key string
	fp         [32]byte
	created    time.Time
	status     int32 // the kept answer's status, once done
	done       bool
	src        Source // the kept answer's body: a bodySource or the caller's Source
}

// bodySource is a body kept as its bytes.
type bodySource []byte

// AnswerBody returns the bytes.
func (b bodySource) AnswerBody() []byte { return b }

// keep stores a as e's answer.
func (e *Entry) keep(a Answer) {
	e.done, e.status, e.src = true, int32(a.Status), a.Source
	if a.Source == nil {
		e.src = bodySource(a.Body)
	}
}

// answer is e's kept answer, as Keep was given it.
func (e *Entry) answer() Answer {
	if b, ok := e.src.(bodySource); ok {
		return Answer{Status: int(e.status), Body: []byte(b)}
	}
	return Answer{Status: int(e.status), Source: e.src}
}

// Store keeps first answers. The zero value is not usable; use New.
type Store struct {
	mu  sync.Mutex
	max int
	// entries holds the live entries by owner, then key: a key's slot is
	// a string and a pointer (a map by the pair would hold both strings).
	entries map[string]map[string]*Entry
	live    int      // live entries, over all owners
	order   []*Entry // by creation time, oldest first, for expiry
	// track says to note the keys expire forgets (Track), in gone, until
	// TakeGone; hasGone says gone holds some, so that TakeGone, called at
	// every journal record, takes no lock when it holds none.
	track   bool
	gone    []Gone
	hasGone atomic.Bool
}

// Gone is a key the store forgot past its TTL, as the data directory
// records it, so that a restart forgets it too whatever the clock says
// then.
type Gone struct{ Owner, Key string }

// Track starts noting the keys the store forgets past their TTL
// (TakeGone): the server has a data directory.
func (st *Store) Track() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.track = true
}

// TakeGone appends the keys forgotten past their TTL since the last call
// to dst, in the order they were forgotten, and returns it.
func (st *Store) TakeGone(dst []Gone) []Gone {
	if !st.hasGone.Load() {
		return dst
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	dst = append(dst, st.gone...)
	clear(st.gone)
	st.gone = st.gone[:0]
	st.hasGone.Store(false)
	return dst
}

// New returns an empty store that lets each owner hold at most maxPerOwner
// keys at once.
func New(maxPerOwner int) *Store {
	st := &Store{max: max(maxPerOwner, 1)}
	st.Reset()
	return st
}

// Reset empties the store.
func (st *Store) Reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.entries = map[string]map[string]*Entry{}
	st.live = 0
	st.order = nil
	st.gone = st.gone[:0] // the reset forgets every key
	st.hasGone.Store(false)
}

// SetMaxPerOwner changes the bound; keys already held stay.
func (st *Store) SetMaxPerOwner(n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.max = max(n, 1)
}

// Len is how many keys the store holds.
func (st *Store) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.live
}

// isLive reports whether e is still the entry of its owner and key.
func (st *Store) isLive(e *Entry) bool { return st.entries[e.owner][e.key] == e }

// add makes e the entry of its owner and key (which has none); m is the
// owner's map, nil when it has none.
func (st *Store) add(m map[string]*Entry, e *Entry) {
	if m == nil {
		m = map[string]*Entry{}
		st.entries[e.owner] = m
	}
	m[e.key] = e
	st.live++
}

// drop removes e, if it is still the entry of its owner and key.
func (st *Store) drop(e *Entry) {
	m := st.entries[e.owner]
	if m[e.key] == e {
		delete(m, e.key)
		st.live--
		if len(m) == 0 {
			delete(st.entries, e.owner)
		}
	}
}

// expire drops every entry older than the TTL at now (the order is by
// creation time: they are its prefix), noting each it forgets (Track).
// It is the one place a key is forgotten for its age.
func (st *Store) expire(now time.Time) {
	i := 0
	for ; i < len(st.order); i++ {
		e := st.order[i]
		if now.Sub(e.created) < TTL {
			break
		}
		if st.track && st.isLive(e) {
			st.gone = append(st.gone, Gone{Owner: e.owner, Key: e.key})
			st.hasGone.Store(true)
		}
		st.drop(e)
	}
	if i > 0 {
		st.order = append(st.order[:0:0], st.order[i:]...)
	}
}

// compact drops forgotten entries from the expiry order once they
// outnumber the live ones, so that a flood of requests whose answers are
// not kept cannot grow it.
func (st *Store) compact() {
	if len(st.order) <= 2*st.live+64 {
		return
	}
	live := st.order[:0]
	for _, e := range st.order {
		if st.isLive(e) {
			live = append(live, e)
		}
	}
	clear(st.order[len(live):])
	st.order = live
}

// Begin looks key up for owner at now. With Run the caller owns the
// returned entry until it calls Keep or Forget; with Replay the stored
// answer is returned; with Full the retry time is when the owner's oldest
// key expires.
func (st *Store) Begin(owner, key string, fp [32]byte, now time.Time) (*Entry, Verdict, Answer, time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expire(now)
	st.compact()
	m := st.entries[owner] // looked up once: nil until the owner's first key
	e := m[key]
	if e != nil {
		switch {
		case e.fp != fp:
			return nil, Reused, Answer{}, time.Time{}
		case !e.done:
			return nil, InUse, Answer{}, time.Time{}
		}
		return nil, Replay, e.answer(), time.Time{}
	}
	if len(m) >= st.max {
		retry := now.Add(TTL)
		for _, e := range st.order {
			if e.owner == owner && st.isLive(e) {
				retry = e.created.Add(TTL)
				break
			}
		}
		return nil, Full, Answer{}, retry
	}
	e = &Entry{owner: owner, key: key, fp: fp, created: now}
	st.add(m, e)
	st.insert(e)
	return e, Run, Answer{}, time.Time{}
}

// insert puts e in the order by its creation time, after those created
// at the same instant: at the end, unless the clock was set back.
func (st *Store) insert(e *Entry) {
	n := len(st.order)
	if n == 0 || !e.created.Before(st.order[n-1].created) {
		st.order = append(st.order, e)
		return
	}
	i := sort.Search(n, func(i int) bool { return e.created.Before(st.order[i].created) })
	st.order = append(st.order, nil)
	copy(st.order[i+1:], st.order[i:])
	st.order[i] = e
}

// Keep stores the answer of the request that ran under e, for replay.
func (st *Store) Keep(e *Entry, a Answer) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e.keep(a)
}

// Live reports whether e is still its owner's entry for its key: a Reset
// since Begin dropped it, and its answer is then not kept.
func (st *Store) Live(e *Entry) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.isLive(e)
}

// Forget drops e (its answer is not kept), so that a retry runs again.
func (st *Store) Forget(e *Entry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.drop(e)
}

// Record is a kept answer as the server's data directory stores it.
type Record struct {
	Owner   string    `json:"owner"`
	Key     string    `json:"key"`
	FP      [32]byte  `json:"fp"`
	Created time.Time `json:"created"`
	Status  int       `json:"status"`
	Body    []byte    `json:"body,omitempty"`
}

// RecordOf is e's record with answer a (as Keep will store it); a
// Source's answer is recorded as the bytes it renders.
func RecordOf(e *Entry, a Answer) Record {
	return Record{Owner: e.owner, Key: e.key, FP: e.fp, Created: e.created, Status: a.Status, Body: a.Bytes()}
}

// Records returns the kept answers the store holds, oldest first: those
// past their TTL too until expire forgets them (the clock may be set back
// before it does, and then they replay).
func (st *Store) Records() []Record {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []Record
	for _, e := range st.order {
		if e.done && st.isLive(e) {
			out = append(out, RecordOf(e, e.answer()))
		}
	}
	return out
}

// Restore adds r as a kept answer, as the store held it: one past its
// TTL too, which the next Begin forgets as it would have (the data
// directory records each key the store forgot, and does not restore it).
func (st *Store) Restore(r Record) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if old := st.entries[r.Owner][r.Key]; old != nil {
		st.drop(old)
	}
	e := &Entry{owner: r.Owner, key: r.Key, fp: r.FP, created: r.Created}
	e.keep(Answer{Status: r.Status, Body: r.Body})
	st.add(st.entries[r.Owner], e)
	st.insert(e)
}
