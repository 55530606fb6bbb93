package fakeserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goList runs go list with args in the module and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestLayout checks the package graph the architecture promises: no
// package under fakeserver/internal imports fakeserver (dependencies run
// one way), and the binary does not link the testing package.
func TestLayout(t *testing.T) {
	const self = "github.com/confpay/confpay-go/fakeserver"
	for _, pkg := range goList(t, "./internal/...") {
		for _, dep := range goList(t, "-deps", pkg) {
			if dep == self {
				t.Errorf("%s imports fakeserver", pkg)
			}
		}
	}
	for _, dep := range goList(t, "-deps", "../cmd/confpay-fakeserver") {
		if dep == "testing" {
			t.Error("cmd/confpay-fakeserver links the testing package")
		}
	}
}

// TestHandlersNeverLock: the /v1 handler files (api_*.go) and the /_fake
// routes (admin.go) parse, call one domain operation and render; no lock
// is taken there (issue 12: handlers never lock).
func TestHandlersNeverLock(t *testing.T) {
	files, err := filepath.Glob("api_*.go")
	if err != nil || len(files) < 4 {
		t.Fatalf("api_*.go: %v %v, want the four handler files", files, err)
	}
	for _, f := range append(files, "admin.go") {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if strings.Contains(line, ".Lock()") || strings.Contains(line, ".RLock()") {
				t.Errorf("%s:%d takes a lock: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
