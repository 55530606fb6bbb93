package fakeserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// nominalOffsets are the attempt times after the first with no jitter:
// each wait counts from the previous attempt, and the last attempt is at
// the 24 h mark.
var nominalOffsets = []time.Duration{
	0,
	5 * time.Second,
	5*time.Second + 5*time.Minute,
	5*time.Second + 35*time.Minute,
	5*time.Second + 2*time.Hour + 35*time.Minute,
	5*time.Second + 7*time.Hour + 35*time.Minute,
	5*time.Second + 17*time.Hour + 35*time.Minute,
	24 * time.Hour,
}

// oneDelivery sets up a subscriber of transfer.confirmed whose receiver
// answers with answer, emits one event and waits for the first attempt.
func oneDelivery(t *testing.T, s *Server, answer func(int, *http.Request) int) (*hookReceiver, *testParty, *confpay.Webhook) {
	t.Helper()
	rc := newHookReceiver(t, s, answer)
	alice := newTestParty(t, s, "@alice")
	bob := newTestParty(t, s, "@bob")
	w := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferConfirmed)
	emitTransfer(s, webhookverify.KindTransferConfirmed, handTransfer(s, alice.acct, bob.acct))
	s.Sync()
	return rc, alice, w
}

func TestDeliveryRetriesAtScheduledTimes(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	t0 := s.Now()
	// Fail three times, then succeed.
	rc, alice, w := oneDelivery(t, s, func(n int, _ *http.Request) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	if got := rc.count(); got != 1 {
		t.Fatalf("after Sync the first attempt has run %d times, want 1", got)
	}
	ds := listDeliveries(t, alice, w.WebhookID)
	if len(ds) != 1 || ds[0].Status != confpay.DeliveryPending || ds[0].Attempts != 1 || ds[0].ResponseStatus != 500 {
		t.Fatalf("after one failure: %+v", ds[0])
	}
	if ds[0].NextAttemptAt == nil || !ds[0].NextAttemptAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("next_attempt_at = %v, want %v", ds[0].NextAttemptAt, t0.Add(5*time.Second))
	}

	// Just before the first retry nothing more has happened.
	s.Advance(5*time.Second - time.Nanosecond)
	if got := rc.count(); got != 1 {
		t.Fatalf("retry ran early: %d attempts", got)
	}
	s.Advance(48 * time.Hour)
	hits := rc.all()
	if len(hits) != 4 {
		t.Fatalf("got %d attempts, want 4 (three failures, one success)", len(hits))
	}
	for i, h := range hits {
		if want := t0.Add(nominalOffsets[i]); !h.at.Equal(want) {
			t.Errorf("attempt %d at %v, want %v", i+1, h.at, want)
		}
		if got := h.header.Get(webhookverify.AttemptHeader); got != strconv.Itoa(i+1) {
			t.Errorf("attempt %d carries %s %q", i+1, webhookverify.AttemptHeader, got)
		}
		if string(h.body) != string(hits[0].body) {
			t.Errorf("attempt %d body differs from the first", i+1)
		}
	}
	d := listDeliveries(t, alice, w.WebhookID)[0]
	if d.Status != confpay.DeliverySucceeded || d.Attempts != 4 || d.RetryCount != 3 || d.ResponseStatus != 204 ||
		d.NextAttemptAt != nil || d.LastAttemptAt == nil || !d.LastAttemptAt.Equal(hits[3].at) || d.Trigger != confpay.TriggerEvent {
		t.Fatalf("final record: %+v", d)
	}
}

