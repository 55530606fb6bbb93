package fakeserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// recPair is @alice (funded) and @bob on srv, with alice's client.
func recPair(t *testing.T, srv *fakeserver.Server) *confpay.Client {
	t.Helper()
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	srv.AddFunds(t, "@alice", "USDG", "100")
	return srv.Client(alice.TestKey)
}

// TestRecordWaitsForEvents: the recorder receives verified events in
// process, Wait returns each once, and AssertKinds checks the sequence.
func TestRecordWaitsForEvents(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := recPair(t, srv)
	rec := srv.Record(t, "@alice")
	bob := srv.Record(t, "@bob", confpay.EventTransferConfirmed)
	if !strings.HasSuffix(rec.Webhook().URL, "/webhooks") || !strings.Contains(rec.Webhook().URL, ".invalid") {
		t.Errorf("recorder URL %q, want one on the .invalid domain", rec.Webhook().URL)
	}

	tr, err := alice.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")})
	if err != nil {
		t.Fatal(err)
	}
	ev := rec.Wait(t, confpay.EventTransferInitiated)
	if te, ok := ev.(*webhookverify.TransferEvent); !ok || te.TransferID != tr.TransferID || te.Direction != webhookverify.DirectionSent {
		t.Fatalf("initiated event %#v", ev)
	}
	srv.Advance(time.Second) // one block
	rec.Wait(t, confpay.EventTransferConfirmed)
	rec.AssertKinds(t, confpay.EventTransferInitiated, confpay.EventTransferConfirmed)
	got := bob.Wait(t, confpay.EventTransferConfirmed).(*webhookverify.TransferEvent)
	if got.Direction != webhookverify.DirectionReceived || got.Counterparty != "@alice" {
		t.Errorf("bob's event %+v", got)
	}

	// A second Wait for a kind needs a second event of it.
	ft := &recordingT{}
	rec.Wait(ft, confpay.EventTransferInitiated)
	if !strings.Contains(ft.failed, "no transfer.initiated event arrived") {
		t.Errorf("second Wait for one event: %q", ft.failed)
	}
}

// TestRecordRetries: a recorder that answers 500 is retried on the
// server's schedule; its event is recorded once.
func TestRecordRetries(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	alice := recPair(t, srv)
	rec := srv.Record(t, "@alice", confpay.EventTransferInitiated)
	rec.Answer(http.StatusInternalServerError)
	if _, err := alice.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, confpay.EventTransferInitiated)
	ds, err := srv.Deliveries("@alice", confpay.NetworkTest)
	if err != nil || len(ds) != 1 || ds[0].Status != confpay.DeliveryPending || ds[0].NextAttemptAt == nil {
		t.Fatalf("deliveries after a 500: %+v, %v", ds, err)
	}
	rec.Answer(http.StatusOK)
	srv.Advance(5 * time.Second)
	if n := rec.Requests(); n != 2 {
		t.Fatalf("%d requests, want the first attempt and one retry", n)
	}
	if len(rec.Events()) != 1 {
		t.Fatalf("events %v, want the one event once", rec.Kinds())
	}
	ds, _ = srv.Deliveries("@alice", confpay.NetworkTest)
	if ds[0].Status != confpay.DeliverySucceeded || ds[0].Attempts != 2 || ds[0].WebhookID != rec.Webhook().WebhookID {
		t.Fatalf("delivery after the retry: %+v", ds[0])
	}
}

// TestAddWebhookWithAKnownSecret: a service's own handler, built with its
// secret before any event, receives signed deliveries in process.
func TestAddWebhookWithAKnownSecret(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := recPair(t, srv)
	const secret = "whsec_0123456789abcdefghijklmnop"
	got := make(chan webhookverify.Event, 4)
	h := webhookverify.Handler(webhookverify.HandlerOptions{Secrets: []string{secret}},
		func(w http.ResponseWriter, r *http.Request, ev webhookverify.Event) { got <- ev })
	w := srv.AddWebhook(t, "@alice", h, secret, confpay.EventTransferInitiated)
	if _, err := alice.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
		t.Fatal(err)
	}
	srv.Sync()
	select {
	case ev := <-got:
		if ev.Kind() != string(confpay.EventTransferInitiated) {
			t.Fatalf("got %s", ev.Kind())
		}
	default:
		t.Fatal("the handler got nothing after Sync")
	}
	// /v1 lists it like any subscription.
	list, err := alice.Webhooks.List(context.Background())
	if err != nil || len(list) != 1 || list[0].WebhookID != w.WebhookID {
		t.Fatalf("list: %+v, %v", list, err)
	}
}

