package hooks

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
)

var boundsStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// emitTo records one transfer.initiated event for acct at the clock's
// time.
func emitTo(h *Hooks, c *clock.Clock, id, acct string) {
	h.Emit(confpay.NetworkTest, Event{ID: id, Kind: "transfer.initiated", At: c.Now(), Audience: [2]string{acct}, Payload: payload{}})
}

// TestDeletedSubscriptionsAreForgottenAfterTheWindow (issue 16 item 3):
// the id of a deleted subscription is kept so that deleting it again
// succeeds, but only for the history window, not for ever.
func TestDeletedSubscriptionsAreForgottenAfterTheWindow(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}})
	defer h.Close()
	w, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.initiated"}, "whsec_x")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", w.WebhookID); err != nil {
			t.Fatalf("deleting (again): %v", err)
		}
	}
	c.Skip(boundsStart.Add(HistoryWindow - time.Hour))
	emitTo(h, c, "evt_1", "acct_b") // prunes
	if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", w.WebhookID); err != nil {
		t.Fatalf("deleting again within the window: %v", err)
	}
	c.Skip(boundsStart.Add(HistoryWindow + time.Hour))
	emitTo(h, c, "evt_2", "acct_b") // prunes
	if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", w.WebhookID); !errors.Is(err, ErrNoWebhook) {
		t.Fatalf("deleting again after the window: %v, want ErrNoWebhook", err)
	}
	h.mu.Lock()
	n := len(h.books[confpay.NetworkTest].deleted)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d deleted ids kept past the window", n)
	}
}

// TestWaitingAttemptsAreBoundedOverall (issue 16 item 3): besides the
// bound per subscription, at most MaxWaitingTotal attempts wait over all
// subscriptions; one more fails its delivery at once. An attempt that need
// not wait is never refused.
func TestWaitingAttemptsAreBoundedOverall(t *testing.T) {
	tr := hang{arrived: make(chan struct{}, 16)}
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: tr, MaxWaiting: 3, MaxWaitingTotal: 4})
	defer h.Close()
	accts := []string{"acct_a", "acct_b", "acct_c"}
	for _, a := range accts[:2] {
		if _, err := h.Subscribe(confpay.NetworkTest, a, "https://hooks.example/"+a, []string{"transfer.initiated"}, "whsec_x"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		for _, a := range accts[:2] {
			emitTo(h, c, "evt_"+a+strconv.Itoa(i), a)
		}
	}
	// acct_c's first delivery goes although the bound is reached.
	if _, err := h.Subscribe(confpay.NetworkTest, "acct_c", "https://hooks.example/c", []string{"transfer.initiated"}, "whsec_x"); err != nil {
		t.Fatal(err)
	}
	emitTo(h, c, "evt_c", "acct_c")
	for range 3 {
		<-tr.arrived // one attempt in flight per subscription
	}
	var pending, failed int
	for _, d := range h.DeliveryRecords(confpay.NetworkTest, "") {
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
	// 3 in flight, 4 waiting (3 of acct_a's, 1 of acct_b's), acct_b's
	// other 2 refused.
	if pending != 7 || failed != 2 {
		t.Fatalf("%d pending, %d failed; want 7 (3 in flight, 4 waiting) and 2", pending, failed)
	}
	h.mu.Lock()
	n := h.waiting
	h.mu.Unlock()
	if n != 4 {
		t.Fatalf("%d attempts counted waiting, want 4", n)
	}
}

// TestAPendingDeliveryKeepsOnlyItself (issue 16 item 3): a delivery
// pending for ever (its receiver never answers) is kept past the history
// window with its event, but the refused and finished records and events
// behind it go as usual.
func TestAPendingDeliveryKeepsOnlyItself(t *testing.T) {
	tr := hang{arrived: make(chan struct{}, 1)}
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: tr, MaxWaiting: 1})
	defer h.Close()
	if _, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.initiated"}, "whsec_x"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		emitTo(h, c, "evt_"+strconv.Itoa(i), "acct_a") // in flight, waiting, refused, refused
	}
	<-tr.arrived
	c.Skip(boundsStart.Add(HistoryWindow + time.Hour))
	emitTo(h, c, "evt_young", "acct_b") // prunes
	var got []string
	for _, d := range h.DeliveryRecords(confpay.NetworkTest, "acct_a") {
		got = append(got, d.EventID+":"+string(d.Status))
	}
	if want := []string{"evt_0:pending", "evt_1:pending"}; !slices.Equal(got, want) {
		t.Errorf("records kept: %v, want %v", got, want)
	}
	var events []string
	for _, e := range h.Events(confpay.NetworkTest, "") {
		events = append(events, e.ID)
	}
	if want := []string{"evt_0", "evt_1", "evt_young"}; !slices.Equal(events, want) {
		t.Errorf("events kept: %v, want %v", events, want)
	}
}

