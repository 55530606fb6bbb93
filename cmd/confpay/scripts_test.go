package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// runWithStdin runs the CLI in process with stdin as its standard input.
func runWithStdin(t *testing.T, stdin *os.File, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{stdin: stdin, stdout: &stdout, stderr: &stderr, env: func(k string) string { return env[k] }}
	code := a.execute(context.Background(), args)
	return result{stdout.String(), stderr.String(), code}
}

// TestDecideWithStdinAtDevNull: approve and reject from cron, systemd, CI
// or docker run without -i (standard input at /dev/null, a character
// device but no terminal) are not asked: they decide, and print no prompt.
func TestDecideWithStdinAtDevNull(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"approve", "reject"} {
		f, _, atx := agentFixture(t)
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { devNull.Close() })
		r := runWithStdin(t, devNull, f.as(f.alice, true), verb, atx)
		if r.code != 0 || strings.Contains(r.stderr, "[y/N]") {
			t.Errorf("%s with stdin at %s: exit %d, stderr %q", verb, os.DevNull, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, map[string]string{"approve": "approved", "reject": "rejected"}[verb]) {
			t.Errorf("%s with stdin at %s printed:\n%s", verb, os.DevNull, r.stdout)
		}
	}
}

// TestDeclinedDecisionSaysWhatWasNotDone: answering no says "nothing was
// approved" or "nothing was rejected", spelt right.
func TestDeclinedDecisionSaysWhatWasNotDone(t *testing.T) {
	t.Parallel()
	f, _, atx := agentFixture(t)
	for _, verb := range []string{"approve", "reject"} {
		var stdout, stderr strings.Builder
		a := &app{stdin: strings.NewReader("n\n"), stdout: &stdout, stderr: &stderr, terminal: true,
			env: func(k string) string { return f.as(f.alice, true)[k] }}
		want := map[string]string{"approve": "nothing was approved\n", "reject": "nothing was rejected\n"}[verb]
		if code := a.execute(context.Background(), []string{verb, atx}); code != exitError || !strings.HasSuffix(stderr.String(), want) {
			t.Errorf("%s answered n: exit %d, stderr %q, want it to end %q", verb, code, stderr.String(), want)
		}
	}
}
