package fakeserver_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// shopHandler is a service's handler of transfer.confirmed: it credits
// the order once per event, if it is right.
type shopHandler struct {
	mu       sync.Mutex
	seen     map[string]bool
	credited int
	// claim makes "seen before?" and "now seen" one step (the right
	// way); without it they are two, the work between them.
	claim bool
	// dedup makes the handler check the event id at all.
	dedup bool
	// checked, when not nil, is where a two-step handler waits between
	// its check and its mark until both copies of a duplicate checked,
	// so the race a duplicate delivery exposes happens every time.
	checked *sync.WaitGroup
}

func (h *shopHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(webhookverify.EventIDHeader)
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	seen := h.dedup && h.seen[id]
	if h.claim {
		h.seen[id] = true
	}
	h.mu.Unlock()
	if h.checked != nil {
		h.checked.Done()
		h.checked.Wait()
	}
	if seen {
		return // already applied: acknowledge
	}
	h.mu.Lock()
	h.credited++
	h.seen[id] = true
	h.mu.Unlock()
}

func (h *shopHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.credited
}

// paidShop is a server with @shop subscribed with h to
// transfer.confirmed, and one payment from outside confirmed (its
// delivery made, faults and all).
func paidShop(t *testing.T, h http.Handler, fault string) *fakeserver.Server {
	t.Helper()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	hook := srv.AddWebhook(t, "@shop", h, "whsec_test_0123456789abcdefghij", confpay.EventTransferConfirmed)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Event: confpay.EventTransferConfirmed, Times: 1, Action: fault})
	srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "25", Memo: "order-7"})
	srv.Advance(time.Second)     // the block: transfer.confirmed is delivered
	srv.Advance(5 * time.Second) // the first retry, if any
	return srv
}

// TestDeliveryLoseAnswer: the handler runs, its answer is lost, the
// delivery is retried. A handler that does its work on every delivery
// credits the order twice; one that remembers the event id, once.
func TestDeliveryLoseAnswer(t *testing.T) {
	t.Parallel()
	wrong := &shopHandler{}
	srv := paidShop(t, wrong, fakeserver.DeliveryLoseAnswer)
	if got := wrong.count(); got != 2 {
		t.Fatalf("the non-idempotent handler credited %d times under lose_answer, want 2 (the bug exposed)", got)
	}
	ds, err := srv.Deliveries("@shop", confpay.NetworkTest)
	if err != nil || len(ds) != 1 || ds[0].Attempts != 2 || ds[0].Status != confpay.DeliverySucceeded {
		t.Fatalf("deliveries = %v, %v; want one, succeeded on its second attempt", ds, err)
	}
	if fs := srv.DeliveryFaults(); len(fs) != 1 || fs[0].Used != 1 {
		t.Fatalf("faults = %+v, want one used once", fs)
	}
	if log := ds[0].AttemptLog; len(log) != 2 || log[0].ResponseStatus != 0 || log[0].Fault != fakeserver.DeliveryLoseAnswer ||
		log[1].ResponseStatus != 200 || log[1].Fault != "" || log[1].At.Sub(log[0].At) != 5*time.Second {
		t.Fatalf("attempt log %+v; want the lost answer (0), then 200 five seconds later", log)
	}

	right := &shopHandler{dedup: true}
	paidShop(t, right, fakeserver.DeliveryLoseAnswer)
	if got := right.count(); got != 1 {
		t.Fatalf("the idempotent handler credited %d times, want 1", got)
	}
}

// TestDeliveryDuplicate: the same delivery twice at once. A handler that
// checks the event id and records it in two steps credits twice; one
// that claims the id in one step, once.
func TestDeliveryDuplicate(t *testing.T) {
	t.Parallel()
	var both sync.WaitGroup
	both.Add(2)
	wrong := &shopHandler{dedup: true, checked: &both}
	paidShop(t, wrong, fakeserver.DeliveryDuplicate)
	if got := wrong.count(); got != 2 {
		t.Fatalf("the check-then-mark handler credited %d times under duplicate, want 2 (the bug exposed)", got)
	}

	right := &shopHandler{dedup: true, claim: true}
	paidShop(t, right, fakeserver.DeliveryDuplicate)
	if got := right.count(); got != 1 {
		t.Fatalf("the claiming handler credited %d times, want 1", got)
	}
}

