package fakeserver_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestSynctestPayoutExactlyOnce runs a payout through a 503, a dropped
// connection and a reset one inside a synctest bubble, with the SDK's real
// default backoff and the 503's Retry-After: the waits take bubble time,
// no wall time, and the payment is made exactly once. (net/http resends
// the request after the drop by itself, without a wait.)
func TestSynctestPayoutExactlyOnce(t *testing.T) {
	wall := time.Now()
	var waited time.Duration
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener())
		alice := newAccount(t, srv, "@alice")
		newAccount(t, srv, "@bob")
		srv.AddFunds(t, "@alice", "USDG", "100")
		for _, action := range []string{fakeserver.FaultError, fakeserver.FaultDropAfterCommit, fakeserver.FaultResetAfterCommit} {
			if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: action}); err != nil {
				t.Fatal(err)
			}
		}
		// The SDK as a service builds it: real default backoff.
		c, err := confpay.NewClient(alice.test(), confpay.WithBaseURL(srv.URL()), confpay.WithHTTPClient(srv.HTTPClient()))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var meta confpay.Response
		tr, err := c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")},
			confpay.WithIdempotencyKey("order-1"), confpay.WithResponse(&meta))
		if err != nil {
			t.Fatal(err)
		}
		waited = time.Since(start)
		// Retry-After: 1 after the 503, then 1 s ±25 % (retry 1) after the
		// reset.
		if waited < time.Second+750*time.Millisecond || meta.Attempts != 4 || !meta.IdempotentReplayed {
			t.Errorf("waited %v over %d attempts (replayed %v), want ≥ 1.75 s over 4, the last a replay", waited, meta.Attempts, meta.IdempotentReplayed)
		}
		trs, err := srv.Transfers("@alice", confpay.NetworkTest)
		if err != nil {
			t.Fatal(err)
		}
		if len(trs) != 1 || trs[0].TransferID != tr.TransferID {
			t.Errorf("transfers %v, want exactly %s", trs, tr.TransferID)
		}
	})
	t.Logf("%v of retry waits in %v of wall time", waited, time.Since(wall).Round(time.Millisecond))
}

// TestSynctestRealClock runs a server on the real clock inside a bubble: a
// 25-hour block time passes at once, the confirmation firing from the
// clock's own goroutine, and the server closes inside the bubble.
func TestSynctestRealClock(t *testing.T) {
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener(), fakeserver.WithRealClock(), fakeserver.WithBlockTime(25*time.Hour))
		alice := newAccount(t, srv, "@alice")
		newAccount(t, srv, "@bob")
		srv.AddFunds(t, "@alice", "USDG", "100")
		c := srv.Client(alice.info.TestKey)
		tr := send(t, c, "@bob", "5")
		if tr.Status != confpay.StatusPending {
			t.Fatalf("status %s, want pending", tr.Status)
		}
		time.Sleep(25*time.Hour + time.Second)
		synctest.Wait()
		got, err := c.Transfers.Get(t.Context(), tr.TransferID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != confpay.StatusConfirmed {
			t.Errorf("after 25 h: %s, want confirmed", got.Status)
		}
	})
	t.Logf("a 25 h settlement in %v of wall time", time.Since(wall).Round(time.Millisecond))
}

// TestSynctestDelayFault holds requests with a delay fault inside a
// bubble: on the real clock, one is answered once the bubble's clock has
// passed the delay; one longer than the client's timeout ends with the
// timeout, and the server lets go of it (Close returns).
func TestSynctestDelayFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener(), fakeserver.WithRealClock())
		alice := newAccount(t, srv, "@alice")
		for _, d := range []time.Duration{2 * time.Second, time.Hour} {
			if _, err := srv.AddFault(fakeserver.Fault{Path: "/v1/accounts/me", Times: 1, Action: fakeserver.FaultDelay, Delay: d}); err != nil {
				t.Fatal(err)
			}
		}
		c := srv.Client(alice.info.TestKey, confpay.WithMaxRetries(0), confpay.WithTimeout(30*time.Second))
		start := time.Now()
		if _, err := c.Accounts.Me(t.Context()); err != nil {
			t.Fatal(err)
		}
		if held := time.Since(start); held != 2*time.Second {
			t.Errorf("held %v, want exactly the 2 s delay", held)
		}
		start = time.Now()
		_, err := c.Accounts.Me(t.Context())
		var te *confpay.TransportError
		if !errors.As(err, &te) {
			t.Errorf("held for an hour: %v, want a *confpay.TransportError", err)
		}
		if held := time.Since(start); held != 30*time.Second {
			t.Errorf("gave up after %v, want the 30 s timeout", held)
		}
		srv.Close()
	})
}

// TestRealClockStartsAtStartTime: inside a bubble the wall clock starts at
// 2000-01-01, where an agent with active hours built for today is refused;
// WithStartTime moves a real clock's start too, and the clock then follows
// the (bubble's) wall clock from there.
func TestRealClockStartsAtStartTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener(), fakeserver.WithRealClock(), fakeserver.WithStartTime(fakeserver.DefaultStart))
		if got := srv.Now(); !got.Equal(fakeserver.DefaultStart) {
			t.Fatalf("a real clock started with WithStartTime(DefaultStart) reads %s, want %s", got, fakeserver.DefaultStart)
		}
		time.Sleep(90 * time.Minute)
		if got, want := srv.Now(), fakeserver.DefaultStart.Add(90*time.Minute); !got.Equal(want) {
			t.Errorf("after 90 minutes of the bubble's clock the server reads %s, want %s", got, want)
		}
	})
}
