package fakeserver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	jr0 := readJournal(t, dir)
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
	if jr := readJournal(t, dir); len(jr) < len(jr0) || !bytes.Equal(jr[:len(jr0)], jr0) {
		t.Fatal("the restart rewrote the journal")
	}
	newAccount(t, srv2, "@dave")
	after := srv2.Snapshot()
	srv2.Close()
	if jr := readJournal(t, dir); len(jr) <= len(jr0) || !bytes.Equal(jr[:len(jr0)], jr0) {
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
		maxJournal = max(maxJournal, len(readJournal(t, dir)))
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
	if err == nil || !strings.Contains(err.Error(), "unknown format version 1 (this build reads versions 2 to 4)") {
		t.Fatalf("Open: %v, want unknown format version 1", err)
	}
}

// readJournal is dir's journal up to its logical end (without the
// preallocated zeros after its records).
func readJournal(t *testing.T, dir string) []byte {
	t.Helper()
	b := readFile(t, dir, journal.JournalFile)
	_, good, err := journal.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:good]
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteHeld starts a server on dir that rewrites its snapshot once its
// journal passes 8 KiB, and creates transfers from @alice to @bob until a
// rewrite's background phase reaches step, where the hook holds it until
// the returned release is called. The creates run in a goroutine: a
// rewrite that held the server's lock would stop them.
func rewriteHeld(t *testing.T, dir, step string) (srv *fakeserver.Server, alice party, release func()) {
	t.Helper()
	srv = fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithoutListener(), fakeserver.WithDataDirRewriteAt(8<<10))
	alice = newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	reached, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fakeserver.SetRewriteHook(srv, func(s string) error {
		if s == step {
			once.Do(func() {
				close(reached)
				<-held
			})
		}
		return nil
	})
	h := srv.Handler()
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for i := 0; ; i++ {
			select {
			case <-reached:
				return
			default:
			}
			if i == 2000 {
				errs <- errors.New("no rewrite after 2,000 creates")
				return
			}
			if a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`); a.status != 201 {
				errs <- fmt.Errorf("create: status %d", a.status)
				return
			}
		}
	}()
	var relOnce sync.Once
	release = func() { relOnce.Do(func() { close(held) }) }
	t.Cleanup(func() { // before the server's Close (cleanups run last first)
		release()
		for range errs { // the creates have ended
		}
	})
	select {
	case <-reached:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(60 * time.Second): // failure detection only
		t.Fatalf("the rewrite did not reach %q", step)
	}
	return srv, alice, release
}

// TestDataDirRewriteDoesNotStall: while a rewrite's snapshot is being
// written and fsynced (held at its first background step), a create is
// answered and is durable; before, the whole rewrite ran under the
// server's lock and every request waited for it.
func TestDataDirRewriteDoesNotStall(t *testing.T) {
	dir := t.TempDir()
	srv, alice, release := rewriteHeld(t, dir, "switched")
	done := make(chan answer, 1)
	go func() {
		done <- serve(srv.Handler(), "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`)
	}()
	select {
	case a := <-done:
		if a.status != 201 {
			t.Fatalf("create during the rewrite: status %d", a.status)
		}
	case <-time.After(10 * time.Second): // failure detection only
		release()
		t.Fatal("a create waited for the snapshot's write")
	}
	release()
	before := srv.Snapshot()
	srv.Close()
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithoutListener())
	if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
}

