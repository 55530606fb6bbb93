package names

import (
	"strings"
	"testing"
)

// TestRandomEveryCharacter: every character of the alphabet is drawn, at
// any length (past the 64 random bytes read at a time too), and nothing
// else is.
func TestRandomEveryCharacter(t *testing.T) {
	if s := Random(Base62, 0); s != "" {
		t.Fatalf("Random(0) = %q", s)
	}
	for _, n := range []int{1, 31, 32, 33, 200, 5000} {
		if s := Random(Base62, n); len(s) != n || strings.Trim(s, Base62) != "" {
			t.Fatalf("Random(%d) = %q", n, s)
		}
	}
	// 36 characters in 4,000 draws: each is expected about 111 times, so
	// one missing means the draw is broken (the chance otherwise is below
	// 1e-45).
	var all strings.Builder
	for range 200 {
		all.WriteString(NewID("")) // 20 characters each
	}
	for _, c := range LowerAlnum {
		if !strings.ContainsRune(all.String(), c) {
			t.Fatalf("%q never drawn in %d characters", c, all.Len())
		}
	}
	s := Random("ab", 4000)
	if a := strings.Count(s, "a"); a < 1600 || a > 2400 { // mean 2000, sd 32
		t.Fatalf("%d of 4000 draws from \"ab\" were a", a)
	}
}

// BenchmarkNewID is the cost of an id (a request id, a transfer id).
func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = NewID("req_")
	}
}
