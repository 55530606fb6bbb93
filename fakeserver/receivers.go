package fakeserver

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
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
	m.client(h)
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

// close stops every receiver's in-memory server.
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
			return nil, errRefused
		}
		m.mu.Lock()
		hc := m.hc
		m.mu.Unlock()
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

// SubscribeHandler subscribes h, an http.Handler in this process, to the
// events of kinds (every kind when none is given) of the account
// accountRef on network n, signed with secret. Deliveries reach h through
// an in-memory connection: no socket, no URL to know in advance, so a
// test's own webhook handler can be given the secret before the first
// event, and a whole test with webhooks can run inside a testing/synctest
// bubble. Everything else is as for a subscription made with POST
// /v1/webhooks: the same signing, schedule, records, replay and limit of
// subscriptions; /v1 lists it with a URL on the .invalid domain.
func (s *Server) SubscribeHandler(accountRef string, n confpay.Network, h http.Handler, secret confpay.Secret, kinds ...confpay.EventKind) (*confpay.Webhook, error) {
	if h == nil {
		return nil, errInvalid("handler", "the handler is nil")
	}
	if !strings.HasPrefix(secret.Reveal(), "whsec_") || len(secret.Reveal()) < len("whsec_")+16 {
		return nil, errInvalid("secret", `the secret must start with "whsec_" and hold at least 16 more characters`)
	}
	events := make([]string, len(kinds))
	for i, k := range kinds {
		events[i] = string(k)
	}
	if len(events) == 0 {
		events = webhookverify.Kinds()
	}
	if apiErr := checkEventKinds(events); apiErr != nil {
		return nil, apiErr
	}
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	w, err := s.hooks.Subscribe(n, acct, s.receivers.add(h), events, secret)
	if err != nil {
		return nil, hooksError(err)
	}
	return w, nil
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

// Events returns the events recorded for accountRef on network n (those
// its subscriptions receive or could replay), oldest first, from the
// 30-day history window. Events are recorded whether or not anyone
// subscribed.
func (s *Server) Events(accountRef string, n confpay.Network) ([]EventRecord, error) {
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	recs := s.hooks.Events(n, acct)
	out := make([]EventRecord, len(recs))
	for i, r := range recs {
		out[i] = EventRecord{ID: r.ID, Kind: confpay.EventKind(r.Kind), At: r.At, Payload: r.Payload}
	}
	return out, nil
}

// DeliveryRecord is the record of one delivery, with the subscription it
// went to.
type DeliveryRecord = hooks.DeliveryRecord

// Deliveries returns the delivery records of accountRef's live
// subscriptions on network n: per subscription (oldest subscription
// first), oldest delivery first.
func (s *Server) Deliveries(accountRef string, n confpay.Network) ([]DeliveryRecord, error) {
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	return s.hooks.DeliveryRecords(n, acct), nil
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
