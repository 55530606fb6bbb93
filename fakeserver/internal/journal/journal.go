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
// File format (every file): an 8-byte header, "CPJ" + a format byte
// (Version) + a 4-byte little-endian generation, then records: a 4-byte
// little-endian payload length, a 4-byte CRC-32C of the payload, the
// payload (never empty: a zero length is not a record). A zero length at
// a record boundary is the journal's logical end; a record whose length,
// checksum or body is incomplete or wrong ends the journal too. Non-zero
// bytes after the end are a torn tail, dropped (and cut away) on Open;
// when complete records are among them (not the tear a crash leaves:
// Damage), Open saves them to DamagedFile first and reports it.
// The snapshot is only ever replaced whole (written beside, fsynced,
// renamed), so a bad record in it is corruption and Open refuses it.
//
// Preallocation: a journal file runs ahead of its records with zeros,
// written (not fallocated: unwritten extents would still need a metadata
// commit on each write) and fsynced whole when the file is extended, so
// that a flush overwrites blocks the file already holds and needs only
// fdatasync, which then commits no filesystem metadata. Each open journal
// file keeps its own layout (jfile): while a rewrite runs there are two,
// the retired one and NextFile. A journal's size, for RewriteDue and for
// what a benchmark reports, is the logical one (Decode's good prefix).
//
// Generations: a snapshot of generation G holds everything the journals
// of generations below G held; a journal of generation G holds what
// happened after the snapshot of generation G was taken. A rewrite while
// running (StartRewrite) takes the snapshot in memory under the caller's
// lock and switches appends, at that instant, to a new journal file
// (NextFile, generation G+1); the rest runs in the background: the
// snapshot of generation G+1 is written beside, fsynced and renamed over
// the old one, then the new journal is renamed over the old. Whatever
// instant a crash stops it at, Open finds one of
//
//	snapshot G,   journal G                  (before the switch)
//	snapshot G,   journal G,   journal.next G+1  (before the rename)
//	snapshot G+1, journal G,   journal.next G+1  (between the renames)
//	snapshot G+1, journal G+1                (done)
//
// and replays the snapshot, then each journal whose generation is not
// below the snapshot's, in generation order, skipping the stale one: the
// acknowledged state, with no record applied twice or lost.
//
// A rewrite that fails before journal.next is renamed (the snapshot's
// write, fsync or rename, journal.next's rename, a step) leaves the
// second or the third state, which the appends to journal.next that go
// on keep loading right: the journal goes on, the partial snapshot is
// removed, and the next rewrite, due after a backoff on the journal's
// growth, keeps journal.next (FinishRewrite). Only a failure of a
// journal file's own write or fsync, or of the directory's fsync, stops
// the journal.
//
// Versions: 4 since the preallocation. Version 3 had the same files
// without the zeros: a version 3 reader would read the zeros after a
// version 4 journal's records as empty records (length 0, and the CRC-32C
// of nothing is 0), so the bump makes an older binary refuse the
// directory rather than load it wrong or append after the zeros. Version
// 2 had the same records without generations (the generation bytes zero,
// no journal.next). Open reads 2, 3 and 4; a version 2 or 3 journal is
// appended to as before (never preallocated) until the fold Open asks for
// (RewriteDue) rewrites the directory as version 4.
package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the format this package writes: 4 since the preallocated
// journal (3 had the same files without the zeros after the records, 2
// without generations; 1 held JSON records). Open reads 2, 3 and 4, and
// folds a version 2 or 3 directory into version 4 files (RewriteDue).
const Version = 4

// oldestVersion is the oldest format Open reads.
const oldestVersion = 2

// DefaultRewriteAt is the journal size from which RewriteDue asks for a
// new snapshot (also due once the journal outgrows the snapshot).
const DefaultRewriteAt = 64 << 20

// Preallocation sizes (see the package doc): a journal file's first
// extension writes minPrealloc bytes of zeros, each next one twice the
// last, up to maxPrealloc. Small directories (tests, a short run) stay
// small; a busy one extends about once per maxPrealloc of records (at 64
// clients ≈ 10 MB/s of records, about once a second), each extension
// costing a write of zeros and one fsync, paid by one flush, and a
// journal between two rewrites (DefaultRewriteAt) is extended at most
// 8 + 8 times. A new journal file (Rewrite's, or the NextFile of a
// rewrite while running) starts with a chunk as large as the records of
// the journal it replaces, within these bounds (firstChunk): a busy
// server's gets maxPrealloc at once, a small one's stays small.
const (
	minPrealloc = 64 << 10
	maxPrealloc = 8 << 20
)

// firstChunk is the first extension of a journal file that replaces a
// journal of size bytes.
func firstChunk(size int64) int64 { return min(max(size, minPrealloc), maxPrealloc) }

// MaxRecord is the largest record payload (a length above it is a torn or
// corrupt record).
const MaxRecord = 64 << 20

// File names inside the data directory.
const (
	SnapshotFile = "snapshot"
	JournalFile  = "journal"
	// NextFile is the journal appended to while a rewrite runs in the
	// background; it is renamed to JournalFile once the snapshot is.
	NextFile = "journal.next"
	LockFile = "LOCK"
	// DamagedFile is where Open saves the bytes it drops after a bad
	// record that complete records follow (Damage): DamagedFile, or
	// DamagedFile.1, .2, ... when it exists (never overwritten; one
	// holding the same bytes is reused).
	DamagedFile = "journal.damaged"
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
	cond     sync.Cond     // on mu: a flush or a rewrite ended
	buf      []byte        // framed records not yet handed to a flush
	spare    []byte        // the previous flush's buffer, reused
	appended uint64        // records appended
	synced   uint64        // records written and fsynced
	flushing bool          // a Wait is writing and fsyncing (the leader)
	flushed  chan struct{} // closed when the running flush ends (set while flushing)
	f        *jfile        // the journal file appended to
	gen      uint32        // f's generation
	closed   bool
	err      error

	// retired is the journal file a StartRewrite switched away from,
	// with the records appended to it and not yet handed to a flush: the
	// next flush writes and fsyncs them there before anything goes to
	// the new file (so a record in the new file is never durable while
	// one before it is not), or the rewrite drops them once its snapshot,
	// which holds them, is in place.
	retired *retiredFile
	// dirSync is the new journal file whose directory entry is not yet
	// fsynced: the first flush to it syncs the directory too.
	dirSync   *jfile
	rewriting bool // StartRewrite's background phase runs
	fold      bool // Open found two journals, or files of an older version: RewriteDue
	// pending: a rewrite failed or was aborted after its switch, and
	// NextFile, which holds every record since that switch, is still the
	// file appended to: the next BeginRewrite keeps it (no switch).
	pending  bool
	failures int // rewrites that failed in a row (the backoff's exponent)
	// switchedAt is the last record appended before the last switch to
	// a new NextFile (BeginRewrite): that file holds only later records.
	switchedAt uint64
	// purgeTo, when not zero, is the last record of those FoldSoon asked
	// to leave the directory: until a rewrite whose switch came after it
	// stands (switchedAt >= purgeTo) or Rewrite runs. purgeNow makes
	// RewriteDue report true for it (set by FoldSoon, and again by a
	// rewrite that stood but kept such records; cleared when a rewrite
	// begins, so that a failed one is retried after the backoff alone).
	purgeTo  uint64
	purgeNow bool
	retryAt  int64 // after a failure: RewriteDue waits until size reaches it
	oldSnap  int64 // snapSize when the running rewrite began (restored if it fails)

	lastBatch uint64        // records the last flush carried
	lastSync  time.Duration // how long it took
	gather    chan struct{} // closed by Append once want is reached
	want      uint64

	durable atomic.Uint64 // synced, read without mu by Wait's fast path
	flushes atomic.Uint64 // Flushes

	size      int64       // the journal's logical bytes, written and buffered (mu)
	snapSize  int64       // the snapshot's bytes (mu)
	rewriteAt int64       // SetRewriteAt (mu)
	due       atomic.Bool // size > max(rewriteAt, snapSize): RewriteDue

	syncHook    atomic.Pointer[func(*os.File) error] // SetSync
	rewriteHook atomic.Pointer[func(step string) error]
}

