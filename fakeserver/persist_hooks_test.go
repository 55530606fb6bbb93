package fakeserver_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// restartReceiver answers every attempt with status (503 until told
// otherwise), checking its signature against secret, and records when
// (server time) each attempt came.
type restartReceiver struct {
	t      *testing.T
	srv    atomic.Pointer[fakeserver.Server]
	status atomic.Int32
	mu     sync.Mutex
	secret string
	at     []time.Time
	*httptest.Server
}

func newRestartReceiver(t *testing.T) *restartReceiver {
	rc := &restartReceiver{t: t}
	rc.status.Store(http.StatusServiceUnavailable)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		if err := webhookverify.Verify(rc.secret, body, r.Header.Get(webhookverify.SignatureHeader)); err != nil {
			rc.t.Errorf("an attempt's signature does not verify with the subscription's secret: %v", err)
		}
		rc.at = append(rc.at, rc.srv.Load().Now())
		rc.mu.Unlock()
		w.WriteHeader(int(rc.status.Load()))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *restartReceiver) attempts() []time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]time.Time(nil), rc.at...)
}

// TestDataDirRestartWebhooks: subscriptions (with their secrets, and a
// deleted one's id), events, delivery records and kept Idempotency-Key
// answers come back after a restart, exactly; a delivery waiting for its
// retry is retried at its exact instant on the restored virtual clock,
// signed with the restored secret; a request replayed under its key
// after the restart gets the identical stored answer.
// With rewrites mid-load (see TestDataDirRestart) the same holds.
func TestDataDirRestartWebhooks(t *testing.T) {
	t.Run("journal", func(t *testing.T) { testDataDirRestartWebhooks(t) })
	t.Run("rewrites", func(t *testing.T) { testDataDirRestartWebhooks(t, fakeserver.WithDataDirRewriteAlways()) })
}

