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

// TestPendingDeliveriesAreBoundedPerAccount (issue 22 item 4): pending
// deliveries are bounded per subscription and per account, and by nothing
// shared: however far behind one account's receivers are, another
// account's deliveries are all attempted. At an account's bound its own
// new deliveries fail at once and a replay is refused.
func TestPendingDeliveriesAreBoundedPerAccount(t *testing.T) {
	tr := hang{arrived: make(chan struct{}, 64)}
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: tr, MaxPending: 3, MaxPendingPerAccount: 5})
	defer h.Close()
	subscribe := func(acct, url string) {
		t.Helper()
		if _, err := h.Subscribe(confpay.NetworkTest, acct, url, []string{"transfer.initiated"}, "whsec_x"); err != nil {
			t.Fatal(err)
		}
	}
	// The flooder's two receivers hang; 10 events each would be 20
	// pending deliveries.
	subscribe("acct_flood", "https://hooks.example/f1")
	subscribe("acct_flood", "https://hooks.example/f2")
	for i := range 10 {
		emitTo(h, c, "evt_f"+strconv.Itoa(i), "acct_flood")
	}
	// Many victims, each with as many deliveries as the flooder's
	// account bound: every one is pending, none refused.
	const victims = 8
	for v := range victims {
		acct := "acct_v" + strconv.Itoa(v)
		subscribe(acct, "https://hooks.example/"+acct)
		for i := range 3 {
			emitTo(h, c, "evt_"+acct+"_"+strconv.Itoa(i), acct)
		}
	}
	count := func(acct string) (pending, refused int) {
		for _, d := range h.DeliveryRecords(confpay.NetworkTest, acct) {
			switch {
			case d.Status == confpay.DeliveryPending:
				pending++
			case d.Status == confpay.DeliveryFailed && d.Attempts == 0:
				refused++
			}
		}
		return pending, refused
	}
	if p, r := count("acct_flood"); p != 5 || r != 15 {
		t.Errorf("flooder: %d pending, %d refused; want its account bound 5 and 15", p, r)
	}
	for v := range victims {
		acct := "acct_v" + strconv.Itoa(v)
		if p, r := count(acct); p != 3 || r != 0 {
			t.Errorf("%s: %d pending, %d refused; want 3 and 0", acct, p, r)
		}
	}
	// One attempt in flight per subscription: the flooder's two and
	// every victim's.
	for range 2 + victims {
		<-tr.arrived
	}
	ws := h.Subscriptions(confpay.NetworkTest, "acct_flood")
	if _, err := h.Replay(confpay.NetworkTest, "acct_flood", ws[0].WebhookID, "evt_f0"); !errors.Is(err, ErrBusy) {
		t.Errorf("replay at the account bound: %v, want ErrBusy", err)
	}
}

// TestEventsAreBoundedPerAccount (issue 22 item 4): past MaxEvents, an
// account's oldest events are forgotten (no longer listed or replayable),
// and another account's stay whole, even an event both share.
func TestEventsAreBoundedPerAccount(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}, MaxEvents: 3})
	defer h.Close()
	h.Stop() // records only
	// An agent's event reaches it and its owner.
	h.Emit(confpay.NetworkTest, Event{ID: "evt_shared", Kind: "transfer.initiated", At: c.Now(), Audience: [2]string{"acct_agent", "acct_owner"}, Payload: payload{}})
	emitTo(h, c, "evt_victim", "acct_victim")
	for i := range 100 {
		emitTo(h, c, "evt_"+strconv.Itoa(i), "acct_agent")
	}
	ids := func(acct string) []string {
		var out []string
		for _, e := range h.Events(confpay.NetworkTest, acct) {
			out = append(out, e.ID)
		}
		return out
	}
	if got, want := ids("acct_agent"), []string{"evt_97", "evt_98", "evt_99"}; !slices.Equal(got, want) {
		t.Errorf("flooder's events: %v, want %v", got, want)
	}
	if got, want := ids("acct_owner"), []string{"evt_shared"}; !slices.Equal(got, want) {
		t.Errorf("owner's events: %v, want %v", got, want)
	}
	if got, want := ids("acct_victim"), []string{"evt_victim"}; !slices.Equal(got, want) {
		t.Errorf("victim's events: %v, want %v", got, want)
	}
	if n := h.EventCount(confpay.NetworkTest); n != 5 {
		t.Errorf("the log holds %d events, want 5", n)
	}
	h.mu.Lock()
	order := len(h.books[confpay.NetworkTest].order)
	h.mu.Unlock()
	if order > 2*5+2 {
		t.Errorf("the log's order holds %d entries for 5 events", order)
	}
}

