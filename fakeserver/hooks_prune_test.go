package fakeserver

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// soakEvents is how many events BenchmarkHookMemoryOver60Days emits.
var soakEvents = flag.Int("soak.events", 200_000, "events in BenchmarkHookMemoryOver60Days")

// TestEventsAndDeliveriesArePruned: events and delivery records that left
// the 30-day history window are dropped, so a long-running server's memory
// stays bounded; younger ones, and a delivery still pending, stay.
func TestEventsAndDeliveriesArePruned(t *testing.T) {
	s := NewServer()
	defer s.Close()
	rc := newHookReceiver(t, s, answerAlways(200))
	alice := newTestParty(t, s, "@alice")
	w := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferInitiated)
	for range 3 {
		emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, nil))
	}
	s.Sync()
	count := func() (events, deliveries int) {
		for _, d := range s.hooks.DeliveryRecords(confpay.NetworkTest, alice.acct.id) {
			if d.WebhookID == w.WebhookID {
				deliveries++
			}
		}
		return s.hooks.EventCount(confpay.NetworkTest), deliveries
	}
	if e, d := count(); e != 3 || d != 3 {
		t.Fatalf("%d events, %d deliveries before", e, d)
	}
	s.Advance(29 * 24 * time.Hour)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, nil))
	s.Sync()
	if e, d := count(); e != 4 || d != 4 {
		t.Fatalf("29 days on: %d events, %d deliveries; nothing may go yet", e, d)
	}
	s.Advance(2 * 24 * time.Hour)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, nil))
	s.Sync()
	if e, d := count(); e != 2 || d != 2 {
		t.Fatalf("31 days on: %d events, %d deliveries, want the 2 younger than 30 days", e, d)
	}
	if got := len(listDeliveries(t, alice, w.WebhookID)); got != 2 {
		t.Fatalf("the list shows %d deliveries", got)
	}
}

// BenchmarkHookMemoryOver60Days is the soak benchmark: events with
// deliveries to a receiver, evenly over 60 virtual days. It reports the
// heap after the first 30 days and after all 60; with pruning, the second
// stays within 1.2× of the first (the history window is full from day 30
// on). events per run: -soak.events (default 200,000; the figure
// is 1,000,000).
func BenchmarkHookMemoryOver60Days(b *testing.B) {
	total := *soakEvents
	for b.Loop() {
		s := NewServer()
		// A receiver that keeps nothing, so that only the server's memory
		// is measured.
		rc := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		alice := newTestParty(b, s, "@alice")
		bob := newTestParty(b, s, "@bob")
		subscribeHooks(b, alice, rc.URL, webhookverify.KindTransferInitiated)
		step := 60 * 24 * time.Hour / time.Duration(total)
		var at30 uint64
		for i := range total {
			emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
			s.Advance(step)
			if i == total/2 {
				at30 = heapAfterGC()
			}
		}
		s.Sync()
		at60 := heapAfterGC()
		b.ReportMetric(float64(at30)/(1<<20), "heap-MB@30d")
		b.ReportMetric(float64(at60)/(1<<20), "heap-MB@60d")
		b.ReportMetric(float64(at60)/float64(at30), "ratio")
		s.Close()
		rc.Close()
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