// TestDeliveryFaultsOverHTTP: POST, GET and DELETE /_fake/delivery-faults.
func TestDeliveryFaultsOverHTTP(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	for _, body := range []string{
		`{"event":"transfer.confirmed","times":2,"action":"duplicate"}`,
		`{"action":"delay","delay":"2m"}`,
		`{"action":"reorder","event":"transfer.initiated"}`,
	} {
		if a := rawCall(t, srv, "POST", "/_fake/delivery-faults", "", body); a.status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", body, a.status, a.body)
		}
	}
	var list struct {
		Faults []struct {
			fakeserver.DeliveryFault
			Delay string `json:"delay"`
		} `json:"faults"`
	}
	g := rawCall(t, srv, "GET", "/_fake/delivery-faults", "", "")
	g.decode(t, &list)
	if len(list.Faults) != 3 || list.Faults[0].Action != "duplicate" || list.Faults[0].Times != 2 || list.Faults[0].Event != confpay.EventTransferConfirmed ||
		list.Faults[1].Action != "delay" || list.Faults[1].Delay != "2m0s" || list.Faults[2].Action != "reorder" || list.Faults[2].Delay != "" {
		t.Fatalf("GET: %s", g.body)
	}
	if fs := srv.DeliveryFaults(); fs[1].Delay != 2*time.Minute {
		t.Fatalf("Go view: %+v", fs)
	}
	if d := rawCall(t, srv, "DELETE", "/_fake/delivery-faults", "", ""); d.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", d.status, d.body)
	}
	if fs := srv.DeliveryFaults(); len(fs) != 0 {
		t.Fatalf("after DELETE: %+v", fs)
	}
}

const hookSecret = "whsec_test_0123456789abcdefghij"

// payouts is a service that pays a supplier and learns from the
// transfer.confirmed webhook that the payment settled. Its sweeper gives
// up on a payment still awaiting confirmation after a deadline: the
// wrong one takes the webhook's absence for a failed payment; the right
// one (askAPI) asks the API for the transfer's status first.
type payouts struct {
	client *confpay.Client
	askAPI bool

	mu    sync.Mutex
	state map[string]string // transfer id → awaiting, settled, failed
	since map[string]time.Time
}

func (p *payouts) pay(t *testing.T, now time.Time) string {
	t.Helper()
	tr, err := p.client.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@supplier", Amount: confpay.MustParseAmount("25")})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state[tr.TransferID], p.since[tr.TransferID] = "awaiting", now
	return tr.TransferID
}

// handler settles an awaiting payment on its transfer.confirmed.
func (p *payouts) handler() http.Handler {
	return webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{hookSecret}},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			te, ok := ev.(*webhookverify.TransferEvent)
			if !ok || te.Event != string(confpay.EventTransferConfirmed) {
				return
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.state[te.TransferID] == "awaiting" {
				p.state[te.TransferID] = "settled"
			}
		})
}

// sweep gives up on the payments awaiting for 30 s or more at now.
func (p *payouts) sweep(t *testing.T, now time.Time) {
	t.Helper()
	p.mu.Lock()
	var late []string
	for id, st := range p.state {
		if st == "awaiting" && now.Sub(p.since[id]) >= 30*time.Second {
			late = append(late, id)
		}
	}
	p.mu.Unlock()
	for _, id := range late {
		verdict := "failed"
		if p.askAPI {
			tr, err := p.client.Transfers.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			switch tr.Status {
			case confpay.StatusConfirmed:
				verdict = "settled"
			case confpay.StatusPending:
				continue // still on its way: keep waiting
			}
		}
		p.mu.Lock()
		if p.state[id] == "awaiting" {
			p.state[id] = verdict
		}
		p.mu.Unlock()
	}
}

