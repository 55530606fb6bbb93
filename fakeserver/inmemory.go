package fakeserver

import (
	"net/http"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/memhttp"
)

// InMemoryURL is the base URL of a server that does not listen (see
// WithoutListener): what URL returns for it, and what Client uses. Only
// HTTPClient reaches it; any other client fails to connect (port 0 of
// loopback accepts nothing), so a request can never leave the process by
// mistake. Being loopback, it needs no confpay.WithInsecureHTTP.
const InMemoryURL = "http://127.0.0.1:0"

// Retry backoff of the SDK client that Client returns: milliseconds, so
// that a test of a retried transport error stays fast without synctest.
const (
	ClientRetryBackoffBase = time.Millisecond
	ClientRetryBackoffMax  = 10 * time.Millisecond
)

// WithoutListener makes New leave the server without any listener, like
// NewUnstartedServer: it is reached only in memory, through HTTPClient and
// Client (its URL is InMemoryURL). Inside a testing/synctest bubble a
// server must not listen: a goroutine waiting on a real socket is not
// durably blocked, so the bubble's clock would never move.
func WithoutListener() Option { return func(o *options) { o.noListener = true } }

// HTTPClient returns an *http.Client that reaches this server in memory,
// whether or not it listens: requests to any host go to Handler with no
// socket and no HTTP parsing. Its transport hands the handler the request
// net/http's server would have read (RequestURI, Host, HTTP/1.1, the
// header as net/http's client sends it, Content-Length or a chunked body
// streamed from the caller's) and returns the answer as net/http's client
// would have read it (Date, Content-Length or chunked framing, a sniffed
// Content-Type, Connection: close where net/http closes). Connection
// faults behave as over loopback: a hijacked connection is in memory, so a
// drop is an EOF and a reset a broken answer; a keep-alive pool is kept as
// net/http's, so a replayable request (GET, or one with an Idempotency-Key)
// dropped on a reused connection is resent once by the client itself, as
// net/http does; a panicking handler drops the connection. The caller's
// context, the client's timeout and Close end the handler's context, and
// Close waits for the handlers in flight. The answer reaches the client
// when the handler returns (docs/fakeserver.md lists what else differs
// from a socket). Use it with URL, or with InMemoryURL on a server that
// does not listen. Every call returns the same client.
//
// It works inside a testing/synctest bubble when the server was created
// there with WithoutListener: every goroutine it starts waits on channels,
// so the bubble's fake clock runs the SDK's retry backoff and the caller's
// timeouts without wall time.
//
// It is our own transport, not Go 1.27's httptest.NewTestServer: that one
// imports the testing package, which a program using fakeserver (the
// binary) must not link, and it does not exist on Go 1.26.
func (s *Server) HTTPClient() *http.Client { return s.mem.client(s.handler) }

// Client returns an SDK client acting with key on this server through
// HTTPClient, with a retry backoff of milliseconds (ClientRetryBackoffBase,
// ClientRetryBackoffMax) and confpay.DefaultTimeout per attempt. Options
// are applied after those, so they can change any of them:
// confpay.WithRetryBackoff for the SDK's real backoff, or
// confpay.WithHTTPClient for another transport (the requests then go to
// URL, so the server must listen). It panics if the SDK refuses key or an option, which is a
// mistake in the test; the message never holds the key.
func (s *Server) Client(key confpay.Secret, opts ...confpay.Option) *confpay.Client {
	hc := *s.HTTPClient()
	hc.Timeout = confpay.DefaultTimeout
	all := append([]confpay.Option{
		confpay.WithBaseURL(s.URL()),
		confpay.WithHTTPClient(&hc),
		confpay.WithRetryBackoff(ClientRetryBackoffBase, ClientRetryBackoffMax),
	}, opts...)
	c, err := confpay.NewClient(key.Reveal(), all...)
	if err != nil {
		panic("fakeserver: Client: " + err.Error())
	}
	return c
}

// inMemory is HTTPClient's client and its transport (internal/memhttp),
// made on first use.
type inMemory struct {
	mu     sync.Mutex
	tr     *memhttp.Transport
	hc     *http.Client
	closed bool
}

// client makes the in-memory transport on first use and returns its
// client.
func (m *inMemory) client(h http.Handler) *http.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hc != nil {
		return m.hc
	}
	m.tr = memhttp.New(h)
	if m.closed { // a closed server refuses every request
		m.tr.Close()
	}
	m.hc = &http.Client{Transport: m.tr}
	return m.hc
}

// close stops the in-memory transport: no new request, the ones waiting
// for an answer dropped, their handlers waited for.
func (m *inMemory) close() {
	m.mu.Lock()
	m.closed = true
	tr := m.tr
	m.mu.Unlock()
	if tr != nil {
		tr.Close()
	}
}
