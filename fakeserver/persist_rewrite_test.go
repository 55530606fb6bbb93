package fakeserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// TestDataDirRestartKeepsSmallJournal: a restart whose journal is small
// replays it and keeps appending to it, without writing a new snapshot;
// the state is the same after it and after a second restart.
func TestDataDirRestartKeepsSmallJournal(t *testing.T) {
	dir := t.TempDir()
	opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithoutListener()}
	srv := fakeserver.New(t, opts...)
	buildState(t, srv)
	before := srv.Snapshot()
	srv.Close()
	snap0 := readFile(t, dir, journal.SnapshotFile)
	jr0 := readFile(t, dir, journal.JournalFile)
	if len(jr0) <= 8 {
		t.Fatal("the journal holds no record")
	}

	srv2 := fakeserver.New(t, opts...)
	if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
	if !bytes.Equal(readFile(t, dir, journal.SnapshotFile), snap0) {
		t.Fatal("the restart rewrote the snapshot for a small journal")
	}
	if jr := readFile(t, dir, journal.JournalFile); len(jr) < len(jr0) || !bytes.Equal(jr[:len(jr0)], jr0) {
		t.Fatal("the restart rewrote the journal")
	}
	newAccount(t, srv2, "@dave")
	after := srv2.Snapshot()
	srv2.Close()
	if jr := readFile(t, dir, journal.JournalFile); len(jr) <= len(jr0) || !bytes.Equal(jr[:len(jr0)], jr0) {
		t.Fatal("the second run did not append to the journal")
	}
	srv3 := fakeserver.New(t, opts...)
	if diff := cmp.Diff(after, srv3.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after the second restart (-before +after):\n%s", diff)
	}
}

// TestDataDirJournalBounded: while the server runs, the journal is folded
// into a new snapshot once it outgrows the larger of the snapshot and the
// threshold, so it stays bounded; a restart then replays the snapshot and
// the journal's rest to the same state, and Idempotency-Key answers kept
// across the rewrites still replay.
func TestDataDirJournalBounded(t *testing.T) {
	dir := t.TempDir()
	const at = 8 << 10
	opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithoutListener(), fakeserver.WithDataDirRewriteAt(at)}
	srv := fakeserver.New(t, opts...)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	h := srv.Handler()
	maxJournal := 0
	var keyed []answer
	for i := range 300 {
		var hdr []string
		if i%3 == 0 {
			hdr = []string{"Idempotency-Key", "k" + strconv.Itoa(i)}
		}
		a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`, hdr...)
		if a.status != 201 {
			t.Fatalf("status %d", a.status)
		}
		if hdr != nil {
			keyed = append(keyed, a)
		}
		maxJournal = max(maxJournal, len(readFile(t, dir, journal.JournalFile)))
	}
	snap := len(readFile(t, dir, journal.SnapshotFile))
	if bound := max(at, snap) + 4<<10; maxJournal > bound {
		t.Fatalf("the journal grew to %d bytes (snapshot %d bytes, threshold %d)", maxJournal, snap, at)
	}
	if snap < 16<<10 {
		t.Fatalf("the snapshot is %d bytes: it was not rewritten while running", snap)
	}
	before := srv.Snapshot()
	srv.Close()
	srv2 := fakeserver.New(t, opts...)
	if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
	h2 := srv2.Handler()
	for i, a := range keyed {
		key := "k" + strconv.Itoa(3*i)
		b := serve(h2, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`, "Idempotency-Key", key)
		if b.status != a.status || !bytes.Equal(b.body, a.body) {
			t.Fatalf("key %s after restart: %d %s, want the kept answer %d %s", key, b.status, b.body, a.status, a.body)
		}
	}
}

// TestDataDirVersion1Refused: a directory of the JSON format (version 1)
// is refused with a message naming its version.
func TestDataDirVersion1Refused(t *testing.T) {
	dir := t.TempDir()
	v1 := []byte("CPJ\x01\x00\x00\x00\x00")
	if err := os.WriteFile(filepath.Join(dir, journal.JournalFile), v1, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fakeserver.Open(fakeserver.WithDataDir(dir), fakeserver.WithoutListener())
	if err == nil || !strings.Contains(err.Error(), "unknown format version 1 (this build reads versions 2 and 3)") {
		t.Fatalf("Open: %v, want unknown format version 1", err)
	}
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
