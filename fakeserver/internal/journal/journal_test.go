package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitForSyncedRecordDoesNotQueue: a Wait for a record an earlier
// flush already covered returns at once, even while another flush's fsync
// runs (before, it queued behind that fsync).
func TestWaitForSyncedRecordDoesNotQueue(t *testing.T) {
	j, _, err := Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Wait(j.Append([]byte("one"))); err != nil {
		t.Fatal(err)
	}
	inSync, release := make(chan struct{}), make(chan struct{})
	syncFile = func(f *os.File) error {
		close(inSync)
		<-release
		syncFile = datasync
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = datasync })
	two := j.Append([]byte("two"))
	led := make(chan error)
	go func() { led <- j.Wait(two) }()
	<-inSync // the flush of record 2 is in its fsync
	done := make(chan error)
	go func() { done <- j.Wait(1) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // failure detection only
		close(release)
		t.Fatal("Wait for a durable record waited for another record's fsync")
	}
	// Appends go on while the fsync runs.
	three := j.Append([]byte("three"))
	close(release)
	if err := <-led; err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(three); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommit: records appended while a flush runs share the next
// fsync.
func TestGroupCommit(t *testing.T) {
	j, _, err := Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	syncs := 0
	inSync, release := make(chan struct{}), make(chan struct{})
	syncFile = func(f *os.File) error {
		syncs++
		if syncs == 1 {
			close(inSync)
			<-release
		}
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = datasync })
	first := make(chan error)
	go func() { first <- j.Wait(j.Append([]byte("r1"))) }()
	<-inSync
	var last uint64
	for i := 0; i < 5; i++ {
		last = j.Append([]byte("rN"))
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	errs := make(chan error)
	for n := uint64(2); n <= last; n++ {
		go func() { errs <- j.Wait(n) }()
	}
	for n := uint64(2); n <= last; n++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if syncs != 2 {
		t.Fatalf("%d fsyncs for a record and a batch of 5, want 2", syncs)
	}
}

