package fakeserver

import (
	"cmp"
	"slices"
	"sort"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// The running server's snapshot rewrite (persist.go has the rest of the
// data directory): a fuzzy snapshot, encoded in chunks between which
// s.mu is let go, with the journal since its start replayed over it on
// load.
//
// rewriteLocked, at a commit (s.mu held), switches the journal to a new
// file (journal.BeginRewrite: every record from then on goes to the next
// generation's journal, J) and notes what exists then: pointers to the
// accounts, keys, transfers and held payments, and the head record (a
// reset, the clock, the sequences, the assets). That is the only part
// under s.mu that grows with the state, and it copies pointers only. A
// goroutine then sorts them outside the lock and encodes them in chunks
// of rewriteChunk things, each chunk under s.mu (a short hold), each
// thing in its state at that chunk's instant and skipped when it is gone;
// then the webhook state (hooks.Dump: copied at one instant under
// hooks.mu alone, which it holds only for the copy, and encoded after)
// and the kept Idempotency-Key answers, whole, like the records written
// since. The snapshot is the union: no one instant's state.
//
// Why the snapshot followed by J is the state (Open replays them so):
// every record is the whole state of each thing it names, and a later
// record of a thing replaces the earlier one (persist.go), so replaying
// J after the snapshot leaves each thing J names in its last state in J,
// and each thing J does not name as the snapshot holds it. A thing J
// does not name has not changed since the switch (a change is written in
// the record of the section that made it; the exceptions are a key's
// last use and request count, which ride with the next record and which a
// crash may lose anyway), so the snapshot, taken after the switch, holds
// its state. What is forgotten leaves a record too, so that a chunk taken
// before cannot bring it back: a reset (its record empties what came
// before), a deleted webhook (its tombstone), an event or delivery past
// its bounds (Gone, Forgotten, Dropped), a held payment pruned from the
// history (itemHeldGone), an Idempotency-Key forgotten past its TTL
// (itemIdemGone), a deleted webhook's id forgotten (itemSubGone); and a
// pruning pass records when it ran (itemHooksPruned, itemHeldPruned:
// the snapshot holds the time as of its read, a later pass's record
// replaces it); a seed's rollback undoes, in the seed's own section,
// what that section created, which no chunk can see. A kept answer past
// its TTL that the store has not forgotten yet is in the snapshot, as in
// memory. TestDataDirRewriteForgets checks each
// (TestDataDirRestartForgetsExpiredIdempotencyKeys the keys' orders,
// TestDataDirRestartPrunesEventsAsMemory and its siblings the passes).
//
// Before the snapshot is written, its barrier makes every record that
// any chunk may reflect durable in J: a section (s.mu) writes the
// webhook changes noted under hooks.mu alone, and takes the bound of
// everything committed so far, records held behind an Idempotency-Key
// request's slot included (a ticket queued behind the open slots); the
// goroutine waits for it outside s.mu. So a request under a key whose
// effect a chunk holds has its effect and its answer in J, durable, as
// one group before the snapshot can stand for anything, and a crash at
// any point loads either the old snapshot and both journals or the new
// snapshot and J: the acknowledged state either way
// (TestDataDirRewriteCrash, TestDataDirRewriteKeyedAtomic; with chunks
// of one thing and changes between them, TestDataDirRewriteFuzzyChunks).
// The snapshot is then written, fsynced and renamed by
// journal.FinishRewrite.
//
// A rewrite that fails (its snapshot cannot be written: a full disk, an
// I/O error, a failed step) costs that snapshot alone: the journal holds
// every change, durably, and goes on; the server logs one warning
// (rewriteFailed) and tries again once the journal has grown
// (journal.RewriteDue's backoff). The next rewrite then keeps the
// journal the failed one switched to, which holds every record since its
// switch, so that the argument above holds for it with that switch: its
// chunks are all taken after it. Only a failure of the journal's own
// file stops it (TestDataDirRewriteFailureContinues).

// rewriteChunk is the most things one chunk encodes under s.mu (a test
// may set fewer: options.dataRewriteChunk).
const rewriteChunk = 512

// rewritePlan is what a rewrite encodes: what existed at its switch.
type rewritePlan struct {
	head     []byte
	accounts []*account
	keys     []*apiKey
	nets     []netPlan
}

type netPlan struct {
	name      confpay.Network
	transfers []*transfer
	held      []*heldTx
}

// rewriteLocked starts folding the journal into a new snapshot once it
// has outgrown the last one (journal.RewriteDue), so that neither the
// directory nor the replay at the next start grows without bound: every
// write to the journal costs at most one more write to a snapshot,
// amortized. It runs at a commit, under s.mu, and holds it only to switch
// the journal and note what exists; fuzzyRewrite does the rest.
func (s *Server) rewriteLocked() {
	// An answer appended before the switch (closeSlot) and not yet kept
	// in the store would be in neither the snapshot nor J: wait for none.
	if !(s.jr.RewriteDue() || s.opts.dataRewriteAlways) || s.q.keeping.Load() > 0 {
		return
	}
	// Close has stopped waiting for rewrites: a request it let finish
	// must not start one (the next start folds the journal instead).
	if s.jrDone.Load() {
		return
	}
	s.startRewriteLocked()
}

// startRewriteLocked is rewriteLocked without asking whether one is due.
func (s *Server) startRewriteLocked() {
	if err := s.jr.BeginRewrite(); err != nil {
		// Not now (a rewrite runs), or the journal is stopped (then every
		// wait fails and no answer is sent), or the new journal file
		// could not be made: logged outside s.mu.
		if !journal.IsNoRewrite(err) {
			s.rewriting.Add(1)
			go func() {
				defer s.rewriting.Done()
				s.rewriteFailed(err)
			}()
		}
		return
	}
	p := &rewritePlan{head: s.snapshotHeadLocked().encode()}
	p.accounts = make([]*account, 0, len(s.accounts))
	for _, a := range s.accounts {
		p.accounts = append(p.accounts, a)
	}
	p.keys = make([]*apiKey, 0, len(s.keysByID))
	for _, k := range s.keysByID {
		p.keys = append(p.keys, k)
	}
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		np := netPlan{name: name, transfers: make([]*transfer, 0, n.transfers.byID.len()), held: slices.Clone(n.held.order)}
		for t := range n.transfers.byID.all {
			np.transfers = append(np.transfers, t)
		}
		p.nets = append(p.nets, np)
	}
	s.rewriting.Add(1)
	go s.fuzzyRewrite(p)
}