// runPayout pays the supplier once, with the transfer.confirmed delivery
// held for two minutes when delay is set, sweeps a minute after the
// payment confirmed, lets the held delivery through, and returns the
// payment's final state as the service sees it, and the delivery record.
func runPayout(t *testing.T, askAPI, delay bool) (string, fakeserver.DeliveryRecord) {
	t.Helper()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	ops := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@ops", GenerateEncryptionKey: true})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@supplier", GenerateEncryptionKey: true})
	srv.AddFunds(t, "@ops", "USDG", "100")
	p := &payouts{client: ops.Client, askAPI: askAPI, state: map[string]string{}, since: map[string]time.Time{}}
	hook := srv.AddWebhook(t, "@ops", p.handler(), hookSecret, confpay.EventTransferConfirmed)
	if delay {
		srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Event: confpay.EventTransferConfirmed, Times: 1, Action: fakeserver.DeliveryDelay, Delay: 2 * time.Minute})
	}
	id := p.pay(t, srv.Now())
	confirmedAt := srv.Advance(time.Second) // the block: the transfer confirms
	if delay {
		ds, _ := srv.Deliveries("@ops", confpay.NetworkTest)
		if len(ds) != 1 || ds[0].Status != confpay.DeliveryPending || ds[0].Attempts != 0 || ds[0].NextAttemptAt == nil || !ds[0].NextAttemptAt.Equal(confirmedAt.Add(2*time.Minute)) {
			t.Fatalf("while held: %+v; want pending, no attempt, next at %v", ds, confirmedAt.Add(2*time.Minute))
		}
	}
	p.sweep(t, srv.Advance(time.Minute))
	srv.Advance(2 * time.Minute) // the held delivery, if any, arrives
	ds, _ := srv.Deliveries("@ops", confpay.NetworkTest)
	if len(ds) != 1 || ds[0].Status != confpay.DeliverySucceeded {
		t.Fatalf("deliveries %+v; want one, succeeded", ds)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state[id], ds[0]
}

// TestDeliveryDelay: a transfer.confirmed held for two minutes of server
// time. A sweeper that takes the webhook's absence for a failed payment
// marks a confirmed payment failed (and the late webhook cannot undo
// it); one that asks the API first settles it.
func TestDeliveryDelay(t *testing.T) {
	t.Parallel()
	if st, _ := runPayout(t, false, false); st != "settled" {
		t.Fatalf("without the fault the naive service ends %q, want settled (the bug hides)", st)
	}
	st, rec := runPayout(t, false, true)
	if st != "failed" {
		t.Fatalf("the naive service ends %q under delay, want failed (the bug exposed)", st)
	}
	if len(rec.AttemptLog) != 1 || rec.AttemptLog[0].Fault != fakeserver.DeliveryDelay || rec.AttemptLog[0].ResponseStatus != 200 ||
		rec.LastAttemptAt == nil || !rec.AttemptLog[0].At.Equal(*rec.LastAttemptAt) {
		t.Fatalf("attempt log %+v (last attempt %v); want one attempt, delayed, answered 200", rec.AttemptLog, rec.LastAttemptAt)
	}
	if st, _ := runPayout(t, true, true); st != "settled" {
		t.Fatalf("the service that asks the API ends %q under delay, want settled", st)
	}
}

// ledger is a shop's handler of incoming payments: transfer.initiated
// opens a payment as pending, transfer.confirmed confirms it. The wrong
// one assumes initiated comes first: a confirmation for a payment it
// does not know is dropped, and initiated always writes pending. The
// right one (monotonic) never moves a payment back.
type ledger struct {
	monotonic bool

	mu     sync.Mutex
	status map[string]string // transfer id → pending, confirmed
	seen   []confpay.EventKind
}

