package fakeserver

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// WebhookRecorder is an in-process webhook receiver for tests: Record
// subscribes it, it verifies every delivery's signature with
// webhookverify, and it keeps the events in the order they arrived. Wait
// returns an event once it has arrived, with no sleep: on a virtual clock
// it runs the deliveries due now (Sync) and looks; on a real clock it
// waits for the delivery, up to a timeout.
//
// A delivery that fails verification is answered 400 and fails the test
// at its end. Reset and Reseed remove the recorder's subscription with
// every other (a Wait then says so): Record again after one. All methods
// are safe for concurrent use.
type WebhookRecorder struct {
	srv     *Server
	webhook *confpay.Webhook
	secret  confpay.Secret
	network confpay.Network
	account string // the account's reference, as Record was given it

	mu       sync.Mutex
	status   int                   // what the receiver answers
	events   []webhookverify.Event // first arrival of each event
	seen     map[string]bool       // event ids received
	taken    map[string]bool       // event ids a Wait returned
	requests int
	problems []string
	arrived  chan struct{} // closed and replaced on each arrival
}

// RecorderTimeout is how long Wait waits for an event on a real clock.
const RecorderTimeout = 10 * time.Second

// Record subscribes a new WebhookRecorder to the events of kinds (every
// kind when none is given) of accountRef on the test network, and fails
// the test if it cannot.
func (s *Server) Record(t Tester, accountRef string, kinds ...confpay.EventKind) *WebhookRecorder {
	t.Helper()
	return s.RecordOn(t, confpay.NetworkTest, accountRef, kinds...)
}

// RecordOn is Record on network n.
func (s *Server) RecordOn(t Tester, n confpay.Network, accountRef string, kinds ...confpay.EventKind) *WebhookRecorder {
	t.Helper()
	r := &WebhookRecorder{
		srv:     s,
		network: n,
		account: accountRef,
		secret:  confpay.Secret("whsec_" + names.Random(names.Base62, 32)),
		status:  http.StatusOK,
		seen:    map[string]bool{},
		taken:   map[string]bool{},
		arrived: make(chan struct{}),
	}
	w, err := s.SubscribeHandler(accountRef, n, r, r.secret, kinds...)
	if err != nil {
		t.Fatalf("fakeserver: Record(%q): %v", accountRef, err)
	}
	r.webhook = w
	t.Cleanup(func() {
		if p := r.Problems(); len(p) > 0 {
			t.Fatalf("fakeserver: webhook recorder for %s: %s", accountRef, strings.Join(p, "; "))
		}
	})
	return r
}

// Webhook is the recorder's subscription.
func (r *WebhookRecorder) Webhook() *confpay.Webhook { return r.webhook }

// Secret is the recorder's signing secret.
func (r *WebhookRecorder) Secret() confpay.Secret { return r.secret }

// Answer sets the status the recorder answers from now on (200 at first):
// a status outside 2xx makes the server retry, on its schedule. The
// events of deliveries answered that way are recorded all the same.
func (r *WebhookRecorder) Answer(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// ServeHTTP receives one delivery.
func (r *WebhookRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := readAll(req)
	var ev webhookverify.Event
	if err == nil {
		ev, err = webhookverify.ConstructEvent(body, req.Header.Get(webhookverify.SignatureHeader), r.secret.Reveal())
	}
	r.mu.Lock()
	r.requests++
	if err != nil {
		// err names what failed (signature, field); it holds no secret.
		r.problems = append(r.problems, "a delivery failed verification: "+err.Error())
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !r.seen[ev.ID()] {
		r.seen[ev.ID()] = true
		r.events = append(r.events, ev)
	}
	status := r.status
	close(r.arrived)
	r.arrived = make(chan struct{})
	r.mu.Unlock()
	w.WriteHeader(status)
}

// Events returns the events received so far, each once (a retried or
// replayed delivery of an event is not a new event), in arrival order.
func (r *WebhookRecorder) Events() []webhookverify.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhookverify.Event(nil), r.events...)
}

// Kinds returns the kinds of Events, in the same order.
func (r *WebhookRecorder) Kinds() []confpay.EventKind {
	evs := r.Events()
	out := make([]confpay.EventKind, len(evs))
	for i, e := range evs {
		out[i] = confpay.EventKind(e.Kind())
	}
	return out
}

// Requests is how many deliveries (attempts and replays) arrived.
func (r *WebhookRecorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Problems lists the deliveries that failed verification.
func (r *WebhookRecorder) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}

// Wait returns the first event of kind that arrived and that no earlier
// Wait returned, and fails the test if none arrives: so two Waits for
// transfer.initiated return two different events.
func (r *WebhookRecorder) Wait(t Tester, kind confpay.EventKind) webhookverify.Event {
	t.Helper()
	return r.wait(t, string(kind)+" event", func(e webhookverify.Event) bool { return e.Kind() == string(kind) })
}

// WaitFunc is Wait for the first event match accepts.
func (r *WebhookRecorder) WaitFunc(t Tester, match func(webhookverify.Event) bool) webhookverify.Event {
	t.Helper()
	return r.wait(t, "event the function accepts", match)
}

func (r *WebhookRecorder) wait(t Tester, what string, match func(webhookverify.Event) bool) webhookverify.Event {
	t.Helper()
	virtual := r.srv.clock.Virtual()
	var timeout <-chan time.Time
	if !virtual {
		tm := time.NewTimer(RecorderTimeout)
		defer tm.Stop()
		timeout = tm.C
	}
	for {
		if virtual {
			r.srv.Sync() // runs every delivery due now, and waits for it
		}
		r.mu.Lock()
		for _, e := range r.events {
			if !r.taken[e.ID()] && match(e) {
				r.taken[e.ID()] = true
				r.mu.Unlock()
				return e
			}
		}
		arrived := r.arrived
		got := r.kindsLocked()
		r.mu.Unlock()
		if virtual {
			t.Fatalf("fakeserver: no %s arrived (every delivery due now has run; move the clock if one is due later); received %v%s", what, got, r.goneHint())
			return nil
		}
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("fakeserver: no %s arrived in %v; received %v%s", what, RecorderTimeout, got, r.goneHint())
			return nil
		}
	}
}

// goneHint explains a Wait that failed because the recorder's
// subscription no longer exists (Reset and Reseed remove every one).
func (r *WebhookRecorder) goneHint() string {
	if id, err := r.srv.accountID(r.account, r.network); err == nil {
		for _, w := range r.srv.hooks.Subscriptions(r.network, id) {
			if w.WebhookID == r.webhook.WebhookID {
				return ""
			}
		}
	}
	return "; its subscription is gone (Reset or Reseed removed it): Record again"
}

func (r *WebhookRecorder) kindsLocked() []string {
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.Kind()
	}
	return out
}

// AssertKinds fails the test unless the events received so far (after
// running the deliveries due now, on a virtual clock) are exactly of the
// kinds want, in that order.
func (r *WebhookRecorder) AssertKinds(t Tester, want ...confpay.EventKind) {
	t.Helper()
	if r.srv.clock.Virtual() {
		r.srv.Sync()
	}
	got := r.Kinds()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i] == want[i]
	}
	if !same {
		t.Fatalf("fakeserver: webhook events %v, want %v", got, want)
	}
}

// readAll reads a delivery's body, bounded like webhookverify.Handler's.
func readAll(req *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(req.Body, webhookverify.DefaultMaxBodyBytes))
}
