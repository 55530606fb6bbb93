package fakeserver

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confpay/confpay-go/webhookverify"
)

// lockProbe is a slog handler that records whether the server's lock was
// free each time a line was logged. A line logged under the lock keeps
// it taken for as long as Handle runs; another goroutine (a timer that
// Sync runs) takes it only briefly. So the lock counts as held only when
// it stays taken for a whole second of trying.
type lockProbe struct {
	s            *Server
	lines, under atomic.Int32
}

// heldThroughout reports whether mu stays locked for d of trying.
func heldThroughout(mu interface {
	TryLock() bool
	Unlock()
}, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); runtime.Gosched() {
		if mu.TryLock() {
			mu.Unlock()
			return false
		}
	}
	return true
}

func (h *lockProbe) Enabled(context.Context, slog.Level) bool { return true }
func (h *lockProbe) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lockProbe) WithGroup(string) slog.Handler            { return h }
func (h *lockProbe) Handle(context.Context, slog.Record) error {
	h.lines.Add(1)
	if heldThroughout(&h.s.mu.Mutex, time.Second) {
		h.under.Add(1)
	}
	return nil
}

// TestDeliveryLogsOutsideTheLock: a delivery attempt's log line is written
// after the server's lock is let go (nothing holds it across logging).
func TestDeliveryLogsOutsideTheLock(t *testing.T) {
	probe := &lockProbe{}
	s := NewServer(WithLogger(slog.New(probe)))
	defer s.Close()
	probe.s = s
	// The probe itself: a line logged while the lock is held counts.
	s.mu.Mutex.Lock()
	_ = probe.Handle(context.Background(), slog.Record{})
	s.mu.Mutex.Unlock()
	if probe.under.Load() != 1 {
		t.Fatal("the probe missed a line logged under the lock")
	}
	probe.lines.Store(0)
	probe.under.Store(0)
	rc := newHookReceiver(t, s, answerAlways(200))
	alice := newTestParty(t, s, "@alice")
	subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, nil))
	s.Sync()
	s.clock.WaitIdle() // the attempt is tracked until its answer is recorded
	if rc.count() != 1 {
		t.Fatalf("%d deliveries", rc.count())
	}
	if probe.lines.Load() == 0 {
		t.Fatal("the delivery logged nothing; the probe proves nothing")
	}
	if n := probe.under.Load(); n > 0 {
		t.Fatalf("%d of %d log lines were written under the server's lock", n, probe.lines.Load())
	}
}
