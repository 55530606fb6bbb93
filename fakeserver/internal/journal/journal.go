// Package journal is the fakeserver's data directory: a snapshot file and
// an append-only journal of records, each length-prefixed and checksummed,
// behind a lock file that keeps a second process out.
//
// The server writes a record at the one place each operation commits
// (under its own lock, so records are in commit order) and calls Wait
// before it answers: Wait returns once every record appended so far is
// written and, unless NoSync, fsynced (group commit: one fsync covers
// every record appended while the previous one ran). Memory stays the
// source of every answer; the directory is read once, by Open.
//
// File format (both files): an 8-byte header, "CPJ" + a format byte
// (Version) + 4 reserved zero bytes, then records: a 4-byte little-endian
// payload length, a 4-byte CRC-32C of the payload, the payload. A record
// whose length, checksum or body is incomplete or wrong ends the journal:
// everything from it on is a torn tail, dropped (and truncated away) on
// Open. The snapshot is only ever replaced whole (written beside, fsynced,
// renamed), so a bad record in it is corruption and Open refuses it.
package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the format this package writes and reads: 2 since the
// records' binary encoding (1 held JSON records).
const Version = 2

// DefaultRewriteAt is the journal size from which RewriteDue asks for a
// new snapshot (also due once the journal outgrows the snapshot).
const DefaultRewriteAt = 64 << 20

// MaxRecord is the largest record payload (a length above it is a torn or
// corrupt record).
const MaxRecord = 64 << 20

// File names inside the data directory.
const (
	SnapshotFile = "snapshot"
	JournalFile  = "journal"
	LockFile     = "LOCK"
)

var (
	magic = [3]byte{'C', 'P', 'J'}
	crcT  = crc32.MakeTable(crc32.Castagnoli)
)

// ErrVersion is returned (wrapped) for a file of an unknown format version.
var ErrVersion = errors.New("unknown format version")

// Journal is an open data directory. Its methods are safe for concurrent
// use.
type Journal struct {
	dir    string
	noSync bool
	lock   *os.File

	mu       sync.Mutex    // guards the fields below; never held across I/O but in Rewrite
	buf      []byte        // framed records not yet handed to a flush
	spare    []byte        // the previous flush's buffer, reused
	appended uint64        // records appended
	synced   uint64        // records written and fsynced
	flushing bool          // a Wait is writing and fsyncing (the leader)
	flushed  chan struct{} // closed when the running flush ends (set while flushing)
	f        *os.File
	closed   bool
	err      error

	lastBatch uint64        // records the last flush carried
	lastSync  time.Duration // how long it took
	gather    chan struct{} // closed by Append once want is reached
	want      uint64

	durable atomic.Uint64 // synced, read without mu by Wait's fast path
	flushes atomic.Uint64 // Flushes

	size      int64       // the journal's bytes, written and buffered (mu)
	snapSize  int64       // the snapshot's bytes (mu)
	rewriteAt int64       // SetRewriteAt (mu)
	due       atomic.Bool // size > max(rewriteAt, snapSize): RewriteDue

	syncHook atomic.Pointer[func(*os.File) error] // SetSync
}

// Contents is what Open read: the snapshot's records, then the journal's,
// in order, and whether a torn tail was dropped.
type Contents struct {
	Snapshot, Journal [][]byte
	// Dropped is how many bytes of torn tail the journal lost.
	Dropped int64
}

// Open locks dir (creating it 0700 if needed), reads its snapshot and
// journal, drops a torn tail from the journal, and opens the journal for
// appending. A second Open of the same directory, from this process or
// another, fails while the first is open.
func Open(dir string, noSync bool) (*Journal, *Contents, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	lk, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, nil, err
	}
	j := &Journal{dir: dir, noSync: noSync, lock: lk, rewriteAt: DefaultRewriteAt}
	c, err := j.load()
	if err != nil {
		lk.Close()
		return nil, nil, err
	}
	return j, c, nil
}

