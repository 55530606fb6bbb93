package clock

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// testStart is where the virtual clocks of these tests start.
var testStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func TestClockAdvanceRunsTimersInOrderAtTheirInstants(t *testing.T) {
	t.Parallel()
	c := NewVirtual(testStart)
	defer c.Close()
	start := c.Now()
	if !start.Equal(testStart) || !c.Virtual() {
		t.Fatalf("start %v virtual %v", start, c.Virtual())
	}
	var log []string
	at := func(d time.Duration, name string) *Timer {
		return c.At(start.Add(d), func(now time.Time) {
			log = append(log, fmt.Sprintf("%s@%v", name, now.Sub(start)))
		})
	}
	at(3*time.Second, "c")
	at(time.Second, "a")
	at(time.Second, "a2") // same instant: scheduling order
	stopped := at(2*time.Second, "never")
	c.At(start.Add(2*time.Second), func(now time.Time) {
		log = append(log, fmt.Sprintf("b@%v", now.Sub(start)))
		// A timer scheduled by a timer, due within the window, runs too.
		c.At(now.Add(500*time.Millisecond), func(now time.Time) {
			log = append(log, fmt.Sprintf("b2@%v", now.Sub(start)))
		})
	})
	at(time.Hour, "later")
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop did not report the pending timer once")
	}
	if got := c.Advance(5 * time.Second); !got.Equal(start.Add(5 * time.Second)) {
		t.Fatalf("Advance returned %v", got)
	}
	if fmt.Sprint(log) != "[a@1s a2@1s b@2s b2@2.5s c@3s]" {
		t.Fatalf("ran %v", log)
	}
	if c.Pending() != 1 {
		t.Fatalf("%d pending", c.Pending())
	}

	// Set moves to an instant, forward or back.
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Set back: %v", c.Now())
	}
	log = nil
	c.At(start, func(time.Time) { log = append(log, "due") })
	if len(log) != 0 {
		t.Fatal("a due timer ran before Sync")
	}
	c.RunDue()
	if fmt.Sprint(log) != "[due]" || !c.Now().Equal(start) {
		t.Fatalf("Sync ran %v, now %v", log, c.Now())
	}
	c.Set(start.Add(2 * time.Hour))
	if fmt.Sprint(log) != "[due later@1h0m0s]" {
		t.Fatalf("Set forward ran %v", log)
	}
}

func TestClockWaitsForTrackedWork(t *testing.T) {
	t.Parallel()
	c := NewVirtual(testStart)
	defer c.Close()
	var done atomic.Int32
	for i := range 4 {
		c.At(c.Now().Add(time.Duration(i+1)*time.Second), func(time.Time) {
			finish := c.Track(0)
			go func() {
				defer finish()
				for range 100 {
					runtime.Gosched()
				}
				done.Add(1)
			}()
		})
	}
	c.Advance(10 * time.Second)
	if done.Load() != 4 {
		t.Fatalf("Advance returned with %d of 4 tracked jobs done", done.Load())
	}
	c.WaitIdle() // nothing under way: returns at once
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	c := NewReal()
	defer c.Close()
	if c.Virtual() {
		t.Fatal("WithRealClock gave a virtual clock")
	}
	wall := time.Now().UTC()
	if d := c.Now().Sub(wall); d < -time.Second || d > time.Second {
		t.Fatalf("real clock is %v off the wall clock", d)
	}
	fired := make(chan time.Time, 1)
	c.At(c.Now().Add(20*time.Millisecond), func(now time.Time) { fired <- now })
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the real clock never fired its timer")
	}

	// Running timers never moves a real clock backwards.
	var inside time.Time
	c.At(c.Now(), func(time.Time) {
		start := time.Now()
		for time.Since(start) < 3*time.Millisecond {
			runtime.Gosched()
		}
		inside = c.Now()
	})
	c.RunDue()
	if after := c.Now(); after.Before(inside) {
		t.Fatalf("the clock went back from %v to %v", inside, after)
	}

	// It fires due timers even while tracked work (a slow webhook
	// receiver, say) is still under way.
	done := c.Track(0)
	fired2 := make(chan struct{})
	c.At(c.Now().Add(10*time.Millisecond), func(time.Time) { close(fired2) })
	select {
	case <-fired2:
	case <-time.After(10 * time.Second):
		t.Fatal("a timer waited for unrelated tracked work")
	}
	done()

	// Advance shifts it.
	before := c.Now()
	c.Advance(time.Hour)
	if d := c.Now().Sub(before); d < time.Hour || d > time.Hour+time.Second {
		t.Fatalf("Advance(1h) moved the clock %v", d)
	}
}

// TestWaitIdleGivesUpAtTheLimit: work that never ends holds a clock call
// for its limit and no longer (a webhook receiver that never answers must
// not stall the server's clock); work that ends in time is waited for.
func TestWaitIdleGivesUpAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewVirtual(testStart)
		defer c.Close()
		start := time.Now()
		c.Track(10 * time.Second) // never done
		finish := c.Track(10 * time.Second)
		go func() {
			time.Sleep(3 * time.Second)
			finish()
		}()
		c.Advance(time.Minute)
		if waited := time.Since(start); waited != 10*time.Second {
			t.Fatalf("Advance waited %v for work that never ends, want the 10s limit", waited)
		}
		if got := c.Now(); !got.Equal(testStart.Add(time.Minute)) {
			t.Fatalf("the clock stands at %v after the wait, want %v", got, testStart.Add(time.Minute))
		}

		// Work tracked without a limit is waited for however long it takes.
		finish = c.Track(0)
		go func() {
			time.Sleep(time.Hour)
			finish()
		}()
		start = time.Now()
		c.RunDue()
		if waited := time.Since(start); waited != time.Hour {
			t.Fatalf("RunDue waited %v for unlimited work, want 1h", waited)
		}
	})
}

