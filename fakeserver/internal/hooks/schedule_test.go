package hooks

import (
	"testing"
	"time"
)

func TestDefaultJitterBand(t *testing.T) {
	seen := map[time.Duration]bool{}
	for _, d := range retryIntervals {
		for range 500 {
			j := defaultJitter(d)
			if j < d-d/10 || j > d+d/10 {
				t.Fatalf("defaultJitter(%v) = %v, outside ±10%%", d, j)
			}
			seen[j] = true
		}
	}
	if len(seen) < 100 {
		t.Fatalf("defaultJitter produced only %d distinct values in 3000 draws", len(seen))
	}
}

func TestRetryAtNeverPassesTheDeadline(t *testing.T) {
	first := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	deadline := first.Add(24 * time.Hour)
	huge := func(d time.Duration) time.Duration { return 100 * d }
	// A jitter that overshoots lands on the 24 h mark, and nothing follows.
	next, ok := retryAt(first, first.Add(17*time.Hour), 6, huge)
	if !ok || !next.Equal(deadline) {
		t.Fatalf("retryAt with overshooting jitter = %v, %v; want the deadline", next, ok)
	}
	if _, ok := retryAt(first, deadline, 6, huge); ok {
		t.Fatal("an attempt at the 24 h mark was followed by another")
	}
	// A jitter that goes backwards never schedules before the last attempt.
	back := func(d time.Duration) time.Duration { return -d }
	last := first.Add(time.Hour)
	if next, ok := retryAt(first, last, 2, back); !ok || !next.Equal(last) {
		t.Fatalf("retryAt with negative jitter = %v, %v; want %v", next, ok, last)
	}
	// The eighth attempt is the last whatever the times.
	if _, ok := retryAt(first, first.Add(time.Minute), maxAttempts, NoJitter); ok {
		t.Fatal("a ninth attempt was scheduled")
	}
	// The seventh retry goes to the deadline exactly.
	if next, ok := retryAt(first, first.Add(5*time.Second+5*time.Minute+30*time.Minute+2*time.Hour+5*time.Hour+10*time.Hour), 7, NoJitter); !ok || !next.Equal(deadline) {
		t.Fatalf("after attempt 7: %v, %v; want the deadline", next, ok)
	}
}

// TestRetryAtWholeMilliseconds: a jittered interval has nanoseconds; the
// next attempt's instant, which next_attempt_at shows, has none.
func TestRetryAtWholeMilliseconds(t *testing.T) {
	first := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	odd := func(d time.Duration) time.Duration { return d + 768_667_220*time.Nanosecond }
	next, ok := retryAt(first, first, 1, odd)
	if !ok {
		t.Fatal("no retry after the first attempt")
	}
	if want := first.Add(5*time.Second + 768*time.Millisecond); !next.Equal(want) {
		t.Errorf("next attempt at %s, want %s", next.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}