func (j *Journal) load() (*Contents, error) {
	c := &Contents{}
	snapPath := filepath.Join(j.dir, SnapshotFile)
	snap, err := os.ReadFile(snapPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("journal: %w", err)
	default:
		recs, good, err := Decode(snap)
		if err != nil {
			return nil, fmt.Errorf("journal: %s: %w", snapPath, err)
		}
		if good != int64(len(snap)) {
			return nil, fmt.Errorf("journal: %s is corrupt at byte %d of %d (restore it from a backup)", snapPath, good, len(snap))
		}
		c.Snapshot = recs
		j.snapSize = int64(len(snap))
	}
	path := filepath.Join(j.dir, JournalFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	if len(data) == 0 {
		if err := writeHeader(f); err != nil {
			f.Close()
			return nil, err
		}
	} else {
		recs, good, err := Decode(data)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("journal: %s: %w", path, err)
		}
		c.Journal = recs
		if good < int64(len(data)) {
			c.Dropped = int64(len(data)) - good
			if err := f.Truncate(good); err != nil {
				f.Close()
				return nil, fmt.Errorf("journal: %w", err)
			}
			if err := j.fsync(f); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.f = f
	j.size = end
	j.checkDueLocked()
	return c, nil
}

func header() []byte { return []byte{magic[0], magic[1], magic[2], Version, 0, 0, 0, 0} }

func writeHeader(f *os.File) error {
	if _, err := f.Write(header()); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Encode is a snapshot file holding records (what Rewrite writes), for a
// copy of the state made elsewhere.
func Encode(records func(emit func([]byte))) []byte {
	b := header()
	records(func(p []byte) { b = frame(b, p) })
	return b
}

// Decode reads a file's records: the records up to the first incomplete
// or damaged one, and the length of the good prefix. A file shorter than
// its header is an empty one with a torn header (good 0); a wrong magic or
// an unknown version is an error.
func Decode(data []byte) (recs [][]byte, good int64, err error) {
	if len(data) < 8 {
		return nil, 0, nil
	}
	if !bytes.Equal(data[:3], magic[:]) {
		return nil, 0, errors.New("not a confpay-fakeserver data file (bad magic)")
	}
	if data[3] != Version {
		return nil, 0, fmt.Errorf("%w %d (this build reads version %d); use the confpay-fakeserver that wrote it", ErrVersion, data[3], Version)
	}
	off := 8
	for {
		if len(data)-off < 8 {
			return recs, int64(off), nil
		}
		n := binary.LittleEndian.Uint32(data[off:])
		sum := binary.LittleEndian.Uint32(data[off+4:])
		if n > MaxRecord || uint64(len(data)-off-8) < uint64(n) {
			return recs, int64(off), nil
		}
		p := data[off+8 : off+8+int(n)]
		if crc32.Checksum(p, crcT) != sum {
			return recs, int64(off), nil
		}
		recs = append(recs, p)
		off += 8 + int(n)
	}
}

func frame(w []byte, p []byte) []byte {
	w = binary.LittleEndian.AppendUint32(w, uint32(len(p)))
	w = binary.LittleEndian.AppendUint32(w, crc32.Checksum(p, crcT))
	return append(w, p...)
}

// Append adds a record and returns its number for Wait. The caller appends
// under its own lock, so records are in commit order. It never waits for
// a write or an fsync in progress.
func (j *Journal) Append(p []byte) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = frame(j.buf, p)
	return j.appendedLocked(len(p))
}

// AppendParts is Append of the parts' concatenation (one record), without
// making it.
func (j *Journal) AppendParts(parts [][]byte) uint64 {
	n, sum := 0, uint32(0)
	for _, p := range parts {
		n += len(p)
		sum = crc32.Update(sum, crcT, p)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = binary.LittleEndian.AppendUint32(j.buf, uint32(n))
	j.buf = binary.LittleEndian.AppendUint32(j.buf, sum)
	for _, p := range parts {
		j.buf = append(j.buf, p...)
	}
	return j.appendedLocked(n)
}

// appendedLocked counts a record of n bytes just framed into buf (mu
// held) and returns its number.
func (j *Journal) appendedLocked(n int) uint64 {
	j.appended++
	j.size += int64(8 + n)
	j.checkDueLocked()
	if j.gather != nil && j.appended >= j.want {
		close(j.gather)
		j.gather = nil
	}
	return j.appended
}

// checkDueLocked updates RewriteDue's answer (mu held).
func (j *Journal) checkDueLocked() {
	j.due.Store(j.size > max(j.rewriteAt, j.snapSize))
}

// RewriteDue reports whether the journal has grown past the larger of the
// snapshot's size and SetRewriteAt's (DefaultRewriteAt): then a Rewrite
// keeps the directory, and the next start's replay, in proportion to the
// state. It takes no lock.
func (j *Journal) RewriteDue() bool { return j.due.Load() }

// SetRewriteAt sets the journal size from which RewriteDue reports true
// when the snapshot is smaller (a test makes it small).
func (j *Journal) SetRewriteAt(n int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rewriteAt = n
	j.checkDueLocked()
}

// Appended is the number of the last record appended.
func (j *Journal) Appended() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.appended
}

// Wait returns once record n (and every one before it) is written and
// fsynced, or the error that stopped the journal. After an error every
// Wait fails: the server must not answer as if its state were durable.
//
// Group commit: the first waiter that finds no flush running becomes the
// leader; it takes every record appended so far, writes and fsyncs them
// without holding mu (Append goes on meanwhile), then wakes the others.
// A waiter whose record came in while a flush ran waits for that flush
// to end and then for the next, which the first of them leads and which
// covers all of them: one fsync per batch, not per record. The end of a
// flush closes a channel: its waiters wake at once and those it covered
// return without taking mu (a broadcast on a condition variable made
// each of them take mu in turn, the next leader among them).
func (j *Journal) Wait(n uint64) error {
	for {
		if j.durable.Load() >= n {
			return nil
		}
		j.mu.Lock()
		if j.synced >= n {
			j.mu.Unlock()
			return nil
		}
		if j.err != nil {
			err := j.err
			j.mu.Unlock()
			return err
		}
		if j.flushing {
			ch := j.flushed
			j.mu.Unlock()
			<-ch
			continue
		}
		if j.f == nil {
			j.err = errors.New("journal: closed")
			j.mu.Unlock()
			return j.err
		}
		j.flush()
		j.mu.Unlock()
	}
}

// flush writes and fsyncs every record appended so far, as the leader
// (mu held on entry and on return, released meanwhile).
func (j *Journal) flush() {
	j.flushing = true
	j.flushed = make(chan struct{})
	// Gather: when the last flush carried several records (clients
	// are running concurrently), wait up to half an fsync for as many
	// to be appended, so that those the last flush answered, already
	// on their next operation, join this flush rather than the next.
	// Alone (a batch of one), a flush starts at once.
	if want := j.lastBatch; want > 1 && j.appended-j.synced < want {
		j.want = j.synced + want
		ch := make(chan struct{})
		j.gather = ch
		j.mu.Unlock()
		t := time.NewTimer(j.lastSync / 2)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		j.mu.Lock()
		j.gather = nil
	}
	data, upTo, f := j.buf, j.appended, j.f
	j.buf = j.spare[:0]
	j.mu.Unlock()
	t0 := time.Now()
	err := j.writeSync(f, data)
	took := time.Since(t0)
	j.mu.Lock()
	j.spare = data[:0]
	j.flushes.Add(1)
	if err != nil {
		j.err = err
	} else {
		j.lastBatch, j.lastSync = upTo-j.synced, min(took, 10*time.Millisecond)
		j.synced = upTo
		j.durable.Store(upTo)
	}
	j.flushing = false
	close(j.flushed)
	j.flushed = nil
}

// Flushes is how many group commits (a write and an fsync each) Wait
// has made: a benchmark divides its operations by it.
func (j *Journal) Flushes() uint64 { return j.flushes.Load() }

// idleLocked waits until no flush runs (mu held, released meanwhile).
func (j *Journal) idleLocked() {
	for j.flushing {
		ch := j.flushed
		j.mu.Unlock()
		<-ch
		j.mu.Lock()
	}
}

func (j *Journal) writeSync(f *os.File, data []byte) error {
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("journal: write: %w", err)
		}
	}
	return j.fsync(f)
}