// TestDeliveriesPages: the deliveries list is the history window's
// records, newest first, paged by limit and offset (the page is computed,
// not walked to).
func TestDeliveriesPages(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}})
	defer h.Close()
	w, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.initiated"}, "whsec_x")
	if err != nil {
		t.Fatal(err)
	}
	h.Stop()         // records only: no attempt is made
	var ids []string // newest first
	for i := range 10 {
		c.Skip(boundsStart.Add(time.Duration(i) * 24 * time.Hour))
		emitTo(h, c, "evt_"+strconv.Itoa(i), "acct_a")
	}
	for _, d := range h.DeliveryRecords(confpay.NetworkTest, "acct_a") {
		ids = append([]string{d.DeliveryID}, ids...)
	}
	// 33 days on, the 3 oldest left the window: 7 remain.
	c.Skip(boundsStart.Add(33*24*time.Hour - time.Minute))
	want := ids[:7]
	for _, tc := range []struct{ limit, offset int }{{20, 0}, {3, 0}, {3, 3}, {3, 6}, {3, 7}, {7, 0}, {6, 1}, {1, 100}} {
		got, err := h.Deliveries(confpay.NetworkTest, "acct_a", w.WebhookID, tc.limit, tc.offset)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := min(tc.offset, len(want)), min(tc.offset+tc.limit, len(want))
		var gotIDs []string
		for _, d := range got.Deliveries {
			gotIDs = append(gotIDs, d.DeliveryID)
		}
		if len(gotIDs) != hi-lo || (hi > lo && (gotIDs[0] != want[lo] || gotIDs[len(gotIDs)-1] != want[hi-1])) {
			t.Errorf("limit %d offset %d: %v, want %v", tc.limit, tc.offset, gotIDs, want[lo:hi])
		}
		if wantMore := hi < len(want); got.HasMore != wantMore {
			t.Errorf("limit %d offset %d: has_more %v, want %v", tc.limit, tc.offset, got.HasMore, wantMore)
		}
	}
}

// BenchmarkWaitingGrowth (issue 16 item 3): four accounts' receivers never
// answer (their first attempts hang for the whole run), and events for
// them keep coming, 500 a virtual day in turn, so attempts wait until the
// overall bound (here MaxWaitingTotal = 5,000, reached on day 10) refuses
// more. The heap is measured after L = 60 virtual days (the history
// window full of refused deliveries, the waiting ones older) and after 2L:
// bounded waiting and pruned records keep it flat. B/waiting is what a
// waiting attempt costs beside its delivery record (the heap that Stop
// frees, per waiting attempt).
func BenchmarkWaitingGrowth(b *testing.B) {
	const (
		perDay = 500
		days   = 60 // L
		bound  = 5_000
	)
	accts := []string{"acct_a", "acct_b", "acct_c", "acct_d"}
	for b.Loop() {
		c := clock.NewVirtual(boundsStart)
		h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, len(accts))}, MaxWaitingTotal: bound})
		for _, a := range accts {
			if _, err := h.Subscribe(confpay.NetworkTest, a, "https://hooks.example/"+a, []string{"transfer.initiated"}, "whsec_x"); err != nil {
				b.Fatal(err)
			}
		}
		step := 24 * time.Hour / perDay
		i := 0
		run := func() {
			for range days * perDay {
				i++
				c.Skip(boundsStart.Add(time.Duration(i) * step))
				emitTo(h, c, "evt_"+strconv.Itoa(i), accts[i%len(accts)])
			}
		}
		run()
		first := liveHeap()
		run()
		second := liveHeap()
		h.mu.Lock()
		waiting := h.waiting
		h.mu.Unlock()
		if waiting != bound {
			b.Fatalf("%d attempts waiting, want the bound %d", waiting, bound)
		}
		h.Stop()
		stopped := liveHeap()
		b.ReportMetric(float64(first)/(1<<20), "heap-MB@L")
		b.ReportMetric(float64(second)/(1<<20), "heap-MB@2L")
		b.ReportMetric(float64(second)/float64(first), "ratio")
		b.ReportMetric(float64(int64(second)-int64(stopped))/float64(waiting), "B/waiting")
		h.Close()
	}
}

// liveHeap is the live heap after a full collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkDeliveriesPage: a page of 20 of a subscription's 100,000
// delivery records in the window, at offset 0 and near the end; the page
// is computed, so both cost the page only.
func BenchmarkDeliveriesPage(b *testing.B) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}})
	defer h.Close()
	w, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.initiated"}, "whsec_x")
	if err != nil {
		b.Fatal(err)
	}
	h.Stop() // records only
	const n = 100_000
	for i := range n {
		emitTo(h, c, "evt_"+strconv.Itoa(i), "acct_a")
	}
	for _, offset := range []int{0, n - 100} {
		b.Run("offset="+strconv.Itoa(offset), func(b *testing.B) {
			for b.Loop() {
				page, err := h.Deliveries(confpay.NetworkTest, "acct_a", w.WebhookID, 20, offset)
				if err != nil || len(page.Deliveries) != 20 {
					b.Fatalf("%d deliveries, %v", len(page.Deliveries), err)
				}
			}
		})
	}
}
