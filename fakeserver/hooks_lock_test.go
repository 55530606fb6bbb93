package fakeserver

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/confpay/confpay-go/webhookverify"
)

// lockProbe is a slog handler that records whether the server's lock was
// free each time a line was logged. Nothing else runs in its test, so a
// lock that is taken means the line was logged under it.
type lockProbe struct {
	s            *Server
	lines, under atomic.Int32
}

func (h *lockProbe) Enabled(context.Context, slog.Level) bool { return true }
func (h *lockProbe) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lockProbe) WithGroup(string) slog.Handler            { return h }
func (h *lockProbe) Handle(context.Context, slog.Record) error {
	h.lines.Add(1)
	if h.s.mu.TryLock() {
		h.s.mu.Unlock()
	} else {
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
