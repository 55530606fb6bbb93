package fakeserver_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
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

// buildState makes one of every kind of state the data directory keeps:
// accounts (with and without encryption keys, KYC changed, a domain),
// keys (issued, revoked, used), agents with policies, balances on both
// networks and in both assets, transfers pending, confirmed and failed,
// their sealed notes, and held payments pending, approved, rejected and
// expired.
func buildState(t *testing.T, srv *fakeserver.Server) {
	t.Helper()
	ctx := context.Background()
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	carol := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@carol"})
	if err := srv.SetKYC(carol.info.AccountID, confpay.KYCPending); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterDomain(bob.info.AccountID, "bob.example"); err != nil {
		t.Fatal(err)
	}
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "ETH", "2")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkLive, "USDG", "50")
	ac := newClient(t, srv, alice.test(), nil, noRetry)
	send(t, ac, "@bob", "10")
	send(t, ac, "bob.example", "0.5", withAsset("ETH"))
	srv.Advance(2 * time.Second)
	failed := send(t, ac, "@bob", "3")
	if err := srv.FailTransfer(failed.TransferID); err != nil {
		t.Fatal(err)
	}
	send(t, ac, "0x000000000000000000000000000000000000dEaD", "1", public(), withMemo("external"))
	send(t, newClient(t, srv, alice.live(), nil, noRetry), "@bob", "5", withMemo("live"))
	if _, err := ac.Transfers.List(ctx, nil); err != nil { // seals the notes
		t.Fatal(err)
	}
	revoked, err := srv.IssueKey(bob.info.AccountID, confpay.NetworkTest, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.RevokeKey(revoked.KeyID); err != nil {
		t.Fatal(err)
	}

	agent, err := ac.Agents.Create(ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("100"), PerTransactionLimitUSDG: limit("50"), HITLThresholdUSDG: limit("5"),
		AllowedRecipients: []string{"@bob", "bob.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	fundOn(t, srv, agent.AccountID, confpay.NetworkTest, "USDG", "200")
	bot := newClient(t, srv, newKey(t, srv, agent.AccountID), nil, noRetry)
	send(t, bot, "@bob", "2") // under the threshold: submitted, in the window
	expired := hold(t, bot, "@bob", "6")
	srv.Advance(2 * time.Hour) // the approval window (1 h) closes
	_ = expired
	approved := hold(t, bot, "@bob", "7", withMemo("approve me"))
	rejected := hold(t, bot, "@bob", "8")
	hold(t, bot, "bob.example", "9") // stays pending
	if _, err := ac.Agents.Approve(ctx, approved.TransactionID); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Agents.Reject(ctx, rejected.TransactionID); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Agents.ListPending(ctx); err != nil { // seals the held notes
		t.Fatal(err)
	}
}

// TestDataDirRestart: every kind of state comes back after a restart,
// exactly (the direct API's full snapshot, the clock, each held payment),
// and the restored timers still run: the pending transfers confirm and
// the pending held payment expires on the restored clock.
//
// With rewrites mid-load (a fuzzy snapshot started at every commit while
// none runs, so that chunks, the journal since the switch, aborted
// rewrites at Close and folds at Open all take part) the same holds.
func TestDataDirRestart(t *testing.T) {
	t.Run("journal", func(t *testing.T) { testDataDirRestart(t) })
	t.Run("rewrites", func(t *testing.T) { testDataDirRestart(t, fakeserver.WithDataDirRewriteAlways()) })
}

func testDataDirRestart(t *testing.T, extra ...fakeserver.Option) {
	dir := t.TempDir()
	opts := append([]fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithApprovalWindow(time.Hour)}, extra...)
	srv := fakeserver.New(t, opts...)
	buildState(t, srv)
	before, now := srv.Snapshot(), srv.Now()
	heldBefore, err := srv.HeldPayments("@alice/bot", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if len(extra) > 0 {
		if gen := binary.LittleEndian.Uint32(readFile(t, dir, journal.SnapshotFile)[4:8]); gen < 3 {
			t.Fatalf("the snapshot is of generation %d: not rewritten while loading", gen)
		}
	}

	srv2 := fakeserver.New(t, opts...)
	if srv2.DataDirWasEmpty() {
		t.Fatal("DataDirWasEmpty after a restart with state")
	}
	if !srv2.Now().Equal(now) {
		t.Fatalf("the clock restarted at %v, want %v", srv2.Now(), now)
	}
	if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
	heldAfter, err := srv2.HeldPayments("@alice/bot", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(heldBefore, heldAfter, snapshotOptions); diff != "" {
		t.Fatalf("held payments after restart (-before +after):\n%s", diff)
	}
	if before.Networks[confpay.NetworkTest].Pending == 0 {
		t.Fatal("the scenario left no pending transfer")
	}
	srv2.Advance(time.Hour)
	after := srv2.Snapshot()
	for n, ns := range after.Networks {
		if ns.Pending != 0 {
			t.Errorf("%s: %d transfers still pending after the restored confirmations were due", n, ns.Pending)
		}
	}
	pend, err := srv2.HeldPayments("@alice/bot", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range pend {
		if h.Status == confpay.DecisionPending {
			t.Errorf("held payment %s still pending after its restored expiry", h.TransactionID)
		}
	}
	// And a third start sees what the second did after its restart.
	final := srv2.Snapshot()
	srv2.Close()
	srv3 := fakeserver.New(t, opts...)
	if diff := cmp.Diff(final, srv3.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after the second restart (-before +after):\n%s", diff)
	}
}

// TestDataDirKeysWork: a key issued before a restart still authenticates
// after it, and a revoked one still does not.
func TestDataDirKeysWork(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
	srv.Close()
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir))
	send(t, newClient(t, srv2, alice.test(), nil, noRetry), "@bob", "1")
}

// TestDataDirLocked: a second server on the same directory is refused
// while the first runs, and starts once it is closed.
func TestDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	if _, err := fakeserver.Open(fakeserver.WithDataDir(dir)); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v, want in use", err)
	}
	srv.Close()
	s2, err := fakeserver.Open(fakeserver.WithDataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

// TestDataDirFiles: the directory is 0700 and its files 0600.
func TestDataDirFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	newAccount(t, srv, "@alice")
	srv.Close()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", st.Mode().Perm())
	}
	for _, f := range []string{journal.SnapshotFile, journal.JournalFile, journal.LockFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
	}
}