// TestDataDirRewriteCrash: a kill -9 at each step of a rewrite's
// background phase (after the switch, after a chunk of the fuzzy
// snapshot, once it is encoded, past its barrier, and the file steps) (the files as they stand while the step is held,
// copied to a new directory) leaves a directory that loads to exactly
// the acknowledged state, creates answered after the switch included;
// the loader leaves one snapshot and one journal, and a second restart
// loads the same.
func TestDataDirRewriteCrash(t *testing.T) {
	for _, step := range []string{"switched", "chunk", "encoded", "barrier", "snapshot-synced", "snapshot-renamed", "journal-renamed"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			srv, alice, release := rewriteHeld(t, dir, step)
			for range 5 { // answered while the rewrite is held: in the new journal
				if a := serve(srv.Handler(), "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`); a.status != 201 {
					t.Fatalf("status %d", a.status)
				}
			}
			want := srv.Snapshot() // durable when it returns
			crashed := t.TempDir()
			copyDataDir(t, dir, crashed)
			release()

			opts := []fakeserver.Option{fakeserver.WithDataDir(crashed), fakeserver.WithoutListener()}
			srv2 := fakeserver.New(t, opts...)
			if diff := cmp.Diff(want, srv2.Snapshot(), restartOptions); diff != "" {
				t.Fatalf("state after a crash at %s (-acknowledged +loaded):\n%s", step, diff)
			}
			srv2.Close()
			if names := dirNames(t, crashed); !slices.Equal(names, []string{journal.LockFile, journal.JournalFile, journal.SnapshotFile}) {
				t.Fatalf("the directory after the restart holds %v", names)
			}
			srv3 := fakeserver.New(t, opts...)
			if diff := cmp.Diff(want, srv3.Snapshot(), restartOptions); diff != "" {
				t.Fatalf("state after a second restart (-acknowledged +loaded):\n%s", diff)
			}
		})
	}
}

// copyDataDir copies the files of data directory from (its lock aside)
// to to, as a kill -9 would leave them.
func copyDataDir(t *testing.T, from, to string) {
	t.Helper()
	for _, name := range dirNames(t, from) {
		if name == journal.LockFile {
			continue
		}
		if err := os.WriteFile(filepath.Join(to, name), readFile(t, from, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
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

// TestDataDirOlderVersionsLoad: a directory an older format wrote
// (testdata/datadir-v2: buildState's state on main at 789665b;
// testdata/datadir-v3: buildState's state on main at 369825b, before the
// preallocated journal; each with the direct API's Snapshot of it as
// JSON) loads to that state, comes out rewritten in the current format
// (version 4, the journal preallocated), is appended to, and loads the
// same again.
func TestDataDirOlderVersionsLoad(t *testing.T) {
	for _, v := range []byte{2, 3} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			src := filepath.Join("testdata", fmt.Sprintf("datadir-v%d", v))
			dir := t.TempDir()
			for _, name := range []string{journal.SnapshotFile, journal.JournalFile} {
				if readFile(t, src, name)[3] != v {
					t.Fatalf("testdata %s is not of version %d", name, v)
				}
			}
			copyDataDir(t, src, dir)
			want := readFile(t, src, "want.json")
			opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithoutListener()}
			var after fakeserver.Snapshot
			for run := range 3 {
				srv := fakeserver.New(t, opts...)
				if run < 2 {
					got, err := json.MarshalIndent(srv.Snapshot(), "", " ")
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("run %d: the version %d directory loaded to\n%s\nwant\n%s", run, v, got, want)
					}
				}
				switch run {
				case 1:
					newAccount(t, srv, "@dave")
					after = srv.Snapshot()
				case 2:
					if diff := cmp.Diff(after, srv.Snapshot(), restartOptions); diff != "" {
						t.Fatalf("state after an append and a restart (-before +after):\n%s", diff)
					}
				}
				srv.Close()
				for _, name := range []string{journal.SnapshotFile, journal.JournalFile} {
					if v := readFile(t, dir, name)[3]; v != journal.Version {
						t.Fatalf("run %d: %s is of version %d after a start, want %d", run, name, v, journal.Version)
					}
				}
				if jr := readFile(t, dir, journal.JournalFile); len(readJournal(t, dir)) >= len(jr) {
					t.Fatalf("run %d: the journal (%d bytes) is not preallocated", run, len(jr))
				}
			}
		})
	}
}
