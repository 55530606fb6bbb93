package fakeserver

import (
	"net/http"

	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// Backup while running: GET /_fake/snapshot answers a consistent copy of
// the whole state in the data directory's snapshot format, so that a
// directory holding it as its snapshot file starts a server where this
// one stood (docs/fakeserver.md, "Backup and restore"). It works with or
// without a data directory.
//
// A request under an Idempotency-Key makes its effect before its answer
// is known and kept; a copy taken between the two would hold the effect
// without the answer, and a retry of the key on a server restored from it
// would run the request again. So such a request holds the read side of
// s.keyed from its handler's start until its answer is kept (or its key
// forgotten), and Backup takes the write side around its copy: it waits
// for the requests under a key that are running (a name lookup of a new
// webhook's host included), and new ones wait for the copy (RWMutex:
// a waiting backup goes before new readers, so load cannot starve it).

// Backup returns a consistent copy of the whole state as a data
// directory's snapshot file (named "snapshot" in the directory): a
// directory that holds only it starts a server (WithDataDir, the binary's
// -data) with this state. The copy holds the webhook subscriptions'
// secrets: keep it as private as the directory.
func (s *Server) Backup() []byte {
	if s.testHook != nil {
		s.testHook("backup-gate")
	}
	s.keyed.Lock()
	s.mu.Mutex.Lock()
	m := mark{}
	live := s.jr != nil && !s.jrDone.Load()
	if live {
		// The ledger's touched marks go to the journal, not only here; the
		// copy shows nothing that is not durable.
		m = s.flushLocked(nil).max(s.boundLocked())
	}
	b := journal.Encode(s.snapshotLocked)
	s.mu.Mutex.Unlock()
	s.keyed.Unlock()
	if live {
		s.waitMark(m)
	}
	return b
}

// adminSnapshot answers GET /_fake/snapshot.
func (s *Server) adminSnapshot(c *call) (int, any, error) {
	b := s.Backup()
	h := c.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+journal.SnapshotFile+`"`)
	h.Set("Cache-Control", "no-store")
	s.durableFor(c)
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(b)
	c.w = &discardWriter{header: http.Header{}}
	return http.StatusOK, nil, nil
}
