package names

import (
	"regexp"
	"testing"
)

// The regular expressions the hand-written grammar replaced: IsHandle,
// IsAgentName and IsAgentHandle must answer exactly as they do.
var (
	handleRE      = regexp.MustCompile(`^@[A-Za-z0-9_]{3,20}$`)
	agentNameRE   = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
	agentHandleRE = regexp.MustCompile(`^@[A-Za-z0-9_]{3,20}/[A-Za-z0-9_-]{1,32}$`)
)

// grammarSeeds are the edges of the grammar.
var grammarSeeds = []string{
	"", "@", "@ab", "@abc", "@ABC_09", "@" + "a12345678901234567890"[:20], "@a12345678901234567890",
	"@abc\n", "\n@abc", "@ab c", "@abé", "abc", "@@abc", "@abc/", "@abc/x", "@abc/X-y_1", "@abc/x/y",
	"@ab/x", "@abc/" + "abcdefghijabcdefghijabcdefghijab", "@abc/" + "abcdefghijabcdefghijabcdefghijabc",
	"a", "a-b_c9", "A", "ab.c", "-", "_", "abcdefghijabcdefghijabcdefghijab", "abcdefghijabcdefghijabcdefghijabc",
	"@ABC/x\x00", "\xff", "@abc/\xc3\xa9",
}

func TestGrammarMatchesRegexp(t *testing.T) {
	for _, s := range grammarSeeds {
		sameGrammar(t, s)
	}
}

// FuzzGrammar compares the hand-written grammar with the regular
// expressions on any text.
func FuzzGrammar(f *testing.F) {
	for _, s := range grammarSeeds {
		f.Add(s)
	}
	f.Fuzz(sameGrammar)
}

func sameGrammar(t *testing.T, s string) {
	if got, want := IsHandle(s), handleRE.MatchString(s); got != want {
		t.Fatalf("IsHandle(%q) = %v, the expression says %v", s, got, want)
	}
	if got, want := IsAgentName(s), agentNameRE.MatchString(s); got != want {
		t.Fatalf("IsAgentName(%q) = %v, the expression says %v", s, got, want)
	}
	if got, want := IsAgentHandle(s), agentHandleRE.MatchString(s); got != want {
		t.Fatalf("IsAgentHandle(%q) = %v, the expression says %v", s, got, want)
	}
}
