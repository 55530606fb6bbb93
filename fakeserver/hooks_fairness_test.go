package fakeserver

import (
	"net/http"
	"runtime"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestDeliveriesNeverTakeTheServerLock: a delivery is made and its
// answer recorded while the server's lock is held throughout (the workers
// use internal/hooks' own lock).
func TestDeliveriesNeverTakeTheServerLock(t *testing.T) {
	skipOnDataDir(t, "with a data directory a delivery attempt takes the server's lock, briefly, to wait until its event is durable (persist_hooks.go)")
	s := New(t)
	rc := newHookReceiver(t, s, answerAlways(200))
	alice := newTestParty(t, s, "@alice")
	w := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated)
	s.mu.Lock()
	s.emitTransferLocked(s.nets[confpay.NetworkTest], webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, nil))
	rc.waitFor(t, 1)
	recorded := false
	for deadline := time.Now().Add(time.Minute); !recorded && time.Now().Before(deadline); {
		for _, d := range s.hooks.DeliveryRecords(confpay.NetworkTest, alice.acct.id) {
			recorded = d.WebhookID == w.WebhookID && d.Status == confpay.DeliverySucceeded
		}
	}
	s.mu.Unlock()
	if !recorded {
		t.Fatal("the answer was not recorded while the server lock was held")
	}
}

// TestAFloodingAccountNeverFailsAnothersDeliveries (issue 22 item 4): one
// account floods its sixteen subscriptions (half the receivers hang, half
// answer 500) far past its bounds of pending deliveries. Its own new
// deliveries then fail at once; a victim's deliveries made meanwhile are
// every one attempted at the instant of its event and retried on the
// schedule (5 s later), never failed with 0 attempts.
func TestAFloodingAccountNeverFailsAnothersDeliveries(t *testing.T) {
	// The delivery timeout bounds how long the hanging receivers hold
	// their attempts; it is also what a victim's attempt may take to reach
	// its receiver, so it must stay well above a loaded machine's latency
	// under -race (300 ms was not: a victim attempt timed out unsent).
	s := New(t, WithMaxPendingDeliveries(20, 40), WithoutDeliveryJitter(), WithDeliveryTimeout(2*time.Second))
	hangs := newHookReceiver(t, s, answerAlways(0))
	fails := newHookReceiver(t, s, answerAlways(500))
	victimRC := newHookReceiver(t, s, func(n int, _ *http.Request) int {
		if n <= 5 {
			return 503 // each delivery's first attempt fails
		}
		return 204
	})
	flood := newTestParty(t, s, "@flood")
	victim := newTestParty(t, s, "@victim")
	for i := range hooks.MaxSubscriptions {
		rc := hangs
		if i%2 == 1 {
			rc = fails
		}
		subscribeHooks(t, flood, rc.url(), webhookverify.KindTransferInitiated)
	}
	subscribeHooks(t, victim, victimRC.url(), webhookverify.KindTransferInitiated)
	t0 := s.Now()
	for i := range 100 {
		emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, flood.acct, nil))
		if i%20 == 10 {
			emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, victim.acct, nil))
		}
	}
	s.Sync()
	victimRC.waitFor(t, 5)
	check := func(when string, status confpay.DeliveryStatus, attempts int) {
		t.Helper()
		// An attempt's answer is recorded after its receiver saw it (and
		// answered): wait for the records, with a real-time bound that
		// only turns a hang into a failure.
		settled := func() bool {
			recs := s.hooks.DeliveryRecords(confpay.NetworkTest, victim.acct.id)
			for _, d := range recs {
				if d.Status != status || d.Attempts != attempts {
					return false
				}
			}
			return len(recs) == 5
		}
		for deadline := time.Now().Add(time.Minute); !settled() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		recs := s.hooks.DeliveryRecords(confpay.NetworkTest, victim.acct.id)
		if len(recs) != 5 {
			t.Fatalf("%s: %d victim deliveries, want 5", when, len(recs))
		}
		for _, d := range recs {
			if d.Status != status || d.Attempts != attempts {
				t.Errorf("%s: victim delivery %s is %s after %d attempts, want %s after %d", when, d.DeliveryID, d.Status, d.Attempts, status, attempts)
			}
		}
	}
	check("after the flood", confpay.DeliveryPending, 1)
	s.Advance(5 * time.Second)
	victimRC.waitFor(t, 10)
	check("5 s later", confpay.DeliverySucceeded, 2)
	for i, hit := range victimRC.all() {
		want := t0
		if i >= 5 {
			want = t0.Add(5 * time.Second)
		}
		if !hit.at.Equal(want) {
			t.Errorf("victim attempt %d at %v, want %v", i+1, hit.at.Sub(t0), want.Sub(t0))
		}
	}
	// The flood did reach its own bound.
	var pending, refused int
	for _, d := range s.hooks.DeliveryRecords(confpay.NetworkTest, flood.acct.id) {
		switch {
		case d.Status == confpay.DeliveryPending:
			pending++
		case d.Status == confpay.DeliveryFailed && d.Attempts == 0:
			refused++
		}
	}
	if pending > 40 || refused == 0 {
		t.Errorf("flooder: %d pending, %d refused; want at most its bound 40 and some refused", pending, refused)
	}
}