type retiredFile struct {
	f    *jfile
	buf  []byte
	upTo uint64 // the last record appended to it
}

// jfile is an open journal file and its layout: records up to end (the
// logical size), then zeros up to alloc (the file's size); chunk is the
// next extension's size. The flush that writes to the file owns the
// layout (Wait's leader: one at a time), and Open and Rewrite, under mu
// with no flush running; a file's layout is never shared with another's.
type jfile struct {
	f          *os.File
	end, alloc int64
	chunk      int64
	legacy     bool // a version 2 or 3 file: appended to without zeros (a reader of its version would take them for records)
}

// Contents is what Open read: the snapshot's records, then the journal's,
// in order, and what it dropped.
type Contents struct {
	Snapshot, Journal [][]byte
	// Dropped is how many bytes after the journals' last good records
	// Open dropped: in a version 4 journal up to its last non-zero byte
	// (zeros after the records are its preallocated rest); in a version
	// 2 or 3 one every byte (that format wrote no zeros there: they are
	// the rest of a torn write). Damage's bytes included.
	Dropped int64
	// Damage is each journal file whose dropped bytes held complete
	// records after the bad one: not a torn tail (see Damage).
	Damage []Damage
	// Loose is the directory and each file in it that its group or
	// others may read or write (an existing directory, a file copied
	// in): Open creates the directory 0700 and its files 0600, but
	// changes no mode it finds. None off unix.
	Loose []Loose
}

// Loose is a path of the data directory whose mode lets its group or
// others read or write it, and the chmod that fixes it.
type Loose struct {
	Path  string
	Mode  os.FileMode // its permission bits
	Chmod string      // "chmod 700 DIR" or "chmod 600 FILE"
}

// looseModes lists dir and the files in it whose mode lets the group or
// others read or write them (mode & 0o066; execute alone lets nothing be
// read).
func looseModes(dir string) ([]Loose, error) {
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	var out []Loose
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if m := st.Mode().Perm(); m&0o066 != 0 {
		out = append(out, Loose{Path: dir, Mode: m, Chmod: "chmod 700 " + dir})
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		path := filepath.Join(dir, e.Name())
		if m := fi.Mode().Perm(); m&0o066 != 0 {
			fix := "chmod 600 "
			if fi.IsDir() {
				fix = "chmod 700 "
			}
			out = append(out, Loose{Path: path, Mode: m, Chmod: fix + path})
		}
	}
	return out, nil
}

// Damage is a bad record in a journal that complete, valid records
// follow. A crash (kill -9) tears only the last flush's write, and a
// power loss only the last flush's (whose pages may reach the disk out
// of order), so this is either a power loss mid-flush or corruption of
// records that may have been acknowledged. Open still starts from the
// records before it, and saves the dropped bytes beside first.
type Damage struct {
	File    string // the journal file's name (JournalFile or NextFile)
	Offset  int64  // where the bad record starts in it
	Bytes   int64  // the bytes dropped from there
	Records int    // complete records found among them (a scan of each offset)
	// Partial is set when the scan stopped before the end (it checksums
	// at most a bounded multiple of Bytes): Records is a lower bound.
	Partial bool
	Saved   string // the path of the saved copy of the dropped bytes (0600)
	// Reused is set when Saved is an earlier copy holding the same
	// bytes (a process stopped between the save and the cut, or the
	// damaged journal is the older of two, kept until the fold): no
	// second copy is made.
	Reused bool
}

// Open locks dir (creating it 0700 if needed), reads its snapshot and
// journals, drops a torn tail from the journal (saving it first when
// complete records follow the bad one: Contents.Damage), and opens the journal for
// appending. A second Open of the same directory, from this process or
// another, fails while the first is open. When Open found the traces of
// a rewrite a crash interrupted (two journals) or a version 2 or 3 directory,
// RewriteDue reports true: the caller's Rewrite then folds them into a
// snapshot and one journal of the current format.
func Open(dir string, noSync bool) (*Journal, *Contents, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	lk, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, nil, err
	}
	j := &Journal{dir: dir, noSync: noSync, lock: lk, rewriteAt: DefaultRewriteAt}
	j.cond.L = &j.mu
	c, err := j.load()
	if err == nil {
		c.Loose, err = looseModes(dir)
		if err != nil {
			err = fmt.Errorf("journal: %w", err)
			j.f.f.Close()
		}
	}
	if err != nil {
		lk.Close()
		return nil, nil, err
	}
	return j, c, nil
}

// fileHeader is a file's format version and generation.
type fileHeader struct {
	version byte
	gen     uint32
}

// readHeader checks data's header (data holds at least 8 bytes).
func readHeader(data []byte) (fileHeader, error) {
	if !bytes.Equal(data[:3], magic[:]) {
		return fileHeader{}, errors.New("not a confpay-fakeserver data file (bad magic)")
	}
	v := data[3]
	if v < oldestVersion || v > Version {
		return fileHeader{}, fmt.Errorf("%w %d (this build reads versions %d to %d); use the confpay-fakeserver that wrote it", ErrVersion, v, oldestVersion, Version)
	}
	h := fileHeader{version: v, gen: binary.LittleEndian.Uint32(data[4:8])}
	if v == 2 && h.gen != 0 {
		return fileHeader{}, errors.New("a version 2 file with a generation (corrupt header)")
	}
	return h, nil
}

