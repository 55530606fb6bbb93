package main

import (
	"testing"
	"unicode/utf8"
)

// FuzzClean checks that text from the service or a counterparty (memos,
// handles, messages) always prints as valid UTF-8 without any control or
// bidirectional-override character, and that cleaning is stable.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"lunch", "tab\there", "\x1b[31mred\x1b[0m", "\u202egnp.exe", "\xff\xfe", "☕ café", "\uFFFD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := clean(s)
		if !utf8.ValidString(c) {
			t.Fatalf("clean(%q) = %q: invalid UTF-8", s, c)
		}
		for _, r := range c {
			if !safeRune(r) {
				t.Fatalf("clean(%q) = %q holds %U", s, c, r)
			}
		}
		if clean(c) != c {
			t.Fatalf("clean is not stable on %q", s)
		}
	})
}

// FuzzParseWhen checks that any --from/--to text is either an instant or
// a usage error, never a panic.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"2026-01-05", "2026-01-05T09:00:00Z", "yesterday", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := parseWhen("--from", s)
		if err == nil && s != "" && tm.IsZero() {
			t.Fatalf("parseWhen(%q) accepted a zero instant", s)
		}
	})
}
