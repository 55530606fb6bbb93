package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// rewriteFaults fails one file operation of a rewrite while armed: the
// seams (renameFile, syncDir, fullSyncFile) are replaced for the test,
// and restored when it ends.
type rewriteFaults struct {
	mu         sync.Mutex
	armed      bool   // fail the operation op names
	op         string // "snapshot-fsync", "snapshot-rename", "snapshot-dirsync", "journal-rename", "journal-rename-made", "journal-dirsync"
	lastRename string // the base name of the last file renamed
}

var errInjected = errors.New("injected I/O error")

func newRewriteFaults(t *testing.T) *rewriteFaults {
	t.Helper()
	rf := &rewriteFaults{}
	renameFile = func(from, to string) error {
		rf.mu.Lock()
		defer rf.mu.Unlock()
		name := filepath.Base(from)
		if rf.armed && (rf.op == "snapshot-rename" && name == SnapshotFile+".tmp" || rf.op == "journal-rename" && name == NextFile) {
			rf.armed = false
			return errInjected
		}
		rf.lastRename = name
		if rf.armed && rf.op == "journal-rename-made" && name == NextFile {
			// The rename is made, but reported as failed.
			rf.armed = false
			if err := os.Rename(from, to); err != nil {
				return err
			}
			return errInjected
		}
		return os.Rename(from, to)
	}
	syncDir = func(dir string) error {
		rf.mu.Lock()
		defer rf.mu.Unlock()
		if rf.armed && (rf.op == "snapshot-dirsync" && rf.lastRename == SnapshotFile+".tmp" || rf.op == "journal-dirsync" && rf.lastRename == NextFile) {
			rf.armed = false
			return errInjected
		}
		return syncDirectory(dir)
	}
	fullSyncFile = func(f *os.File) error {
		rf.mu.Lock()
		fail := rf.armed && rf.op == "snapshot-fsync" && filepath.Base(f.Name()) == SnapshotFile+".tmp"
		if fail {
			rf.armed = false
		}
		rf.mu.Unlock()
		if fail {
			return errInjected
		}
		return f.Sync()
	}
	t.Cleanup(func() {
		renameFile, syncDir, fullSyncFile = os.Rename, syncDirectory, (*os.File).Sync
	})
	return rf
}

func (rf *rewriteFaults) arm(op string) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.armed, rf.op = true, op
}

func (rf *rewriteFaults) disarm() {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.armed = false
}

