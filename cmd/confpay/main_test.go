package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fixture is a fakeserver (virtual clock) with @alice (funded, with a
// decryption key) and @bob.
type fixture struct {
	t          *testing.T
	srv        *fakeserver.Server
	alice, bob *fakeserver.AccountInfo
}

func newFixture(t *testing.T, opts ...fakeserver.Option) *fixture {
	t.Helper()
	srv := fakeserver.New(t, opts...)
	alice, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Fund("@alice", confpay.NetworkTest, "USDG", "100"); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, srv: srv, alice: alice, bob: bob}
}

// result is what one command run produced.
type result struct {
	stdout, stderr string
	code           int
}

// invocation describes one run of the CLI.
type invocation struct {
	env      map[string]string
	stdin    string
	pollWait func(context.Context) error
	now      func() time.Time // pay --wait's clock (time.Now when nil)
}

// as returns the environment of an account: its test key, the server's URL
// and, when withKey, its decryption key.
func (f *fixture) as(acct *fakeserver.AccountInfo, withKey bool) map[string]string {
	env := map[string]string{envAPIKey: acct.TestKey.Reveal(), envBaseURL: f.srv.URL()}
	if withKey {
		env[envDecryptionKey] = acct.DecryptionKey.Reveal()
	}
	return env
}

// runCLI runs the CLI in process with env and args.
func runCLI(t *testing.T, ctx context.Context, inv invocation, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(inv.stdin), stdout: &stdout, stderr: &stderr,
		env: func(k string) string { return inv.env[k] }, pollWait: inv.pollWait, now: inv.now}
	code := a.execute(ctx, args)
	return result{stdout.String(), stderr.String(), code}
}

func (f *fixture) run(env map[string]string, args ...string) result {
	f.t.Helper()
	return runCLI(f.t, context.Background(), invocation{env: env}, args...)
}

// ok runs a command that must succeed and returns its stdout.
func (f *fixture) ok(env map[string]string, args ...string) string {
	f.t.Helper()
	r := f.run(env, args...)
	if r.code != 0 {
		f.t.Fatalf("confpay %s: exit %d, stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// pay sends a payment from alice to bob with the SDK and returns its id.
func (f *fixture) pay(amount, memo string) string {
	f.t.Helper()
	c := f.srv.Client(f.alice.TestKey)
	tr, err := c.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount(amount), Memo: memo})
	if err != nil {
		f.t.Fatal(err)
	}
	return tr.TransferID
}

// normalizers: ids, addresses, hashes and keys are random, so golden files hold them as
// placeholders of the same width, so alignment is still checked.
var normalizers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\b(acct|tr|atx|evt|dlv|wh|req|policy|key)_[a-z0-9]{20}\b`), "${1}_XXXXXXXXXXXXXXXXXXXX"},
	{regexp.MustCompile(`0x[0-9a-f]{64}\b`), "0x" + strings.Repeat("h", 64)},
	{regexp.MustCompile(`0x[0-9a-fA-F]{40}\b`), "0x" + strings.Repeat("A", 40)},
	{regexp.MustCompile(`\b0[23][0-9a-f]{64}\b`), "02" + strings.Repeat("k", 64)},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return s
}

// golden compares got (normalised) with testdata/name.golden, or rewrites
// it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = normalize(got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// decodeStrict decodes s into v refusing unknown fields, so a --json
// output is checked against the SDK's wire type.
func decodeStrict(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, s)
	}
}

// syncBuffer is a writer that tests can wait on: waitFor returns once the
// text written so far contains a string.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output contains s n times, failing the test
// after a generous bound (a failure bound, not synchronisation).
func (b *syncBuffer) waitFor(t *testing.T, s string, n int) string {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		text, ch := b.buf.String(), b.changed
		b.mu.Unlock()
		if strings.Count(text, s) >= n {
			return text
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waiting for %q ×%d; output so far:\n%s", s, n, text)
		}
	}
}