// TestDeliveryRecordsAreBoundedPerAccount (issue 22 item 4): past
// MaxRecords (by a quarter), an account's oldest finished delivery
// records go, over all its subscriptions; pending ones and other
// accounts' records stay.
func TestDeliveryRecordsAreBoundedPerAccount(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}, MaxRecords: 8, MaxPending: 1})
	defer h.Close()
	h.Stop() // records only: the first delivery stays pending, the rest are refused (finished)
	for _, a := range []string{"acct_a", "acct_a", "acct_b"} {
		if _, err := h.Subscribe(confpay.NetworkTest, a, "https://hooks.example/"+a, []string{"transfer.initiated"}, "whsec_x"); err != nil {
			t.Fatal(err)
		}
	}
	emitTo(h, c, "evt_b", "acct_b")
	for i := range 50 {
		c.Skip(boundsStart.Add(time.Duration(i) * time.Second))
		emitTo(h, c, "evt_"+strconv.Itoa(i), "acct_a")
	}
	recs := h.DeliveryRecords(confpay.NetworkTest, "acct_a")
	if len(recs) > 2+8+8/4 {
		t.Fatalf("acct_a keeps %d records, want at most its 2 pending and 10 finished", len(recs))
	}
	var pending int
	for _, d := range recs {
		if d.Status == confpay.DeliveryPending {
			pending++
			if d.EventID != "evt_0" {
				t.Errorf("pending record of %s kept, want evt_0's", d.EventID)
			}
		}
	}
	if pending != 2 {
		t.Errorf("%d pending records kept, want 2", pending)
	}
	if last := recs[len(recs)-1]; last.EventID != "evt_49" {
		t.Errorf("newest record of the last subscription is %s, want evt_49", last.EventID)
	}
	if n := len(h.DeliveryRecords(confpay.NetworkTest, "acct_b")); n != 1 {
		t.Errorf("acct_b keeps %d records, want 1", n)
	}
}

// TestDeletedIdsAreBoundedPerAccount (issue 22 item 4): an account that
// creates and deletes subscriptions without end is remembered for its
// last MaxDeletedPerAccount deletions only.
func TestDeletedIdsAreBoundedPerAccount(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}})
	defer h.Close()
	var first string
	for i := range MaxDeletedPerAccount + 10 {
		w, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.initiated"}, "whsec_x")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = w.WebhookID
		}
		if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", w.WebhookID); err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	n := len(h.books[confpay.NetworkTest].deleted)
	h.mu.Unlock()
	if n != MaxDeletedPerAccount {
		t.Errorf("%d deleted ids kept, want %d", n, MaxDeletedPerAccount)
	}
	if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", first); !errors.Is(err, ErrNoWebhook) {
		t.Errorf("deleting the oldest again: %v, want ErrNoWebhook", err)
	}
}

// TestAPendingDeliveryKeepsOnlyItself (issue 16 item 3): a delivery
// pending for ever (its receiver never answers) is kept past the history
// window with its event, but the refused and finished records and events
// behind it go as usual.
func TestAPendingDeliveryKeepsOnlyItself(t *testing.T) {
	tr := hang{arrived: make(chan struct{}, 1)}
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: tr, MaxPending: 2})
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
// them keep coming, 500 a virtual day in turn, so attempts wait until
// each account's bound (here MaxPendingPerAccount = 1,250, so 5,000 in
// all, reached on day 10) refuses more. The heap is measured after L = 60 virtual days (the history
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
		h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, len(accts))}, MaxPendingPerAccount: bound / len(accts)})
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
		waiting := 0
		for _, sub := range h.books[confpay.NetworkTest].subs {
			waiting += len(sub.waiting) + 1 // and the one in flight
		}
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
