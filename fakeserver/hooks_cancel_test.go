package fakeserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

func TestDeleteCancelsPendingRetries(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	rc, alice, w := oneDelivery(t, s, answerAlways(http.StatusInternalServerError))
	s.Advance(5 * time.Second) // attempt 2
	if n := rc.count(); n != 2 {
		t.Fatalf("%d attempts before the delete, want 2", n)
	}
	if s.clock.Pending() != 1 {
		t.Fatalf("want one retry scheduled, have %d timers", s.clock.Pending())
	}
	if err := alice.client.Webhooks.Delete(context.Background(), w.WebhookID); err != nil {
		t.Fatal(err)
	}
	if n := s.clock.Pending(); n != 0 {
		t.Fatalf("%d timers left after the delete", n)
	}
	s.Advance(48 * time.Hour)
	if n := rc.count(); n != 2 {
		t.Fatalf("%d attempts after the delete, want still 2", n)
	}
}

func TestDeleteAbortsTheAttemptInFlight(t *testing.T) {
	s := New(t) // the default 10 s timeout: only the delete can end the request quickly
	rc := newHookReceiver(t, s, answerAlways(0))
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	w := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	rc.waitFor(t, 1)
	if err := alice.client.Webhooks.Delete(context.Background(), w.WebhookID); err != nil {
		t.Fatal(err)
	}
	s.Sync() // returns once the aborted attempt is recorded
	s.Advance(48 * time.Hour)
	if n := rc.count(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	if n := s.clock.Pending(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

func TestReplayOfAFailedDelivery(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	var up atomic.Bool
	rc, alice, w := oneDelivery(t, s, func(int, *http.Request) int {
		if !up.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	s.Advance(25 * time.Hour) // all eight attempts fail
	ds := listDeliveries(t, alice, w.WebhookID)
	if len(ds) != 1 || ds[0].Status != confpay.DeliveryFailed || ds[0].Attempts != 8 {
		t.Fatalf("before the replay: %+v", ds)
	}
	s.Sync()
	up.Store(true) // the receiver is back
	r, err := alice.client.Webhooks.Replay(context.Background(), w.WebhookID, ds[0].EventID)
	if err != nil {
		t.Fatal(err)
	}
	s.Sync()
	hits := rc.all()
	if len(hits) != 9 {
		t.Fatalf("%d requests, want 8 attempts and the replay", len(hits))
	}
	last := hits[8]
	if !bytes.Equal(last.body, hits[0].body) || last.header.Get(webhookverify.EventIDHeader) != ds[0].EventID ||
		last.header.Get(webhookverify.AttemptHeader) != "1" || last.header.Get(webhookverify.SignatureHeader) != hits[0].header.Get(webhookverify.SignatureHeader) {
		t.Fatal("the replay is not the same event, body and signature, as attempt 1")
	}
	ds = listDeliveries(t, alice, w.WebhookID)
	if len(ds) != 2 || ds[0].DeliveryID != r.DeliveryID || ds[0].Trigger != confpay.TriggerReplay || ds[0].Status != confpay.DeliverySucceeded ||
		ds[0].Attempts != 1 || ds[0].ResponseStatus != 200 || ds[1].Status != confpay.DeliveryFailed {
		t.Fatalf("after the replay: %+v, %+v", ds[0], ds[1])
	}
}

func TestReplayIsRetriedLikeAnyDelivery(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	rc, alice, w := oneDelivery(t, s, func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusOK
		}
		if n == 2 {
			return http.StatusInternalServerError // the replay's first attempt
		}
		return http.StatusOK
	})
	ev := listDeliveries(t, alice, w.WebhookID)[0].EventID
	t0 := s.Now()
	if _, err := alice.client.Webhooks.Replay(context.Background(), w.WebhookID, ev); err != nil {
		t.Fatal(err)
	}
	s.Advance(time.Minute)
	hits := rc.all()
	if len(hits) != 3 || !hits[2].at.Equal(t0.Add(5*time.Second)) || hits[2].header.Get(webhookverify.AttemptHeader) != "2" {
		t.Fatalf("the failed replay was not retried 5 s later (%d requests)", len(hits))
	}
	d := listDeliveries(t, alice, w.WebhookID)[0]
	if d.Trigger != confpay.TriggerReplay || d.Status != confpay.DeliverySucceeded || d.Attempts != 2 || d.RetryCount != 1 {
		t.Fatalf("replay record %+v", d)
	}
}

func TestReplayNeedsAnEventOfTheAccount(t *testing.T) {
	s := New(t)
	alice, bob, carol := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob"), newTestParty(t, s, "@carol")
	bot := newTestAgent(t, s, alice, "bot")
	rc := newHookReceiver(t, s, answerAlways(200))
	wa := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferConfirmed)
	wbot := subscribeHooks(t, bot, rc.url(), webhookverify.KindTransferConfirmed)
	wc := subscribeHooks(t, carol, rc.url(), webhookverify.KindAgentPolicyUpdated)
	ctx := context.Background()

	// bob pays the agent; the agent's side concerns the agent and alice.
	emitTransfer(s, webhookverify.KindTransferConfirmed, handTransfer(s, bob.acct, bot.acct))
	// An event on the live network.
	s.mu.Lock()
	s.emitTransferLocked(s.nets[confpay.NetworkLive], webhookverify.KindTransferConfirmed, handTransfer(s, alice.acct, bob.acct))
	s.mu.Unlock()
	var botSide, bobSide, liveSide string
	for _, e := range s.hooks.Events(confpay.NetworkTest, "") {
		if e.Audience[0] == bot.acct.id {
			botSide = e.ID
		} else {
			bobSide = e.ID
		}
	}
	for _, e := range s.hooks.Events(confpay.NetworkLive, "") {
		liveSide = e.ID
	}
	s.Sync()

	for _, tc := range []struct {
		who   *testParty
		wh    string
		event string
		ok    bool
	}{
		{alice, wa.WebhookID, botSide, true},   // the owner of the agent
		{bot, wbot.WebhookID, botSide, true},   // the agent itself
		{alice, wa.WebhookID, bobSide, false},  // the other side
		{carol, wc.WebhookID, botSide, false},  // a stranger
		{alice, wa.WebhookID, liveSide, false}, // the other network
		{alice, wa.WebhookID, "evt_nosuchevent00000000", false},
		{carol, wa.WebhookID, botSide, false}, // someone else's subscription
	} {
		_, err := tc.who.client.Webhooks.Replay(ctx, tc.wh, tc.event)
		if tc.ok != (err == nil) {
			t.Errorf("replay %s to %s by %s: %v", tc.event, tc.wh, tc.who.acct.handle, err)
		}
		var ae *confpay.APIError
		if err != nil && (!errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != confpay.CodeNotFound) {
			t.Errorf("replay %s to %s by %s: %v, want 404 not_found", tc.event, tc.wh, tc.who.acct.handle, err)
		}
	}
}

func TestCloseDoesNotWaitForAHangingReceiver(t *testing.T) {
	s := NewUnstartedServer() // the default 10 s timeout
	s.Start()
	t.Cleanup(s.Close)
	rc := newHookReceiver(t, s, answerAlways(0))
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	rc.waitFor(t, 1)
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close is waiting for the receiver")
	}
	s.Close() // twice is harmless
	s.clock.WaitIdle()
}

func TestResetStopsDeliveriesAndStartsAfresh(t *testing.T) {
	s := New(t)
	fail, hang := newHookReceiver(t, s, answerAlways(http.StatusInternalServerError)), newHookReceiver(t, s, answerAlways(0))
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	subscribeHooks(t, alice, fail.url(), webhookverify.KindTransferInitiated)
	subscribeHooks(t, bob, hang.url(), webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	fail.waitFor(t, 1)
	hang.waitFor(t, 1)
	s.Reset() // aborts the hanging request and any pending retry
	if n := s.clock.Pending(); n != 0 {
		t.Fatalf("%d timers left after Reset", n)
	}
	s.Advance(48 * time.Hour)
	if fail.count() != 1 || hang.count() != 1 {
		t.Fatalf("requests after Reset: %d and %d, want 1 and 1", fail.count(), hang.count())
	}
	// The new pool works.
	rc, _, _ := oneDelivery(t, s, answerAlways(200))
	if n := rc.count(); n != 1 {
		t.Fatalf("after Reset: %d deliveries, want 1", n)
	}
}

func TestDeliveriesToOneSubscriptionKeepOrder(t *testing.T) {
	s := New(t)
	var inFlight, most atomic.Int32
	rc := newHookReceiver(t, s, func(int, *http.Request) int {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		return http.StatusOK
	})
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated, webhookverify.KindTransferConfirmed)
	var want []string
	s.mu.Lock()
	for range 40 {
		tr := handTransfer(s, alice.acct, bob.acct)
		s.emitTransferLocked(s.nets[confpay.NetworkTest], webhookverify.KindTransferInitiated, tr)
		s.emitTransferLocked(s.nets[confpay.NetworkTest], webhookverify.KindTransferConfirmed, tr)
		want = append(want, webhookverify.KindTransferInitiated+" "+tr.id, webhookverify.KindTransferConfirmed+" "+tr.id)
	}
	s.mu.Unlock()
	s.Sync()
	var got []string
	for _, h := range rc.all() {
		var m map[string]any
		if err := json.Unmarshal(h.body, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m["event"].(string)+" "+m["transfer_id"].(string))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events arrived out of order:\n got %v\nwant %v", got, want)
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("%d attempts to one subscription were in flight at once", m)
	}
}

func TestSubscriptionsAreDeliveredInParallel(t *testing.T) {
	s := New(t)
	slow1, slow2 := newHookReceiver(t, s, answerAlways(0)), newHookReceiver(t, s, answerAlways(0))
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	w1 := subscribeHooks(t, alice, slow1.url(), webhookverify.KindTransferInitiated)
	w2 := subscribeHooks(t, bob, slow2.url(), webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	// Both arrive although neither receiver answers.
	slow1.waitFor(t, 1)
	slow2.waitFor(t, 1)
	for _, d := range []struct {
		p  *testParty
		id string
	}{{alice, w1.WebhookID}, {bob, w2.WebhookID}} {
		if err := d.p.client.Webhooks.Delete(context.Background(), d.id); err != nil {
			t.Fatal(err)
		}
	}
	s.Sync()
}

func TestDeleteDropsWaitingAttempts(t *testing.T) {
	s := New(t)
	rc := newHookReceiver(t, s, answerAlways(0))
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	w := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated)
	for range 3 {
		emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	}
	rc.waitFor(t, 1) // the other two wait for it
	if err := alice.client.Webhooks.Delete(context.Background(), w.WebhookID); err != nil {
		t.Fatal(err)
	}
	s.Sync()
	s.Advance(48 * time.Hour)
	if n := rc.count(); n != 1 {
		t.Fatalf("%d requests, want only the one in flight at the delete", n)
	}
}

// TestResetAfterCloseStartsNoWorkers: a Reset after (or racing) Close must
// not start a new delivery pool that nothing will ever stop.
func TestResetAfterCloseStartsNoWorkers(t *testing.T) {
	s := NewUnstartedServer()
	s.Close()
	s.Reset()
	if s.hooks.Running() {
		t.Error("a delivery pool is running after Close and Reset")
	}
}

// TestResetStopsHeldExpiryTimers: Reset leaves no timer of the old state
// on the clock.
func TestResetStopsHeldExpiryTimers(t *testing.T) {
	s := NewUnstartedServer()
	defer s.Close()
	agent, bob := agentForBench(t, s, `{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 1}`)
	s.mu.Lock()
	s.holdLocked(s.nets[confpay.NetworkTest], &payment{from: agent, to: bob, toAddr: bob.address, toText: "@bob", asset: "USDG", units: big.NewInt(5_000_000)}, nil)
	s.mu.Unlock()
	s.Reset()
	if n := s.clock.Pending(); n != 0 {
		t.Fatalf("%d timers left after Reset", n)
	}
}