func TestDeliveryNeverAnswered2xxFails(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	t0 := s.Now()
	rc, alice, w := oneDelivery(t, s, answerAlways(http.StatusServiceUnavailable))
	// Step to each scheduled instant: the attempt is there exactly then.
	for i := 1; i < len(nominalOffsets); i++ {
		s.Set(t0.Add(nominalOffsets[i] - time.Millisecond))
		if got := rc.count(); got != i {
			t.Fatalf("1 ms before attempt %d: %d attempts so far", i+1, got)
		}
		s.Set(t0.Add(nominalOffsets[i]))
		if got := rc.count(); got != i+1 {
			t.Fatalf("at attempt %d's time: %d attempts so far", i+1, got)
		}
	}
	s.Advance(72 * time.Hour)
	hits := rc.all()
	if len(hits) != 8 {
		t.Fatalf("got %d attempts, want 8", len(hits))
	}
	for i, h := range hits {
		if want := t0.Add(nominalOffsets[i]); !h.at.Equal(want) {
			t.Errorf("attempt %d at %v, want %v", i+1, h.at, want)
		}
	}
	d := listDeliveries(t, alice, w.WebhookID)[0]
	if d.Status != confpay.DeliveryFailed || d.Attempts != 8 || d.RetryCount != 7 || d.ResponseStatus != 503 || d.NextAttemptAt != nil {
		t.Fatalf("final record: %+v", d)
	}
	if !d.LastAttemptAt.Equal(t0.Add(24 * time.Hour)) {
		t.Fatalf("last attempt at %v, want the 24 h mark", d.LastAttemptAt)
	}
	if n := s.clock.Pending(); n != 0 {
		t.Fatalf("%d timers still pending after the delivery failed", n)
	}
}

func TestDeliveryRealJitterStaysInBand(t *testing.T) {
	s := New(t)
	t0 := s.Now()
	rc, alice, w := oneDelivery(t, s, answerAlways(http.StatusBadGateway))
	s.Advance(72 * time.Hour)
	hits := rc.all()
	if len(hits) != 8 {
		t.Fatalf("got %d attempts, want 8", len(hits))
	}
	if !hits[0].at.Equal(t0) {
		t.Fatalf("first attempt at %v, want %v", hits[0].at, t0)
	}
	nominals := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour}
	for i, nominal := range nominals {
		gap := hits[i+1].at.Sub(hits[i].at)
		lo, hi := nominal-nominal/10, nominal+nominal/10
		if gap < lo || gap > hi {
			t.Errorf("wait before attempt %d is %v, want within ±10%% of %v", i+2, gap, nominal)
		}
	}
	if last := hits[7].at; !last.Equal(t0.Add(24 * time.Hour)) {
		t.Errorf("last attempt at %v, want exactly 24 h after the first", last)
	}
	if d := listDeliveries(t, alice, w.WebhookID)[0]; d.Status != confpay.DeliveryFailed || d.Attempts != 8 {
		t.Fatalf("final record: %+v", d)
	}
}

func TestDeliveryTimeoutIsAFailure(t *testing.T) {
	// Long enough that the answered second attempt never times out on a
	// loaded machine under the race detector (50 ms did, once).
	s := New(t, WithDeliveryTimeout(500*time.Millisecond))
	setJitter(s, noJitter)
	t0 := s.Now()
	// The first request is never answered; the second is.
	rc, alice, w := oneDelivery(t, s, func(n int, _ *http.Request) int {
		if n == 1 {
			return 0
		}
		return http.StatusOK
	})
	d := listDeliveries(t, alice, w.WebhookID)[0]
	if d.Status != confpay.DeliveryPending || d.Attempts != 1 || d.ResponseStatus != 0 ||
		d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after a timeout: %+v", d)
	}
	s.Advance(5 * time.Second)
	if got := rc.count(); got != 2 {
		t.Fatalf("%d attempts, want 2", got)
	}
	d = listDeliveries(t, alice, w.WebhookID)[0]
	if d.Status != confpay.DeliverySucceeded || d.Attempts != 2 || d.ResponseStatus != 200 {
		t.Fatalf("after the retry: %+v", d)
	}
}

