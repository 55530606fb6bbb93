package webhookverify

import (
	"context"
	"sync"
	"time"
)

// Claim is the answer of SeenStore.Claim.
type Claim int

const (
	// ClaimNew means the caller now owns the event id and must call
	// SeenStore.Finish for it.
	ClaimNew Claim = iota
	// ClaimBusy means another delivery of the same event is being handled
	// right now. Handler answers 409 so the service retries later: if that
	// other attempt fails, the retry gets processed.
	ClaimBusy
	// ClaimDone means the event was already processed successfully. Handler
	// answers 200 without calling the handler.
	ClaimDone
)

// String returns "new", "busy" or "done".
func (c Claim) String() string {
	switch c {
	case ClaimNew:
		return "new"
	case ClaimBusy:
		return "busy"
	case ClaimDone:
		return "done"
	}
	return "invalid"
}

// SeenStore remembers which event ids have been processed, so that retries
// and replays of one event reach the handler once.
//
// The protocol is claim, then finish. Claim must be atomic: among concurrent
// calls for one id, exactly one gets ClaimNew. The id is marked processed
// only when Finish(ok=true) is called after the handler succeeded (answered
// 2xx); Finish(ok=false) forgets the claim so the service's next retry is
// processed again. A store shared between processes (a database, Redis)
// should also expire claims that are never finished, in case the process
// dies in between, and should keep processed ids for longer than the
// service's 24-hour retry window.
//
// Handler calls Finish with the request's context stripped of its
// cancellation, so a client hanging up does not leave a claim behind.
type SeenStore interface {
	// Claim atomically checks eventID and, if it is neither processed nor
	// in progress, marks it in progress and returns ClaimNew.
	Claim(ctx context.Context, eventID string) (Claim, error)
	// Finish ends a claim: ok marks eventID processed, !ok forgets it.
	Finish(ctx context.Context, eventID string, ok bool) error
}

// MinStoreTTL is the shortest time MemoryStore keeps a processed id: the
// service's 24-hour retry window plus an hour of margin.
const MinStoreTTL = 25 * time.Hour

// MemoryStore is an in-process SeenStore. Processed ids are kept for the
// TTL after Finish and then dropped, so memory stays bounded by the event
// rate times the TTL. Claims in progress do not expire. It is safe for
// concurrent use. Being in memory, it forgets everything on restart and is
// not shared between replicas; use a shared store for that. The zero value
// is ready to use, with the TTL MinStoreTTL.
type MemoryStore struct {
	mu      sync.Mutex
	ttl     time.Duration    // 0 (the zero value) means MinStoreTTL
	now     func() time.Time // nil means time.Now
	entries map[string]memEntry
	// expiry lists processed ids in the order they were finished. With a
	// fixed TTL and a clock that does not run backwards, that is also the
	// order they expire in, so expired ids are popped from the front.
	expiry []expiryItem
}

type memEntry struct {
	done    bool      // false: claim in progress
	expires time.Time // set when done
}

type expiryItem struct {
	id      string
	expires time.Time
}

// NewMemoryStore returns an empty MemoryStore that keeps processed ids for
// ttl. A ttl shorter than MinStoreTTL (including zero) is raised to it,
// because a shorter one would let a late retry through.
func NewMemoryStore(ttl time.Duration) *MemoryStore {
	return &MemoryStore{
		ttl:     max(ttl, MinStoreTTL),
		now:     time.Now,
		entries: make(map[string]memEntry),
	}
}

// SetClock replaces the store's clock (time.Now by default), for tests
// that drive a virtual clock. A nil now restores time.Now.
func (s *MemoryStore) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	s.mu.Lock()
	s.now = now
	s.mu.Unlock()
}

// TTL returns how long processed ids are kept.
func (s *MemoryStore) TTL() time.Duration { return max(s.ttl, MinStoreTTL) }

// clockLocked returns the current time on the store's clock.
func (s *MemoryStore) clockLocked() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

// Len returns the number of ids held, in progress or processed and not yet
// expired.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.clockLocked())
	return len(s.entries)
}

// Claim implements SeenStore.
func (s *MemoryStore) Claim(_ context.Context, eventID string) (Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.clockLocked())
	if e, ok := s.entries[eventID]; ok {
		if e.done {
			return ClaimDone, nil
		}
		return ClaimBusy, nil
	}
	if s.entries == nil {
		s.entries = make(map[string]memEntry)
	}
	s.entries[eventID] = memEntry{}
	return ClaimNew, nil
}

// Finish implements SeenStore.
func (s *MemoryStore) Finish(_ context.Context, eventID string, ok bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clockLocked()
	s.expireLocked(now)
	if !ok {
		if e, found := s.entries[eventID]; found && !e.done {
			delete(s.entries, eventID)
		}
		return nil
	}
	exp := now.Add(s.TTL())
	if s.entries == nil {
		s.entries = make(map[string]memEntry)
	}
	s.entries[eventID] = memEntry{done: true, expires: exp}
	s.expiry = append(s.expiry, expiryItem{id: eventID, expires: exp})
	return nil
}

// expireLocked drops processed ids whose time is up. A queue item whose id
// has since been finished again (so holds a later expiry) is skipped.
func (s *MemoryStore) expireLocked(now time.Time) {
	n := 0
	for _, it := range s.expiry {
		if it.expires.After(now) {
			break
		}
		if e, ok := s.entries[it.id]; ok && e.done && !e.expires.After(now) {
			delete(s.entries, it.id)
		}
		n++
	}
	if n > 0 {
		clear(s.expiry[:n]) // drop the strings for the collector
		s.expiry = s.expiry[n:]
	}
}