// TestDataDirUnknownVersion: a directory written by another format
// version is refused with a message that says so.
func TestDataDirUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, journal.SnapshotFile), []byte("CPJ\x09\x00\x00\x00\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fakeserver.Open(fakeserver.WithDataDir(dir))
	if err == nil || !strings.Contains(err.Error(), "unknown format version 9") {
		t.Fatalf("Open: %v, want unknown format version 9", err)
	}
	// The message names the directory and the file once, and says
	// "journal:" once (it was "journal: snapshot: journal: unknown ...").
	msg := err.Error()
	if !strings.Contains(msg, filepath.Join(dir, journal.SnapshotFile)) || strings.Count(msg, "journal:") > 1 {
		t.Errorf("Open: %q, want the snapshot's path named and no repeated prefix", msg)
	}
}

// TestDataDirTornTailLogged: a torn tail dropped at start (a crash
// during a write) is logged with its size, so that an operator sees what
// the restart threw away (it was silent).
func TestDataDirTornTailLogged(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	newAccount(t, srv, "@alice")
	srv.Close()
	path := filepath.Join(dir, journal.JournalFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, good, err := journal.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	torn := []byte{9, 0, 0, 0, 1, 2, 3} // a record's head, cut short
	b = append(b[:good], append(torn, b[min(int(good)+len(torn), len(b)):]...)...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logger, logged := newTextLog()
	fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithLogger(logger))
	if got := logged.String(); !strings.Contains(got, "torn tail") || !strings.Contains(got, "bytes=7") {
		t.Fatalf("the log after a torn tail was dropped:\n%s", got)
	}
}

// logBuffer holds what a text logger wrote, for a test to read while
// the server may still log.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything logged so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset forgets what was logged.
func (l *logBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// newTextLog returns a logger that writes text lines to the returned
// logBuffer.
func newTextLog() (*slog.Logger, *logBuffer) {
	l := &logBuffer{}
	return slog.New(slog.NewTextHandler(l, nil)), l
}

// TestDataDirReset: Reset empties the directory too.
func TestDataDirReset(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	newAccount(t, srv, "@alice")
	srv.Reset()
	newAccount(t, srv, "@bob")
	want := srv.Snapshot()
	srv.Close()
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir))
	if diff := cmp.Diff(want, srv2.Snapshot(), snapshotOptions); diff != "" {
		t.Fatalf("after reset and restart (-want +got):\n%s", diff)
	}
}

