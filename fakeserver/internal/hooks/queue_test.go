package hooks

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
)

// hang is a transport whose requests never get an answer: they end when
// their context does.
type hang struct{ arrived chan struct{} }

func (h hang) RoundTrip(r *http.Request) (*http.Response, error) {
	h.arrived <- struct{}{}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// payload is a fixed event body.
type payload struct{}

func (payload) Build(string, string, time.Time) []byte { return []byte(`{}`) }

// TestWaitingAttemptsAreBounded (issue 16 item 3): behind a receiver that
// never answers, at most MaxPending deliveries are pending (one in flight,
// the others waiting); one more fails its delivery at once instead of
// queueing without end.
func TestWaitingAttemptsAreBounded(t *testing.T) {
	tr := hang{arrived: make(chan struct{}, 16)}
	h := New(Config{Clock: clock.NewVirtual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)), Timeout: time.Hour, Transport: tr, MaxPending: 4})
	defer h.Close()
	if _, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.initiated"}, "whsec_x"); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		h.Emit(confpay.NetworkTest, Event{ID: "evt_" + string(rune('a'+i)), Kind: "transfer.initiated", At: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), Audience: [2]string{"acct_a"}, Payload: payload{}})
	}
	<-tr.arrived // the first attempt is in flight, and hangs
	var pending, failed int
	for _, d := range h.DeliveryRecords(confpay.NetworkTest, "acct_a") {
		switch d.Status {
		case confpay.DeliveryPending:
			pending++
		case confpay.DeliveryFailed:
			failed++
			if d.Attempts != 0 || d.NextAttemptAt != nil {
				t.Errorf("a delivery refused by the full queue: %+v", d.Delivery)
			}
		}
	}
	if pending != 4 || failed != 2 {
		t.Fatalf("%d pending (one in flight, three waiting), %d failed; want 4 and 2", pending, failed)
	}
}

// gate is a transport that holds its first request until open is closed
// and answers every request 204; done gets one value per answer.
type gate struct {
	first chan struct{} // closed by the first request as it arrives
	open  chan struct{}
	done  chan struct{}
	once  *sync.Once
}

func (g gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.once.Do(func() {
		close(g.first)
		<-g.open
	})
	g.done <- struct{}{}
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
}

// TestABurstBehindAPausedReceiverIsDeliveredWhole: 1,100 events fall due
// for one subscription while its receiver holds the first request (a
// settlement confirming 1,100 transfers at once does this). With the
// default bound every one waits its turn and is delivered; the bound is
// for receivers that fall behind an endless stream, not for a burst.
func TestABurstBehindAPausedReceiverIsDeliveredWhole(t *testing.T) {
	const n = 1100
	g := gate{first: make(chan struct{}), open: make(chan struct{}), done: make(chan struct{}, n), once: new(sync.Once)}
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	h := New(Config{Clock: clock.NewVirtual(at), Timeout: time.Hour, Transport: g})
	defer h.Close()
	if _, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.confirmed"}, "whsec_x"); err != nil {
		t.Fatal(err)
	}
	emit := func(i int) {
		h.Emit(confpay.NetworkTest, Event{ID: "evt_" + strconv.Itoa(i), Kind: "transfer.confirmed", At: at, Audience: [2]string{"acct_a"}, Payload: payload{}})
	}
	emit(0)
	<-g.first // the first attempt is in flight and held
	for i := 1; i < n; i++ {
		emit(i)
	}
	var failed int
	for _, d := range h.DeliveryRecords(confpay.NetworkTest, "acct_a") {
		if d.Status == confpay.DeliveryFailed {
			failed++
		}
	}
	close(g.open)
	if failed > 0 {
		t.Fatalf("%d of %d deliveries failed at once behind a paused receiver: a burst lost events", failed, n)
	}
	for range n {
		<-g.done // every attempt is made
	}
	records := h.DeliveryRecords(confpay.NetworkTest, "acct_a")
	if len(records) != n {
		t.Fatalf("%d deliveries, want %d", len(records), n)
	}
}
