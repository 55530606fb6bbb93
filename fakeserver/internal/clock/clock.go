// Package clock is the fakeserver's one source of time and its one timer
// queue: a virtual clock that stands still until it is moved, or a real one
// that follows the wall clock plus an offset.
package clock

import (
	"container/heap"
	"container/list"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the server's one source of time and its one timer queue. Every
// time-based behaviour (confirmations, approval expiry, webhook retries,
// daily windows, timestamps) reads Now and schedules with At.
//
// A virtual clock (the default in tests) stands still until Advance or Set
// moves it. A real clock follows the wall clock plus an offset that Advance
// and Set change, and a goroutine fires timers as their time comes.
//
// Advance moves time forward timer by timer: each timer runs with Now equal
// to its own deadline, and after each step the clock waits until the work
// tracked (with Track) before the call began and the work its steps
// started have finished, or have run past the limit they were tracked
// with. So a test that advances 24 hours sees every retry at its exact
// scheduled instant. A call never waits longer than the largest limit
// (plus the time its timer functions take to run): work that hangs is
// waited for side by side, not one piece after another, and work tracked
// by anything else while the call runs is not waited for (see waiter).
// Past that bound a call no longer waits: work its later steps start may
// end after it returned, and what that work schedules from its end (a
// retry after a failed answer) runs at a later step than its own instant.
//
// Lock discipline: c.mu guards the queue and the time (which Now reads
// without it, atomically: a reading is one instant, as under c.mu); it is
// never held while a timer function runs. c.run serialises the running of
// timers, so timer functions never run concurrently with each other. Timer
// functions may take the server's lock and may schedule further timers.
type Clock struct {
	mu      sync.Mutex
	virtual bool
	// The time: written under mu, read without it (Now takes no lock, so
	// that the many readings of a request share the line, not contend
	// for it).
	now    atomic.Pointer[time.Time] // virtual time
	offset atomic.Int64              // real mode: a time.Duration added to the wall clock
	queue  timerQueue
	seq    uint64

	run sync.Mutex // held while timers run

	// live is the tracked work under way and within its limit, in the
	// order it was tracked (*work); workSeq numbers it; changed is closed
	// and replaced whenever a piece ends; caller is the clock call whose
	// timer runs now, if any; maxLimit is the largest limit work was
	// tracked with. busyMu guards them and is a leaf.
	busyMu    sync.Mutex
	live      list.List
	workSeq   uint64
	changed   chan struct{}
	caller    *waiter
	maxLimit  time.Duration
	inside    map[uint64]*work // by goroutine id (inside.go)
	suspended map[any]int      // keys no call waits for, with how many calls suspend them (inside.go)

	wake chan struct{} // real mode: the queue head changed
	stop chan struct{}
}

// NewVirtual returns a clock standing at start.
func NewVirtual(start time.Time) *Clock {
	c := &Clock{virtual: true, changed: make(chan struct{})}
	c.storeNow(start.UTC())
	return c
}

// NewReal returns a clock that follows the wall clock and fires timers
// from a goroutine until Close is called.
func NewReal() *Clock {
	c := &Clock{wake: make(chan struct{}, 1), stop: make(chan struct{}), changed: make(chan struct{})}
	go c.loop()
	return c
}

// Resolution is the precision of every instant the server records and
// answers: whole milliseconds, so that a client in any language can feed a
// timestamp back as a bound and mean exactly that instant.
const Resolution = time.Millisecond

// Now returns the current time on this clock, in UTC, truncated to
// Resolution.
func (c *Clock) Now() time.Time {
	return c.nowLocked().Truncate(Resolution)
}

// nowLocked is the time, not truncated. (It needs no lock, but under c.mu
// it is the time the critical section sees.)
func (c *Clock) nowLocked() time.Time {
	if c.virtual {
		return *c.now.Load()
	}
	return time.Now().UTC().Add(time.Duration(c.offset.Load())).Round(0)
}

// storeNow sets a virtual clock's time (under c.mu, but at construction).
func (c *Clock) storeNow(t time.Time) { c.now.Store(&t) }

// Virtual reports whether the clock is virtual.
func (c *Clock) Virtual() bool { return c.virtual }

// Mono reads the wall clock's monotonic time, whatever the server's clock
// says: how a client paces its calls is measured in the time it waits.
// Only differences of two readings mean anything. A reading is a duration
// since an origin a second before the process started, so that it is 8
// bytes where it is kept (the audit's records) and never 0: 0 can mean
// "no reading".
func Mono() time.Duration { return time.Since(monoOrigin) }

var monoOrigin = time.Now().Add(-time.Second)

// Timer is a scheduled function; Stop cancels it.
type Timer struct {
	c     *Clock
	when  time.Time
	seq   uint64
	index int // in the heap; -1 once popped or stopped
	f     func(now time.Time)
}

// At schedules f to run at when, truncated to Resolution (or as soon as
// timers next run, if when has passed). f receives the clock's time at
// which it runs, truncated to Resolution.
func (c *Clock) At(when time.Time, f func(now time.Time)) *Timer {
	when = when.Truncate(Resolution)
	c.mu.Lock()
	c.seq++
	t := &Timer{c: c, when: when, seq: c.seq, f: f}
	heap.Push(&c.queue, t)
	head := c.queue[0] == t
	c.mu.Unlock()
	if head && !c.virtual {
		c.poke()
	}
	return t
}

// Stop cancels the timer; it reports whether the timer was still pending.
func (t *Timer) Stop() bool {
	if t == nil {
		return false
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.queue, t.index)
	return true
}

// Skip moves a virtual clock to t without running the timers that fall
// due, the way a real clock's timer can trail the time for a moment. It
// exists for tests of that race.
func (c *Clock) Skip(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeNow(t.UTC())
}

// Pending returns how many timers are scheduled.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Advance moves the clock forward by d, running every timer that falls due
// on the way at its own instant, and returns the new time. It returns once
// all work due up to the new time has run.
func (c *Clock) Advance(d time.Duration) time.Time {
	if d < 0 {
		d = 0
	}
	defer c.suspendCaller()()
	c.run.Lock()
	defer c.run.Unlock()
	c.mu.Lock()
	target := c.nowLocked().Add(d)
	c.mu.Unlock()
	return c.moveTo(target, false)
}

// Set moves the clock to t (forward or backward), runs whatever is due and
// returns the new time.
func (c *Clock) Set(t time.Time) time.Time {
	defer c.suspendCaller()()
	c.run.Lock()
	defer c.run.Unlock()
	return c.moveTo(t.UTC(), true)
}

// RunDue runs every timer due at the current time and waits for the work
// they start. It is what "wait until all work due now has run" means.
func (c *Clock) RunDue() {
	defer c.suspendCaller()()
	c.run.Lock()
	defer c.run.Unlock()
	c.mu.Lock()
	now := c.nowLocked()
	c.mu.Unlock()
	c.moveTo(now, false)
}

// moveTo steps through due timers up to target. c.run must be held. With
// exact (Set) the clock ends at target even if that is in the past; else
// it never moves back: a real clock that ran timers for a while has passed
// target already and stays where the wall clock is.
func (c *Clock) moveTo(target time.Time, exact bool) time.Time {
	w := c.newWaiter()
	for {
		if c.virtual {
			c.wait(w)
		} else {
			// A real clock's own timers keep firing while the call
			// waits for deliveries: nothing else is held up by them.
			c.run.Unlock()
			c.wait(w)
			c.run.Lock()
		}
		c.mu.Lock()
		if len(c.queue) == 0 || c.queue[0].when.After(target) {
			if exact || target.After(c.nowLocked()) {
				c.setLocked(target)
			}
			now := c.nowLocked()
			c.mu.Unlock()
			if !c.virtual {
				c.poke()
			}
			return now
		}
		t := heap.Pop(&c.queue).(*Timer)
		if t.when.After(c.nowLocked()) {
			c.setLocked(t.when)
		}
		now := c.nowLocked().Truncate(Resolution)
		c.mu.Unlock()
		c.runTimer(w, t, now)
	}
}

func (c *Clock) setLocked(t time.Time) {
	if c.virtual {
		c.storeNow(t)
		return
	}
	c.offset.Store(int64(t.Sub(time.Now().UTC())))
}

// work is one tracked piece of work: seq is its place in tracking order;
// deadline is the wall-clock instant after which no call waits for it
// (zero: no limit); elem is its place in c.live, nil once it ended or
// passed its deadline.
type work struct {
	seq      uint64
	deadline time.Time
	elem     *list.Element
	done     bool
	// key groups work that waits on the same thing (inside.go): the
	// work itself unless TrackWork named one.
	key any
}

// Track marks asynchronous work as under way (for example a webhook
// delivery started by a timer); call the returned function when it is
// done. Advance, Set, RunDue and WaitIdle wait for tracked work (see
// waiter for which), but for at most limit of real time from now
// (limit <= 0: as long as it takes), so that work which hangs (a receiver
// that never answers) holds no clock call longer than that. The clock
// keeps a record of the work only while it is under way and within its
// limit.
func (c *Clock) Track(limit time.Duration) (done func()) {
	w := c.track(limit, nil)
	return func() { c.end(w) }
}

func (c *Clock) track(limit time.Duration, key any) *work {
	w := &work{key: key}
	if key == nil {
		w.key = w
	}
	if limit > 0 {
		w.deadline = time.Now().Add(limit)
	}
	c.busyMu.Lock()
	defer c.busyMu.Unlock()
	c.workSeq++
	w.seq = c.workSeq
	w.elem = c.live.PushBack(w)
	if c.caller != nil {
		c.caller.own = append(c.caller.own, w)
	}
	c.maxLimit = max(c.maxLimit, limit)
	return w
}

// end ends w, once.
func (c *Clock) end(w *work) {
	c.busyMu.Lock()
	defer c.busyMu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if w.elem != nil {
		c.live.Remove(w.elem)
		w.elem = nil
	}
	c.signalLocked()
}

// signalLocked wakes the waiting calls. c.busyMu must be held.
func (c *Clock) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waiter is what one clock call waits for: the work tracked before the
// call began (seq up to upTo), each piece until it ends or reaches its
// limit, and the work its own timers started (own), each piece until it
// ends, reaches its limit or the call has run for the largest limit any
// work was tracked with. Work tracked meanwhile by anything else (a
// request, a real clock's own timers, a delivery handing on to the next
// waiting one) is not waited for, so a steady stream of new work never
// holds a call. The whole wait of a call is thus bounded by one limit:
// work that hangs is waited for side by side, not one piece after
// another.
type waiter struct {
	upTo  uint64
	start time.Time
	own   []*work
}

// newWaiter begins a clock call's wait.
func (c *Clock) newWaiter() *waiter {
	c.busyMu.Lock()
	defer c.busyMu.Unlock()
	return &waiter{upTo: c.workSeq, start: time.Now()}
}

// runTimer runs t's function at now on behalf of the call w: the work it
// tracks is w's own. c.run must be held.
func (c *Clock) runTimer(w *waiter, t *Timer, now time.Time) {
	c.busyMu.Lock()
	c.caller = w
	c.busyMu.Unlock()
	defer func() {
		c.busyMu.Lock()
		c.caller = nil
		c.busyMu.Unlock()
	}()
	t.f(now)
}

// WaitIdle blocks until the work tracked before the call has ended,
// leaving out work past its limit.
func (c *Clock) WaitIdle() {
	defer c.suspendCaller()()
	c.wait(c.newWaiter())
}

// wait blocks until nothing w waits for is under way.
func (c *Clock) wait(w *waiter) {
	for {
		c.busyMu.Lock()
		now := time.Now()
		var head *work
		until := time.Time{}
		// Work tracked before the call, in order: what ended left the
		// list; what passed its limit leaves it now (no call waits for
		// it again).
		for e := c.live.Front(); e != nil; {
			x := e.Value.(*work)
			if x.seq > w.upTo {
				break
			}
			next := e.Next()
			if c.suspended[x.key] > 0 {
				e = next
				continue
			}
			if x.deadline.IsZero() || now.Before(x.deadline) {
				head, until = x, x.deadline
				break
			}
			c.live.Remove(e)
			x.elem = nil
			e = next
		}
		if head == nil {
			end := w.start.Add(c.maxLimit)
			for len(w.own) > 0 {
				x := w.own[0]
				if !x.done && c.suspended[x.key] == 0 && (x.deadline.IsZero() || (now.Before(x.deadline) && now.Before(end))) {
					head, until = x, x.deadline
					if end.Before(until) {
						until = end
					}
					break
				}
				w.own[0] = nil
				w.own = w.own[1:]
			}
		}
		changed := c.changed
		c.busyMu.Unlock()
		if head == nil {
			return
		}
		if until.IsZero() {
			<-changed
			continue
		}
		t := time.NewTimer(until.Sub(now))
		select {
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// fire runs the timers of a real clock that are due now, without waiting
// for the work they start (RunDue would): in real time nothing needs that
// determinism, and a slow webhook receiver must not hold up confirmations
// and expiries.
func (c *Clock) fire() {
	c.run.Lock()
	defer c.run.Unlock()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.queue[0].when.After(c.nowLocked()) {
			c.mu.Unlock()
			return
		}
		t := heap.Pop(&c.queue).(*Timer)
		now := c.nowLocked().Truncate(Resolution)
		c.mu.Unlock()
		t.f(now)
	}
}

// poke wakes the real-time loop.
func (c *Clock) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// loop fires timers of a real clock as the wall clock reaches them.
func (c *Clock) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.mu.Lock()
		wait := time.Hour
		if len(c.queue) > 0 {
			wait = c.queue[0].when.Sub(c.nowLocked())
		}
		c.mu.Unlock()
		if wait <= 0 {
			c.fire()
			continue
		}
		timer.Reset(wait)
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-timer.C:
		}
	}
}

// Close stops a real clock's goroutine.
func (c *Clock) Close() {
	if c.stop != nil {
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
	}
}

// timerQueue is a min-heap of timers by deadline, then scheduling order.
type timerQueue []*Timer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if !q[i].when.Equal(q[j].when) {
		return q[i].when.Before(q[j].when)
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}
func (q *timerQueue) Push(x any) {
	t := x.(*Timer)
	t.index = len(*q)
	*q = append(*q, t)
}
func (q *timerQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*q = old[:len(old)-1]
	return t
}
