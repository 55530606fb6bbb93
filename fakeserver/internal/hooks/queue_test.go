package hooks

import (
	"net/http"
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
// never answers, at most MaxWaiting attempts wait; one more fails its
// delivery at once instead of queueing without end.
func TestWaitingAttemptsAreBounded(t *testing.T) {
	tr := hang{arrived: make(chan struct{}, 16)}
	h := New(Config{Clock: clock.NewVirtual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)), Timeout: time.Hour, Workers: 2, Transport: tr, MaxWaiting: 3})
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