// restartOptions compare Snapshots across a restart: everything, key
// usage, subscriptions and the event count included.
var restartOptions = cmp.Options{
	snapshotOptions[1], snapshotOptions[2],
}

// FuzzDataDirLoad: a damaged journal (flipped, cut or foreign bytes, a
// wrong generation or version) is a clear error or a clean recovery to
// its last complete record, never a panic; and a server that starts on it
// answers.
func FuzzDataDirLoad(f *testing.F) {
	dir := f.TempDir()
	srv := fakeserver.NewServer(fakeserver.WithDataDir(dir), fakeserver.WithoutListener())
	alice := srv.AddAccount(f, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	srv.AddAccount(f, fakeserver.AccountParams{Handle: "@bob"})
	if err := srv.Fund(alice.AccountID, confpay.NetworkTest, "USDG", "10"); err != nil {
		f.Fatal(err)
	}
	// The webhook and Idempotency-Key records: a subscription (the SDK
	// sends a key with every POST), a transfer's events and deliveries
	// (to a port that refuses), a deleted subscription.
	ac := newClient(f, srv, alice.TestKey.Reveal(), nil, noRetry)
	if _, err := ac.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: "http://127.0.0.1:1/h", Events: []confpay.EventKind{"transfer.initiated"}}); err != nil {
		f.Fatal(err)
	}
	gone, err := ac.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: "http://127.0.0.1:1/g", Events: []confpay.EventKind{"transfer.confirmed"}})
	if err != nil {
		f.Fatal(err)
	}
	if err := ac.Webhooks.Delete(context.Background(), gone.WebhookID); err != nil {
		f.Fatal(err)
	}
	send(f, ac, "@bob", "1", public())
	srv.Sync()
	// Close writes a snapshot only at the next start: the journal holds
	// the records.
	data, err := os.ReadFile(filepath.Join(dir, journal.JournalFile))
	if err != nil {
		f.Fatal(err)
	}
	srv.Close()
	_, good, err := journal.Decode(data)
	if err != nil || good >= int64(len(data)) {
		f.Fatalf("the journal is not preallocated (%d of %d bytes are records): %v", good, len(data), err)
	}
	// The records, with and without zeros after them (the file is
	// preallocated), cut inside a record, and cut inside a record
	// followed by zeros (a flush torn over the preallocated zeros).
	data, zeros := data[:good], make([]byte, 4096)
	// The fuzzed journal is the directory's only file (no snapshot, so
	// generation 0): the run's journal, of its snapshot's generation,
	// taken as generation 0 (Encode's, for the framed seeds below).
	f.Add(slices.Concat(data[:4], []byte{1, 0, 0, 0}, data[8:])) // a generation the (absent) snapshot does not have
	data[4], data[5], data[6], data[7] = 0, 0, 0, 0
	f.Add(data)
	f.Add(slices.Concat(data, zeros))
	f.Add(data[:len(data)/2])
	f.Add(slices.Concat(data[:len(data)-3], zeros))
	f.Add([]byte("CPJ\x02\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x01\x00"))
	f.Add(slices.Concat([]byte("CPJ\x02"), data[4:])) // older formats
	f.Add(slices.Concat([]byte("CPJ\x03"), data[4:]))
	f.Add(slices.Concat([]byte("CPJ\x03"), data[4:], zeros))
	// Well-framed records (good checksums) whose contents are wrong: the
	// decoder, not the framing, must refuse them. The journal's records
	// each alone, an item of an unknown kind, an item cut short, a record
	// cut inside an item, and the records in reverse order.
	recs, _, err := journal.Decode(data)
	if err != nil || len(recs) == 0 {
		f.Fatalf("the journal does not decode: %v", err)
	}
	frame := func(ps ...[]byte) []byte {
		return journal.Encode(func(emit func([]byte)) {
			for _, p := range ps {
				emit(p)
			}
		})
	}
	for _, p := range recs {
		f.Add(frame(p))
		f.Add(frame(p[:len(p)-1]))
	}
	f.Add(frame([]byte{0xee, 0, 0, 1, 0}))
	f.Add(frame([]byte{5, 0, 0, 2, 0, 0}))
	f.Add(frame(append(slices.Clone(recs[len(recs)-1]), 1, 0, 0, 40, 1)))
	f.Add(frame(slices.Concat(recs...)))
	rev := slices.Clone(recs)
	slices.Reverse(rev)
	f.Add(frame(rev...))
	f.Fuzz(func(t *testing.T, journalBytes []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, journal.JournalFile), journalBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := fakeserver.Open(fakeserver.WithDataDir(d), fakeserver.WithDataDirNoSync(), fakeserver.WithoutListener())
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		defer s.Close()
		snap := s.Snapshot()
		for _, a := range snap.Accounts {
			if _, err := s.Account(a.AccountID); err != nil {
				t.Fatalf("a restored account does not answer: %v", err)
			}
		}
	})
}

