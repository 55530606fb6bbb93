package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeSandboxScript runs docs/sandbox.md's balance read in plain Node
// (scripts/sandbox-balance.mjs: /_fake/prove, then /v1 with the proof)
// against the binary, with an admin token. It needs node on PATH; CI
// has it.
func TestNodeSandboxScript(t *testing.T) {
	runSandboxScript(t, "node", "Node 20 or later", "sandbox-balance.mjs", "sandbox-balance: ok")
}

// TestPythonSandboxScript is TestNodeSandboxScript in Python 3
// (scripts/sandbox_balance.py, standard library only).
func TestPythonSandboxScript(t *testing.T) {
	runSandboxScript(t, "python3", "Python 3", "sandbox_balance.py", "sandbox_balance: ok")
}

// runSandboxScript runs scripts/script with the runtime against the binary
// (with an admin token) and wants ok in its output; without the runtime on
// PATH the test is skipped, saying so.
func runSandboxScript(t *testing.T, runtime, what, script, ok string) {
	bin, err := exec.LookPath(runtime)
	if err != nil {
		t.Skipf("%s is not on PATH: docs/sandbox.md's %s flow is not run (install %s)", runtime, script, what)
	}
	token := strings.Repeat("s", 24)
	r := launch(t, "-addr", "127.0.0.1:0", "-admin-token", token)
	path, err := filepath.Abs(filepath.Join("..", "..", "scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, path)
	cmd.Env = append(os.Environ(), "CONFPAY_BASE_URL="+r.url, "CONFPAY_FAKESERVER_ADMIN_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), ok) {
		t.Fatalf("%s %s: %v\n%s", runtime, path, err, out)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stderr.String(), token) {
		t.Error("the request log holds the admin token")
	}
}