// TestRealClockFiresTimersWhileACallWaits: on a real clock, a clock call
// waiting for tracked work (a slow receiver) does not hold up the timers
// that fall due meanwhile (another account's confirmation).
func TestRealClockFiresTimersWhileACallWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewReal()
		defer c.Close()
		finish := c.Track(10 * time.Second)
		fired := make(chan time.Duration, 1)
		start := time.Now()
		c.At(c.Now().Add(time.Second), func(time.Time) { fired <- time.Since(start) })
		returned := make(chan struct{})
		go func() {
			c.RunDue() // waits for the tracked work
			close(returned)
		}()
		if d := <-fired; d != time.Second {
			t.Fatalf("the timer fired after %v, want 1s (on time, while RunDue waited)", d)
		}
		select {
		case <-returned:
			t.Fatal("RunDue returned before the tracked work ended")
		default:
		}
		time.Sleep(time.Second)
		finish()
		<-returned
	})
}

// TestTrackForgetsEndedWork: a clock that no call waits on keeps no
// record of the work that ended.
func TestTrackForgetsEndedWork(t *testing.T) {
	c := NewVirtual(testStart)
	for range 1000 {
		c.Track(time.Second)()
	}
	if n := liveWork(c); n != 0 {
		t.Fatalf("%d ended items kept", n)
	}
}

// liveWork is how many pieces of work c keeps a record of.
func liveWork(c *Clock) int {
	c.busyMu.Lock()
	defer c.busyMu.Unlock()
	return c.live.Len()
}

// TestTrackForgetsEndedWorkBehindAStuckItem (issue 16 item 3): one piece
// of work that never ends (a delivery to a receiver that never answers)
// does not keep the record of every piece tracked after it.
func TestTrackForgetsEndedWorkBehindAStuckItem(t *testing.T) {
	c := NewReal()
	defer c.Close()
	stuck := c.Track(time.Hour)
	for range 1000 {
		c.Track(time.Hour)()
	}
	if n := liveWork(c); n != 1 {
		t.Fatalf("%d items kept, want the stuck one only", n)
	}
	stuck()
	if n := liveWork(c); n != 0 {
		t.Fatalf("%d items kept after the stuck one ended", n)
	}
}

// TestACallDoesNotWaitForWorkTrackedAfterItBegan (issue 16 item 5): a
// clock call waits for the work under way when it began and the work its
// own timers start, not for work that others start meanwhile, so a
// steady stream of new work (or a real clock's own timers) never holds
// it.
func TestACallDoesNotWaitForWorkTrackedAfterItBegan(t *testing.T) {
	for _, real := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			c := NewVirtual(testStart)
			if real {
				c = NewReal()
			}
			defer c.Close()
			before := c.Track(10 * time.Second)
			start := time.Now()
			returned := make(chan time.Duration)
			go func() {
				c.RunDue()
				returned <- time.Since(start)
			}()
			synctest.Wait() // RunDue waits for before
			// Work that others start meanwhile, and never finish: a
			// request's, and on a real clock a timer's that its own
			// goroutine runs.
			c.Track(10 * time.Second)
			if real {
				c.At(c.Now(), func(time.Time) { c.Track(10 * time.Second) })
				synctest.Wait()
			}
			time.Sleep(time.Second)
			before()
			if d := <-returned; d != time.Second {
				t.Fatalf("real=%v: RunDue returned after %v, want 1s (when the work it waited for ended)", real, d)
			}
		})
	}
}

// TestACallWaitsForHangingWorkSideBySide (issue 16 item 5): on a virtual
// clock, each of ten steps starts work that never ends (a retry to a
// receiver that never answers); the call waits for all of it side by
// side, at most the limit in all, not the limit once per step.
func TestACallWaitsForHangingWorkSideBySide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewVirtual(testStart)
		defer c.Close()
		for i := range 10 {
			c.At(testStart.Add(time.Duration(i+1)*time.Minute), func(time.Time) { c.Track(10 * time.Second) })
		}
		// Work that ends in time is waited for, as long as the bound
		// allows.
		var finished atomic.Bool
		c.At(testStart.Add(time.Second), func(time.Time) {
			done := c.Track(10 * time.Second)
			go func() {
				time.Sleep(2 * time.Second)
				finished.Store(true)
				done()
			}()
		})
		start := time.Now()
		c.Advance(time.Hour)
		if d := time.Since(start); d != 10*time.Second {
			t.Fatalf("Advance took %v, want the 10s limit once", d)
		}
		if !finished.Load() {
			t.Fatal("Advance returned before the work that ends in time ended")
		}
		if got := c.Now(); !got.Equal(testStart.Add(time.Hour)) {
			t.Fatalf("the clock stands at %v, want %v", got, testStart.Add(time.Hour))
		}
	})
}