// TestDataDirResetDuringRequest: a reset that runs while a request is
// between its authentication and its effect leaves a data directory that
// starts, with the state the server held: the request's effect, made on
// the emptied state's objects, belongs to the world before the reset (as
// if it ran just before it) and is not written after the reset's record.
// With and without an Idempotency-Key (whose kept answer belongs to the
// old world too).
func TestDataDirResetDuringRequest(t *testing.T) {
	for _, tc := range []struct{ key, stop string }{
		{"", "authenticated"},   // before its effect
		{"k1", "authenticated"}, // before its key is taken
		{"k1", "keyed-ran"},     // after its effect, before its answer is kept
	} {
		key, stop := tc.key, tc.stop
		t.Run("key="+key+"/"+stop, func(t *testing.T) {
			dir := t.TempDir()
			opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync(), fakeserver.WithoutListener()}
			srv := fakeserver.NewUnstartedServer(opts...)
			authed, release, emptied := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var once sync.Once
			fakeserver.SetTestHook(srv, func(point string) {
				switch point {
				case stop:
					once.Do(func() { close(authed); <-release })
				case "reset":
					close(emptied)
				}
			})
			srv.Start()
			alice := newAccount(t, srv, "@alice")
			newAccount(t, srv, "@bob")
			fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
			var headers []string
			if key != "" {
				headers = []string{"Idempotency-Key", key}
			}
			done := make(chan answer, 1)
			go func() {
				done <- serve(srv.Handler(), "POST", "/v1/transfers", alice.test(), `{"to":"0x000000000000000000000000000000000000dEaD","amount":"1","asset":"USDG","confidential":false}`, headers...)
			}()
			<-authed
			reset := make(chan struct{})
			go func() { srv.Reset(); close(reset) }()
			<-emptied // the state is empty; the reset's record may wait for the request
			close(release)
			a := <-done
			<-reset
			t.Logf("the request answered %d %s", a.status, a.body)
			newAccount(t, srv, "@carol")
			want, wantKeys := srv.Snapshot(), fakeserver.IdempotencyKeys(srv)
			srv.Close()

			srv2, err := fakeserver.Open(opts...)
			if err != nil {
				t.Fatalf("the data directory does not start after a reset during a request: %v", err)
			}
			defer srv2.Close()
			if diff := cmp.Diff(want, srv2.Snapshot(), restartOptions); diff != "" {
				t.Fatalf("state after restart (-before +after):\n%s", diff)
			}
			if got := fakeserver.IdempotencyKeys(srv2); got != wantKeys {
				t.Errorf("%d Idempotency-Keys after restart, %d before: an answer of the world before the reset came back", got, wantKeys)
			}
		})
	}
}