// fuzzyRewrite is a rewrite's part outside s.mu (see the top of the
// file). It stops without a snapshot when the server closes meanwhile.
func (s *Server) fuzzyRewrite(p *rewritePlan) {
	defer s.rewriting.Done()
	defer s.rewriteIfDue() // a reset's fold this one could not be (see the end of the file)
	jr := s.jr
	rewriteChunk := cmp.Or(s.opts.dataRewriteChunk, rewriteChunk)
	fail := func(err error) {
		if err != nil {
			jr.FailRewrite(err)
			s.rewriteFailed(err)
		} else {
			jr.AbortRewrite()
		}
	}
	if err := jr.Step("switched"); err != nil {
		fail(err)
		return
	}
	// The install order (no sort on load); the fields sorted on are set
	// at creation, before the thing is shared.
	sort.Slice(p.accounts, func(i, j int) bool { return p.accounts[i].seq < p.accounts[j].seq })
	sort.Slice(p.keys, func(i, j int) bool { return p.keys[i].seq < p.keys[j].seq })
	for _, np := range p.nets {
		slices.SortFunc(np.transfers, func(a, b *transfer) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
	}
	recs := [][]byte{p.head}
	// chunk encodes size things, rewriteChunk at a time under s.mu, each
	// by enc (which skips one that is gone); false once it ended the
	// rewrite (the server is closing, or a step failed).
	chunk := func(size int, enc func(b *batch, i int)) bool {
		for i := 0; i < size; i += rewriteChunk {
			s.mu.Mutex.Lock()
			t0 := time.Now()
			if s.jrDone.Load() {
				s.mu.Mutex.Unlock()
				fail(nil)
				return false
			}
			b := s.batchHeadLocked()
			for j := i; j < min(size, i+rewriteChunk); j++ {
				enc(b, j)
			}
			if len(b.Accounts)+len(b.Keys)+len(b.Policies)+len(b.Books)+len(b.Transfers)+len(b.Held) > 0 {
				recs = append(recs, b.encode())
			}
			s.noteHold(time.Since(t0))
			s.mu.Mutex.Unlock()
			if err := jr.Step("chunk"); err != nil {
				fail(err)
				return false
			}
		}
		return true
	}
	ok := chunk(len(p.accounts), func(b *batch, i int) {
		if a := p.accounts[i]; s.accounts[a.id] == a {
			b.Accounts = append(b.Accounts, accountRecOf(a))
		}
	}) && chunk(len(p.keys), func(b *batch, i int) {
		if k := p.keys[i]; s.keysByID[k.id] == k {
			b.Keys = append(b.Keys, keyRecOf(k))
		}
	})
	for _, np := range p.nets {
		ok = ok && chunk(len(p.accounts), func(b *batch, i int) {
			a, n := p.accounts[i], s.nets[np.name]
			if s.accounts[a.id] != a {
				return
			}
			if pol := n.policies[a.id]; pol != nil {
				b.Policies = append(b.Policies, policyRecOf(n, a.id, pol))
			}
			if rows := n.ledger.Rows(a.id); len(rows) > 0 {
				b.Books = append(b.Books, bookRec{Network: np.name, Acct: a.id, Rows: rows})
			}
		}) && chunk(len(np.transfers), func(b *batch, i int) {
			t, n := np.transfers[i], s.nets[np.name]
			if n.transfers.byID.get(t.id) == t {
				b.Transfers = append(b.Transfers, s.transferRecLocked(n, t))
			}
		}) && chunk(len(np.held), func(b *batch, i int) {
			h, n := np.held[i], s.nets[np.name]
			if r, ok := n.held.all[h.id]; ok && r.h == h {
				b.Held = append(b.Held, heldRecOf(n, h))
			}
		})
	}
	if !ok {
		return
	}
	p = nil
	// The webhook state and the kept answers: each read whole under its
	// own lock (not s.mu), then encoded without one.
	s.mu.Mutex.Lock()
	head := s.batchHeadLocked()
	s.mu.Mutex.Unlock()
	rec := func() *batch { return &batch{Now: head.Now, Seq: head.Seq, HeldSeq: head.HeldSeq} }
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		c, held := s.hooks.Dump(name, encodePayload)
		s.noteHooksHold(held)
		for subs := range slices.Chunk(c.Subs, rewriteChunk) {
			b := rec()
			b.Hooks = &hooks.Changes{Subs: subs}
			recs = append(recs, b.encode())
		}
		if len(c.Pruned) > 0 {
			b := rec()
			b.Hooks = &hooks.Changes{Pruned: c.Pruned}
			recs = append(recs, b.encode())
		}
		for events := range slices.Chunk(c.Events, rewriteChunk) {
			b := rec()
			b.Hooks = &hooks.Changes{Events: events}
			recs = append(recs, b.encode())
		}
		for ds := range slices.Chunk(c.Deliveries, rewriteChunk) {
			b := rec()
			b.Hooks = &hooks.Changes{Deliveries: ds}
			recs = append(recs, b.encode())
		}
	}
	for idem := range slices.Chunk(s.idempotent.Records(), rewriteChunk) {
		b := rec()
		b.Idem = idem
		recs = append(recs, b.encode())
	}
	if err := jr.Step("encoded"); err != nil {
		fail(err)
		return
	}
	// The barrier: everything any chunk may reflect is in J, durable.
	s.mu.Mutex.Lock()
	t0 := time.Now()
	if s.jrDone.Load() {
		s.mu.Mutex.Unlock()
		fail(nil)
		return
	}
	s.flushLocked(nil)      // the webhook changes noted under hooks.mu alone
	if len(s.q.items) > 0 { // a ticket behind every open slot, with no record
		s.q.items = append(s.q.items, queued{ticket: s.q.issued.Add(1)})
	}
	m := s.boundLocked()
	s.noteHold(time.Since(t0))
	s.mu.Mutex.Unlock()
	if m.ticket > 0 && s.testHook != nil {
		s.testHook("rewrite-barrier-waits") // for records held behind a slot
	}
	if !s.waitTickets(m.ticket) {
		fail(nil)
		return
	}
	s.q.mu.Lock()
	m.seq = max(m.seq, s.q.doneSeq)
	s.q.mu.Unlock()
	if err := jr.Wait(m.seq); err != nil {
		fail(nil) // the journal is stopped already
		return
	}
	if err := jr.Step("barrier"); err != nil {
		fail(err)
		return
	}
	if err := jr.FinishRewrite(recs); err != nil {
		s.rewriteFailed(err)
	}
}

