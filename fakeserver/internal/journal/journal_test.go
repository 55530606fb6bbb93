package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		syncFile = (*os.File).Sync
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = (*os.File).Sync })
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
	t.Cleanup(func() { syncFile = (*os.File).Sync })
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

// TestRewriteErrorStopsJournal: an error in a rewrite's background phase
// stops the journal (every Wait fails after it), and the directory still
// opens with every record (the old snapshot, the old journal and the new
// one).
func TestRewriteErrorStopsJournal(t *testing.T) {
	dir := t.TempDir()
	j, _, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(j.Append([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("disk full")
	j.SetRewriteHook(func(step string) error {
		if step == "snapshot-synced" {
			return fail
		}
		return nil
	})
	if err := j.StartRewrite(func(emit func([]byte)) { emit([]byte("a")) }); err != nil {
		t.Fatal(err)
	}
	n := j.Append([]byte("b")) // to the new journal
	_ = j.Wait(n)              // durable, or failed by the rewrite
	j.Close()                  // waits for the rewrite
	if err := j.Wait(n + 1); !errors.Is(err, fail) {
		t.Fatalf("Wait after a failed rewrite: %v, want %v", err, fail)
	}
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