// journalFile is a journal file Open found.
type journalFile struct {
	name string
	f    *os.File
	hdr  fileHeader
	recs [][]byte
	good int64 // the length of its good prefix: its logical size
	size int64
	torn int64  // bytes of torn tail: from good to its last non-zero byte
	made *jfile // the file newJournalFile made (nil: one found)
	data []byte // its bytes after good, up to its last non-zero one (torn of them)
}

func (j *Journal) load() (c *Contents, err error) {
	c = &Contents{}
	// Leftovers of a rewrite a crash interrupted: never part of the state.
	for _, name := range []string{SnapshotFile + ".tmp", JournalFile + ".tmp", DamagedFile + ".tmp"} {
		if err := os.Remove(filepath.Join(j.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	var snapHdr fileHeader
	haveSnap := false
	snap, err := os.ReadFile(filepath.Join(j.dir, SnapshotFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("journal: %w", err)
	default:
		if len(snap) < 8 {
			return nil, fmt.Errorf("journal: %s is corrupt at byte 0 of %d (restore it from a backup)", filepath.Join(j.dir, SnapshotFile), len(snap))
		}
		if snapHdr, err = readHeader(snap); err != nil {
			return nil, fmt.Errorf("journal: %s: %w", filepath.Join(j.dir, SnapshotFile), err)
		}
		recs, good, _ := Decode(snap)
		if good != int64(len(snap)) {
			return nil, fmt.Errorf("journal: %s is corrupt at byte %d of %d (restore it from a backup)", filepath.Join(j.dir, SnapshotFile), good, len(snap))
		}
		c.Snapshot = recs
		j.snapSize = int64(len(snap))
		haveSnap = true
	}
	// The journals: JournalFile, and NextFile when a rewrite was running.
	var files []*journalFile
	defer func() {
		if err != nil {
			for _, jf := range files {
				jf.f.Close()
			}
		}
	}()
	for _, name := range []string{JournalFile, NextFile} {
		f, err := os.OpenFile(filepath.Join(j.dir, name), os.O_RDWR, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		jf := &journalFile{name: name, f: f}
		files = append(files, jf)
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		jf.size = int64(len(data))
		if len(data) < 8 || tornTail(data, 0) == 0 {
			// A torn header: a file created and never appended to (a
			// record is appended only after its header is written, and
			// fsynced with the zeros after it). It takes the generation
			// it would have had.
			jf.torn = tornTail(data, 0)
			jf.hdr = fileHeader{version: Version, gen: snapHdr.gen}
			if name == NextFile {
				jf.hdr.gen = snapHdr.gen + 1
				if len(files) == 2 {
					jf.hdr.gen = files[0].hdr.gen + 1
				}
			}
			continue
		}
		if jf.hdr, err = readHeader(data); err != nil {
			return nil, fmt.Errorf("journal: %s: %w", filepath.Join(j.dir, name), err)
		}
		jf.recs, jf.good, _ = Decode(data)
		jf.torn = tornTail(data, jf.good)
		jf.data = data[jf.good:] // zeros included: a record may end in them
	}
	// Which journals follow the snapshot: those of its generation and
	// the next, in order; an older one is stale (the snapshot holds it).
	var live []*journalFile
	for _, jf := range files {
		switch {
		case jf.hdr.gen < snapHdr.gen:
		case len(live) == 0 && jf.hdr.gen == snapHdr.gen,
			len(live) == 1 && jf.hdr.gen == live[0].hdr.gen+1:
			live = append(live, jf)
		default:
			return nil, fmt.Errorf("journal: %s (generation %d) does not follow %s (generation %d): the directory mixes files of different runs (restore a backup into an empty directory)",
				jf.name, jf.hdr.gen, SnapshotFile, snapHdr.gen)
		}
	}
	for i, jf := range live {
		if jf.torn > 0 && i < len(live)-1 && len(live[i+1].recs) > 0 {
			return nil, fmt.Errorf("journal: %s is corrupt at byte %d of %d, and %s follows it", jf.name, jf.good, jf.size, live[i+1].name)
		}
		c.Journal = append(c.Journal, jf.recs...)
		// What is dropped (cut from the file appends go to, or folded
		// away with the other): complete records among it are damage,
		// saved before anything is cut. The last of them may end in
		// zero bytes, past the torn tail's last non-zero byte.
		var damage *Damage
		if jf.torn > 0 {
			if n, end, partial := recordsIn(jf.data); n > 0 {
				jf.torn = max(jf.torn, int64(end))
				damage = &Damage{File: jf.name, Offset: jf.good, Bytes: jf.torn, Records: n, Partial: partial}
			}
		}
		c.Dropped += jf.torn
		if jf.hdr.version < Version && jf.good >= 8 {
			c.Dropped += jf.size - jf.good - jf.torn // a legacy file's zeros after its records
		}
		if damage != nil {
			path, reused, err := j.saveDamaged(jf.data[:jf.torn])
			if err != nil {
				return nil, fmt.Errorf("journal: saving the damaged part of %s: %w", filepath.Join(j.dir, jf.name), err)
			}
			damage.Saved, damage.Reused = path, reused
			c.Damage = append(c.Damage, *damage)
		}
		jf.data = nil
	}
	if haveSnap && snapHdr.version < Version {
		j.fold = true
	}
	for _, jf := range live {
		if jf.hdr.version < Version {
			j.fold = true
		}
	}
	// Appends go to the last live journal: after dropping its torn tail,
	// under the name JournalFile unless a rewrite must fold two.
	var act *journalFile
	switch len(live) {
	case 0:
		nf, err := j.newJournalFile(snapHdr.gen, minPrealloc)
		if err != nil {
			return nil, err
		}
		act = &journalFile{name: JournalFile, f: nf.f, hdr: fileHeader{Version, snapHdr.gen}, good: nf.end, size: nf.alloc, made: nf}
		files = append(files, act)
	case 1:
		act = live[0]
	case 2:
		act = live[1]
		j.fold = true
	}
	af, err := j.openActive(act)
	if err != nil {
		return nil, err
	}
	if len(live) == 1 && act.name == NextFile {
		// The rewrite's snapshot is in place; its last step was not.
		if err := os.Rename(filepath.Join(j.dir, NextFile), filepath.Join(j.dir, JournalFile)); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		act.name = JournalFile
	}
	for _, jf := range files {
		if jf == act {
			continue
		}
		jf.f.Close()
		if jf.name == NextFile && !slices.Contains(live, jf) { // stale
			if err := os.Remove(filepath.Join(j.dir, NextFile)); err != nil {
				return nil, fmt.Errorf("journal: %w", err)
			}
		}
	}
	files = []*journalFile{act} // closed on error
	if err := syncDir(j.dir); err != nil && !j.noSync {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.f, j.gen = af, act.hdr.gen
	j.size = af.end
	j.checkDueLocked()
	return c, nil
}

// openActive readies the journal file appends go to: a torn header is
// written whole; a torn tail (any non-zero byte after the records) is
// cut and the cut fsynced before the file is extended with zeros again,
// so that no byte of the tail can be read back as a record after a later
// crash; a version 4 file is then preallocated (a version 2 or 3 one
// keeps no byte after its records). It returns the file's layout.
func (j *Journal) openActive(act *journalFile) (*jfile, error) {
	if act.made != nil {
		return act.made, nil
	}
	af := &jfile{f: act.f, end: act.good, alloc: act.size, chunk: firstChunk(act.good)}
	fail := func(err error) (*jfile, error) { return nil, fmt.Errorf("journal: %w", err) }
	switch {
	case act.good < 8: // a torn header: write it whole
		if err := act.f.Truncate(0); err != nil {
			return fail(err)
		}
		if err := writeHeaderAt(act.f, Version, act.hdr.gen); err != nil {
			return nil, err
		}
		act.hdr.version = Version
		af.end, af.alloc = 8, 8
		if err := j.fullSync(act.f); err != nil {
			return fail(err)
		}
	case act.torn > 0 || act.hdr.version < Version && act.size > act.good:
		if err := act.f.Truncate(act.good); err != nil {
			return fail(err)
		}
		if err := j.fullSync(act.f); err != nil {
			return fail(err)
		}
		af.alloc = act.good
	}
	af.legacy = act.hdr.version < Version
	switch {
	case !af.legacy && af.alloc <= af.end:
		if err := j.extend(af, af.end); err != nil {
			return fail(err)
		}
	case !af.legacy && act.torn == 0:
		// Zeros found after the records: a kill -9 may have stopped an
		// extension before its fsync; make their size durable once, so
		// that the flushes over them need only fdatasync.
		if err := j.fullSync(act.f); err != nil {
			return fail(err)
		}
	}
	return af, nil
}

// recordsIn counts the complete, valid records in data, the bytes after
// a journal's good prefix (its first frame is bad): at each offset past
// the first, a frame whose length fits and whose checksum matches, then
// the frames that follow it, the scan going on after each. A frame of
// more than 4 KiB counts only when what follows it could be a frame or
// the end (random bytes read as a length would cost a checksum of up to
// MaxRecord each). end is where the last record found ends (a record's
// payload may end in zero bytes: data runs on to the end of the file,
// its zeros included, though no record starts among the zeros after its
// last non-zero byte). partial: the scan stopped once it had checksummed
// 16 times the bytes up to that last non-zero byte (and 64 MiB), so
// more may follow; the caller reports damage only when n > 0 (a budget
// spent with none found is a torn tail like any other).
func recordsIn(data []byte) (n, end int, partial bool) {
	last := int(tornTail(data, 0)) // no record starts at or past it (a length is not zero)
	budget := 16*int64(last) + 64<<20
	fits := func(off int) (uint32, bool) { // a length at off whose record fits in data
		if len(data)-off < 8 {
			return 0, false
		}
		m := binary.LittleEndian.Uint32(data[off:])
		return m, m > 0 && m <= MaxRecord && uint64(len(data)-off-8) >= uint64(m)
	}
	for off := 1; off < last && off+8 < len(data); {
		m, ok := fits(off)
		if !ok {
			off++
			continue
		}
		e := off + 8 + int(m)
		if _, next := fits(e); m > 4<<10 && len(data)-e >= 4 && !next && binary.LittleEndian.Uint32(data[e:]) != 0 {
			off++ // neither a frame, nor the end, nor zeros follow it
			continue
		}
		if budget -= int64(m); budget < 0 {
			return n, end, true
		}
		if crc32.Checksum(data[off+8:e], crcT) != binary.LittleEndian.Uint32(data[off+4:]) {
			off++
			continue
		}
		n++
		off, end = e, e
	}
	return n, end, false
}

// saveDamaged saves b beside the journal and returns the path: when a
// DamagedFile (or DamagedFile.N) already holds exactly b, that one
// (reused: a process stopped between the save and the cut, or the
// damaged journal is the older of two, kept until the fold at start);
// else a new file, DamagedFile (DamagedFile.1, .2, ... when that exists:
// never over an earlier one), 0600, written whole under a temporary name,
// fsynced, renamed and the directory fsynced (unless noSync), so that a
// crash mid-save leaves no partial copy under a saved name (the
// temporary one is removed at the next Open). The directory is locked:
// no other process makes a name between the check and the rename.
func (j *Journal) saveDamaged(b []byte) (path string, reused bool, err error) {
	if path, err := j.sameDamaged(b); err != nil || path != "" {
		return path, path != "", err
	}
	tmp := filepath.Join(j.dir, DamagedFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", false, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = j.fullSync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fmt.Errorf("%s through %s.999 exist", DamagedFile, DamagedFile)
		for i := 0; i < 1000; i++ {
			path = filepath.Join(j.dir, DamagedFile)
			if i > 0 {
				path = fmt.Sprintf("%s.%d", path, i)
			}
			if _, serr := os.Lstat(path); !errors.Is(serr, os.ErrNotExist) {
				if serr != nil {
					err = serr
					break
				}
				continue
			}
			err = os.Rename(tmp, path)
			break
		}
	}
	if err == nil && !j.noSync {
		err = syncDir(j.dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", false, err
	}
	return path, false, nil
}

// sameDamaged returns the path of a saved copy (DamagedFile or
// DamagedFile.N) whose bytes are b, or "".
func (j *Journal) sameDamaged(b []byte) (string, error) {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		name := e.Name()
		if n, ok := strings.CutPrefix(name, DamagedFile+"."); name != DamagedFile && (!ok || n == "" || strings.Trim(n, "0123456789") != "") {
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err != nil || info.Size() != int64(len(b)) {
			continue
		}
		path := filepath.Join(j.dir, name)
		got, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		if bytes.Equal(got, b) {
			return path, nil
		}
	}
	return "", nil
}

// newJournalFile makes an empty journal of generation gen, named
// JournalFile, durably (its header and a first chunk of zeros written
// beside, fsynced, renamed), and returns it. The caller fsyncs the
// directory.
func (j *Journal) newJournalFile(gen uint32, chunk int64) (*jfile, error) {
	tmp := filepath.Join(j.dir, JournalFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	jf := &jfile{f: f, end: 8, alloc: 8, chunk: chunk}
	err = writeHeaderAt(f, Version, gen)
	if err == nil {
		err = j.extend(jf, jf.end) // fsyncs the header too
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(j.dir, JournalFile))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	return jf, nil
}

// extend writes zeros from jf's end of file to a chunk past need (the
// end of the records about to be written) and fsyncs the file whole (its
// new size and blocks), so that the flushes that overwrite the zeros need
// only fdatasync. Each extension doubles the next one's chunk, up to
// maxPrealloc. Its error is the caller's to prefix.
func (j *Journal) extend(jf *jfile, need int64) error {
	to := max(jf.alloc, need) + jf.chunk
	for off := jf.alloc; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := jf.f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("preallocate: %w", err)
		}
		off += n
	}
	if err := j.fullSync(jf.f); err != nil {
		return err
	}
	jf.alloc = to
	jf.chunk = min(2*jf.chunk, maxPrealloc)
	return nil
}

// zeros is what extend writes (never written to).
var zeros [1 << 20]byte

// fullSync fsyncs f whole (data and metadata: f.Sync), unless noSync:
// after a change of the file's size (an extension, a cut tail). Its
// error is the caller's to prefix.
func (j *Journal) fullSync(f *os.File) error {
	if j.noSync {
		return nil
	}
	if err := fullSyncFile(f); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return nil
}

// fullSyncFile is f.Sync, fullSync's and a snapshot's (a test replaces
// it).
var fullSyncFile = (*os.File).Sync

// tornTail is how many bytes of data after good (its records' end) are a
// torn tail: up to its last non-zero byte (zeros after the records are
// the preallocated rest of the file, not a tail).
func tornTail(data []byte, good int64) int64 {
	for i := len(data) - 1; i >= int(good); i-- {
		if data[i] != 0 {
			return int64(i+1) - good
		}
	}
	return 0
}

func header(gen uint32) []byte {
	return binary.LittleEndian.AppendUint32([]byte{magic[0], magic[1], magic[2], Version}, gen)
}

// writeHeaderAt writes a header at the start of f.
func writeHeaderAt(f *os.File, version byte, gen uint32) error {
	h := header(gen)
	h[3] = version
	if _, err := f.WriteAt(h, 0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Encode is a snapshot file holding records (what Rewrite writes), for a
// copy of the state made elsewhere: generation 0, so that a directory
// holding it alone starts from it.
func Encode(records func(emit func([]byte))) []byte {
	b := header(0)
	records(func(p []byte) { b = frame(b, p) })
	return b
}

// Decode reads a file's records: the records up to the first zero length
// (a version 4 journal's logical end; in a version 2 or 3 file, a zero
// length with a zero checksum is an empty record), incomplete or damaged one, and
// the length of the good prefix (a journal's logical size). A file shorter than
// its header is an empty one with a torn header (good 0); a wrong magic or
// an unknown version is an error.
func Decode(data []byte) (recs [][]byte, good int64, err error) {
	if len(data) < 8 {
		return nil, 0, nil
	}
	h, err := readHeader(data)
	if err != nil {
		return nil, 0, err
	}
	off := 8
	for {
		if len(data)-off < 8 {
			return recs, int64(off), nil
		}
		n := binary.LittleEndian.Uint32(data[off:])
		sum := binary.LittleEndian.Uint32(data[off+4:])
		// A zero length is a version 4 file's logical end (the
		// preallocated zeros) or a torn record, never a record. Versions
		// 2 and 3 wrote no zeros and read a zero length with a zero
		// checksum (the CRC-32C of nothing) as an empty record, which a
		// crash could leave and their server then appended after: it
		// still reads so, or the records after it would be lost.
		if n == 0 && (h.version >= 4 || sum != 0) || n > MaxRecord || uint64(len(data)-off-8) < uint64(n) {
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
	if len(p) == 0 {
		panic("journal: an empty record") // it would read as the journal's end
	}
	w = binary.LittleEndian.AppendUint32(w, uint32(len(p)))
	w = binary.LittleEndian.AppendUint32(w, crc32.Checksum(p, crcT))
	return append(w, p...)
}

// Append adds a record and returns its number for Wait. The caller appends
// under its own lock, so records are in commit order. It never waits for
// a write or an fsync in progress.
func (j *Journal) Append(p []byte) uint64 {
	if len(p) == 0 {
		panic("journal: an empty record") // it would read as the journal's end
	}
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
	if n == 0 {
		panic("journal: an empty record") // it would read as the journal's end
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
	grown := j.size > max(j.rewriteAt, j.snapSize)
	if j.failures > 0 {
		grown = j.size >= j.retryAt
	}
	j.due.Store(!j.rewriting && (j.fold || grown || j.purgeNow))
}

// FoldSoon asks for a rewrite that leaves none of the records appended
// so far in the directory's files (the server calls it once a reset's
// record is appended: the records before it must go). RewriteDue
// reports true at once, even during a failed rewrite's backoff, and
// again after a rewrite that stood but kept some of them (one that kept
// the NextFile of a failed rewrite begun before them), until a rewrite
// whose switch came after them stands, or Rewrite runs. Such a rewrite
// that fails is retried as any (after the backoff). The old files are
// replaced by rename: their blocks are freed, not overwritten.
func (j *Journal) FoldSoon() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.purgeTo, j.purgeNow = j.appended, true
	j.checkDueLocked()
}

// maxBackoff caps the doubling of the growth a retry waits for after
// failed rewrites in a row: 2^6 times the threshold.
const maxBackoff = 6

// failedLocked notes a rewrite that failed and left the journal going
// (mu held): the next is due once the journal has grown, since now, by
// the threshold (the larger of SetRewriteAt's and the snapshot's size),
// twice that after two failures in a row, four times after three, up to
// 2^maxBackoff times. A full disk then costs a few attempts, not one per
// commit; the growth is the measure because a fake clock may not move.
func (j *Journal) failedLocked() {
	j.failures++
	j.retryAt = j.size + max(j.rewriteAt, j.snapSize)<<min(j.failures-1, maxBackoff)
	j.checkDueLocked()
}

// RewriteDue reports whether the journal has grown past the larger of the
// snapshot's size and SetRewriteAt's (DefaultRewriteAt), and no rewrite
// runs: then a rewrite keeps the directory, and the next start's replay,
// in proportion to the state. After a failed rewrite it waits for the
// journal to grow by that much since the failure instead, doubled for
// each failure in a row (a backoff). It also reports true after an Open
// that must fold (see Open). It takes no lock.
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
// covers all of them: one fsync per batch, not per record. After a
// StartRewrite switched files, the leader first finishes the old file
// (its records come first).
func (j *Journal) Wait(n uint64) error {
	if j.durable.Load() >= n {
		return nil
	}
	j.mu.Lock()
	for {
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
			// The flush's end closes its channel: a waiter it covered
			// returns without taking mu again (a broadcast made each
			// take mu in turn).
			ch := j.flushed
			j.mu.Unlock()
			<-ch
			if j.durable.Load() >= n {
				return nil
			}
			j.mu.Lock()
			continue
		}
		if j.f == nil {
			j.err = errors.New("journal: closed")
			err := j.err
			j.mu.Unlock()
			return err
		}
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
		data, upTo, f, ret := j.buf, j.appended, j.f, j.retired
		dirSync := j.dirSync == f
		j.buf = j.spare[:0]
		j.retired = nil
		j.mu.Unlock()
		t0 := time.Now()
		var err error
		if ret != nil {
			err = j.writeSync(ret.f, ret.buf, true)
			if cerr := ret.f.f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("journal: %w", cerr)
			}
		}
		if err == nil {
			err = j.writeSync(f, data, false)
		}
		if err == nil && dirSync && !j.noSync {
			if err = syncDir(j.dir); err != nil {
				err = fmt.Errorf("journal: fsync: %w", err)
			}
		}
		took := time.Since(t0)
		j.mu.Lock()
		j.flushing = false
		close(j.flushed)
		j.flushed = nil
		j.spare = data[:0]
		j.flushes.Add(1)
		if err != nil {
			j.err = err
		} else {
			if dirSync && j.dirSync == f {
				j.dirSync = nil
			}
			j.lastBatch, j.lastSync = upTo-j.synced, min(took, 10*time.Millisecond)
			j.synced = upTo
			j.durable.Store(upTo)
		}
		j.cond.Broadcast()
	}
}

// Flushes is how many group commits (a write and an fsync each) Wait
// has made: a benchmark divides its operations by it.
func (j *Journal) Flushes() uint64 { return j.flushes.Load() }

// idleLocked waits until no flush runs (mu held).
func (j *Journal) idleLocked() {
	for j.flushing {
		j.cond.Wait()
	}
}

// writeSync writes data at jf's logical end, over the preallocated zeros
// (extending the file first when data would pass them; a version 2 or 3
// file grows instead, and so does a retired one, the last write it gets:
// zeros there would never be used), and syncs it with datasync
// (fdatasync on linux, which commits a grown size too).
func (j *Journal) writeSync(jf *jfile, data []byte, retired bool) error {
	if len(data) > 0 {
		if need := jf.end + int64(len(data)); need > jf.alloc && !jf.legacy && !retired {
			if err := j.extend(jf, need); err != nil {
				return fmt.Errorf("journal: %w", err)
			}
		}
		if _, err := jf.f.WriteAt(data, jf.end); err != nil {
			return fmt.Errorf("journal: write: %w", err)
		}
		jf.end += int64(len(data))
		jf.alloc = max(jf.alloc, jf.end)
	}
	return j.fsync(jf.f)
}

// SetSync makes j sync its journal file's flushes with fn rather than
// datasync (a test holds or fails a sync with it); nil restores datasync.
func (j *Journal) SetSync(fn func(*os.File) error) {
	if fn == nil {
		j.syncHook.Store(nil)
		return
	}
	j.syncHook.Store(&fn)
}

// SetRewriteHook makes a rewrite's background phase call fn at each of
// its steps (a test holds it there, or fails it): "switched" (appends go
// to NextFile; nothing written yet; StartRewrite's, or the caller's
// through Step), the caller's own steps (Step), "snapshot-synced" (the
// new snapshot written beside and fsynced), "snapshot-renamed" and
// "journal-renamed" (done). An error from fn fails the rewrite there;
// nil removes the hook.
func (j *Journal) SetRewriteHook(fn func(step string) error) {
	if fn == nil {
		j.rewriteHook.Store(nil)
		return
	}
	j.rewriteHook.Store(&fn)
}

func (j *Journal) step(name string) error {
	if h := j.rewriteHook.Load(); h != nil {
		return (*h)(name)
	}
	return nil
}

// syncFile is a flush's sync, datasync (a test replaces it).
var syncFile = datasync

func (j *Journal) fsync(f *os.File) error {
	if j.noSync {
		return nil
	}
	return j.syncNow(f)
}

// syncNow fsyncs f, noSync or not.
func (j *Journal) syncNow(f *os.File) error {
	sync := syncFile
	if h := j.syncHook.Load(); h != nil {
		sync = *h
	}
	if err := sync(f); err != nil {
		return fmt.Errorf("journal: fsync: %w", err)
	}
	return nil
}

// writeSnapshot frames records into a snapshot of generation gen and
// writes it durably: beside (in pieces of about 1 MiB), fsynced, renamed,
// the directory fsynced. A snapshot is fsynced even with noSync: it
// replaces the journals, and a machine crash must not leave a snapshot
// that lost what they held. It reports whether the rename was made (the
// new snapshot is the one in the directory, durably unless err); when
// it fails before the rename, it removes the partial file.
func (j *Journal) writeSnapshot(gen uint32, records func(emit func([]byte)), background bool) (size int64, renamed bool, err error) {
	tmp := filepath.Join(j.dir, SnapshotFile+".tmp")
	defer func() {
		if err != nil && !renamed {
			_ = os.Remove(tmp) // best effort: Open removes it too
		}
	}()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, false, err
	}
	b := header(gen)
	records(func(p []byte) {
		if err != nil {
			return // failed: the rest is not framed (nor kept in memory)
		}
		if len(b)+8+len(p) > 1<<20 {
			_, err = f.Write(b)
			size += int64(len(b))
			b = b[:0]
		}
		b = frame(b, p)
	})
	if err == nil {
		_, err = f.Write(b)
		size += int64(len(b))
	}
	if err == nil {
		err = fullSyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && background {
		err = j.step("snapshot-synced")
	}
	if err == nil {
		err = renameFile(tmp, filepath.Join(j.dir, SnapshotFile))
		renamed = err == nil
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	return size, renamed, err
}

// Rewrite replaces the directory's contents with records (a snapshot) and
// an empty journal, durably, before it returns: the snapshot is written
// beside, fsynced and renamed over the old one (from then on it stands
// for every journal before it), then a new empty journal is renamed over
// the old one. Appends are held back while it runs: Open's caller uses it
// before it serves (a new directory, a long journal, a fold); a running
// server uses BeginRewrite. It waits for a rewrite BeginRewrite started:
// its caller must not hold a lock that rewrite needs.
func (j *Journal) Rewrite(records func(emit func([]byte))) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.idleLocked()
	for j.rewriting {
		j.cond.Wait()
	}
	j.idleLocked()
	if j.err != nil {
		return j.err
	}
	gen := j.gen + 1
	size, _, err := j.writeSnapshot(gen, records, false)
	var jf *jfile
	if err == nil {
		jf, err = j.newJournalFile(gen, firstChunk(j.size))
	}
	if err == nil {
		err = os.Remove(filepath.Join(j.dir, NextFile))
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	if err != nil {
		if jf != nil {
			jf.f.Close()
		}
		j.err = fmt.Errorf("journal: rewrite: %w", err)
		return j.err
	}
	// The buffered records are older than the snapshot: drop them.
	if j.retired != nil {
		j.retired.f.f.Close()
		j.retired = nil
	}
	j.f.f.Close()
	j.f, j.gen, j.dirSync, j.fold = jf, gen, nil, false
	j.pending, j.failures = false, 0
	j.purgeTo, j.purgeNow = 0, false // every record is in the snapshot alone
	j.switchedAt = j.appended
	j.buf = j.buf[:0]
	j.synced = j.appended
	j.durable.Store(j.synced)
	j.snapSize, j.size = size, 8
	j.checkDueLocked()
	return nil
}

// StartRewrite folds the journal into a new snapshot with the state
// encoded at once: BeginRewrite, records (the caller's state, consistent
// under its lock, encoded now; the payloads it emits are kept and framed
// later: it must not change them afterwards), then FinishRewrite in the
// background. Close waits for it. The server encodes in chunks instead
// (BeginRewrite, FinishRewrite).
func (j *Journal) StartRewrite(records func(emit func([]byte))) error {
	if err := j.BeginRewrite(); err != nil {
		return err
	}
	var recs [][]byte
	records(func(p []byte) { recs = append(recs, p) })
	go j.finishRewrite(recs, j.step("switched")) //nolint:errcheck // see FinishRewrite
	return nil
}

// BeginRewrite starts folding the journal into a new snapshot without
// holding back appends: the caller calls it under its own lock, and at
// that instant appends switch to a new journal file (NextFile, the next
// generation). The caller then gathers the snapshot's records, then calls
// FinishRewrite with them (or AbortRewrite), one rewrite at a time
// (RewriteDue is false meanwhile); Close waits for it. The snapshot need
// not be one instant's state (a fuzzy snapshot): the new journal is
// replayed over it on Open, so it is sound when replaying every record
// appended since BeginRewrite over it gives the state, and when every
// record a part of it reflects is durable (Wait) before FinishRewrite is
// called.
//
// After a rewrite failed or was aborted (FinishRewrite, FailRewrite,
// AbortRewrite), NextFile is still the file appended to and holds every
// record since that rewrite's switch: the next BeginRewrite does not
// switch again, and its snapshot must be sound for replaying all of
// NextFile over it (one taken after that earlier switch, with every
// record it reflects durable, is: a fuzzy snapshot taken later is).
//
// It returns an error without starting when a rewrite runs, the journal
// is closed or a fold Open asked for is due (Rewrite's) (IsNoRewrite),
// when the journal is stopped (its error), and when NextFile cannot be
// made: the journal then goes on in its file, NextFile removed, and the
// next rewrite is due after a backoff (RewriteDue).
func (j *Journal) BeginRewrite() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	if j.rewriting || j.closed || j.fold {
		return errNoRewrite
	}
	j.oldSnap = j.snapSize
	j.purgeNow = false // this one, or its failure's backoff
	if j.pending {
		j.rewriting = true
		j.checkDueLocked()
		return nil
	}
	gen := j.gen + 1
	path := filepath.Join(j.dir, NextFile)
	nf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if err = writeHeaderAt(nf, Version, gen); err != nil {
			nf.Close()
		}
	}
	if err != nil {
		// Nothing switched: appends go on to the journal file. A
		// NextFile left behind (its removal failed too) holds no record,
		// and Open loads the directory as well with it.
		_ = os.Remove(path)
		j.failedLocked()
		return fmt.Errorf("journal: rewrite: %w", err)
	}
	j.rewriting = true // no other rewrite; RewriteDue false
	j.switchedAt = j.appended
	j.retired = &retiredFile{f: j.f, buf: j.buf, upTo: j.appended}
	j.buf = nil
	// NextFile is preallocated by the first flush to it (extend), not
	// here: the caller holds its own lock.
	next := &jfile{f: nf, end: 8, alloc: 8, chunk: firstChunk(j.size)}
	j.f, j.gen, j.dirSync = next, gen, next
	j.snapSize, j.size = 0, 8
	j.checkDueLocked()
	return nil
}

// Err is the error that stopped the journal (every Wait fails with it),
// or nil while it goes on. A failed rewrite does not stop it.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// errNoRewrite is BeginRewrite's answer when it cannot start one now.
var errNoRewrite = errors.New("journal: a rewrite runs, or the journal is closed or due a fold")

// IsNoRewrite reports whether err is BeginRewrite's "not now" (a rewrite
// already runs, or the journal is closed or due a fold), not a failure.
func IsNoRewrite(err error) bool { return errors.Is(err, errNoRewrite) }

// FailRewrite ends a rewrite BeginRewrite started with err (a step of
// the caller's failed), as a FinishRewrite whose snapshot could not be
// written: the journal goes on, and a rewrite is due again after a
// backoff.
func (j *Journal) FailRewrite(err error) { _ = j.finishRewrite(nil, err) }

// AbortRewrite ends a rewrite BeginRewrite started without a snapshot (the
// caller is closing): the directory keeps both journals, which Open
// replays and folds; appends go on to NextFile, which a later
// BeginRewrite keeps.
func (j *Journal) AbortRewrite() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rewriting = false
	j.pending = true // NextFile is the file appended to: a later rewrite must not truncate it
	j.snapSize = j.oldSnap
	j.checkDueLocked()
	j.cond.Broadcast()
}

// WaitRewrite waits until no rewrite runs in the background.
func (j *Journal) WaitRewrite() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.rewriting {
		j.cond.Wait()
	}
}

// Step calls the rewrite hook (SetRewriteHook) at a step of the
// caller's own, while a rewrite runs; an error from it is the caller's to
// act on (AbortRewrite, or FinishRewrite's).
func (j *Journal) Step(name string) error { return j.step(name) }

// FinishRewrite ends the rewrite BeginRewrite started: it writes recs as
// the snapshot of the new generation (beside, fsynced, renamed), then
// renames the new journal over the old one. It does not hold the
// caller's lock; see the package comment for what a crash leaves at each
// step. It returns nil, or the error of the step that failed, which costs
// that rewrite alone unless the journal stopped (Err):
//
//   - With noSync, NextFile's fsync (its records must be on the disk
//     before a snapshot that may reflect them stands): the journal's own
//     file, whose failure stops the journal as a flush's does.
//   - The directory's fsync after the snapshot's rename, or after
//     NextFile's: it stops the journal, as a flush's does (Linux may not
//     report the error again to a later fsync, so the directory's
//     entries could never be known durable). Open loads the directory
//     at any of these points.
//   - Until the snapshot's rename, and up to NextFile's rename once the
//     snapshot's directory fsync succeeded (the snapshot's write, fsync,
//     rename; NextFile's rename; a failed step): NextFile stays the file
//     appended to, and the journal goes on. Nothing of the journals was
//     changed or dropped, except after a failed rename of NextFile: the
//     old journal's records not yet written were dropped, safely, as the
//     new snapshot, durable then, holds them. Open loads the directory
//     either way, whether the new snapshot's rename stands or not (the
//     second and third states of the package comment): the partial
//     snapshot is removed, and the next rewrite, due after a backoff
//     (RewriteDue), keeps NextFile (BeginRewrite). A rename of NextFile
//     that returns an error but was made (JournalFile is NextFile's file
//     now, and NextFile is gone) is taken as made.
//   - The last step, after NextFile's rename and the directory's fsync:
//     the rewrite stands (RewriteStood), with nothing owed.
func (j *Journal) FinishRewrite(recs [][]byte) error { return j.finishRewrite(recs, nil) }

// finishRewrite is FinishRewrite after err (nil, or a failed step).
func (j *Journal) finishRewrite(recs [][]byte, err error) error {
	j.mu.Lock()
	gen, next := j.gen, j.f
	j.mu.Unlock()
	if err == nil && j.noSync {
		// The snapshot's chunks may hold changes made after the switch,
		// whose records are only in NextFile: with noSync they are in the
		// operating system, not on the disk, and a machine crash after
		// the snapshot stands would lose them from under it (half a
		// transfer). So NextFile is fsynced first, noSync or not, as the
		// snapshot itself is.
		if err := j.syncNow(next.f); err != nil {
			return j.rewriteStopped(err, j.oldSnap)
		}
	}
	var size int64
	renamed := false
	if err == nil {
		size, renamed, err = j.writeSnapshot(gen, func(emit func([]byte)) {
			for i, p := range recs {
				emit(p)
				recs[i] = nil // garbage once framed
			}
		}, true)
		if err != nil && renamed {
			// The directory's fsync after the snapshot's rename failed:
			// Linux may not report it again to a later fsync, so the
			// directory's entries (journal.next's, if no flush fsynced
			// the directory since it was made) could never be known
			// durable. It stops the journal, as a flush's does.
			return j.rewriteStopped(err, size)
		}
	}
	recs = nil
	if err == nil {
		err = j.step("snapshot-renamed")
	}
	if err == nil {
		// The snapshot holds every record of the old journal, durably:
		// those not yet flushed are durable now, and the file is done
		// with. (Not before the directory's fsync: until then a machine
		// crash may bring the old snapshot back, which needs them.)
		j.mu.Lock()
		j.idleLocked()
		if ret := j.retired; ret != nil {
			ret.f.f.Close()
			j.retired = nil
			if j.synced < ret.upTo {
				j.synced = ret.upTo
				j.durable.Store(ret.upTo)
			}
		}
		j.mu.Unlock()
		err = renameFile(filepath.Join(j.dir, NextFile), filepath.Join(j.dir, JournalFile))
		if err != nil && renameMade(j.dir, next.f) {
			err = nil // reported as failed, but made: the rewrite stands
		}
	}
	if err != nil {
		return j.rewriteFailed(err, renamed, size)
	}
	// The rewrite stands: nothing after this point is undone.
	if err := syncDir(j.dir); err != nil {
		return j.rewriteStopped(err, size) // as after the snapshot's rename
	}
	err = j.step("journal-renamed")
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rewriting, j.pending, j.failures = false, false, 0
	j.snapSize = size
	if j.purgeTo > 0 {
		if j.switchedAt >= j.purgeTo {
			j.purgeTo = 0 // gone from every file
		} else {
			j.purgeNow = true // kept (in a failed rewrite's NextFile): once more, switching now
		}
	}
	if err != nil {
		err = &stoodError{fmt.Errorf("journal: rewrite: %w", err)}
	}
	j.checkDueLocked()
	j.cond.Broadcast()
	return err
}

// renameMade reports whether NextFile's rename to JournalFile, which
// returned an error, was made all the same: NextFile is gone and
// JournalFile is next, the file appended to (a rename is the only way
// that name comes to it). Without it, every later rewrite would fail to
// rename a NextFile that is no more.
func renameMade(dir string, next *os.File) bool {
	if _, err := os.Lstat(filepath.Join(dir, NextFile)); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	ji, err := os.Stat(filepath.Join(dir, JournalFile))
	if err != nil {
		return false
	}
	ni, err := next.Stat()
	return err == nil && os.SameFile(ji, ni)
}

// rewriteFailed ends a rewrite whose snapshot does not stand for the
// journals (see FinishRewrite): NextFile stays the file appended to, the
// journal goes on, and the next rewrite is due after a backoff. renamed
// tells whether the new snapshot (of size bytes) replaced the old one.
func (j *Journal) rewriteFailed(err error, renamed bool, size int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rewriting, j.pending = false, true
	j.snapSize = j.oldSnap
	if renamed {
		j.snapSize = size
	}
	j.failedLocked()
	j.cond.Broadcast()
	return fmt.Errorf("journal: rewrite: %w", err)
}

// rewriteStopped ends a rewrite with err, a failure that stops the
// journal (see FinishRewrite): every Wait fails from then on, and Open
// loads the directory. snapSize is the snapshot's size in the directory.
func (j *Journal) rewriteStopped(err error, snapSize int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rewriting, j.pending = false, true
	j.snapSize = snapSize
	if j.err == nil {
		j.err = fmt.Errorf("journal: rewrite: %w", err)
	}
	j.checkDueLocked()
	j.cond.Broadcast()
	return j.err
}

// stoodError is FinishRewrite's error when the rewrite stands all the
// same (its last step failed, after the directory's fsync).
type stoodError struct{ err error }

func (e *stoodError) Error() string { return e.err.Error() }
func (e *stoodError) Unwrap() error { return e.err }

// RewriteStood reports whether err, FinishRewrite's, came after the
// rewrite stood: the new snapshot and journal are in place, durably, and
// the journal goes on with nothing owed.
func RewriteStood(err error) bool {
	var s *stoodError
	return errors.As(err, &s)
}

// Close writes what is buffered, waits for a rewrite running in the
// background, closes the files and releases the lock.
func (j *Journal) Close() error {
	err := j.Wait(j.Appended())
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.rewriting {
		j.cond.Wait()
	}
	j.idleLocked()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.retired != nil {
		j.retired.f.f.Close()
		j.retired = nil
	}
	if j.f != nil {
		if cerr := j.f.f.Close(); err == nil {
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

// Test seams: a test replaces one to fail it (see also syncFile and
// fullSyncFile).
var (
	renameFile = os.Rename
	syncDir    = syncDirectory
)

// syncDirectory fsyncs dir (its entries: a rename, a new file).
func syncDirectory(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
