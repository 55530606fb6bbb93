package fakeserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/memhttp"
	"github.com/confpay/confpay-go/webhookverify"
)

// Webhooks in process: a subscription whose receiver is an http.Handler
// of the test, reached through an in-memory connection (inmemory.go), and
// the direct API's read of an account's events and delivery records.

// receiverDomain ends the host of every in-process receiver's URL. The
// .invalid top-level domain never resolves, so such a URL can never reach
// anything outside the process.
const receiverDomain = ".in-process.invalid"

// receivers are the server's in-process webhook receivers by URL host.
type receivers struct {
	mu     sync.Mutex
	seq    int
	byHost map[string]*inMemory
	closed bool
	work   workTokens // the work of in-process deliveries (selfwait.go)
}

// add registers h and returns the URL deliveries to it use.
func (rs *receivers) add(h http.Handler) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byHost == nil {
		rs.byHost = map[string]*inMemory{}
	}
	rs.seq++
	host := "receiver-" + strconv.Itoa(rs.seq) + receiverDomain
	m := &inMemory{closed: rs.closed}
	m.client(rs.work.wrap(h))
	rs.byHost[host] = m
	return "http://" + host + "/webhooks"
}

// lookup returns the receiver at host, or nil.
func (rs *receivers) lookup(host string) *inMemory {
	if !strings.HasSuffix(host, receiverDomain) {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.byHost[host]
}

// close stops every receiver's in-memory transport.
func (rs *receivers) close() {
	rs.mu.Lock()
	rs.closed = true
	all := rs.byHost
	rs.byHost = nil
	rs.mu.Unlock()
	for _, m := range all {
		m.close()
	}
}

// receiverRouter is the delivery transport: a request to an in-process
// receiver goes to it in memory, any other to base. An in-process host
// that is not (or no longer) registered is refused like a closed port.
type receiverRouter struct {
	base http.RoundTripper
	rs   *receivers
}

// RoundTrip routes one delivery attempt.
func (rr receiverRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Hostname(), receiverDomain) {
		m := rr.rs.lookup(req.URL.Hostname())
		if m == nil {
			return nil, memhttp.ErrRefused
		}
		m.mu.Lock()
		hc := m.hc
		m.mu.Unlock()
		req, forget := rr.rs.work.mark(req)
		defer forget()
		return hc.Transport.RoundTrip(req)
	}
	return rr.base.RoundTrip(req)
}

// CloseIdleConnections closes base's idle connections.
func (rr receiverRouter) CloseIdleConnections() {
	if c, ok := rr.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// EventRecord is an event the server recorded, as the direct API shows
// it.
type EventRecord struct {
	ID   string
	Kind confpay.EventKind
	At   time.Time
	// Payload is the JSON every delivery of the event sends and signs.
	Payload []byte
}

// Event parses Payload with webhookverify.ParseEvent.
func (r EventRecord) Event() (webhookverify.Event, error) { return webhookverify.ParseEvent(r.Payload) }

// DeliveryRecord is the record of one delivery, with the subscription it
// went to.
type DeliveryRecord struct {
	// WebhookID is the subscription the delivery went to.
	WebhookID string `json:"webhook_id"`
	// Delivery is the record as GET /v1/webhooks/{id}/deliveries shows
	// it: id, event, status, attempts, last and next attempt.
	confpay.Delivery
	// AttemptLog is every attempt made so far, oldest first: one per
	// attempt (len(AttemptLog) == Attempts), so at most 8 (the first
	// attempt, six retries and the last at the 24 h mark). The /v1
	// record shows only the last.
	AttemptLog []DeliveryAttempt `json:"attempt_log"`
}

// DeliveryAttempt is one attempt of a delivery. On the wire Duration is a
// Go duration string ("duration":"1.2ms").
type DeliveryAttempt struct {
	// At is when the attempt was made, on the server's clock.
	At time.Time `json:"at"`
	// ResponseStatus is the HTTP status the receiver answered, 0 for none
	// (timeout, refused connection, or an answer lose_answer discarded).
	ResponseStatus int `json:"response_status"`
	// Duration is how long the request took until its answer (or until
	// it failed), in real time whatever the server's clock: the
	// receiver's latency. Under duplicate, until both copies answered.
	Duration time.Duration `json:"-"`
	// Fault is the delivery fault applied to the attempt (lose_answer,
	// duplicate, delay, reorder), "" for none.
	Fault string `json:"fault,omitempty"`
}

// deliveryAttemptWire is a DeliveryAttempt on the wire.
type deliveryAttemptWire struct {
	At             time.Time `json:"at"`
	ResponseStatus int       `json:"response_status"`
	Duration       string    `json:"duration"`
	Fault          string    `json:"fault,omitempty"`
}

// MarshalJSON writes a as /_fake/deliveries shows it.
func (a DeliveryAttempt) MarshalJSON() ([]byte, error) {
	return json.Marshal(deliveryAttemptWire{At: a.At, ResponseStatus: a.ResponseStatus, Duration: a.Duration.String(), Fault: a.Fault})
}

// UnmarshalJSON reads a as /_fake/deliveries shows it.
func (a *DeliveryAttempt) UnmarshalJSON(b []byte) error {
	var w deliveryAttemptWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	d, err := time.ParseDuration(w.Duration)
	if err != nil {
		return fmt.Errorf("fakeserver: delivery attempt duration: %w", err)
	}
	*a = DeliveryAttempt{At: w.At, ResponseStatus: w.ResponseStatus, Duration: d, Fault: w.Fault}
	return nil
}

// accountID resolves accountRef and checks n.
func (s *Server) accountID(accountRef string, n confpay.Network) (string, error) {
	if n != confpay.NetworkTest && n != confpay.NetworkLive {
		return "", errInvalid("network", "network must be test or live")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return "", err
	}
	return a.id, nil
}
