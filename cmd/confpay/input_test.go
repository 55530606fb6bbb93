package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
)

// writeFile writes s to a new file of the test with mode perm.
func writeFile(t *testing.T, name, s string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(s), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return p
}

// transfersOf returns alice's transfers as the server recorded them.
func (f *fixture) transfersOf(who string) map[string]string {
	f.t.Helper()
	trs, err := f.srv.Transfers(who, confpay.NetworkTest)
	if err != nil {
		f.t.Fatal(err)
	}
	got := map[string]string{}
	for _, tr := range trs {
		got[tr.Amount.String()] = tr.Memo
	}
	return got
}

// TestPayConfidentialInputOffTheCommandLine: the amount and the memo come
// from files, or standard input with "-", so neither is in ps or the
// shell's history; the memo reaches the recipient byte for byte but for
// one final line ending.
func TestPayConfidentialInputOffTheCommandLine(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := f.as(f.alice, false)
	run := func(stdin string, args ...string) result {
		return runCLI(t, context.Background(), invocation{env: env, stdin: stdin}, args...)
	}
	for _, c := range []struct {
		stdin    string
		args     []string
		amount   string
		wantMemo string
	}{
		{"", []string{"pay", "@bob", "--amount-file", writeFile(t, "a1", "7.004217\n", 0o600), "--memo-file", writeFile(t, "m1", "rent for flat 3\n", 0o600)}, "7.004217", "rent for flat 3"},
		{"  2.5 \r\n", []string{"pay", "@bob", "--amount-file", "-", "--memo-file", writeFile(t, "m2", "two lines\r\nkept\r\n", 0o644)}, "2.5", "two lines\r\nkept"},
		{"line 1\n\nline 3\n\n", []string{"pay", "@bob", "1.25", "--memo-file", "-"}, "1.25", "line 1\n\nline 3\n"},
		{"", []string{"pay", "@bob", "--amount-file", writeFile(t, "a4", "3", 0o600), "--memo-file", writeFile(t, "m4", "", 0o600)}, "3", ""},
		{"", []string{"pay", "@bob", "--amount-file", writeFile(t, "a5", "0.5", 0o600), "--memo-file", writeFile(t, "m5", strings.Repeat("é", 512)+"\n", 0o600)}, "0.5", strings.Repeat("é", 512)},
	} {
		r := run(c.stdin, c.args...)
		if r.code != 0 {
			t.Fatalf("confpay %q: exit %d, %s", c.args, r.code, r.stderr)
		}
		if memo, ok := f.transfersOf("@alice")[c.amount]; !ok || memo != c.wantMemo {
			t.Errorf("confpay %q: paid %v, want %s with memo %q", c.args, f.transfersOf("@alice"), c.amount, c.wantMemo)
		}
		if strings.Contains(r.stderr, "Reading") {
			t.Errorf("a prompt off a terminal: %q", r.stderr)
		}
	}

	// At a terminal, "-" says what it waits for.
	var stdout, stderr strings.Builder
	a := &app{stdin: strings.NewReader("4\n"), stdout: &stdout, stderr: &stderr, terminal: true, env: func(k string) string { return env[k] }}
	if code := a.execute(context.Background(), []string{"pay", "@bob", "--amount-file", "-"}); code != 0 ||
		!strings.Contains(stderr.String(), "Reading the amount from standard input; end with Ctrl-D.") {
		t.Errorf("amount typed at a terminal: exit %d, stderr %q", code, stderr.String())
	}

	// Mistakes are usage errors that pay nothing and never repeat what the
	// file holds.
	paid := len(f.transfersOf("@alice"))
	amountFile := writeFile(t, "amount", "1\n", 0o600)
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"amount twice", "", []string{"pay", "@bob", "1", "--amount-file", amountFile}, "not both"},
		{"memo twice", "", []string{"pay", "@bob", "1", "--memo", "x", "--memo-file", amountFile}, "not both"},
		{"no amount", "", []string{"pay", "@bob"}, "--amount-file"},
		{"both on stdin", "1\n", []string{"pay", "@bob", "--amount-file", "-", "--memo-file", "-"}, "both read standard input"},
		{"missing file", "", []string{"pay", "@bob", "--amount-file", filepath.Join(t.TempDir(), "none")}, "--amount-file"},
		{"bad amount", "", []string{"pay", "@bob", "--amount-file", writeFile(t, "bad", "7319,004217\n", 0o600)}, "not an amount"},
		{"empty amount", "", []string{"pay", "@bob", "--amount-file", writeFile(t, "empty", "\n", 0o600)}, "not an amount"},
		{"huge amount file", "", []string{"pay", "@bob", "--amount-file", writeFile(t, "huge", strings.Repeat("9", 5000), 0o600)}, "more than"},
		{"memo too long", "", []string{"pay", "@bob", "1", "--memo-file", writeFile(t, "long", strings.Repeat("m", 1025), 0o600)}, "memo"},
		{"memo far too long", "", []string{"pay", "@bob", "1", "--memo-file", writeFile(t, "longer", strings.Repeat("m", 5000), 0o600)}, "a memo is at most 1024 bytes"},
		{"memo not UTF-8", "", []string{"pay", "@bob", "1", "--memo-file", writeFile(t, "latin1", "caf\xe9 7319,004217", 0o600)}, "memo"},
	} {
		r := run(c.stdin, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 saying %q", c.name, r.code, r.stderr, c.want)
		}
		if strings.Contains(r.stderr, "7319,004217") || strings.Contains(r.stderr, "caf") { // whole: the temporary path holds random digits
			t.Errorf("%s: the error repeats what the file holds: %q", c.name, r.stderr)
		}
	}
	if n := len(f.transfersOf("@alice")); n != paid {
		t.Errorf("%d payments made by mistakes", n-paid)
	}
}

// TestDecryptionKeyFileMustBePrivate: a key file that group or others can
// read is refused, as ssh refuses such a private key, with the chmod that
// fixes it; a private file and standard input are read.
func TestDecryptionKeyFileMustBePrivate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	key := f.alice.DecryptionKey.Reveal()
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o666, 0o601} {
		p := writeFile(t, "alice.key", key+"\n", perm)
		r := f.run(f.as(f.alice, false), "balances", "--decryption-key-file", p)
		if r.code != exitUsage || !strings.Contains(r.stderr, "chmod 600 "+p) || !strings.Contains(r.stderr, "group or others") {
			t.Errorf("mode %04o: exit %d, stderr %q", perm, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, key) || strings.Contains(r.stdout, "100") {
			t.Errorf("mode %04o: the key or a figure shown: %q %q", perm, r.stdout, r.stderr)
		}
	}
	spaced := filepath.Join(t.TempDir(), "my key")
	if err := os.WriteFile(spaced, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spaced, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.run(f.as(f.alice, false), "balances", "--decryption-key-file", spaced); !strings.Contains(r.stderr, "chmod 600 '"+spaced+"'") {
		t.Errorf("a path with a space is not quoted for the shell: %q", r.stderr)
	}
	for _, perm := range []os.FileMode{0o600, 0o400} {
		p := writeFile(t, "alice.key", key+"\n", perm)
		if out := f.ok(f.as(f.alice, false), "balances", "--decryption-key-file", p); !strings.Contains(out, "USDG   100") {
			t.Errorf("mode %04o:\n%s", perm, out)
		}
	}
	r := runCLI(t, context.Background(), invocation{env: f.as(f.alice, false), stdin: key + "\n"}, "balances", "--decryption-key-file", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "USDG   100") {
		t.Errorf("key on standard input: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
}
