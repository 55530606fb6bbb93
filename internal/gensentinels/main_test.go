package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestSentinelsUpToDate checks that the committed errors_sentinels.go is
// what the generator makes of the committed errors.go.
func TestSentinelsUpToDate(t *testing.T) {
	src, err := os.ReadFile("../../errors.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../errors_sentinels.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("errors_sentinels.go is out of date with errors.go: run go generate in the module root\n--- want\n%s", want)
	}
}

// TestGenerate checks the derivation on a small source: every ErrorCode
// constant, and nothing else, gets its sentinel.
func TestGenerate(t *testing.T) {
	out, err := generate([]byte(`package confpay
type ErrorCode string
const (
	CodeA ErrorCode = "a"
	CodeB, CodeC ErrorCode = "b", "c"
)
const RuleX = "x"
const CodeUntyped = "u"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ErrA ErrorCode = CodeA", "ErrB ErrorCode = CodeB", "ErrC ErrorCode = CodeC"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "Untyped") || strings.Contains(string(out), "RuleX") {
		t.Errorf("output has a constant that is not an ErrorCode:\n%s", out)
	}
	if _, err := generate([]byte("package confpay\nconst Wrong ErrorCode = \"w\"\n")); err == nil {
		t.Error("a constant not named Code... was accepted")
	}
}
