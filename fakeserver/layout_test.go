package fakeserver_test

import (
	"os/exec"
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
