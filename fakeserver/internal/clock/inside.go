package clock

import (
	"context"
	"runtime"
	"time"
)

// A delivery never waits on itself: a webhook receiver in this process
// that moves the clock (or waits for it) from inside its own delivery
// would otherwise hold the call until the delivery's limit, since the
// delivery cannot end before the receiver answers. The receiver's
// goroutine is marked as running inside the delivery's work (Inside), and
// a clock call made from a marked goroutine suspends that work and all
// work tracked with the same key (the other deliveries to the same
// receiver, which wait for it): no call waits for them while the call
// runs, the calls already waiting included (a virtual clock's Advance
// waiting for the delivery its timer started lets it go, so that the
// receiver's call can run).

// Work is a handle to tracked work (TrackWork).
type Work struct {
	c *Clock
	w *work
}

// TrackWork is Track with a handle: its Done ends the work, and Inside
// and WithWork name it. Work tracked with the same key (comparable; nil
// for none) is suspended together (see Inside): give the same key to
// work that cannot end before the others (attempts waiting in turn).
func (c *Clock) TrackWork(limit time.Duration, key any) *Work {
	return &Work{c: c, w: c.track(limit, key)}
}

// Done ends the work; calling it again does nothing.
func (w *Work) Done() { w.c.end(w.w) }

type workKey struct{}

// WithWork returns a copy of ctx that carries w, so that the code that
// hands the work to a receiver can find it (WorkFrom).
func WithWork(ctx context.Context, w *Work) context.Context {
	return context.WithValue(ctx, workKey{}, w)
}

// WorkFrom returns the work ctx carries, or nil.
func WorkFrom(ctx context.Context) *Work {
	w, _ := ctx.Value(workKey{}).(*Work)
	return w
}

// Inside marks the calling goroutine as running on behalf of w (a
// receiver's handler serving w's delivery) until leave is called: clock
// calls it makes meanwhile do not wait for w or the work of the same key,
// nor let other calls wait for them.
func (w *Work) Inside() (leave func()) {
	c, g := w.c, goroutineID()
	c.busyMu.Lock()
	if c.inside == nil {
		c.inside = map[uint64]*work{}
	}
	prev := c.inside[g]
	c.inside[g] = w.w
	c.busyMu.Unlock()
	return func() {
		c.busyMu.Lock()
		defer c.busyMu.Unlock()
		if prev != nil {
			c.inside[g] = prev
		} else {
			delete(c.inside, g)
		}
	}
}

// suspendCaller suspends the key of the work the calling goroutine runs
// inside, if any, for the length of a clock call; resume ends the
// suspension.
func (c *Clock) suspendCaller() (resume func()) {
	c.busyMu.Lock()
	defer c.busyMu.Unlock()
	if len(c.inside) == 0 {
		return func() {}
	}
	w := c.inside[goroutineID()]
	if w == nil {
		return func() {}
	}
	if c.suspended == nil {
		c.suspended = map[any]int{}
	}
	c.suspended[w.key]++
	c.signalLocked()
	return func() {
		c.busyMu.Lock()
		defer c.busyMu.Unlock()
		if c.suspended[w.key]--; c.suspended[w.key] == 0 {
			delete(c.suspended, w.key)
		}
		c.signalLocked()
	}
}

// goroutineID returns the calling goroutine's id, read from the first
// line of its stack trace ("goroutine 123 [running]:"). Go offers no
// other way to tell a goroutine apart, and the receiver's call to the
// clock carries nothing else (Server.Sync takes no context). Only clock
// calls made while some receiver is marked, and in-process deliveries,
// read it.
func goroutineID() uint64 {
	var buf [32]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	var id uint64
	for _, b := range buf[min(len(prefix), n):n] {
		if b < '0' || b > '9' {
			break
		}
		id = id*10 + uint64(b-'0')
	}
	return id
}