func (l *ledger) handler() http.Handler {
	return webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{hookSecret}},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			te, ok := ev.(*webhookverify.TransferEvent)
			if !ok {
				return
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			l.seen = append(l.seen, confpay.EventKind(te.Event))
			switch confpay.EventKind(te.Event) {
			case confpay.EventTransferInitiated:
				if !l.monotonic || l.status[te.TransferID] == "" {
					l.status[te.TransferID] = "pending"
				}
			case confpay.EventTransferConfirmed:
				if l.monotonic || l.status[te.TransferID] == "pending" {
					l.status[te.TransferID] = "confirmed"
				}
			}
		})
}

// runShop has @shop paid from outside once, with its transfer.initiated
// held back by reorder when reorder is set, and returns the payment's
// status in the ledger, the kinds in the order they reached it, and the
// delivery records.
func runShop(t *testing.T, monotonic, reorder bool) (string, []confpay.EventKind, []fakeserver.DeliveryRecord) {
	t.Helper()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	l := &ledger{monotonic: monotonic, status: map[string]string{}}
	hook := srv.AddWebhook(t, "@shop", l.handler(), hookSecret, confpay.EventTransferInitiated, confpay.EventTransferConfirmed)
	if reorder {
		srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Event: confpay.EventTransferInitiated, Times: 1, Action: fakeserver.DeliveryReorder})
	}
	tr := srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "25"})
	srv.Sync()
	srv.Advance(time.Second) // the block: transfer.confirmed, then the held initiated
	ds, _ := srv.Deliveries("@shop", confpay.NetworkTest)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status[tr.TransferID], l.seen, ds
}

// TestDeliveryReorder: transfer.initiated held back until the
// transfer.confirmed after it, which reaches the handler first. A
// handler that assumes initiated comes first leaves the payment pending
// for ever; one that never moves a payment back confirms it.
func TestDeliveryReorder(t *testing.T) {
	t.Parallel()
	if st, _, _ := runShop(t, false, false); st != "confirmed" {
		t.Fatalf("without the fault the naive ledger ends %q, want confirmed (the bug hides)", st)
	}
	st, seen, ds := runShop(t, false, true)
	if !slices.Equal(seen, []confpay.EventKind{confpay.EventTransferConfirmed, confpay.EventTransferInitiated}) {
		t.Fatalf("the handler saw %v; want confirmed, then initiated", seen)
	}
	if st != "pending" {
		t.Fatalf("the naive ledger ends %q under reorder, want pending (the bug exposed)", st)
	}
	if len(ds) != 2 || ds[0].Event != confpay.EventTransferInitiated || len(ds[0].AttemptLog) != 1 || ds[0].AttemptLog[0].Fault != fakeserver.DeliveryReorder ||
		len(ds[1].AttemptLog) != 1 || ds[1].AttemptLog[0].Fault != "" || ds[0].AttemptLog[0].At.Before(ds[1].AttemptLog[0].At) {
		t.Fatalf("records %+v; want initiated (reordered) made no earlier than confirmed", ds)
	}
	if st, _, _ := runShop(t, true, true); st != "confirmed" {
		t.Fatalf("the monotonic ledger ends %q under reorder, want confirmed", st)
	}
}

// TestDeliveryReorderSwapsPairs: a reorder fault for every attempt swaps
// them in pairs (the one held is released by the next, which the fault
// does not hold), and one with nothing after it goes at its bound.
func TestDeliveryReorderSwapsPairs(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	var mu sync.Mutex
	var got []string // event kind and transfer id, in arrival order
	hook := srv.AddWebhook(t, "@shop", webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{hookSecret}},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) {
			te := ev.(*webhookverify.TransferEvent)
			mu.Lock()
			got = append(got, te.Event+" "+te.TransferID)
			mu.Unlock()
		}), hookSecret, confpay.EventTransferInitiated, confpay.EventTransferConfirmed)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Action: fakeserver.DeliveryReorder, Delay: 10 * time.Second})
	a := srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "1"}).TransferID
	b := srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "2"}).TransferID
	srv.Advance(time.Second) // both confirm
	want := []string{"transfer.initiated " + b, "transfer.initiated " + a, "transfer.confirmed " + b, "transfer.confirmed " + a}
	mu.Lock()
	if !slices.Equal(got, want) {
		t.Fatalf("arrival order\n %v\nwant\n %v", got, want)
	}
	mu.Unlock()
	if fs := srv.DeliveryFaults(); fs[0].Used != 2 {
		t.Fatalf("fault used %d times, want 2 (the released ones are not held)", fs[0].Used)
	}
}