// TestAppendParts: parts appended together are one record, their
// concatenation, between the records around them.
func TestAppendParts(t *testing.T) {
	dir := t.TempDir()
	j, _, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	j.Append([]byte("a"))
	j.AppendParts([][]byte{[]byte("bc"), nil, []byte("def")})
	j.AppendParts([][]byte{[]byte("g")})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, c, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var got []string
	for _, p := range c.Journal {
		got = append(got, string(p))
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "bcdef" || got[2] != "g" || c.Dropped != 0 {
		t.Fatalf("records %q (dropped %d)", got, c.Dropped)
	}
}

// TestRewriteErrorStopsJournal: a rewrite whose fsync of the journal's
// own file fails (journal.next, fsynced before the snapshot even with
// noSync) stops the journal (every Wait fails after it), as a flush's
// failure does, and the directory still opens with every record (the
// old snapshot, the old journal and the new one). A failure of the
// snapshot's own write goes on instead (TestRewriteFailureContinues).
func TestRewriteErrorStopsJournal(t *testing.T) {
	dir := t.TempDir()
	j, _, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(j.Append([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("disk full")
	j.SetSync(func(*os.File) error { return fail })
	if err := j.StartRewrite(func(emit func([]byte)) { emit([]byte("a")) }); err != nil {
		t.Fatal(err)
	}
	n := j.Append([]byte("b")) // to the new journal
	j.WaitRewrite()
	if err := j.Wait(n); !errors.Is(err, fail) {
		t.Fatalf("Wait after a rewrite whose journal fsync failed: %v, want %v", err, fail)
	}
	if err := j.Err(); !errors.Is(err, fail) {
		t.Fatalf("Err: %v, want %v", err, fail)
	}
	j.Close()
	j2, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	var got []string
	for _, p := range append(c.Snapshot, c.Journal...) {
		got = append(got, string(p))
	}
	if !slices.Equal(got, []string{"a", "b"}) && !slices.Equal(got, []string{"a"}) {
		t.Fatalf("records after a failed rewrite: %q", got)
	}
	if !j2.RewriteDue() {
		t.Fatal("two journals found and no fold due")
	}
}

// TestOpenRefusesMixedGenerations: a journal whose generation does not
// follow the snapshot's (a snapshot restored beside another run's
// journal) is refused with a message, not replayed.
func TestOpenRefusesMixedGenerations(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SnapshotFile), Encode(func(emit func([]byte)) { emit([]byte("s")) }), 0o600); err != nil {
		t.Fatal(err)
	}
	jr := binary.LittleEndian.AppendUint32([]byte("CPJ\x03"), 5)
	if err := os.WriteFile(filepath.Join(dir, JournalFile), frame(jr, []byte("x")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(dir, false)
	if err == nil || !strings.Contains(err.Error(), "journal (generation 5) does not follow snapshot (generation 0)") {
		t.Fatalf("Open: %v, want a generation mismatch", err)
	}
}

// TestHooksCleared: SetRewriteHook(nil) and SetSync(nil) restore the
// default behaviour (they stored a pointer to a nil func, and the next
// rewrite step or fsync panicked).
func TestHooksCleared(t *testing.T) {
	j, _, err := Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.SetRewriteHook(func(string) error { return nil })
	j.SetRewriteHook(nil)
	j.SetSync(nil)
	if err := j.Wait(j.Append([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	if err := j.StartRewrite(func(emit func([]byte)) { emit([]byte("a")) }); err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(j.Append([]byte("b"))); err != nil {
		t.Fatal(err)
	}
}

// encodeRecs is a journal file holding recs, as Open would read it.
func encodeRecs(recs ...string) []byte {
	return Encode(func(emit func([]byte)) {
		for _, r := range recs {
			emit([]byte(r))
		}
	})
}

// openFile opens a directory whose journal file holds data.
func openFile(t *testing.T, data []byte) (string, *Journal, *Contents) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, JournalFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	j, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return dir, j, c
}

func strs(recs [][]byte) []string {
	var s []string
	for _, r := range recs {
		s = append(s, string(r))
	}
	return s
}

// TestZeroTailIsTheEnd: a journal whose records are followed by zeros
// (the preallocated rest of the file) loads exactly its records, nothing
// dropped (before, each zero header read as an empty record: the CRC-32C
// of nothing is 0).
func TestZeroTailIsTheEnd(t *testing.T) {
	data := append(encodeRecs("one", "two"), make([]byte, 5000)...)
	_, _, c := openFile(t, data)
	wantLoaded(t, c, 0, []string{"one", "two"})
}

// tornRecord is a record frame cut short: a header announcing 100 bytes
// whose checksum is of nothing written, then 10 of them.
func tornRecord() []byte {
	b := binary.LittleEndian.AppendUint32(nil, 100)
	b = binary.LittleEndian.AppendUint32(b, 0xdeadbeef)
	return append(b, "0123456789"...)
}

// TestTornRecordThenZeros: a record torn inside the preallocated zeros
// ends the journal at the last complete record; the torn bytes, not the
// zeros after them, are reported dropped.
func TestTornRecordThenZeros(t *testing.T) {
	data := slices.Concat(encodeRecs("one", "two"), tornRecord(), make([]byte, 5000))
	_, _, c := openFile(t, data)
	wantLoaded(t, c, int64(len(tornRecord())), []string{"one", "two"})
}

// TestTornTailNotReadBack: after a load that dropped a torn tail, new
// records written where the tail was, and a crash (the files copied
// while the journal is open), the journal reads back its records and the
// new ones only: no byte of the old tail, although the old tail holds a
// well-framed record just past where the new records end.
func TestTornTailNotReadBack(t *testing.T) {
	ghost := encodeRecs("ghost")[8:]
	// A torn record whose body holds, 30 bytes past its start (where the
	// new record "abcdefghijklmnopqrstuv" ends: 8 + 22), a whole one.
	torn := binary.LittleEndian.AppendUint32(nil, 1000)
	torn = binary.LittleEndian.AppendUint32(torn, 0xdeadbeef)
	torn = append(torn, make([]byte, 22)...)
	torn = append(torn, ghost...)
	data := slices.Concat(encodeRecs("one"), torn, make([]byte, 100))
	dir, j, c := openFile(t, data)
	if c.Dropped == 0 {
		t.Fatal("the torn record was not dropped")
	}
	if err := j.Wait(j.Append([]byte("abcdefghijklmnopqrstuv"))); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashed, JournalFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	j2, c2, err := Open(crashed, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	wantLoaded(t, c2, 0, []string{"one", "abcdefghijklmnopqrstuv"})
}

// TestPreallocated: the journal file runs ahead of its records with
// zeros, from Open, past a flush bigger than the zeros left, and after a
// Rewrite; every reopen reads exactly the records.
func TestPreallocated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	fileSize := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	j, _, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := fileSize(); n < 8+minPrealloc {
		t.Fatalf("a new journal file is %d bytes, want it preallocated (≥ %d)", n, 8+minPrealloc)
	}
	big := bytes.Repeat([]byte("x"), 3*minPrealloc)
	j.Append([]byte("small"))
	if err := j.Wait(j.Append(big)); err != nil {
		t.Fatal(err)
	}
	logical := int64(8 + 8 + 5 + 8 + len(big))
	if n := fileSize(); n <= logical {
		t.Fatalf("the journal file is %d bytes for %d of records: not extended ahead", n, logical)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Journal) != 2 || string(c.Journal[0]) != "small" || !bytes.Equal(c.Journal[1], big) || c.Dropped != 0 {
		t.Fatalf("reopened: %d records, dropped %d", len(c.Journal), c.Dropped)
	}
	if err := j.Rewrite(func(emit func([]byte)) { emit([]byte("state")) }); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(); n <= 8 {
		t.Fatalf("the emptied journal file is %d bytes, want it preallocated", n)
	}
	if err := j.Wait(j.Append([]byte("after"))); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, c, err = Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if got := strs(c.Journal); !slices.Equal(got, []string{"after"}) || len(c.Snapshot) != 1 || c.Dropped != 0 {
		t.Fatalf("after the rewrite: journal %q, %d snapshot records, dropped %d", got, len(c.Snapshot), c.Dropped)
	}
}

// TestEmptyRecordRefused: an empty record would read as the journal's
// end, so appending one panics.
func TestEmptyRecordRefused(t *testing.T) {
	j, _, err := Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, f := range []func(){func() { j.Append(nil) }, func() { j.AppendParts([][]byte{nil, {}}) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("an empty record was appended")
				}
			}()
			f()
		}()
	}
}

// fileOf is the named file of dir (t fails without it).
func fileOf(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// copyDir copies dir's files (its lock aside) to a new directory, as a
// kill -9 would leave them, and returns it.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name() == LockFile {
			continue
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), fileOf(t, dir, e.Name()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// preallocated reports whether the file holds zeros after its records
// (and nothing else).
func preallocated(t *testing.T, b []byte) bool {
	t.Helper()
	_, good, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return good < int64(len(b)) && tornTail(b, good) == 0
}

// TestRewriteWhilePreallocated: a rewrite while running (StartRewrite)
// appends to a preallocated journal.next; a crash at each of its steps
// (the files copied while the step is held, after a record was made
// durable in it) loads every record exactly once, nothing dropped; each
// copy then appends and loads again.
func TestRewriteWhilePreallocated(t *testing.T) {
	dir := t.TempDir()
	j, _, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b"}
	j.Append([]byte("a"))
	if err := j.Wait(j.Append([]byte("b"))); err != nil {
		t.Fatal(err)
	}
	type crash struct {
		step string
		dir  string
		want []string
	}
	var crashes []crash
	j.SetRewriteHook(func(step string) error {
		rec := "c-" + step
		if err := j.Wait(j.Append([]byte(rec))); err != nil {
			return err
		}
		want = append(want, rec)
		if b, err := os.ReadFile(filepath.Join(dir, NextFile)); err == nil && !preallocated(t, b) {
			t.Errorf("at %s: journal.next (%d bytes) is not preallocated", step, len(b))
		}
		crashes = append(crashes, crash{step, copyDir(t, dir), slices.Clone(want)})
		return nil
	})
	if err := j.StartRewrite(func(emit func([]byte)) { emit([]byte("a")); emit([]byte("b")) }); err != nil {
		t.Fatal(err)
	}
	j.WaitRewrite()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if len(crashes) != 4 {
		t.Fatalf("%d steps held, want 4", len(crashes))
	}
	if b := fileOf(t, dir, JournalFile); !preallocated(t, b) {
		t.Fatalf("the journal after the rewrite (%d bytes) is not preallocated", len(b))
	}
	for _, cr := range crashes {
		t.Run(cr.step, func(t *testing.T) {
			j, c, err := Open(cr.dir, false)
			if err != nil {
				t.Fatal(err)
			}
			wantLoaded(t, c, 0, cr.want)
			if err := j.Wait(j.Append([]byte("after"))); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			j, c, err = Open(cr.dir, false)
			if err != nil {
				t.Fatalf("reopened: %v", err)
			}
			defer j.Close()
			wantLoaded(t, c, 0, append(cr.want, "after"))
		})
	}
}

// journalOf is a journal file of version v and generation gen holding
// recs, then tail.
func journalOf(v byte, gen uint32, tail []byte, recs ...string) []byte {
	b := binary.LittleEndian.AppendUint32([]byte{'C', 'P', 'J', v}, gen)
	for _, r := range recs {
		b = frame(b, []byte(r))
	}
	return append(b, tail...)
}

// TestTornTailInNext: a crash during a rewrite left journal.next with a
// torn record over its preallocated zeros: Open loads the journal's
// records and journal.next's complete ones, counts the torn bytes
// dropped, cuts them (zeros after journal.next's records, nothing else),
// and appends after them; a reopen reads no byte of the tail.
func TestTornTailInNext(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		SnapshotFile: Encode(func(emit func([]byte)) { emit([]byte("s")) }),
		JournalFile:  journalOf(Version, 0, make([]byte, 3000), "a"),
		NextFile:     journalOf(Version, 1, slices.Concat(tornRecord(), make([]byte, 3000)), "c"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	j, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wantLoaded(t, c, int64(len(tornRecord())), []string{"s", "a", "c"})
	if !j.RewriteDue() {
		t.Fatal("two journals and no fold due")
	}
	if b := fileOf(t, dir, NextFile); !preallocated(t, b) {
		t.Fatal("journal.next holds more than its records and zeros after the load")
	}
	if err := j.Wait(j.Append([]byte("abcdefghijklmnopqrstuv"))); err != nil {
		t.Fatal(err)
	}
	j2, c2, err := Open(copyDir(t, dir), false)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	wantLoaded(t, c2, 0, []string{"s", "a", "c", "abcdefghijklmnopqrstuv"})
	j.Close()
}

// TestTwoJournalsLogicalEnd: a journal followed by a non-empty
// journal.next is corrupt when it has a torn tail (non-zero bytes after
// its records), not when zeros follow them (preallocated).
func TestTwoJournalsLogicalEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail []byte
		ok   bool
	}{
		{"zeros", make([]byte, 3000), true},
		{"torn", slices.Concat(tornRecord(), make([]byte, 3000)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, JournalFile), journalOf(Version, 0, tc.tail, "a"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, NextFile), journalOf(Version, 1, make([]byte, 100), "b"), 0o600); err != nil {
				t.Fatal(err)
			}
			j, c, err := Open(dir, false)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "is corrupt at byte 17") {
					t.Fatalf("Open: %v, want the torn journal refused", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			wantLoaded(t, c, 0, []string{"a", "b"})
		})
	}
}

// TestVersion3Directory: a directory of the previous format (version 3:
// files never preallocated) loads, is appended to as before (its journal
// stays a version 3 file without zeros, which a version 3 reader reads),
// asks for a fold, and the fold writes version 4 files, the journal
// preallocated.
func TestVersion3Directory(t *testing.T) {
	dir := t.TempDir()
	snap := journalOf(3, 1, nil, "s")
	if err := os.WriteFile(filepath.Join(dir, SnapshotFile), snap, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, JournalFile), journalOf(3, 1, nil, "a", "b"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wantLoaded(t, c, 0, []string{"s", "a", "b"})
	if !j.RewriteDue() {
		t.Fatal("a version 3 directory and no fold due")
	}
	if err := j.Wait(j.Append([]byte("c"))); err != nil {
		t.Fatal(err)
	}
	if b, want := fileOf(t, dir, JournalFile), journalOf(3, 1, nil, "a", "b", "c"); !bytes.Equal(b, want) {
		t.Fatalf("the version 3 journal after an append:\n%x\nwant\n%x", b, want)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, c, err = Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wantLoaded(t, c, 0, []string{"s", "a", "b", "c"})
	if err := j.Rewrite(func(emit func([]byte)) {
		for _, r := range []string{"s", "a", "b", "c"} {
			emit([]byte(r))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if j.RewriteDue() {
		t.Fatal("a fold due after the fold")
	}
	if err := j.Wait(j.Append([]byte("d"))); err != nil {
		t.Fatal(err)
	}
	j.Close()
	for _, name := range []string{SnapshotFile, JournalFile} {
		if v := fileOf(t, dir, name)[3]; v != Version {
			t.Fatalf("%s is of version %d after the fold, want %d", name, v, Version)
		}
	}
	if !preallocated(t, fileOf(t, dir, JournalFile)) {
		t.Fatal("the folded journal is not preallocated")
	}
	j, c, err = Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	wantLoaded(t, c, 0, []string{"s", "a", "b", "c", "d"})
	if j.RewriteDue() {
		t.Fatal("a fold still due after it ran")
	}
}

// TestVersion4Header: the files this package writes say version 4 (a
// version 3 reader, which would read preallocated zeros as empty
// records, refuses them).
func TestVersion4Header(t *testing.T) {
	if Version != 4 {
		t.Fatalf("Version %d, want 4", Version)
	}
	dir := t.TempDir()
	j, _, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Rewrite(func(emit func([]byte)) { emit([]byte("s")) }); err != nil {
		t.Fatal(err)
	}
	j.Close()
	for _, name := range []string{SnapshotFile, JournalFile} {
		if b := fileOf(t, dir, name); string(b[:4]) != "CPJ\x04" {
			t.Fatalf("%s starts %q, want CPJ\\x04", name, b[:4])
		}
	}
	if _, err := readHeader([]byte("CPJ\x05\x00\x00\x00\x00")); err == nil || !strings.Contains(err.Error(), "unknown format version 5 (this build reads versions 2 to 4)") {
		t.Fatalf("version 5: %v", err)
	}
}

// TestNewJournalChunk: a journal file that replaces another (Rewrite's
// new journal, a rewrite's journal.next at its first flush) starts with a
// chunk of zeros the size the journal it replaces had reached, not the
// smallest one, within maxPrealloc.
func TestNewJournalChunk(t *testing.T) {
	dir, j := openNew(t, true)
	rec := bytes.Repeat([]byte("r"), 1000)
	grow := func() int64 {
		var n uint64
		for range 300 {
			n = j.Append(rec)
		}
		if err := j.Wait(n); err != nil {
			t.Fatal(err)
		}
		return 300 * 1008
	}
	size := func(name string) int64 {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	grown := 8 + grow()
	if err := j.Rewrite(func(emit func([]byte)) { emit([]byte("s")) }); err != nil {
		t.Fatal(err)
	}
	if n := size(JournalFile); n < 8+grown {
		t.Fatalf("Rewrite's journal is %d bytes after a journal of %d, want ≥ %d", n, grown, 8+grown)
	}
	grown = 8 + grow()
	if err := j.StartRewrite(func(emit func([]byte)) { emit([]byte("s")) }); err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(j.Append([]byte("next"))); err != nil {
		t.Fatal(err)
	}
	j.WaitRewrite()
	if n := size(JournalFile); n < 8+grown {
		t.Fatalf("the rewrite's journal.next is %d bytes after a journal of %d, want ≥ %d", n, grown, 8+grown)
	}
}

// TestVersion3ZerosThenRecords: a version 3 binary read a zero length as
// an empty record (the CRC-32C of nothing is 0) and appended after it, so
// a version 3 journal can hold zeros followed by acknowledged records (a
// machine crash left zeros at its end, then the server ran on). Opening it
// now must keep those records: a zero length ends only a version 4
// journal (found in review: the upgrade dropped them as a torn tail).
func TestVersion3ZerosThenRecords(t *testing.T) {
	data := journalOf(3, 0, slices.Concat(make([]byte, 16), journalOf(3, 0, nil, "c")[8:]), "a", "b")
	dir, j, c := openFile(t, data)
	wantLoaded(t, c, 0, []string{"a", "b", "", "", "c"})
	if err := j.Wait(j.Append([]byte("d"))); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j2, c2, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if got := strs(c2.Journal); !slices.Equal(got, []string{"a", "b", "", "", "c", "d"}) {
		t.Fatalf("reopened: %q", got)
	}
}

// TestFlushSyncsOnlyWithinDurableSize: a flush's fdatasync commits no
// file size, so every flush must write inside the size the last full
// fsync (an extension's, or a cut's) made durable; and an extension whose
// fsync fails stops the journal. Found in review: removing the
// extension's fsync failed no test.
func TestFlushSyncsOnlyWithinDurableSize(t *testing.T) {
	var mu sync.Mutex
	durable := map[string]int64{} // file name: size at its last full fsync
	size := func(f *os.File) int64 {
		st, err := f.Stat()
		if err != nil {
			t.Error(err)
		}
		return st.Size()
	}
	var failFull atomic.Bool
	fullSyncFile = func(f *os.File) error {
		if failFull.Load() {
			return errors.New("disk on fire")
		}
		mu.Lock()
		durable[f.Name()] = size(f)
		mu.Unlock()
		return f.Sync()
	}
	t.Cleanup(func() { fullSyncFile = (*os.File).Sync })
	checked := 0
	syncFile = func(f *os.File) error {
		mu.Lock()
		defer mu.Unlock()
		if d, ok := durable[f.Name()]; !ok || size(f) != d {
			t.Errorf("fdatasync of %s at size %d; its durable size is %d", f.Name(), size(f), d)
		}
		checked++
		return datasync(f)
	}
	t.Cleanup(func() { syncFile = datasync })
	dir, j := openNew(t, false)
	rec := bytes.Repeat([]byte{7}, 10_000)
	for i := 0; i < 100; i++ { // 1 MB: past several extensions
		if err := j.Wait(j.Append(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("%d fdatasyncs checked", checked)
	}
	// Reopened (as after a kill -9, when an extension's size may never
	// have been fsynced): Open makes the preallocated size durable before
	// the first flush relies on it.
	j.Close()
	mu.Lock()
	clear(durable)
	mu.Unlock()
	j, _, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Wait(j.Append([]byte("x"))); err != nil { // within the zeros: no extension
		t.Fatal(err)
	}
	failFull.Store(true)
	var werr error
	for i := 0; i < 200 && werr == nil; i++ { // until an extension is due
		werr = j.Wait(j.Append(rec))
	}
	if werr == nil || !strings.Contains(werr.Error(), "disk on fire") {
		t.Fatalf("an extension's failed fsync: Wait = %v", werr)
	}
	if err := j.Wait(j.Append(rec)); err == nil {
		t.Fatal("the journal went on after a failed extension")
	}
}

// TestRetiredFileNotPreallocated: the records a rewrite's switch left for
// the retired journal are its last: the flush that writes them past its
// zeros grows it by their size, without a chunk of zeros never to be used
// (and the fsync of one) inside a flush every waiter waits for (found in
// review).
func TestRetiredFileNotPreallocated(t *testing.T) {
	dir, j := openNew(t, false)
	rec := bytes.Repeat([]byte{7}, 10_000)
	j.mu.Lock()
	alloc := j.f.alloc
	j.mu.Unlock()
	var last uint64
	for n := int64(8); n <= alloc; n += int64(8 + len(rec)) { // appended, not flushed: past the zeros
		last = j.Append(rec)
	}
	if err := j.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	defer j.AbortRewrite() // before Close, which waits for a rewrite to end
	if err := j.Wait(last); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	want := 8 + int64(last)*int64(8+len(rec))
	if st.Size() != want {
		t.Fatalf("the retired journal is %d bytes; its records end at %d", st.Size(), want)
	}
}

// wantLoaded fails t unless Open read want (the snapshot's records, then
// the journals') and dropped bytes of torn tail.
func wantLoaded(t *testing.T, c *Contents, dropped int64, want []string) {
	t.Helper()
	if got := strs(slices.Concat(c.Snapshot, c.Journal)); !slices.Equal(got, want) || c.Dropped != dropped {
		t.Fatalf("loaded %q, dropped %d; want %q, dropped %d", got, c.Dropped, want, dropped)
	}
}

// openNew opens a journal in a new directory, closed when t ends.
func openNew(t *testing.T, noSync bool) (string, *Journal) {
	t.Helper()
	dir := t.TempDir()
	j, _, err := Open(dir, noSync)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return dir, j
}