// TestSubscribeHandlerBadInput: each bad argument is refused naming it,
// and nothing is subscribed.
func TestSubscribeHandlerBadInput(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	recPair(t, srv)
	h := http.NotFoundHandler()
	good := confpay.Secret("whsec_0123456789abcdefghij")
	for _, tc := range []struct {
		name, ref, param string
		n                confpay.Network
		h                http.Handler
		secret           confpay.Secret
		kinds            []confpay.EventKind
	}{
		{"nil handler", "@alice", "handler", confpay.NetworkTest, nil, good, nil},
		{"short secret", "@alice", "secret", confpay.NetworkTest, h, "whsec_short", nil},
		{"no prefix", "@alice", "secret", confpay.NetworkTest, h, "0123456789abcdefghijklmnop", nil},
		{"bad kind", "@alice", "events", confpay.NetworkTest, h, good, []confpay.EventKind{"transfer.done"}},
		{"bad network", "@alice", "network", "main", h, good, nil},
	} {
		_, err := srv.SubscribeHandler(tc.ref, tc.n, tc.h, tc.secret, tc.kinds...)
		if err == nil || !strings.Contains(err.Error(), tc.param) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.param)
		}
		if err != nil && strings.Contains(err.Error(), good.Reveal()) {
			t.Errorf("%s: the error shows the secret", tc.name)
		}
	}
	if _, err := srv.SubscribeHandler("@nobody", confpay.NetworkTest, h, good); err == nil {
		t.Error("an unknown account was subscribed")
	}
	if ds, _ := srv.Deliveries("@alice", confpay.NetworkTest); len(ds) != 0 {
		t.Errorf("deliveries %+v", ds)
	}
	if snap := srv.Snapshot(); len(snap.Networks[confpay.NetworkTest].Webhooks) != 0 {
		t.Errorf("subscriptions made: %+v", snap.Networks[confpay.NetworkTest].Webhooks)
	}
}

// TestEventsDirectRead: the direct API lists an account's events, with or
// without subscribers, each parseable.
func TestEventsDirectRead(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := recPair(t, srv)
	if _, err := alice.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	evs, err := srv.Events("@bob", confpay.NetworkTest)
	if err != nil || len(evs) != 2 {
		t.Fatalf("bob's events: %d, %v; want initiated and confirmed", len(evs), err)
	}
	for i, want := range []confpay.EventKind{confpay.EventTransferInitiated, confpay.EventTransferConfirmed} {
		ev, err := evs[i].Event()
		if err != nil || evs[i].Kind != want || ev.ID() != evs[i].ID || ev.(*webhookverify.TransferEvent).Direction != webhookverify.DirectionReceived {
			t.Errorf("event %d: %+v %v", i, ev, err)
		}
	}
	if _, err := srv.Events("@nobody", confpay.NetworkTest); err == nil {
		t.Error("events of an unknown account")
	}
}

// TestRecorderReportsForgedDeliveries: a delivery that fails verification
// is answered 400 and fails the test at its end.
func TestRecorderReportsForgedDeliveries(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	recPair(t, srv)
	ft := &recordingT{}
	rec := srv.Record(ft, "@alice")
	req, _ := http.NewRequest(http.MethodPost, rec.Webhook().URL, strings.NewReader(`{"event":"transfer.initiated"}`))
	req.Header.Set(webhookverify.SignatureHeader, "t=1,v1=00")
	w := httptest.NewRecorder()
	rec.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest || len(rec.Problems()) != 1 {
		t.Fatalf("forged delivery: status %d, problems %v", w.Code, rec.Problems())
	}
	ft.runCleanups()
	if !strings.Contains(ft.failed, "failed verification") || strings.Contains(ft.failed, rec.Secret().Reveal()) {
		t.Fatalf("cleanup reported %q", ft.failed)
	}
}

