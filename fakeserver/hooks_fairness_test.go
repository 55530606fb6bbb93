package fakeserver

import (
	"strconv"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestDeliveryWorkersNeverTakeTheServerLock: a delivery is made and its
// answer recorded while the server's lock is held throughout (the workers
// use internal/hooks' own lock).
func TestDeliveryWorkersNeverTakeTheServerLock(t *testing.T) {
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

// TestDeadReceiversDoNotDelayAnotherAccount (issue 16 item 6): sixteen
// receivers of one account that never answer occupy at most half the
// delivery workers; another account's delivery is made at once, long
// before any of theirs times out.
func TestDeadReceiversDoNotDelayAnotherAccount(t *testing.T) {
	s := New(t, WithDeliveryTimeout(time.Hour))
	dead := newHookReceiver(t, s, answerAlways(0)) // never answers
	good := newHookReceiver(t, s, answerAlways(200))
	mallory := newTestParty(t, s, "@mallory")
	for i := range 16 {
		subscribeHooks(t, mallory, dead.url()+"?n="+strconv.Itoa(i), webhookverify.KindTransferInitiated)
	}
	bob := newTestParty(t, s, "@bob")
	subscribeHooks(t, bob, good.url(), webhookverify.KindTransferInitiated)
	t.Cleanup(s.Close) // first: it cancels the hanging requests the receivers wait on

	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, mallory.acct, nil))
	dead.waitFor(t, 4) // half of the 8 workers
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, bob.acct, nil))
	good.waitFor(t, 1)
	if n := dead.count(); n != 4 {
		t.Errorf("mallory's receivers got %d requests at once; one account may occupy 4 of 8 workers", n)
	}
}

// TestAHangingReceiverHoldsAClockCallForItsTimeoutOnly (issue 16 item 5):
// with attempts queued behind receivers that never answer, Sync waits for
// each no longer than the delivery timeout (plus a second), instead of
// until the whole queue drained.
func TestAHangingReceiverHoldsAClockCallForItsTimeoutOnly(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s := New(t, WithDeliveryTimeout(timeout), WithDeliveryWorkers(2))
	dead := newHookReceiver(t, s, answerAlways(0))
	mallory := newTestParty(t, s, "@mallory")
	for i := range 16 {
		subscribeHooks(t, mallory, dead.url()+"?n="+strconv.Itoa(i), webhookverify.KindTransferInitiated)
	}
	t.Cleanup(s.Close)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, mallory.acct, nil))
	s.Sync()
	// One worker for mallory makes the 16 attempts one after another,
	// 3.2 s in all; Sync gave up waiting after 1.2 s.
	if n := dead.count(); n >= 16 {
		t.Fatalf("Sync returned after all %d attempts; it waited for the whole queue", n)
	}
	rec := s.hooks.DeliveryRecords(confpay.NetworkTest, mallory.acct.id)
	if len(rec) != 16 {
		t.Fatalf("%d delivery records, want 16", len(rec))
	}
}