// TestDeliveryReorderBound: an attempt held back with nothing after it
// goes at the bound (DefaultReorderHold), which its record shows as its
// next attempt meanwhile.
func TestDeliveryReorderBound(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	var mu sync.Mutex
	arrived := 0
	hook := srv.AddWebhook(t, "@shop", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		arrived++
		mu.Unlock()
	}), hookSecret, confpay.EventTransferInitiated)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Times: 1, Action: fakeserver.DeliveryReorder})
	srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "1"})
	heldAt := srv.Now()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return arrived
	}
	ds, _ := srv.Deliveries("@shop", confpay.NetworkTest)
	if len(ds) != 1 || ds[0].Status != confpay.DeliveryPending || ds[0].NextAttemptAt == nil || !ds[0].NextAttemptAt.Equal(heldAt.Add(fakeserver.DefaultReorderHold)) {
		t.Fatalf("held record %+v, want pending with its next attempt at the bound", ds)
	}
	srv.Advance(fakeserver.DefaultReorderHold - time.Second)
	if n := count(); n != 0 {
		t.Fatalf("%d deliveries before the bound, want 0", n)
	}
	srv.Advance(time.Second)
	ds, _ = srv.Deliveries("@shop", confpay.NetworkTest)
	if n := count(); n != 1 || len(ds) != 1 || ds[0].Status != confpay.DeliverySucceeded || len(ds[0].AttemptLog) != 1 ||
		!ds[0].AttemptLog[0].At.Equal(heldAt.Add(fakeserver.DefaultReorderHold)) || ds[0].AttemptLog[0].Fault != fakeserver.DeliveryReorder {
		t.Fatalf("%d deliveries, records %+v; want one at the bound", n, ds)
	}
}

// TestHeldDeliveryEndsWithItsSubscription: an attempt a fault holds is
// cancelled with its subscription, and a Reset drops it: nothing is
// delivered when its hold would have ended.
func TestHeldDeliveryEndsWithItsSubscription(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"unsubscribe", "reset"} {
		srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
		shop := newAccount(t, srv, "@shop")
		var mu sync.Mutex
		arrived := 0
		hook := srv.AddWebhook(t, "@shop", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			mu.Lock()
			arrived++
			mu.Unlock()
		}), hookSecret, confpay.EventTransferInitiated)
		for _, action := range []string{fakeserver.DeliveryDelay, fakeserver.DeliveryReorder} {
			srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: hook.WebhookID, Times: 1, Action: action, Delay: time.Minute})
			srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "1"})
		}
		timers := fakeserver.PendingTimers(srv)
		switch end {
		case "unsubscribe":
			if err := newClient(t, srv, shop.test(), nil).Webhooks.Delete(t.Context(), hook.WebhookID); err != nil {
				t.Fatal(err)
			}
		case "reset":
			srv.Reset()
		}
		if n := fakeserver.PendingTimers(srv); n >= timers {
			t.Fatalf("%s: %d timers after, %d before: the holds' timers were not stopped", end, n, timers)
		}
		srv.Advance(2 * time.Minute)
		mu.Lock()
		if arrived != 0 {
			t.Fatalf("%s: %d deliveries after the holds, want 0", end, arrived)
		}
		mu.Unlock()
	}
}

