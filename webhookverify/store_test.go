package webhookverify

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for MemoryStore.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestStore(ttl time.Duration) (*MemoryStore, *fakeClock) {
	clk := &fakeClock{now: testTime}
	s := NewMemoryStore(ttl)
	s.SetClock(clk.Now)
	return s, clk
}

func mustClaim(t *testing.T, s SeenStore, id string, want Claim) {
	t.Helper()
	got, err := s.Claim(context.Background(), id)
	if err != nil {
		t.Fatalf("Claim(%s): %v", id, err)
	}
	if got != want {
		t.Fatalf("Claim(%s) = %v, want %v", id, got, want)
	}
}

func TestMemoryStoreClaimFinish(t *testing.T) {
	s, _ := newTestStore(0)
	ctx := context.Background()
	mustClaim(t, s, "evt_1", ClaimNew)
	mustClaim(t, s, "evt_1", ClaimBusy)
	mustClaim(t, s, "evt_2", ClaimNew) // ids are independent

	// A failed attempt releases the claim: the retry is new again.
	if err := s.Finish(ctx, "evt_1", false); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "evt_1", ClaimNew)

	// A successful attempt marks it done.
	if err := s.Finish(ctx, "evt_1", true); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "evt_1", ClaimDone)
	mustClaim(t, s, "evt_1", ClaimDone)

	// Releasing a done id does not forget it.
	if err := s.Finish(ctx, "evt_1", false); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "evt_1", ClaimDone)
}

// TestMemoryStoreZeroValue checks that a MemoryStore used without
// NewMemoryStore works (it used to panic on its nil map).
func TestMemoryStoreZeroValue(t *testing.T) {
	var s MemoryStore
	ctx := context.Background()
	if s.TTL() != MinStoreTTL || s.Len() != 0 {
		t.Fatalf("zero store: TTL %v, Len %d", s.TTL(), s.Len())
	}
	mustClaim(t, &s, "evt_1", ClaimNew)
	mustClaim(t, &s, "evt_1", ClaimBusy)
	if err := s.Finish(ctx, "evt_1", true); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, &s, "evt_1", ClaimDone)
	var fresh MemoryStore // Finish before any Claim
	if err := fresh.Finish(ctx, "evt_2", true); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, &fresh, "evt_2", ClaimDone)
}

func TestMemoryStoreTTL(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, 25 * time.Hour},
		{-time.Hour, 25 * time.Hour},
		{time.Hour, 25 * time.Hour},
		{24 * time.Hour, 25 * time.Hour},
		{25 * time.Hour, 25 * time.Hour},
		{72 * time.Hour, 72 * time.Hour},
	} {
		if got := NewMemoryStore(tc.in).TTL(); got != tc.want {
			t.Errorf("NewMemoryStore(%v).TTL() = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMemoryStoreExpiry(t *testing.T) {
	ctx := context.Background()
	for _, ttl := range []time.Duration{time.Minute, 48 * time.Hour} {
		s, clk := newTestStore(ttl)
		mustClaim(t, s, "evt_1", ClaimNew)
		clk.Advance(10 * time.Hour) // time spent in progress does not count
		if err := s.Finish(ctx, "evt_1", true); err != nil {
			t.Fatal(err)
		}
		clk.Advance(s.TTL() - time.Nanosecond)
		mustClaim(t, s, "evt_1", ClaimDone)
		clk.Advance(time.Nanosecond)
		mustClaim(t, s, "evt_1", ClaimNew)
	}
}

func TestMemoryStoreInProgressDoesNotExpire(t *testing.T) {
	s, clk := newTestStore(0)
	mustClaim(t, s, "evt_slow", ClaimNew)
	clk.Advance(100 * time.Hour)
	mustClaim(t, s, "evt_slow", ClaimBusy)
}

func TestMemoryStoreBoundedGrowth(t *testing.T) {
	s, clk := newTestStore(0)
	ctx := context.Background()
	const n = 2000
	for i := range n {
		id := fmt.Sprintf("evt_%d", i)
		mustClaim(t, s, id, ClaimNew)
		if err := s.Finish(ctx, id, true); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if got := s.Len(); got != n {
		t.Fatalf("Len() = %d before expiry, want %d", got, n)
	}
	// Half of them expire.
	clk.Advance(s.TTL() - n/2*time.Second - time.Nanosecond)
	if got := s.Len(); got != n/2 {
		t.Fatalf("Len() = %d after half expired, want %d", got, n/2)
	}
	clk.Advance(time.Duration(n) * time.Second)
	mustClaim(t, s, "evt_last", ClaimNew)
	if got := s.Len(); got != 1 {
		t.Fatalf("Len() = %d after all expired, want 1", got)
	}
	s.mu.Lock()
	queued := len(s.expiry)
	s.mu.Unlock()
	if queued != 0 {
		t.Errorf("expiry queue holds %d items after all expired", queued)
	}
}

func TestMemoryStoreRefinishKeepsLaterExpiry(t *testing.T) {
	s, clk := newTestStore(0)
	ctx := context.Background()
	mustClaim(t, s, "evt_1", ClaimNew)
	if err := s.Finish(ctx, "evt_1", true); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if err := s.Finish(ctx, "evt_1", true); err != nil { // marked again, later
		t.Fatal(err)
	}
	clk.Advance(s.TTL() - time.Minute) // past the first expiry, before the second
	mustClaim(t, s, "evt_1", ClaimDone)
	clk.Advance(time.Minute)
	mustClaim(t, s, "evt_1", ClaimNew)
}

func TestMemoryStoreConcurrentClaims(t *testing.T) {
	s := NewMemoryStore(0)
	const workers = 32
	results := make(chan Claim, workers)
	var start sync.WaitGroup
	start.Add(1)
	var done sync.WaitGroup
	for range workers {
		done.Go(func() {
			start.Wait()
			c, err := s.Claim(context.Background(), "evt_race")
			if err != nil {
				t.Error(err)
			}
			results <- c
		})
	}
	start.Done()
	done.Wait()
	close(results)
	counts := map[Claim]int{}
	for c := range results {
		counts[c]++
	}
	if counts[ClaimNew] != 1 || counts[ClaimBusy] != workers-1 {
		t.Errorf("claims = %v, want exactly one new and %d busy", counts, workers-1)
	}
}

func TestClaimString(t *testing.T) {
	for c, want := range map[Claim]string{ClaimNew: "new", ClaimBusy: "busy", ClaimDone: "done", Claim(9): "invalid"} {
		if got := c.String(); got != want {
			t.Errorf("Claim(%d).String() = %q, want %q", int(c), got, want)
		}
	}
}
