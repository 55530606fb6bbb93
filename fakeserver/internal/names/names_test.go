package names

import (
	"strings"
	"testing"
)

func TestGrammar(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(string) bool
		s    string
		ok   bool
	}{
		{"handle", IsHandle, "@bob", true},
		{"handle", IsHandle, "@Bob_99", true},
		{"handle", IsHandle, "@bo", false},
		{"handle", IsHandle, "@" + strings.Repeat("a", 21), false},
		{"handle", IsHandle, "@alice/bot", false},
		{"handle", IsHandle, "bob", false},
		{"agent name", IsAgentName, "shopping-bot_2", true},
		{"agent name", IsAgentName, "Bot", false},
		{"agent name", IsAgentName, strings.Repeat("a", 33), false},
		{"agent handle", IsAgentHandle, "@alice/bot", true},
		{"agent handle", IsAgentHandle, "@ALICE/Bot", true},
		{"agent handle", IsAgentHandle, "@alice", false},
		{"agent handle", IsAgentHandle, "@alice/", false},
		{"domain", IsDomain, "api.market", true},
		{"domain", IsDomain, "A-1.example.COM", true},
		{"domain", IsDomain, "localhost", false},
		{"domain", IsDomain, "-a.example", false},
		{"domain", IsDomain, "a..b", false},
		{"domain", IsDomain, strings.Repeat("a.", 127) + "com", false},
	} {
		if got := c.f(c.s); got != c.ok {
			t.Errorf("%s %q = %v, want %v", c.name, c.s, got, c.ok)
		}
	}
}

func TestParseAddress(t *testing.T) {
	const good = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" // EIP-55's own example
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{good, true},
		{strings.ToLower(good), true},
		{"0x" + strings.ToUpper(good[2:]), true},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", false}, // checksum broken
		{"0X" + good[2:], false},
		{good[:41], false},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg", false},
	} {
		a, err := ParseAddress(c.s)
		if (err == nil) != c.ok {
			t.Errorf("ParseAddress(%q) = %v, want ok %v", c.s, err, c.ok)
		}
		if err == nil && !strings.EqualFold(a.Hex(), c.s) {
			t.Errorf("ParseAddress(%q) = %s", c.s, a.Hex())
		}
	}
}

func TestRandom(t *testing.T) {
	id := NewID("tr_")
	if len(id) != 23 || !strings.HasPrefix(id, "tr_") || strings.Trim(id[3:], LowerAlnum) != "" {
		t.Fatalf("NewID = %q", id)
	}
	if a, b := NewID("x"), NewID("x"); a == b {
		t.Fatal("two ids alike")
	}
	if s := Random(Base62, 64); strings.Trim(s, Base62) != "" || len(s) != 64 {
		t.Fatalf("Random = %q", s)
	}
}

func FuzzParseAddress(f *testing.F) {
	f.Add("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
	f.Add("0x0000000000000000000000000000000000000000")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(a.Hex(), s) {
			t.Fatalf("%q parsed as %s", s, a.Hex())
		}
		if s[2:] != strings.ToLower(s[2:]) && s[2:] != strings.ToUpper(s[2:]) && a.Hex() != s {
			t.Fatalf("mixed case %q accepted without its checksum", s)
		}
	})
}
