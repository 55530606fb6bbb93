package hooks

import (
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
)

// flaky is a transport that answers at once: 500 to every third request,
// 204 to the others (so that deliveries succeed, fail and are retried).
type flaky struct{ n *atomic.Int64 }

func (f flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	code := http.StatusNoContent
	if f.n.Add(1)%3 == 0 {
		code = http.StatusInternalServerError
	}
	return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
}

// checkDump checks that c is one whole state: events, subscriptions and
// deliveries each in creation order, every delivery's event and
// subscription among the records.
func checkDump(t *testing.T, c Changes) {
	t.Helper()
	events := map[string]bool{}
	for i, e := range c.Events {
		if i > 0 && e.Seq <= c.Events[i-1].Seq {
			t.Fatalf("events out of order or twice: %d after %d", e.Seq, c.Events[i-1].Seq)
		}
		if string(e.Payload) != e.ID {
			t.Fatalf("event %s: payload %q", e.ID, e.Payload)
		}
		events[e.ID] = true
	}
	subs := map[string]bool{}
	for i, s := range c.Subs {
		if i > 0 && s.Seq < c.Subs[i-1].Seq {
			t.Fatalf("subscriptions out of order")
		}
		subs[s.ID] = true
	}
	for i, d := range c.Deliveries {
		if i > 0 && d.Seq <= c.Deliveries[i-1].Seq {
			t.Fatalf("deliveries out of order or twice")
		}
		if !events[d.Event] || !subs[d.Sub] {
			t.Fatalf("delivery %s names event %s (recorded: %v) and subscription %s (recorded: %v)", d.ID, d.Event, events[d.Event], d.Sub, subs[d.Sub])
		}
	}
	if len(c.Pruned) != 1 {
		t.Fatalf("%d pass records, want 1", len(c.Pruned))
	}
}

// idPayload builds its event's id; enc stores it as is.
type idPayload struct{ id string }

func (p idPayload) Build(string, string, time.Time) []byte { return []byte(p.id) }

func encID(p Payload) []byte { return []byte(p.(idPayload).id) }

// TestDumpConcurrentWithDeliveries (issue 26, h19): Dump runs while
// events are recorded and forgotten (past MaxEvents), deliveries are
// attempted, retried on the clock and dropped (past MaxRecords), and
// subscriptions come and go; each dump is one whole state (checkDump)
// and restores. Under -race it checks that what Dump reads after letting
// h.mu go (the events' fixed fields, their payloads) is never written.
func TestDumpConcurrentWithDeliveries(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: flaky{n: new(atomic.Int64)}, MaxEvents: 4, MaxRecords: 6,
		Jitter: func(d time.Duration) time.Duration { return d }})
	defer h.Close()
	h.Track()
	const accts = 3
	for a := range accts {
		if _, err := h.Subscribe(confpay.NetworkTest, "acct_"+strconv.Itoa(a), "https://hooks.example/"+strconv.Itoa(a), []string{"transfer.initiated"}, "whsec_x"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() { // events, two accounts each
		defer wg.Done()
		for i := range 600 {
			a, b := "acct_"+strconv.Itoa(i%accts), "acct_"+strconv.Itoa((i+1)%accts)
			id := "evt_" + strconv.Itoa(i)
			h.Emit(confpay.NetworkTest, Event{ID: id, Kind: "transfer.initiated", At: c.Now(), Audience: [2]string{a, b}, Payload: idPayload{id}})
			if i%50 == 49 { // a subscription goes, another comes
				acct := "acct_" + strconv.Itoa(i/50%accts)
				if ws := h.Subscriptions(confpay.NetworkTest, acct); len(ws) > 0 {
					if err := h.Unsubscribe(confpay.NetworkTest, acct, ws[0].WebhookID); err != nil {
						t.Error(err)
					}
				}
				if _, err := h.Subscribe(confpay.NetworkTest, acct, "https://hooks.example/"+id, []string{"transfer.initiated"}, "whsec_x"); err != nil {
					t.Error(err)
				}
			}
		}
		close(stop)
	}()
	go func() { // retries fall due
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				c.Advance(time.Minute)
			}
		}
	}()
	dumps := 0
	var last Changes
	for done := false; !done; dumps++ {
		select {
		case <-stop:
			done = true
		default:
		}
		last, _ = h.Dump(confpay.NetworkTest, encID)
		checkDump(t, last)
	}
	wg.Wait()
	t.Logf("%d dumps; the last: %d events, %d deliveries, %d subscriptions", dumps, len(last.Events), len(last.Deliveries), len(last.Subs))
	if len(last.Deliveries) == 0 || len(last.Events) == 0 {
		t.Fatal("nothing dumped")
	}
	gone := false
	for _, e := range last.Events {
		gone = gone || e.Gone
	}
	if !gone {
		t.Error("no delivery named an event the log forgot: the test misses Dump's gone events")
	}
	h2 := New(Config{Clock: clock.NewVirtual(c.Now()), Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 64)}, MaxEvents: 4, MaxRecords: 6})
	defer h2.Close()
	h2.Stop()
	if err := h2.Restore(confpay.NetworkTest, last, func(r EventRecordP) (Payload, error) { return idPayload{string(r.Payload)}, nil }); err != nil {
		t.Fatalf("restoring the last dump: %v", err)
	}
	// Equal but for the next attempts: Restore schedules a due one at
	// its clock's now, which the test's clock has moved past.
	opts := cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(DeliveryRecordP{}, "NextAttemptAt")}
	if again, _ := h2.Dump(confpay.NetworkTest, encID); !cmp.Equal(again, last, opts) {
		t.Errorf("the restored state dumps differently (-restored +dumped):\n%s", cmp.Diff(again, last, opts))
	}
}

// TestDumpEncodesWithoutTheLock (issue 26, h19): Dump encodes the
// payloads after letting h.mu go, so that a request recording an event
// does not wait for the encoding: an event recorded from inside enc
// completes. (Before, enc ran under h.mu and the Emit waited for the
// Dump, which waited for it.)
func TestDumpEncodesWithoutTheLock(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}})
	defer h.Close()
	h.Stop() // records only
	h.Emit(confpay.NetworkTest, Event{ID: "evt_0", Kind: "transfer.initiated", At: c.Now(), Audience: [2]string{"acct_a"}, Payload: idPayload{"evt_0"}})
	emitted := make(chan struct{})
	var once sync.Once
	d, held := h.Dump(confpay.NetworkTest, func(p Payload) []byte {
		once.Do(func() {
			go func() {
				h.Emit(confpay.NetworkTest, Event{ID: "evt_1", Kind: "transfer.initiated", At: c.Now(), Audience: [2]string{"acct_a"}, Payload: idPayload{"evt_1"}})
				close(emitted)
			}()
			select {
			case <-emitted:
			case <-time.After(10 * time.Second): // a deadlock's bound, not a wait
				t.Error("an Emit waited for Dump's encoding: Dump holds h.mu while it encodes")
			}
		})
		return encID(p)
	})
	<-emitted
	if len(d.Events) != 1 || d.Events[0].ID != "evt_0" {
		t.Errorf("dumped %+v, want evt_0 alone (as of its lock)", d.Events)
	}
	if held <= 0 {
		t.Errorf("hold %v", held)
	}
	if n := h.EventCount(confpay.NetworkTest); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}