// TestRecordInSynctest: webhooks reach a recorder inside a synctest
// bubble (no socket anywhere), and a retry 5 s later takes no wall time.
func TestRecordInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener(), fakeserver.WithRealClock(), fakeserver.WithoutDeliveryJitter())
		alice := recPair(t, srv)
		rec := srv.Record(t, "@alice", confpay.EventTransferConfirmed)
		rec.Answer(http.StatusServiceUnavailable)
		start := time.Now()
		if _, err := alice.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
			t.Fatal(err)
		}
		rec.Wait(t, confpay.EventTransferConfirmed) // after the 1 s block
		rec.Answer(http.StatusOK)
		time.Sleep(5 * time.Second) // the retry's wait, in bubble time
		synctest.Wait()
		if n := rec.Requests(); n != 2 {
			t.Fatalf("%d requests after the retry wait, want 2", n)
		}
		if d := time.Since(start); d < 6*time.Second {
			t.Fatalf("bubble time %v, want at least the block and the retry wait", d)
		}
	})
}

// recordingT is a Tester that records a failure and keeps the cleanups
// for the test to run.
type recordingT struct {
	failed   string
	cleanups []func()
}

func (f *recordingT) Helper()           {}
func (f *recordingT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *recordingT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}
func (f *recordingT) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// TestRecordWaitFailures: Wait fails the test with what it saw: on a real
// clock after RecorderTimeout (in a synctest bubble, no wall time), and,
// when Reset or Reseed removed the recorder's subscription, saying so.
func TestRecordWaitFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener(), fakeserver.WithRealClock())
		srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
		rec := srv.Record(t, "@alice")
		start := time.Now()
		ft := &failTester{}
		if ev := rec.Wait(ft, confpay.EventTransferConfirmed); ev != nil || !strings.Contains(ft.failed, "no transfer.confirmed event arrived in 10s") {
			t.Errorf("Wait on a real clock: %v, failed %q", ev, ft.failed)
		}
		if d := time.Since(start); d != fakeserver.RecorderTimeout {
			t.Errorf("Wait gave up after %v, want %v", d, fakeserver.RecorderTimeout)
		}
	})
	srv := fakeserver.New(t)
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	rec := srv.Record(t, "@alice")
	srv.Reset()
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	ft := &failTester{}
	rec.Wait(ft, confpay.EventTransferConfirmed)
	if !strings.Contains(ft.failed, "subscription is gone (Reset or Reseed removed it): Record again") {
		t.Errorf("Wait after Reset failed with %q", ft.failed)
	}
}

// TestEventsAndDeliveriesOverAdmin: GET /_fake/events and /_fake/deliveries
// show what the direct API does, for tests in other languages: the events
// as their deliveries carry them, and the delivery records with their
// subscription.
func TestEventsAndDeliveriesOverAdmin(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := recPair(t, srv)
	rec := srv.Record(t, "@bob", confpay.EventTransferConfirmed)
	if _, err := alice.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	rec.Wait(t, confpay.EventTransferConfirmed)

	var events struct {
		Events []json.RawMessage `json:"events"`
	}
	rawCall(t, srv, "GET", "/_fake/events?account=%40bob&network=test", "", "").decode(t, &events)
	want, err := srv.Events("@bob", confpay.NetworkTest)
	if err != nil || len(events.Events) != len(want) || len(want) != 2 {
		t.Fatalf("%d events over HTTP, %d direct (%v); want 2", len(events.Events), len(want), err)
	}
	for i := range want {
		ev, err := webhookverify.ParseEvent(events.Events[i])
		if err != nil || ev.ID() != want[i].ID {
			t.Errorf("event %d: %v, %v; want %s", i, ev, err, want[i].ID)
		}
	}
	var deliveries struct {
		Deliveries []struct {
			WebhookID string `json:"webhook_id"`
			confpay.Delivery
		} `json:"deliveries"`
	}
	rawCall(t, srv, "GET", "/_fake/deliveries?account=%40bob", "", "").decode(t, &deliveries)
	if d := deliveries.Deliveries; len(d) != 1 || d[0].WebhookID != rec.Webhook().WebhookID || d[0].Status != confpay.DeliverySucceeded || d[0].Event != confpay.EventTransferConfirmed {
		t.Errorf("deliveries over HTTP: %+v", d)
	}
	if a := rawCall(t, srv, "GET", "/_fake/events?account=%40nobody", "", ""); a.status != 404 {
		t.Errorf("events of an unknown account: %d %s", a.status, a.body)
	}
	if a := rawCall(t, srv, "GET", "/_fake/deliveries", "", ""); a.status != 400 {
		t.Errorf("deliveries without an account: %d %s", a.status, a.body)
	}
}