// rewriteFailed logs a rewrite's failure (never under s.mu): one warning,
// with the error (a file operation's or a step's, never a record's
// contents), saying what follows: the rewrite stood all the same (its
// last step failed), or the server goes on and tries again later. Once
// the journal is stopped (a failed directory fsync, or a journal file's
// own write) it logs nothing: every wait fails and says why.
func (s *Server) rewriteFailed(err error) {
	switch {
	case s.jr.Err() != nil:
	case journal.RewriteStood(err):
		s.log.Warn("data directory: the snapshot was rewritten, but a step after it failed; the server goes on", "data", s.opts.dataDir, "error", err.Error())
	default:
		s.log.Warn("data directory: rewriting the snapshot failed; the journal holds every change, and the server goes on and tries again once the journal has grown", "data", s.opts.dataDir, "error", err.Error())
	}
}

// noteHold records how long a rewrite's section held s.mu, for
// RewritePause (the longest since it last read it).
func (s *Server) noteHold(d time.Duration) {
	for {
		old := s.rewriteHold.Load()
		if int64(d) <= old || s.rewriteHold.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// noteHooksHold records how long hooks.Dump held hooks.mu (a section
// that records an event waits for it), for RewritePause.
func (s *Server) noteHooksHold(d time.Duration) {
	for {
		old := s.rewriteHooksHold.Load()
		if int64(d) <= old || s.rewriteHooksHold.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// waitTickets waits until the records held up to ticket are appended,
// or the server closes (false).
func (s *Server) waitTickets(ticket uint64) bool {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	for s.q.done < ticket {
		if s.jrDone.Load() {
			return false
		}
		s.q.cond.Wait()
	}
	return true
}

// A reset empties the directory too, not only memory: the reset's
// record, once appended (appendLocked, drainLocked), asks the journal
// for a fold at once (journal.FoldSoon, which RewriteDue reports without
// waiting for the journal to grow), and a rewrite that switches after
// it leaves no byte of the earlier state in the directory: its snapshot
// is taken after the switch, so after the reset, its journal begins at
// the switch, and the old snapshot and journal are replaced by rename.
// A rewrite that runs at the reset, or that keeps the journal.next of a
// failed one begun before it, holds earlier records (its journal.next,
// its chunks taken before the reset): the journal asks again when it
// ends, and rewriteIfDue starts the next one then, as no commit may come
// to start it. A start finds a reset in the journal (a crash or Close
// before the fold) and folds (openDataDir). TestDataDirResetEmptiesDisk.

// rewriteIfDue starts a rewrite that came due when no commit could start
// one: as a rewrite ends, or when the last Idempotency-Key answer a
// switch must not come between was kept (keptSlot).
func (s *Server) rewriteIfDue() {
	if s.jr == nil || s.jrDone.Load() || !s.jr.RewriteDue() {
		return
	}
	s.mu.Mutex.Lock()
	s.rewriteLocked()
	s.mu.Mutex.Unlock()
}