// TestDataDirRestartClockBackwards: transfers whose creation times are out
// of their creation order (the clock set backwards between them) all come
// back as they were.
func TestDataDirRestartClockBackwards(t *testing.T) {
	dir := t.TempDir()
	opts := []fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync(), fakeserver.WithoutListener()}
	srv := fakeserver.New(t, opts...)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000000")
	h := srv.Handler()
	start := srv.Now()
	const n = 300 // (TestLatestChunks: across chunks)
	for i := range n {
		if i%100 == 99 {
			srv.Set(start.Add(-time.Duration(i) * time.Minute)) // backwards
		}
		if a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`,
			"User-Agent", fakeserver.BulkUserAgent); a.status != 201 {
			t.Fatalf("status %d", a.status)
		}
	}
	srv.Advance(time.Minute)
	before := srv.Snapshot()
	if got := len(before.Networks[confpay.NetworkTest].Transfers); got != n {
		t.Fatalf("%d transfers, want %d", got, n)
	}
	srv.Close()
	srv2 := fakeserver.New(t, opts...)
	if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
}

// TestDataDirDamageLogged: a byte flipped inside the journal's first
// record, ahead of more complete records, is not a torn tail (a crash
// tears only the last write): the server still starts from the records
// before it, but saves the dropped bytes beside (journal.damaged, 0600)
// and logs at ERROR how many bytes and complete records it dropped,
// where the copy is, and that they may hold acknowledged changes; it
// never says nothing acknowledged was in them (it did, as a warning).
func TestDataDirDamageLogged(t *testing.T) {
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir))
	for _, h := range []string{"@alice", "@bob", "@carol", "@dave", "@erin"} {
		newAccount(t, srv, h)
	}
	srv.Close()
	path := filepath.Join(dir, journal.JournalFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := journal.Decode(b)
	if err != nil || len(recs) < 5 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	b[8+8+3] ^= 0x01 // inside the first record's payload
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logger, logged := newTextLog()
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithLogger(logger))
	if n := len(srv2.Snapshot().Accounts); n != 0 {
		t.Errorf("%d accounts after the damage in the first record", n)
	}
	got := logged.String()
	saved := filepath.Join(dir, journal.DamagedFile)
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "records="+strconv.Itoa(len(recs)-1)) ||
		!strings.Contains(got, saved) || !strings.Contains(got, "acknowledged") || strings.Contains(got, "nothing acknowledged") {
		t.Fatalf("the log after damage before %d complete records:\n%s", len(recs)-1, got)
	}
	if st, err := os.Stat(saved); err != nil || st.Mode().Perm() != 0o600 || st.Size() == 0 {
		t.Fatalf("the saved copy: %v", err)
	}

	// The same damage again (as after a stop between the save and the
	// cut): the copy is reused, and the log says so.
	srv2.Close()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logged.Reset()
	srv3 := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithLogger(logger))
	srv3.Close()
	got = logged.String()
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, saved) || !strings.Contains(got, "reused=") {
		t.Fatalf("the log after the same damage again:\n%s", got)
	}
	if copies, _ := filepath.Glob(filepath.Join(dir, journal.DamagedFile+"*")); len(copies) != 1 {
		t.Fatalf("saved copies %q, want one", copies)
	}
}

// TestDataDirLooseModesWarned: a data directory readable by others (an
// existing one, 0755) and a snapshot restored as 0644 stay as they are
// (the server changes no mode), but the start warns, naming each path,
// its mode and the chmod that fixes it: they hold webhook secrets and
// key hashes. A directory the server made (0700, files 0600) gets none.
func TestDataDirLooseModesWarned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes")
	}
	dir := filepath.Join(t.TempDir(), "data") // the server makes it
	logTo := func() (*slog.Logger, func() string) {
		logger, logged := newTextLog()
		return logger, logged.String
	}
	logger, got := logTo()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithLogger(logger))
	newAccount(t, srv, "@alice")
	srv.Close()
	if strings.Contains(got(), "chmod") {
		t.Fatalf("a directory the server made was warned about:\n%s", got())
	}
	snap := filepath.Join(dir, journal.SnapshotFile)
	for path, mode := range map[string]os.FileMode{dir: 0o755, snap: 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	logger, got = logTo()
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithLogger(logger))
	if n := len(srv2.Snapshot().Accounts); n != 1 {
		t.Fatalf("%d accounts after the restart", n)
	}
	out := got()
	for _, want := range []string{"chmod 700 " + dir, "chmod 600 " + snap, "mode=0755", "mode=0644"} {
		if !strings.Contains(out, want) || !strings.Contains(out, "level=WARN") {
			t.Errorf("the start's log does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "chmod 600 "+filepath.Join(dir, journal.JournalFile)) {
		t.Errorf("the journal (0600) was warned about:\n%s", out)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o755, snap: 0o644} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode changed to %v (%v)", path, st.Mode().Perm(), err)
		}
	}
}
