package fakeserver

import (
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestDeliveriesNeverTakeTheServerLock: a delivery is made and its
// answer recorded while the server's lock is held throughout (the workers
// use internal/hooks' own lock).
func TestDeliveriesNeverTakeTheServerLock(t *testing.T) {
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