func TestDeliveryRedirectIsAFailure(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	target := newHookReceiver(t, s, answerAlways(http.StatusOK))
	redirector := httptest.NewServer(http.RedirectHandler(target.url(), http.StatusFound))
	t.Cleanup(redirector.Close)
	alice := newTestParty(t, s, "@alice")
	bob := newTestParty(t, s, "@bob")
	w := subscribeHooks(t, alice, redirector.URL, webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	s.Sync()
	d := listDeliveries(t, alice, w.WebhookID)[0]
	if d.Status != confpay.DeliveryPending || d.ResponseStatus != http.StatusFound || target.count() != 0 {
		t.Fatalf("after a redirect: %+v (the redirect target got %d requests)", d, target.count())
	}
}

func TestDeliveryRefusedConnectionIsAFailure(t *testing.T) {
	s := New(t)
	setJitter(s, noJitter)
	rc := newHookReceiver(t, s, answerAlways(http.StatusOK))
	url := rc.url()
	rc.hs.Close() // nobody listens there any more
	alice := newTestParty(t, s, "@alice")
	bob := newTestParty(t, s, "@bob")
	w := subscribeHooks(t, alice, url, webhookverify.KindTransferInitiated)
	emitTransfer(s, webhookverify.KindTransferInitiated, handTransfer(s, alice.acct, bob.acct))
	s.Sync()
	d := listDeliveries(t, alice, w.WebhookID)[0]
	if d.Status != confpay.DeliveryPending || d.Attempts != 1 || d.ResponseStatus != 0 || d.NextAttemptAt == nil {
		t.Fatalf("after a refused connection: %+v", d)
	}
}

// TestDeliveriesArePaged: the deliveries list is paged like transfers
// (decisions.md): newest first, limit 1 to 100 (default 20), offset, and
// has_more; a bad limit or offset, or another parameter, is 400 naming it.
func TestDeliveriesArePaged(t *testing.T) {
	s := NewServer()
	defer s.Close()
	rc := newHookReceiver(t, s, answerAlways(200))
	alice := newTestParty(t, s, "@alice")
	w := subscribeHooks(t, alice, rc.url(), "transfer.initiated")
	for range 25 {
		emitTransfer(s, "transfer.initiated", handTransfer(s, alice.acct, nil))
	}
	s.Sync()
	all := listDeliveries(t, alice, w.WebhookID)
	if len(all) != 25 {
		t.Fatalf("%d deliveries, want 25", len(all))
	}
	ctx := context.Background()
	first, err := alice.client.Webhooks.Deliveries(ctx, w.WebhookID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Deliveries) != 20 || !first.HasMore || first.Deliveries[0].DeliveryID != all[0].DeliveryID {
		t.Fatalf("default page: %d items, has_more %v", len(first.Deliveries), first.HasMore)
	}
	last, err := alice.client.Webhooks.Deliveries(ctx, w.WebhookID, &confpay.DeliveryListParams{Limit: 10, Offset: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(last.Deliveries) != 5 || last.HasMore || last.Deliveries[4].DeliveryID != all[24].DeliveryID {
		t.Fatalf("last page: %d items, has_more %v", len(last.Deliveries), last.HasMore)
	}
	var walked []string
	for d, err := range alice.client.Webhooks.AllDeliveries(ctx, w.WebhookID, &confpay.DeliveryListParams{Limit: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, d.DeliveryID)
	}
	if len(walked) != 25 || walked[24] != all[24].DeliveryID {
		t.Fatalf("AllDeliveries walked %d", len(walked))
	}
	// An unknown parameter is refused by the pipeline (checkQuery), before
	// the handler.
	if e := checkQuery("status=pending", queryParams["GET /v1/webhooks/{webhook_id}/deliveries"]); e == nil || e.status != 400 || e.body.Param != "status" {
		t.Errorf("?status=pending: %v, want 400 naming status", e)
	}
	for query, param := range map[string]string{"limit=0": "limit", "limit=101": "limit", "offset=-1": "offset"} {
		r := httptest.NewRequest("GET", "/v1/webhooks/"+w.WebhookID+"/deliveries?"+query, nil)
		r.SetPathValue("webhook_id", w.WebhookID)
		c := &call{s: s, r: r, acct: alice.acct, net: s.nets[confpay.NetworkTest]}
		_, _, err := s.handleDeliveries(c)
		var e *apiError
		if !errors.As(err, &e) || e.status != 400 || e.body.Param != param {
			t.Errorf("?%s: %v, want 400 naming %s", query, err, param)
		}
	}
}