func testDataDirRestartWebhooks(t *testing.T, extra ...fakeserver.Option) {
	dir := t.TempDir()
	opts := append([]fakeserver.Option{fakeserver.WithDataDir(dir), fakeserver.WithoutDeliveryJitter()}, extra...)
	srv := fakeserver.New(t, opts...)
	rc := newRestartReceiver(t)
	rc.srv.Store(srv)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "100")
	ctx := context.Background()
	c := newClient(t, srv, alice.test(), nil, noRetry)

	sub, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: rc.URL, Events: []confpay.EventKind{webhookverify.KindTransferInitiated}})
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = sub.Secret.Reveal()
	rc.mu.Unlock()
	gone, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "https://example.com/h", Events: []confpay.EventKind{webhookverify.KindTransferConfirmed}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Webhooks.Delete(ctx, gone.WebhookID); err != nil {
		t.Fatal(err)
	}
	first := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`, "Idempotency-Key", "restart-1")
	if first.status != http.StatusCreated {
		t.Fatalf("POST /v1/transfers: %d %s", first.status, first.body)
	}
	start := srv.Now()
	srv.Sync() // the first attempt: 503, the retry due 5 s later
	if got := rc.attempts(); len(got) != 1 {
		t.Fatalf("%d attempts before the restart, want 1", len(got))
	}

	before, now := srv.Snapshot(), srv.Now()
	evBefore, err := srv.Events("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	dlBefore, err := srv.Deliveries("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if len(dlBefore) != 1 || dlBefore[0].Status != confpay.DeliveryPending || dlBefore[0].NextAttemptAt == nil {
		t.Fatalf("deliveries before the restart = %+v, want one pending retry", dlBefore)
	}
	srv.Close()

	srv2 := fakeserver.New(t, opts...)
	rc.srv.Store(srv2)
	if !srv2.Now().Equal(now) {
		t.Fatalf("the clock restarted at %v, want %v", srv2.Now(), now)
	}
	if diff := cmp.Diff(before, srv2.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
	evAfter, err := srv2.Events("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(evBefore, evAfter); diff != "" {
		t.Fatalf("events after restart (-before +after):\n%s", diff)
	}
	dlAfter, err := srv2.Deliveries("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dlBefore, dlAfter); diff != "" {
		t.Fatalf("deliveries after restart (-before +after):\n%s", diff)
	}

	// The kept answer replays, byte for byte.
	again := rawCall(t, srv2, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`, "Idempotency-Key", "restart-1")
	if again.status != first.status || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after restart: %d %s (replayed %q), want %d %s", again.status, again.body, again.header.Get("Idempotent-Replayed"), first.status, first.body)
	}
	// The deleted subscription's second DELETE still succeeds.
	c2 := newClient(t, srv2, alice.test(), nil, noRetry)
	if err := c2.Webhooks.Delete(ctx, gone.WebhookID); err != nil {
		t.Fatalf("deleting the deleted subscription again after restart: %v", err)
	}

	// The retry fires at its exact instant on the restored clock.
	rc.status.Store(http.StatusOK)
	srv2.Advance(start.Add(5*time.Second).Sub(srv2.Now()) - time.Nanosecond)
	if got := rc.attempts(); len(got) != 1 {
		t.Fatalf("%d attempts before the retry was due, want 1", len(got))
	}
	srv2.Advance(time.Nanosecond)
	got := rc.attempts()
	if len(got) != 2 || !got[1].Equal(start.Add(5*time.Second)) {
		t.Fatalf("attempts at %v, want the retry at %v", got, start.Add(5*time.Second))
	}
	final, err := srv2.Deliveries("@alice", confpay.NetworkTest)
	if err != nil || len(final) != 1 || final[0].Status != confpay.DeliverySucceeded || final[0].Attempts != 2 {
		t.Fatalf("deliveries after the retry = %+v, %v", final, err)
	}
	// And a third start sees the delivery's success.
	snap := srv2.Snapshot()
	srv2.Close()
	srv3 := fakeserver.New(t, opts...)
	rc.srv.Store(srv3)
	if diff := cmp.Diff(snap, srv3.Snapshot(), restartOptions); diff != "" {
		t.Fatalf("state after the second restart (-before +after):\n%s", diff)
	}
	final3, err := srv3.Deliveries("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(final, final3); diff != "" {
		t.Fatalf("deliveries after the second restart (-before +after):\n%s", diff)
	}
}