// TestDeliveryRecordsKeepEveryAttempt: a delivery whose first answer is
// lost (lose_answer), then answered 503, then 200 keeps the three attempts, with their instants on the retry
// schedule, statuses and durations, in the direct API and
// /_fake/deliveries alike.
func TestDeliveryRecordsKeepEveryAttempt(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	var mu sync.Mutex
	calls := 0
	srv.AddWebhook(t, "@shop", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}), hookSecret, confpay.EventTransferInitiated)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{Times: 1, Action: fakeserver.DeliveryLoseAnswer})
	srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "1"})
	first := srv.Now()
	srv.Advance(5 * time.Second)
	srv.Advance(5 * time.Minute)

	ds, err := srv.Deliveries("@shop", confpay.NetworkTest)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	d := ds[0]
	want := []struct {
		at     time.Time
		status int
		fault  string
	}{{first, 0, fakeserver.DeliveryLoseAnswer}, {first.Add(5 * time.Second), 503, ""}, {first.Add(5*time.Second + 5*time.Minute), 200, ""}}
	if d.Status != confpay.DeliverySucceeded || d.Attempts != len(want) || len(d.AttemptLog) != len(want) {
		t.Fatalf("record %+v; want succeeded after 3 attempts, all logged", d)
	}
	for i, w := range want {
		a := d.AttemptLog[i]
		if !a.At.Equal(w.at) || a.ResponseStatus != w.status || a.Duration <= 0 || a.Fault != w.fault {
			t.Errorf("attempt %d: %+v; want at %v, status %d, a duration, fault %q", i+1, a, w.at, w.status, w.fault)
		}
	}

	var over struct {
		Deliveries []fakeserver.DeliveryRecord `json:"deliveries"`
	}
	rawCall(t, srv, "GET", "/_fake/deliveries?account=%40shop", "", "").decode(t, &over)
	if len(over.Deliveries) != 1 || !slices.EqualFunc(over.Deliveries[0].AttemptLog, d.AttemptLog, func(a, b fakeserver.DeliveryAttempt) bool {
		return a.At.Equal(b.At) && a.ResponseStatus == b.ResponseStatus && a.Duration == b.Duration && a.Fault == b.Fault
	}) {
		t.Fatalf("/_fake/deliveries: %+v; want the direct API's %+v", over.Deliveries, d.AttemptLog)
	}
}

// TestDeliveryFaultMatching: a fault applies to the attempts of its
// subscription and event kind only, as many times as it says; the other
// subscription's attempts, the other kind's, and the attempts after the
// count are made without a fault.
func TestDeliveryFaultMatching(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	a := srv.AddWebhook(t, "@shop", ok, hookSecret, confpay.EventTransferInitiated, confpay.EventTransferConfirmed)
	srv.AddWebhook(t, "@shop", ok, hookSecret, confpay.EventTransferInitiated, confpay.EventTransferConfirmed)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{WebhookID: a.WebhookID, Event: confpay.EventTransferConfirmed, Times: 2, Action: fakeserver.DeliveryLoseAnswer})
	for range 3 {
		srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "1"})
		srv.Advance(time.Second) // the block: the transfer confirms
	}
	srv.Advance(time.Minute) // the lost answers' retries
	ds, err := srv.Deliveries("@shop", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	faulted := 0
	for _, d := range ds {
		for i, at := range d.AttemptLog {
			if at.Fault == "" {
				continue
			}
			faulted++
			if d.WebhookID != a.WebhookID || d.Event != confpay.EventTransferConfirmed || at.Fault != fakeserver.DeliveryLoseAnswer || i != 0 {
				t.Errorf("attempt %d of %s (%s to %s) got %s; want lose_answer on a first attempt of transfer.confirmed to %s only",
					i+1, d.DeliveryID, d.Event, d.WebhookID, at.Fault, a.WebhookID)
			}
		}
		if d.Status != confpay.DeliverySucceeded {
			t.Errorf("delivery %s %s", d.DeliveryID, d.Status)
		}
	}
	if len(ds) != 12 || faulted != 2 {
		t.Fatalf("%d deliveries, %d attempts faulted; want 12 deliveries (3 payments × 2 kinds × 2 subscriptions), 2 faulted", len(ds), faulted)
	}
	if fs := srv.DeliveryFaults(); len(fs) != 1 || fs[0].Used != 2 {
		t.Fatalf("faults %+v, want one used twice", fs)
	}
}
