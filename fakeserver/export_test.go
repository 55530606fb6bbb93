package fakeserver

import (
	"os"
	"slices"
	"time"

	"golang.org/x/crypto/cryptobyte"
)

// Test-only views of the server's inside, for the external tests.

// PendingTimers is how many timers the server's clock has scheduled.
func PendingTimers(s *Server) int { return s.clock.Pending() }

// Routes lists every route of the HTTP face, /v1 and /_fake, as "METHOD
// pattern", sorted.
func Routes(s *Server) []string {
	var out []string
	for pattern, rs := range s.routeTable() {
		for _, rt := range rs {
			out = append(out, rt.method+" "+pattern)
		}
	}
	slices.Sort(out)
	return out
}

// QueryParams names the query parameters a route ("METHOD pattern") takes.
func QueryParams(route string) []string { return queryParams[route] }

// SetFsync makes s's data directory fsync its journal with fn.
func SetFsync(s *Server, fn func(*os.File) error) { s.jr.SetSync(fn) }

// JournalFlushes is how many group commits s's data directory made.
func JournalFlushes(s *Server) uint64 { return s.jr.Flushes() }

// SetRewriteHook makes s's data directory call fn at each step of a
// rewrite's background phase (journal.Journal.SetRewriteHook).
func SetRewriteHook(s *Server, fn func(step string) error) { s.jr.SetRewriteHook(fn) }

// RewritePause folds s's data directory into a new snapshot now, as a
// running server does (a fuzzy snapshot in chunks), or wholly under s.mu
// as before (whole). It returns how long s.mu was held by the switch (by
// the whole rewrite when whole), the longest hold of s.mu by one of the
// fuzzy rewrite's later sections (its chunks and barrier), and the
// longest hold of hooks.mu by its hooks.Dump; it returns once the
// rewrite has ended.
func RewritePause(s *Server, whole bool) (switched, chunk, hooksDump time.Duration) {
	WaitRewrite(s) // one the commits started (Rewrite under s.mu would wait for it forever)
	s.rewriteHold.Store(0)
	s.rewriteHooksHold.Store(0)
	s.mu.Mutex.Lock()
	t0 := time.Now()
	if whole {
		if err := s.jr.Rewrite(s.snapshotLocked); err != nil {
			panic(err)
		}
	} else {
		s.startRewriteLocked()
	}
	held := time.Since(t0)
	s.mu.Mutex.Unlock()
	WaitRewrite(s)
	return held, time.Duration(s.rewriteHold.Load()), time.Duration(s.rewriteHooksHold.Load())
}

// StartRewrite starts s's data directory rewrite now, as a commit does
// once the journal has outgrown the snapshot; WaitRewrite waits for its
// end.
func StartRewrite(s *Server) {
	s.mu.Mutex.Lock()
	s.startRewriteLocked()
	s.mu.Mutex.Unlock()
}

// WaitRewrite waits until no rewrite of s's data directory runs.
func WaitRewrite(s *Server) {
	s.rewriting.Wait()
	s.jr.WaitRewrite()
}

// WithDataDirRewriteAlways makes the data directory start a new snapshot
// at every commit while none is being written (rewrites mid-load).
func WithDataDirRewriteAlways() Option { return func(o *options) { o.dataRewriteAlways = true } }

// WithDataDirRewriteChunk makes the data directory's fuzzy snapshot
// encode at most n things per chunk under s.mu (512 otherwise).
func WithDataDirRewriteChunk(n int) Option { return func(o *options) { o.dataRewriteChunk = n } }

// WithDataDirRewriteAt makes the data directory write a new snapshot once
// its journal passes n bytes (and the snapshot's size).
func WithDataDirRewriteAt(n int64) Option { return func(o *options) { o.dataRewriteAt = n } }

// SetTestHook makes s call fn at its named test points (Server.testHook).
// Set it before the server serves.
func SetTestHook(s *Server, fn func(point string)) { s.testHook = fn }

// IdempotencyKeys is how many Idempotency-Keys s holds.
func IdempotencyKeys(s *Server) int { return s.idempotent.Len() }

// skipOnDataDir skips a test that cannot hold with every server on a data
// directory (CONFPAY_TEST_DATA_DIR=1), for the reason given.
func skipOnDataDir(t interface{ Skip(...any) }, why string) {
	if testHooks.dataDir != nil {
		t.Skip("CONFPAY_TEST_DATA_DIR=1: " + why)
	}
}

// SkipOnDataDir is skipOnDataDir for the external tests.
func SkipOnDataDir(t interface{ Skip(...any) }, why string) { skipOnDataDir(t, why) }

// OlderRecord is record p as a build before itemSubGone, itemHooksPruned
// and itemHeldPruned wrote it: without those items (nil when nothing
// else is left).
func OlderRecord(p []byte) []byte {
	var out []byte
	for s := cryptobyte.String(p); !s.Empty(); {
		var kind uint8
		var body cryptobyte.String
		if !s.ReadUint8(&kind) || !s.ReadUint24LengthPrefixed(&body) {
			panic("OlderRecord: a record is cut short")
		}
		if kind == itemSubGone || kind == itemHooksPruned || kind == itemHeldPruned {
			continue
		}
		out = append(out, kind, byte(len(body)>>16), byte(len(body)>>8), byte(len(body)))
		out = append(out, body...)
	}
	return out
}

// PassTimesKept reports whether records, a data directory's in order,
// say when the webhook books last pruned (loaded.passTimes): a directory
// this build writes always does, an older build's never.
func PassTimesKept(records [][]byte) bool {
	l := newLoaded()
	for _, p := range records {
		if err := decodeRecord(p, l); err != nil {
			panic(err)
		}
	}
	return l.passTimes
}