// TestDataDirWebhookAnswersWaitForFsync holds the data directory's fsync
// and checks that a subscription, created over HTTP or the direct API, is
// answered only once its record was fsynced: the webhook state lives
// outside s.mu, and an answer that waited only for the sections it ran
// showed a subscription a crash could take back.
func TestDataDirWebhookAnswersWaitForFsync(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithDataDir(t.TempDir()))
	alice := newAccount(t, srv, "@alice")
	rc := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer rc.Close()
	var hold atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	fakeserver.SetFsync(srv, func(f *os.File) error {
		if hold.CompareAndSwap(true, false) {
			entered <- struct{}{}
			<-release
		}
		return f.Sync()
	})
	c := newClient(t, srv, alice.test(), nil, noRetry)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"POST /v1/webhooks", func() error {
			_, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: rc.URL, Events: []confpay.EventKind{webhookverify.KindTransferInitiated}})
			return err
		}},
		{"SubscribeHandler", func() error {
			_, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, http.NotFoundHandler(), confpay.Secret("whsec_0123456789abcdef0123"))
			return err
		}},
	} {
		hold.Store(true)
		release = make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- tc.call() }()
		select {
		case err := <-done:
			hold.Store(false)
			t.Fatalf("%s answered (%v) before anything was fsynced", tc.name, err)
		case <-entered:
		}
		select {
		case err := <-done:
			close(release)
			t.Fatalf("%s answered (%v) while its record's fsync was held", tc.name, err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}

// keyedWindow serves one request under an Idempotency-Key on a server
// with a data directory and, at test point at (while the request runs),
// sends a payment without a key from @carol to @bob and reports whether
// its record was appended (the payment answered) or held in the commit
// order behind the keyed request (test point "held"). Restarted, both
// are there and the key replays its answer.
func keyedWindow(t *testing.T, at, method, path, body string) (bool, answer) {
	t.Helper()
	dir := t.TempDir()
	srv := fakeserver.NewUnstartedServer(fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync())
	held := make(chan struct{}, 1)
	var alice, carol party
	var once sync.Once
	var fired, appended atomic.Bool
	other := make(chan answer, 1)
	fakeserver.SetTestHook(srv, func(point string) {
		switch point {
		case "held":
			select {
			case held <- struct{}{}:
			default:
			}
		case at:
			once.Do(func() {
				fired.Store(true)
				go func() {
					other <- rawCall(t, srv, "POST", "/v1/transfers", carol.test(), `{"to":"@bob","amount":"1","asset":"USDG"}`)
				}()
				select {
				case a := <-other:
					if a.status != http.StatusCreated {
						t.Errorf("the other payment: %d %s", a.status, a.body)
					}
					appended.Store(true)
				case <-held:
				}
			})
		}
	})
	srv.Start()
	alice, carol = newAccount(t, srv, "@alice"), newAccount(t, srv, "@carol")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "10")
	fundOn(t, srv, carol.info.AccountID, confpay.NetworkTest, "USDG", "10")
	keyed := rawCall(t, srv, method, path, alice.test(), body, "Idempotency-Key", "k1")
	if !fired.Load() {
		t.Fatalf("the keyed request never reached test point %q", at)
	}
	if !appended.Load() {
		if a := <-other; a.status != http.StatusCreated {
			t.Errorf("the other payment: %d %s", a.status, a.body)
		}
	}
	srv.Close()

	// Both survive a restart, and the key replays its answer.
	srv2 := fakeserver.New(t, fakeserver.WithDataDir(dir))
	if r := rawCall(t, srv2, method, path, alice.test(), body, "Idempotency-Key", "k1"); r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, keyed.body) {
		t.Errorf("retry after the restart: %d replayed=%q %s, want %s", r.status, r.header.Get("Idempotent-Replayed"), r.body, keyed.body)
	}
	if ts, err := srv2.Transfers("@carol", confpay.NetworkTest); err != nil || len(ts) != 1 {
		t.Errorf("@carol's transfers after the restart: %d (%v), want 1", len(ts), err)
	}
	return appended.Load(), keyed
}

// TestKeyedRequestHoldsNothingBeforeItsEffect: a request under an
// Idempotency-Key takes its place in the commit order with its first
// record, not when its handler starts, so that a payment committed by
// another request meanwhile is appended (and answered) without waiting
// for the keyed request to finish.
func TestKeyedRequestHoldsNothingBeforeItsEffect(t *testing.T) {
	appended, keyed := keyedWindow(t, "keyed-start", "POST", "/v1/transfers", `{"to":"@bob","amount":"1","asset":"USDG"}`)
	if keyed.status != http.StatusCreated {
		t.Fatalf("keyed payment: %d %s", keyed.status, keyed.body)
	}
	if !appended {
		t.Error("a payment committed while a keyed request had changed nothing yet was held behind it")
	}
}

// TestKeyedWebhookChangeHeldBehindItsSlot: a request under an
// Idempotency-Key that changes the webhook state (outside s.mu) takes its
// place in the commit order before the change, so that another request's
// record, which carries the change, is held behind it: a crash cannot
// keep the new subscription without the key's answer.
func TestKeyedWebhookChangeHeldBehindItsSlot(t *testing.T) {
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(rc.Close)
	appended, keyed := keyedWindow(t, "webhook-subscribed", "POST", "/v1/webhooks", `{"url":"`+rc.URL+`","events":["transfer.confirmed"]}`)
	if keyed.status != http.StatusCreated {
		t.Fatalf("keyed subscription: %d %s", keyed.status, keyed.body)
	}
	if appended {
		t.Error("the record carrying a keyed request's new subscription was appended before the request's answer")
	}
}
