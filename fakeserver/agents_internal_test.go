package fakeserver

import (
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// TestAgentsDecisionAtExpiryBeforeTimer: a decision at expires_at is
// refused with 409 even when the expiry timer has not run yet (on a real
// clock the timer can trail a request by a moment), and the payment is
// expired on the spot.
func TestAgentsDecisionAtExpiryBeforeTimer(t *testing.T) {
	s := NewUnstartedServer()
	defer s.Close()
	agent, bob := agentForBench(t, s, `{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 1}`)
	n := s.nets[confpay.NetworkTest]
	s.mu.Lock()
	h := s.holdLocked(n, &payment{from: agent, to: bob, toAddr: bob.address, toText: "@bob", asset: "USDG", units: big.NewInt(5_000_000), confidential: true}, nil)
	ownerKey := s.keysByID[s.issueKeyLocked(agent.owner, confpay.NetworkTest, "owner").KeyID]
	s.mu.Unlock()
	if s.clock.Pending() != 1 {
		t.Fatalf("%d timers, want the expiry", s.clock.Pending())
	}
	// Move the virtual time without running the timer.
	s.clock.Skip(h.expiresAt)

	for _, verb := range []string{"approve", "reject"} {
		r := httptest.NewRequest("POST", "/v1/agents/transactions/"+h.id+"/"+verb, nil)
		r.SetPathValue("transaction_id", h.id)
		c := &call{s: s, r: r, acct: agent.owner, net: n, key: ownerKey}
		handler := s.handleApprove
		if verb == "reject" {
			handler = s.handleReject
		}
		_, _, err := handler(c)
		var e *apiError
		if !errors.As(err, &e) || e.status != http.StatusConflict || e.body.Code != confpay.CodeTransactionExpired {
			t.Fatalf("%s at expires_at = %v, want 409 transaction_expired", verb, err)
		}
	}
	s.mu.Lock()
	status, pending := h.status, len(n.held.pending[agent.owner])
	s.mu.Unlock()
	if status != heldExpired || pending != 0 || s.clock.Pending() != 0 {
		t.Errorf("status %s, %d pending, %d timers", status, pending, s.clock.Pending())
	}
	// The trailing timer finds nothing to do.
	s.Sync()
}

// TestAgentsSpendWindow: the window counts pending and confirmed payments
// of the last 24 hours, drops failed ones at once, and releases a payment
// exactly 24 hours after it was made.
func TestAgentsSpendWindow(t *testing.T) {
	t0 := DefaultStart
	var w spendWindow
	pending := &transfer{status: statePending}
	failed := &transfer{status: statePending}
	w.add(t0, 10, pending, nil)
	w.add(t0.Add(time.Hour), 20, &transfer{status: stateConfirmed}, nil)
	w.add(t0.Add(2*time.Hour), 40, failed, nil)
	if got := w.total(t0.Add(2 * time.Hour)); got != 70 {
		t.Errorf("total = %d, want 70", got)
	}
	failed.status = stateFailed
	if got := w.total(t0.Add(2 * time.Hour)); got != 30 {
		t.Errorf("after a failure: %d, want 30", got)
	}
	if got := w.total(t0.Add(24*time.Hour - time.Nanosecond)); got != 30 {
		t.Errorf("just before 24 h: %d, want 30", got)
	}
	if got := w.total(t0.Add(24 * time.Hour)); got != 20 {
		t.Errorf("at 24 h: %d, want 20", got)
	}
	if got := w.total(t0.Add(48 * time.Hour)); got != 0 {
		t.Errorf("two days later: %d, want 0", got)
	}
	// A clock set backwards never under-counts: a payment that left the
	// window counts again once the clock is back within 24 hours of it,
	// and one from the "future" counts too.
	if got := w.total(t0.Add(time.Hour)); got != 30 {
		t.Errorf("clock set back after the window moved on: %d, want 30", got)
	}
	w.add(t0.Add(48*time.Hour), 5, pending, nil)
	if got := w.total(t0); got != 35 {
		t.Errorf("clock set back: %d, want 35", got)
	}
	// Entries stay in time order whatever order they come in.
	w.add(t0.Add(30*time.Minute), 7, pending, nil)
	if got := w.total(t0.Add(24*time.Hour + 45*time.Minute)); got != 20+5 {
		t.Errorf("after an out-of-order entry: %d, want 25", got)
	}
}

// TestAgentsResetDropsHeld: Reset forgets held payments; their timers
// still fire harmlessly.
func TestAgentsResetDropsHeld(t *testing.T) {
	s := NewUnstartedServer()
	defer s.Close()
	agent, bob := agentForBench(t, s, `{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 1}`)
	n := s.nets[confpay.NetworkTest]
	s.mu.Lock()
	s.holdLocked(n, &payment{from: agent, to: bob, toAddr: bob.address, toText: "@bob", asset: "USDG", units: big.NewInt(5_000_000)}, nil)
	s.mu.Unlock()
	s.Reset()
	s.Advance(48 * time.Hour)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.nets[confpay.NetworkTest].held.byID) != 0 {
		t.Error("held payments survived Reset")
	}
}