// SetSync makes j fsync its journal file with fn rather than f.Sync (a
// test holds or fails an fsync with it).
func (j *Journal) SetSync(fn func(*os.File) error) { j.syncHook.Store(&fn) }

// syncFile is f.Sync (a test replaces it).
var syncFile = (*os.File).Sync

func (j *Journal) fsync(f *os.File) error {
	if j.noSync {
		return nil
	}
	sync := syncFile
	if h := j.syncHook.Load(); h != nil {
		sync = *h
	}
	if err := sync(f); err != nil {
		return fmt.Errorf("journal: fsync: %w", err)
	}
	return nil
}

// Rewrite replaces the directory's contents with records (a snapshot) and
// an empty journal, durably: the snapshot is written beside, fsynced and
// renamed over the old one, then the journal is emptied. A crash in
// between leaves the old snapshot and journal, or the new snapshot and
// a journal whose records it already holds (replaying them is harmless:
// records are whole states). Appends are held back while it runs.
func (j *Journal) Rewrite(records func(emit func([]byte))) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.idleLocked()
	if j.err != nil {
		return j.err
	}
	tmp := filepath.Join(j.dir, SnapshotFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	b := header()
	written := int64(0)
	records(func(p []byte) {
		b = frame(b, p)
		if len(b) > 1<<20 {
			w.Write(b)
			written += int64(len(b))
			b = b[:0]
		}
	})
	w.Write(b)
	written += int64(len(b))
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(j.dir, SnapshotFile))
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	if err == nil {
		// The buffered records are older than the snapshot: drop them.
		j.buf = j.buf[:0]
		j.synced = j.appended
		j.durable.Store(j.synced)
		err = j.f.Truncate(0)
		if err == nil {
			_, err = j.f.Seek(0, io.SeekStart)
		}
		if err == nil {
			err = writeHeader(j.f)
		}
		if err == nil {
			err = j.f.Sync()
		}
		j.snapSize, j.size = written, int64(len(header()))
		j.checkDueLocked()
	}
	if err != nil {
		j.err = fmt.Errorf("journal: rewrite: %w", err)
		return j.err
	}
	return nil
}

// Close writes what is buffered, closes the files and releases the lock.
func (j *Journal) Close() error {
	err := j.Wait(j.Appended())
	j.mu.Lock()
	defer j.mu.Unlock()
	j.idleLocked()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.f != nil {
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		j.f = nil
	}
	unlockDir(j.lock)
	if j.err == nil {
		j.err = errors.New("journal: closed")
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