// devFull makes dir/name a link to /dev/full, whose every write fails
// with ENOSPC (a full disk), or skips t.
func devFull(t *testing.T, dir, name string) {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	if err := os.Symlink("/dev/full", filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// growUntilDue appends records of 100 bytes until RewriteDue and returns
// the bytes appended (t fails if it is not due after 200 of them).
func growUntilDue(t *testing.T, j *Journal, want *[]string) int64 {
	t.Helper()
	var grown int64
	for i := 0; !j.RewriteDue(); i++ {
		if i == 200 {
			t.Fatalf("no rewrite due after %d bytes appended", grown)
		}
		rec := string(bytes.Repeat([]byte{'g'}, 92)) + string(rune('0'+i%10))
		if err := j.Wait(j.Append([]byte(rec))); err != nil {
			t.Fatalf("Wait after a failed rewrite: %v", err)
		}
		*want = append(*want, rec)
		grown += 8 + int64(len(rec))
	}
	return grown
}

// TestRewriteFailureContinues: a rewrite's snapshot that cannot be
// written (a full disk on its write, an error from its fsync or its
// rename, a failed step) costs that snapshot only: the
// journal goes on (every Wait after it succeeds), the partial file is
// removed, the directory loads every record after a crash then, no new
// rewrite is due until the journal has grown by the threshold since the
// failure, and the next one (which keeps journal.next, where the records
// since the failed one's switch are) succeeds and loads the same; a
// rewrite after it, too. A failure of the last step, once journal.next
// is renamed and the directory fsynced, leaves the rewrite done; so does
// a rename of journal.next that reports an error but was made (before,
// it stayed pending, and each retry failed: journal.next was gone).
// Before, each stopped the journal. A failed directory fsync stops it
// (TestRewriteDirSyncFailureStops).
func TestRewriteFailureContinues(t *testing.T) {
	const at = 1 << 10
	for _, tc := range []struct {
		op   string
		done bool // the rewrite stands (journal.next was renamed)
	}{
		{op: "snapshot-write"}, // ENOSPC
		{op: "snapshot-fsync"},
		{op: "snapshot-synced"},
		{op: "snapshot-rename"},
		{op: "snapshot-renamed"},
		{op: "journal-rename"},
		{op: "journal-rename-made", done: true},
		{op: "journal-renamed", done: true},
		{op: "caller"}, // FailRewrite: a step of the caller's failed
	} {
		t.Run(tc.op, func(t *testing.T) {
			rf := newRewriteFaults(t)
			dir, j := openNew(t, false)
			j.SetRewriteAt(at)
			want := []string{"a", "b"}
			j.Append([]byte("a"))
			if err := j.Wait(j.Append([]byte("b"))); err != nil {
				t.Fatal(err)
			}
			wantErr := errInjected
			switch tc.op {
			case "snapshot-write":
				devFull(t, dir, SnapshotFile+".tmp")
				wantErr = syscall.ENOSPC
			case "snapshot-synced", "snapshot-renamed", "journal-renamed":
				fired := false
				j.SetRewriteHook(func(step string) error {
					if step == tc.op && !fired {
						fired = true
						return errInjected
					}
					return nil
				})
			case "caller":
			default:
				rf.arm(tc.op)
			}
			if tc.op == "journal-rename-made" {
				wantErr = nil // the rewrite stands
			}
			if err := j.BeginRewrite(); err != nil {
				t.Fatal(err)
			}
			j.Append([]byte("c")) // to journal.next; its flush is the next Wait's
			want = append(want, "c")
			var err error
			if tc.op == "caller" {
				j.FailRewrite(errInjected)
				err = errInjected
			} else {
				err = j.FinishRewrite([][]byte{[]byte("a"), []byte("b")})
			}
			if !errors.Is(err, wantErr) {
				t.Fatalf("FinishRewrite: %v, want %v", err, wantErr)
			}
			rf.disarm()
			if err := j.Wait(j.Append([]byte("d"))); err != nil {
				t.Fatalf("Wait after a failed rewrite: %v", err)
			}
			want = append(want, "d")
			if _, err := os.Lstat(filepath.Join(dir, SnapshotFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the partial snapshot is left: %v", err)
			}
			crashed := copyDir(t, dir) // a kill -9 now
			j2, c, err := Open(crashed, false)
			if err != nil {
				t.Fatal(err)
			}
			wantLoaded(t, c, 0, want)
			j2.Close()

			if !tc.done {
				if j.RewriteDue() {
					t.Fatal("a rewrite is due again at once after a failed one")
				}
				if grown := growUntilDue(t, j, &want); grown < at {
					t.Fatalf("a rewrite is due again after %d bytes, want at least %d", grown, at)
				}
				// The retry: journal.next stays the file appended to, and
				// holds every record since the failed rewrite's switch,
				// so the snapshot is the state at that switch, as before.
				if err := j.BeginRewrite(); err != nil {
					t.Fatal(err)
				}
				if err := j.Wait(j.Append([]byte("e"))); err != nil {
					t.Fatal(err)
				}
				want = append(want, "e")
				if err := j.FinishRewrite([][]byte{[]byte("a"), []byte("b")}); err != nil {
					t.Fatalf("the rewrite after a failed one: %v", err)
				}
			}
			// A rewrite after it: a new switch, the whole state so far.
			if err := j.BeginRewrite(); err != nil {
				t.Fatal(err)
			}
			snap := slices.Clone(want)
			j.Append([]byte("f"))
			want = append(want, "f")
			recs := make([][]byte, len(snap))
			for i, r := range snap {
				recs[i] = []byte(r)
			}
			if err := j.FinishRewrite(recs); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			if names := dirNamesOf(t, dir); !slices.Equal(names, []string{LockFile, JournalFile, SnapshotFile}) {
				t.Fatalf("the directory holds %v", names)
			}
			j3, c, err := Open(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			defer j3.Close()
			if got := strs(c.Snapshot); !slices.Equal(got, snap) {
				t.Fatalf("the snapshot holds %q, want %q", got, snap)
			}
			wantLoaded(t, c, 0, want)
			if j3.RewriteDue() {
				t.Fatal("a fold is due after the rewrites")
			}
		})
	}
}

// TestBeginRewriteFailureContinues: a rewrite whose journal.next cannot
// be made (a full disk on its header's write) does not start: the
// journal goes on in its file, journal.next is removed, and a rewrite is
// due again only once the journal has grown by the threshold; that one
// succeeds. Before, the journal stopped.
func TestBeginRewriteFailureContinues(t *testing.T) {
	const at = 1 << 10
	dir, j := openNew(t, false)
	j.SetRewriteAt(at)
	want := []string{"a"}
	if err := j.Wait(j.Append([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	devFull(t, dir, NextFile)
	if err := j.BeginRewrite(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("BeginRewrite with journal.next on a full disk: %v", err)
	}
	if err := j.Wait(j.Append([]byte("b"))); err != nil {
		t.Fatalf("Wait after a failed BeginRewrite: %v", err)
	}
	want = append(want, "b")
	if _, err := os.Lstat(filepath.Join(dir, NextFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("journal.next is left: %v", err)
	}
	if j.RewriteDue() {
		t.Fatal("a rewrite is due again at once")
	}
	if grown := growUntilDue(t, j, &want); grown < at {
		t.Fatalf("a rewrite is due again after %d bytes, want at least %d", grown, at)
	}
	if err := j.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	snap := slices.Clone(want)
	j.Append([]byte("c"))
	want = append(want, "c")
	recs := make([][]byte, len(snap))
	for i, r := range snap {
		recs[i] = []byte(r)
	}
	if err := j.FinishRewrite(recs); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j2, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	wantLoaded(t, c, 0, want)
}

// TestRewriteRetryBackoff: each failed rewrite in a row doubles the
// growth of the journal after which the next is due (the threshold, then
// twice, four times it), so a disk that stays full costs a few attempts,
// not one per commit; a success resets it.
func TestRewriteRetryBackoff(t *testing.T) {
	const at = 1 << 10
	_, j := openNew(t, false)
	j.SetRewriteAt(at)
	var want []string
	j.SetRewriteHook(func(step string) error {
		if step == "snapshot-synced" {
			return errInjected
		}
		return nil
	})
	for i, min := range []int64{at, 2 * at, 4 * at} {
		if err := j.BeginRewrite(); err != nil {
			t.Fatal(err)
		}
		if err := j.FinishRewrite(nil); !errors.Is(err, errInjected) {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if grown := growUntilDue(t, j, &want); grown < min || grown > min+at {
			t.Fatalf("after %d failures a rewrite is due after %d bytes, want %d", i+1, grown, min)
		}
	}
	j.SetRewriteHook(nil)
	if err := j.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	// The state at the first attempt's switch: nothing (journal.next
	// holds every record since).
	if err := j.FinishRewrite(nil); err != nil {
		t.Fatal(err)
	}
	// A failure after the success waits for the threshold again.
	j.SetRewriteHook(func(step string) error {
		if step == "snapshot-synced" {
			return errInjected
		}
		return nil
	})
	if err := j.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	if err := j.FinishRewrite(nil); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	if grown := growUntilDue(t, j, &want); grown < at || grown > 2*at {
		t.Fatalf("after a success and a failure a rewrite is due after %d bytes, want %d", grown, at)
	}
}

func dirNamesOf(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestRewriteDirSyncFailureStops: a directory fsync that fails after a
// rewrite's rename (the snapshot's, or journal.next's) stops the journal
// (every Wait fails after it), as a flush's failed directory fsync does:
// Linux may not report the error again to a later fsync, so neither
// journal.next's name nor the new snapshot's could be known durable, and
// nothing more is acknowledged. The directory still opens with every
// record acknowledged. Before, the journal went on.
func TestRewriteDirSyncFailureStops(t *testing.T) {
	for _, op := range []string{"snapshot-dirsync", "journal-dirsync"} {
		t.Run(op, func(t *testing.T) {
			rf := newRewriteFaults(t)
			dir, j := openNew(t, false)
			j.Append([]byte("a"))
			if err := j.Wait(j.Append([]byte("b"))); err != nil {
				t.Fatal(err)
			}
			rf.arm(op)
			if err := j.BeginRewrite(); err != nil {
				t.Fatal(err)
			}
			n := j.Append([]byte("c"))
			if err := j.FinishRewrite([][]byte{[]byte("a"), []byte("b")}); !errors.Is(err, errInjected) {
				t.Fatalf("FinishRewrite: %v, want %v", err, errInjected)
			}
			rf.disarm()
			if err := j.Err(); !errors.Is(err, errInjected) {
				t.Fatalf("Err after a failed directory fsync: %v, want %v", err, errInjected)
			}
			if err := j.Wait(n); !errors.Is(err, errInjected) {
				t.Fatalf("Wait after a failed directory fsync: %v, want %v", err, errInjected)
			}
			if err := j.BeginRewrite(); !errors.Is(err, errInjected) {
				t.Fatalf("BeginRewrite after a failed directory fsync: %v, want %v", err, errInjected)
			}
			j.Close()
			j2, c, err := Open(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			defer j2.Close()
			got := strs(append(c.Snapshot, c.Journal...))
			if !slices.Equal(got, []string{"a", "b", "c"}) && !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("records after a failed directory fsync: %q", got)
			}
		})
	}
}

// TestSnapshotWriteFailureStopsFraming: once a snapshot's write failed
// (a full disk), its remaining records are not framed into memory: a
// snapshot of 48 MiB that fails at its first write allocates about its
// first piece (1 MiB), not the whole. Before, it framed every record
// into one buffer.
func TestSnapshotWriteFailureStopsFraming(t *testing.T) {
	dir, j := openNew(t, false)
	if err := j.Wait(j.Append([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	devFull(t, dir, SnapshotFile+".tmp")
	rec := bytes.Repeat([]byte{'r'}, 1<<20)
	if err := j.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	recs := make([][]byte, 48)
	for i := range recs {
		recs[i] = rec
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := j.FinishRewrite(recs); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("FinishRewrite: %v, want ENOSPC", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Fatalf("a snapshot that failed at its first write allocated %d MiB", got>>20)
	}
}
