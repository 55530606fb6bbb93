package fakeserver_test

// Receivers that never answer beside a healthy account (issue 16 items 5
// and 6), inside a testing/synctest bubble: in-process receivers, no
// socket, so the bubble's clock measures every wait exactly.

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// hostileTimeout is the delivery timeout of these tests: the bound of a
// clock call is it plus a second.
const hostileTimeout = 10 * time.Second

// arrivals is a healthy receiver: it notes when (bubble time) each event
// kind arrived and answers 204.
type arrivals struct {
	mu sync.Mutex
	at map[confpay.EventKind]time.Time
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var ev struct {
		Event confpay.EventKind `json:"event"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	kind := ev.Event
	a.mu.Lock()
	if _, ok := a.at[kind]; !ok {
		a.at[kind] = now
	}
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (a *arrivals) get(k confpay.EventKind) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[k]
	return t, ok
}

// hostileServer is a server with accounts accounts of 16 subscriptions
// each to receivers that never answer, each account with a transfer under
// way whose events are being delivered (all their attempts in flight),
// and @bob, funded, whose one subscription answers at once.
func hostileServer(t *testing.T, accounts int, opts ...fakeserver.Option) (*fakeserver.Server, *confpay.Client, *arrivals) {
	t.Helper()
	opts = append([]fakeserver.Option{fakeserver.WithoutListener(), fakeserver.WithDeliveryTimeout(hostileTimeout), fakeserver.WithBlockTime(time.Second)}, opts...)
	srv := fakeserver.New(t, opts...)
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@carol", GenerateEncryptionKey: true})
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the request is given up
		<-r.Context().Done()
	})
	var hostile []*fakeserver.AccountInfo
	for i := range accounts {
		h := "@mallory" + strconv.Itoa(i)
		hostile = append(hostile, srv.AddAccount(t, fakeserver.AccountParams{Handle: h}))
		for range 16 {
			if _, err := srv.SubscribeHandler(h, confpay.NetworkTest, hang, "whsec_hostile0123456789abcdef", confpay.EventTransferInitiated); err != nil {
				t.Fatal(err)
			}
		}
	}
	bob := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob"})
	srv.AddFunds(t, "@bob", "USDG", "100")
	good := &arrivals{at: map[confpay.EventKind]time.Time{}}
	if _, err := srv.SubscribeHandler("@bob", confpay.NetworkTest, good, "whsec_healthy0123456789abcdef", confpay.EventTransferInitiated, confpay.EventTransferConfirmed); err != nil {
		t.Fatal(err)
	}
	for i := range accounts {
		h := "@mallory" + strconv.Itoa(i)
		srv.AddFunds(t, h, "USDG", "100")
		c := srv.Client(hostile[i].TestKey, confpay.WithMaxRetries(0))
		if _, err := c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@carol", Amount: confpay.MustParseAmount("1")}); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Wait() // every hostile attempt is in flight, and hangs
	return srv, srv.Client(bob.TestKey, confpay.WithMaxRetries(0)), good
}

// TestHostileReceiversDelayNoOneElse (issue 16 items 5 and 6): three
// accounts with 16 receivers each that never answer hold 48 attempts in
// flight. On a real clock, @bob's transfer.created is delivered the moment
// it happens and its transfer.confirmed the moment the 1 s block time
// confirms it, while a clock call (Sync, as POST /_fake/clock does) waits
// for the hanging attempts; the call returns within the delivery timeout
// plus a second.
func TestHostileReceiversDelayNoOneElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, bob, good := hostileServer(t, 3, fakeserver.WithRealClock())
		start := time.Now()
		synced := make(chan time.Duration, 1)
		go func() {
			srv.Sync()
			synced <- time.Since(start)
		}()
		if _, err := bob.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@carol", Amount: confpay.MustParseAmount("1")}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the block time, in bubble time
		synctest.Wait()
		if at, ok := good.get(confpay.EventTransferInitiated); !ok || at != start {
			t.Errorf("bob's transfer.created arrived at %v (ok=%v), want at once", at.Sub(start), ok)
		}
		if at, ok := good.get(confpay.EventTransferConfirmed); !ok || at.Sub(start) != time.Second {
			t.Errorf("bob's transfer.confirmed arrived at %v (ok=%v), want on the 1s block time", at.Sub(start), ok)
		}
		d := <-synced
		t.Logf("Sync took %v (bubble time)", d)
		if d > hostileTimeout+time.Second {
			t.Errorf("Sync took %v beside receivers that never answer, want at most %v", d, hostileTimeout+time.Second)
		}
	})
}

// TestHostileReceiversHoldAdvanceForOneTimeout (issue 16 item 5): on the
// virtual clock, Advance(25h) beside 48 receivers that never answer (each
// falls due for its retries, one after another) returns within the
// delivery timeout plus a second in all, not once per retry; @bob's
// deliveries are made and recorded.
func TestHostileReceiversHoldAdvanceForOneTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, bob, good := hostileServer(t, 3)
		if _, err := bob.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@carol", Amount: confpay.MustParseAmount("1")}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		srv.Advance(25 * time.Hour)
		d := time.Since(start)
		t.Logf("Advance(25h) took %v (bubble time)", d)
		if d > hostileTimeout+time.Second {
			t.Errorf("Advance(25h) took %v beside receivers that never answer, want at most %v", d, hostileTimeout+time.Second)
		}
		srv.Sync()
		for _, k := range []confpay.EventKind{confpay.EventTransferInitiated, confpay.EventTransferConfirmed} {
			if _, ok := good.get(k); !ok {
				t.Errorf("bob's %s never arrived", k)
			}
		}
		if d := time.Since(start); d > 2*(hostileTimeout+time.Second) {
			t.Errorf("Advance and Sync took %v, want at most twice %v", d, hostileTimeout+time.Second)
		}
	})
}

// TestAReceiverMovesTheClockFromItsOwnDelivery (issue 16 item 5): an
// in-process receiver that calls Sync (and, on the virtual clock, Advance,
// which confirms the transfer: a second event for the same receiver,
// waiting behind the delivery under way) from inside its own delivery
// waits for neither, and answers in time: both deliveries succeed.
func TestAReceiverMovesTheClockFromItsOwnDelivery(t *testing.T) {
	for _, real := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			opts := []fakeserver.Option{fakeserver.WithoutListener(), fakeserver.WithDeliveryTimeout(hostileTimeout)}
			if real {
				opts = append(opts, fakeserver.WithRealClock())
			}
			srv := fakeserver.New(t, opts...)
			alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
			srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
			srv.AddFunds(t, "@alice", "USDG", "100")
			var mu sync.Mutex
			var waits []time.Duration
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				start := time.Now()
				srv.Sync()
				if !real {
					srv.Advance(time.Second)
				}
				mu.Lock()
				waits = append(waits, time.Since(start))
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			})
			if _, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, h, "whsec_selfwait0123456789abcdef", confpay.EventTransferInitiated, confpay.EventTransferConfirmed); err != nil {
				t.Fatal(err)
			}
			c := srv.Client(alice.TestKey, confpay.WithMaxRetries(0))
			if _, err := c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
				t.Fatal(err)
			}
			// A minute of bubble time: whatever the receiver's calls
			// wait for, they are done (a clock call from the test would
			// contend for the clock with the receiver's, and a bubble
			// does not count a goroutine waiting for a mutex as
			// blocked).
			time.Sleep(time.Minute)
			synctest.Wait()
			mu.Lock()
			got := append([]time.Duration(nil), waits...)
			mu.Unlock()
			if len(got) != 2 || got[0] != 0 || got[1] != 0 {
				t.Errorf("real=%v: the receiver's clock calls from inside its deliveries waited %v, want 0 twice", real, got)
			}
			recs, err := srv.Deliveries("@alice", confpay.NetworkTest)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range recs {
				if d.Status != confpay.DeliverySucceeded {
					t.Errorf("real=%v: %s delivery %s, want succeeded", real, d.Event, d.Status)
				}
			}
			if len(recs) != 2 {
				t.Errorf("real=%v: %d deliveries, want 2", real, len(recs))
			}
		})
	}
}
