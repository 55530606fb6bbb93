package clock

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestACallFromInsideWorkDoesNotWaitForIt (issue 16 item 5): a clock call
// made from inside tracked work (a receiver answering its delivery) waits
// neither for that work nor for work of the same key (the deliveries
// waiting behind it), which cannot end before it; it still waits for
// other work.
func TestACallFromInsideWorkDoesNotWaitForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewVirtual(testStart)
		defer c.Close()
		self := c.TrackWork(10*time.Second, "sub")
		behind := c.TrackWork(10*time.Second, "sub")
		other := c.TrackWork(10*time.Second, nil)
		go func() {
			time.Sleep(2 * time.Second)
			other.Done()
		}()
		inner := make(chan time.Duration)
		go func() {
			leave := self.Inside()
			start := time.Now()
			c.RunDue()
			inner <- time.Since(start)
			leave()
			self.Done()
			behind.Done()
		}()
		if d := <-inner; d != 2*time.Second {
			t.Fatalf("the call from inside waited %v, want 2s (the other work only)", d)
		}
		// Outside, the same call waits for work of that key again.
		w := c.TrackWork(10*time.Second, "sub")
		go func() {
			time.Sleep(3 * time.Second)
			w.Done()
		}()
		start := time.Now()
		c.RunDue()
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("a call from outside waited %v, want 3s", d)
		}
	})
}

func TestGoroutineID(t *testing.T) {
	a, b := goroutineID(), goroutineID()
	other := make(chan uint64)
	go func() { other <- goroutineID() }()
	if o := <-other; a == 0 || a != b || o == a || o == 0 {
		t.Fatalf("ids: %d, %d on one goroutine, %d on another", a, b, o)
	}
}
