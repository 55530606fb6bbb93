package fakeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/internal/strictjson"
)

// MaxBodyBytes is the largest request body the server reads (413 above).
const MaxBodyBytes = 1 << 20

// DefaultStart is where a virtual clock starts unless WithStartTime says
// otherwise: a fixed instant, so that tests are reproducible.
var DefaultStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Server is an in-memory confidential payments service. Create one with New
// in a test, or NewServer / NewUnstartedServer elsewhere. All methods are
// safe for concurrent use.
//
// # Locking
//
// s.mu guards every piece of domain state: accounts, keys, both networks'
// ledgers, transfers, agents and held payments. A domain operation (pay.go
// for the money path; the direct API; the few queries of the handlers'
// operations) takes s.mu once, decides and mutates, and lets go;
// check-and-reserve is always one critical section. Webhooks
// (subscriptions, events, deliveries) live in internal/hooks under its own
// lock: the /v1/webhooks handlers call it without s.mu, and its delivery
// workers never take s.mu.
//
// Lock order: a lock may be taken while holding the locks to its left,
// never the other way round.
//
//	clock.run → Server.mu → hooks.mu → {hooks pool.mu, assetBook.mu, clock.mu, clock.busyMu}
//
// clock.run is held while timers run, and a timer (a confirmation, an
// expiry, a retry) takes Server.mu or hooks.mu: so Advance, Set and Sync
// are never called with either held. An operation emits its events under
// s.mu (hooks.Emit takes hooks.mu inside), so events are recorded in the
// order they happen. The locks in braces are leaves: nothing is called
// while one is held. idempotency's, faultScript.mu and selfAddrs.mu are
// taken alone, never with another lock held.
//
// Nothing holds a lock across network I/O (deliveries, name lookups),
// cryptography (notes, balance ciphertexts and keys are made outside
// s.mu, on values copied out), logging, or a caller's callback.
type Server struct {
	opts  options
	clock *clock.Clock
	log   *slog.Logger

	mu       sync.Mutex
	accounts map[string]*account // by account id
	byHandle map[string]*account // by lower-cased handle ("@alice", "@alice/bot")
	byAddr   map[string]*account // by lower-cased 0x address
	domains  map[string]*account // by lower-cased domain name
	keys     map[[32]byte]*apiKey
	keysByID map[string]*apiKey
	nets     map[confpay.Network]*network

	// transferSeq numbers transfers server-wide (transfer ids sort in
	// creation order); it survives Reset.
	transferSeq uint64
	accountSeq  uint64 // numbers accounts in creation order
	keySeq      uint64 // numbers API keys in issue order

	maxHeld int   // payments waiting for a decision per agent and network
	seed    *Seed // the last seed Load loaded (seed.go); kept by Reset

	assets     *assetBook   // assets.go; kept by Reset
	hooks      *hooks.Hooks // webhooks, both networks (delivery.go)
	faults     faultScript
	idempotent *idempotency.Store

	handler http.Handler
	hs      *loopback // set by Start
	mem     inMemory  // HTTPClient's in-memory server (inmemory.go)
	// receivers are the in-process webhook receivers (receivers.go).
	receivers receivers
	self      selfAddrs // the server's own listeners (selfguard.go)

	closing   chan struct{} // closed by Close: held requests give up
	closeOnce sync.Once
}

// network is the per-network half of the state: everything that moves or
// records money. Identities (accounts, agents, policies) are shared.
type network struct {
	name    confpay.Network
	chainID uint64

	ledger    *ledger.Ledger
	transfers transferBook // transfers.go
	held      heldBook     // agents.go
}

// Option configures a Server.
type Option func(*options)

type options struct {
	realClock        bool
	start            time.Time
	blockTime        time.Duration
	approvalWindow   time.Duration
	deliveryTimeout  time.Duration
	deliveryWorkers  int
	noDeliveryJitter bool
	deliveryTLS      *tls.Config
	logger           *slog.Logger
	ethRate          confpay.Limit
	assets           []Asset
	// adminTokenHash is the SHA-256 of the admin token; nil: none.
	adminTokenHash *[32]byte
	// lookup, set only by internal tests (withLookup), replaces name
	// resolution for the self-SSRF checks and the delivery dialer.
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error)
	maxHeld int
	// maxIdempotencyKeys bounds the Idempotency-Keys kept per account and
	// network.
	maxIdempotencyKeys int
	seed               func(*Server) (any, error) // WithResetSeed (reset.go)
	noListener         bool                       // WithoutListener (inmemory.go)
}

// WithRealClock makes the server follow the wall clock (the binary's
// default). Advance and Set still move it.
func WithRealClock() Option { return func(o *options) { o.realClock = true } }

// WithStartTime sets where the virtual clock starts.
func WithStartTime(t time.Time) Option { return func(o *options) { o.start = t.UTC() } }

// WithBlockTime sets how long a transfer stays pending before it confirms
// (default 1 s of server time).
func WithBlockTime(d time.Duration) Option { return func(o *options) { o.blockTime = d } }

// WithApprovalWindow sets how long a held agent payment waits for a
// decision (default 24 h).
func WithApprovalWindow(d time.Duration) Option { return func(o *options) { o.approvalWindow = d } }

// WithDeliveryTimeout sets how long a webhook receiver has to answer
// (default 10 s of real time).
func WithDeliveryTimeout(d time.Duration) Option {
	return func(o *options) { o.deliveryTimeout = d }
}

// WithDeliveryTLSConfig sets the TLS configuration webhook deliveries use
// to reach https receivers; by default they trust the system's roots. A
// test with an httptest.NewTLSServer receiver passes its certificate:
//
//	pool := x509.NewCertPool()
//	pool.AddCert(receiver.Certificate())
//	srv := fakeserver.New(t, fakeserver.WithDeliveryTLSConfig(&tls.Config{RootCAs: pool}))
func WithDeliveryTLSConfig(c *tls.Config) Option { return func(o *options) { o.deliveryTLS = c } }

// WithoutDeliveryJitter makes every webhook retry wait exactly its nominal
// interval (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 24 h after the first
// attempt) instead of varying it by up to ±10 %, so that a test can assert
// the instant of each attempt.
func WithoutDeliveryJitter() Option { return func(o *options) { o.noDeliveryJitter = true } }

// WithDeliveryWorkers sets the size of the webhook delivery pool (default 8).
func WithDeliveryWorkers(n int) Option { return func(o *options) { o.deliveryWorkers = n } }

// WithLogger sets where the server logs (default: nowhere). It never logs
// keys, secrets, proofs or figures.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithETHRate sets the reference rate, in USDG per ETH, at which spend
// policies count ETH payments (default 3000).
func WithETHRate(usdgPerETH confpay.Limit) Option { return func(o *options) { o.ethRate = usdgPerETH } }

// WithAdminToken requires every /_fake admin request to carry
// "Authorization: Bearer <token>" (the scheme in any case); any other
// answers 401 unauthorized. The token is compared in constant time and
// never logged. Without this option the admin interface takes no
// credentials. A token that cannot be sent as a bearer credential (empty,
// or holding a space, tab or comma) matches no request, which closes the
// admin interface over HTTP; the Go API is unaffected.
func WithAdminToken(token string) Option {
	h := sha256.Sum256([]byte(token))
	return func(o *options) { o.adminTokenHash = &h }
}

// WithMaxHeldPerAgent sets how many payments may wait for the owner's
// decision per agent and network (default DefaultMaxHeldPerAgent, 1000).
// One more answers 429 rate_limited with Retry-After and is not held, so
// that an agent can never bury its owner's pending list.
func WithMaxHeldPerAgent(n int) Option { return func(o *options) { o.maxHeld = n } }

// WithMaxIdempotencyKeys bounds how many Idempotency-Keys the server keeps
// per account and network (default 10,000): a request with one more new
// key, while all are younger than 24 hours, answers 429 rate_limited with
// Retry-After until the oldest expires. It keeps a long-running server's
// memory bounded whatever its callers send.
func WithMaxIdempotencyKeys(n int) Option { return func(o *options) { o.maxIdempotencyKeys = n } }

// NewServer returns a server listening on a loopback port (see URL), as
// httptest.NewServer does. Call Close when done; in a test, New does both.
func NewServer(opts ...Option) *Server {
	s := NewUnstartedServer(opts...)
	s.Start()
	return s
}

// NewUnstartedServer returns a server that is not listening: mount
// Handler yourself (the binary does), or call Start. Call Close when done.
func NewUnstartedServer(opts ...Option) *Server {
	o := options{
		start:              DefaultStart,
		blockTime:          time.Second,
		approvalWindow:     24 * time.Hour,
		deliveryTimeout:    10 * time.Second,
		deliveryWorkers:    8,
		ethRate:            confpay.MustParseLimit("3000"),
		maxHeld:            DefaultMaxHeldPerAgent,
		maxIdempotencyKeys: idempotency.DefaultMaxPerOwner,
	}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{opts: o, maxHeld: max(o.maxHeld, 1), closing: make(chan struct{}), assets: newAssetBook(o.ethRate, o.assets),
		idempotent: idempotency.New(o.maxIdempotencyKeys)}
	if o.realClock {
		s.clock = clock.NewReal()
	} else {
		s.clock = clock.NewVirtual(o.start)
	}
	s.log = o.logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hooks = s.newHooks()
	s.resetLocked()
	s.handler = hookHandler(s.routes())
	return s
}

// Tester is the part of *testing.T (or testing.TB) that New and the
// test helpers use. Taking this small interface, not testing.TB, keeps the
// testing package out of programs that import fakeserver, such as the
// binary.
type Tester interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// New starts a server on 127.0.0.1 for the test and closes it when the test
// ends, like miniredis' RunT. It is safe to call from parallel tests:
// servers share nothing.
func New(t Tester, opts ...Option) *Server {
	t.Helper()
	s := NewUnstartedServer(opts...)
	if !s.opts.noListener {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// Start makes the server listen on a loopback port (see URL).
func (s *Server) Start() {
	if s.hs == nil {
		s.hs = listenLoopback(s.handler)
		s.self.learnNetAddr(s.hs.addr)
	}
}

// URL is the base URL of a started server, such as http://127.0.0.1:41234.
// A server that does not listen answers InMemoryURL, which only
// HTTPClient and Client reach.
func (s *Server) URL() string {
	if s.hs == nil {
		return InMemoryURL
	}
	return s.hs.url
}

// Handler is the server's HTTP face: the /v1 interface and /_fake admin.
func (s *Server) Handler() http.Handler { return s.handler }

// Now returns the server's current time.
func (s *Server) Now() time.Time { return s.clock.Now() }

// Advance moves the server's clock forward and runs everything that falls
// due, in order, each at its own instant (like miniredis' FastForward).
func (s *Server) Advance(d time.Duration) time.Time { return s.clock.Advance(d) }

// Set moves the server's clock to t and runs whatever is due.
func (s *Server) Set(t time.Time) time.Time { return s.clock.Set(t) }

// Sync waits until all work due at the current time has run, webhook
// deliveries included. Use it instead of sleeping.
func (s *Server) Sync() { s.clock.RunDue() }

// Close stops the server, its clock and its delivery workers.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.hs != nil {
			s.hs.close()
		}
		s.mem.close()
		s.clock.Close()
		s.hooks.Close()
		s.receivers.close()
	})
}

// Reset empties the server: no accounts, keys, balances, transfers, faults
// or subscriptions. The clock keeps its time.
func (s *Server) Reset() {
	s.hooks.Stop() // outside s.mu: it waits for the workers
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

func (s *Server) resetLocked() {
	for _, n := range s.nets { // the old state's timers must not fire
		for t := range n.transfers.pending {
			t.timer.Stop()
		}
		for _, h := range n.held.byID {
			h.timer.Stop()
		}
	}
	s.accounts = map[string]*account{}
	s.byHandle = map[string]*account{}
	s.byAddr = map[string]*account{}
	s.domains = map[string]*account{}
	s.keys = map[[32]byte]*apiKey{}
	s.keysByID = map[string]*apiKey{}
	s.nets = map[confpay.Network]*network{
		confpay.NetworkTest: {name: confpay.NetworkTest, chainID: confpay.ChainIDTest},
		confpay.NetworkLive: {name: confpay.NetworkLive, chainID: confpay.ChainIDLive},
	}
	for _, n := range s.nets {
		n.ledger = ledger.New()
		n.transfers.init()
		n.held.init()
	}
	s.faults.reset()
	s.idempotent.Reset()
	s.hooks.Reset() // a closed server's hooks start no workers again
}

// ---- routing ----

// route is one method on one path.
type route struct {
	method string
	auth   bool // needs a bearer key
	h      handlerFunc
}

// handlerFunc handles one API call: it returns the status and the value to
// encode as JSON (nil for no body), or an error (an *apiError, or any other
// error, which becomes a 500 without detail).
type handlerFunc func(c *call) (int, any, error)

// call is one request as the handlers see it.
type call struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	reqID string
	body  []byte   // the whole request body, read under MaxBodyBytes
	acct  *account // the key's account (nil on admin routes)
	key   *apiKey
	net   *network // the key's network (nil on admin routes)
	// header is extra response headers the handler wants set.
	header http.Header

	// Set by a scripted fault: drop the connection once the call is
	// answered; make the transfer it creates fail at confirmation.
	drop          bool
	reset         bool // write part of the answer, then close
	failAtConfirm bool
	delay         time.Duration // hold the call this long (server time) first
}

// routes builds the whole HTTP face. It is the support matrix in code.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	table := map[string][]route{
		"/v1/accounts/me":                                  {{"GET", true, s.handleMe}},
		"/v1/accounts/me/balances":                         {{"GET", true, s.handleBalances}},
		"/v1/accounts/me/agents":                           {{"GET", true, s.handleListAgents}, {"POST", true, s.handleCreateAgent}},
		"/v1/agents/{account_id}/spend-policy":             {{"GET", true, s.handleGetPolicy}, {"PATCH", true, s.handleUpdatePolicy}},
		"/v1/agents/transactions/pending":                  {{"GET", true, s.handleListPending}},
		"/v1/agents/transactions/{transaction_id}/approve": {{"POST", true, s.handleApprove}},
		"/v1/agents/transactions/{transaction_id}/reject":  {{"POST", true, s.handleReject}},
		"/v1/transfers":                                    {{"GET", true, s.handleListTransfers}, {"POST", true, s.handleCreateTransfer}},
		"/v1/transfers/{transfer_id}":                      {{"GET", true, s.handleGetTransfer}},
		"/v1/webhooks":                                     {{"GET", true, s.handleListWebhooks}, {"POST", true, s.handleCreateWebhook}},
		"/v1/webhooks/{webhook_id}":                        {{"DELETE", true, s.handleDeleteWebhook}},
		"/v1/webhooks/{webhook_id}/replay/{event_id}":      {{"POST", true, s.handleReplay}},
		"/v1/webhooks/{webhook_id}/deliveries":             {{"GET", true, s.handleDeliveries}},
	}
	for path, rs := range s.adminRoutes() {
		table[path] = rs
	}
	for path, rs := range table {
		mux.Handle(path, s.dispatch(rs))
	}
	mux.Handle("/", s.dispatch(nil))
	// The request id is set before the mux runs, so that even its own
	// answers (redirects of unclean paths) carry one.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Whatever listener this came through is the server's own: no
		// webhook may deliver to it (selfguard.go).
		s.self.learnNetAddr(r.Context().Value(http.LocalAddrContextKey))
		w.Header().Set("X-Request-Id", names.NewID("req_"))
		mux.ServeHTTP(w, r)
	})
}

// dispatch picks the route for the method and runs it through the one
// request pipeline: request id, faults, body limit, auth, idempotency.
func (s *Server) dispatch(rs []route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{s: s, w: w, r: r, reqID: w.Header().Get("X-Request-Id"), header: http.Header{}}
		if c.reqID == "" {
			c.reqID = names.NewID("req_")
			w.Header().Set("X-Request-Id", c.reqID)
		}
		if apiErr := s.checkAdminToken(r); apiErr != nil {
			s.refuseUnread(c, apiErr)
			return
		}
		if rs == nil {
			s.writeError(c, errNotFound("no such path"))
			return
		}
		var rt *route
		var allow []string
		for i := range rs {
			allow = append(allow, rs[i].method)
			if rs[i].method == r.Method {
				rt = &rs[i]
			}
		}
		if rt == nil {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(c, newError(http.StatusMethodNotAllowed, confpay.CodeMethodNotAllowed, "method not allowed on this path"))
			return
		}
		s.serve(c, rt)
	})
}

// serve runs the pipeline for one matched route.
func (s *Server) serve(c *call, rt *route) {
	r := c.r
	// The key is checked before a byte of the body is read, so that a
	// caller without one cannot hold the server reading (httpserver.go).
	if rt.auth {
		if apiErr := s.authenticate(c); apiErr != nil {
			s.refuseUnread(c, apiErr)
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		s.writeError(c, newError(http.StatusBadRequest, confpay.CodeInvalidRequest, "could not read the request body"))
		return
	}
	if len(body) > MaxBodyBytes {
		s.writeError(c, newError(http.StatusRequestEntityTooLarge, confpay.CodeRequestTooLarge, "request body is over 1 MiB"))
		return
	}
	c.body = body
	// A query that does not parse (a ";" separator, a bad "%" escape) is
	// refused, never read as whatever part of it parsed.
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		s.writeError(c, errInvalid("query", "the query string does not parse: separate parameters with & and escape with %XX"))
		return
	}
	if rt.auth { // faults script the /v1 interface, never the admin one
		if f := s.faults.match(r.Method, r.URL.Path); f != nil {
			if done := s.applyFault(c, f, rt); done {
				return
			}
		}
	}
	switch {
	case c.drop:
		// Run the call in full into a buffer, then drop the connection
		// without a byte of the answer.
		real := c.w
		c.w = &discardWriter{header: http.Header{}}
		defer dropConnection(real)
	case c.reset:
		// Run the call in full, then send part of its answer and close.
		real := c.w
		cw := &discardWriter{header: real.Header().Clone()}
		c.w = cw
		defer resetConnection(real, cw)
	}
	if rt.auth && r.Method != http.MethodGet {
		s.serveIdempotent(c, rt)
		return
	}
	s.finish(c, rt.h)
}

// discardWriter swallows an answer that will never be sent in full,
// keeping its status.
type discardWriter struct {
	header http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(status int)      { d.status = status }

// resetConnection sends the status line and headers of the answer cw
// swallowed, without the blank line that ends them, and closes the
// connection (HTTP/1); elsewhere it aborts the handler, which resets the
// stream. The client has received bytes, so no transport resends the
// request by itself.
func resetConnection(w http.ResponseWriter, cw *discardWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, buf, err := hj.Hijack(); err == nil {
			status := cw.status
			if status == 0 {
				status = http.StatusOK
			}
			_, _ = fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
			_ = cw.header.Write(buf)
			_ = buf.Flush()
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// dropConnection closes the client's connection without an answer: by
// hijacking it (HTTP/1), or else by aborting the handler, which net/http
// turns into a closed connection or a reset stream.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// run runs a handler, after the delay a fault asked for.
func (s *Server) run(c *call, h handlerFunc) (int, any, error) {
	if c.delay > 0 && !s.hold(c, c.delay) {
		return 0, nil, newError(http.StatusServiceUnavailable, "request_abandoned", "the request was abandoned while held by a delay fault")
	}
	return h(c)
}

// finish runs a handler and writes its answer.
func (s *Server) finish(c *call, h handlerFunc) {
	status, v, err := s.run(c, h)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.writeJSON(c, status, v)
}

// render turns a handler's answer into the bytes to send (one JSON value
// and a newline).
func render(status int, v any) (int, []byte) {
	if v == nil {
		return status, nil
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return http.StatusInternalServerError, []byte(`{"code":"internal_error","message":"could not encode the answer"}` + "\n")
	}
	return status, buf.Bytes()
}

// writeJSON encodes v straight into the answer (the encoder's buffer is
// pooled, so a large list costs no copy). The wire types cannot fail to
// encode.
func (s *Server) writeJSON(c *call, status int, v any) {
	if v == nil {
		s.writeRaw(c, status, nil)
		return
	}
	h := c.w.Header()
	for k, vs := range c.header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_ = json.NewEncoder(c.w).Encode(v)
}

func (s *Server) writeRaw(c *call, status int, b []byte) {
	h := c.w.Header()
	for k, vs := range c.header {
		h[k] = vs
	}
	if b != nil {
		h.Set("Content-Type", "application/json")
	}
	c.w.WriteHeader(status)
	if b != nil {
		_, _ = c.w.Write(b)
	}
}

// writeError renders any error as the flat error body.
func (s *Server) writeError(c *call, err error) {
	status, body := errorAnswer(c.reqID, err)
	if e, ok := err.(*apiError); ok && e.retryAfter != "" {
		c.header.Set("Retry-After", e.retryAfter)
	}
	s.writeJSON(c, status, body)
}

// errorAnswer maps an error to its status and flat body.
func errorAnswer(reqID string, err error) (int, any) {
	var e *apiError
	if !errors.As(err, &e) {
		e = newError(http.StatusInternalServerError, confpay.CodeInternal, "internal error")
	}
	body := e.body
	body.RequestID = reqID
	return e.status, body
}

// ---- errors ----

// apiError is an error answer: its status and flat body.
type apiError struct {
	status int
	body   confpay.ErrorBody
	// retryAfter, when set, is sent as Retry-After (seconds).
	retryAfter string
}

func (e *apiError) Error() string { return string(e.body.Code) + ": " + e.body.Message }

func newError(status int, code confpay.ErrorCode, msg string) *apiError {
	return &apiError{status: status, body: confpay.ErrorBody{Code: code, Message: msg}}
}

// withParam names the request field at fault.
func (e *apiError) withParam(p string) *apiError { e.body.Param = p; return e }

// withRule names the policy rule that refused a payment.
func (e *apiError) withRule(r string) *apiError { e.body.Rule = r; return e }

// withReason names why a decryption proof was refused.
func (e *apiError) withReason(r string) *apiError { e.body.Reason = r; return e }

// errInvalid is 400 invalid_request naming the field.
func errInvalid(param, msg string) *apiError {
	return newError(http.StatusBadRequest, confpay.CodeInvalidRequest, msg).withParam(param)
}

// errNotFound is 404 not_found: unknown, or not yours (existence never leaks).
func errNotFound(msg string) *apiError {
	return newError(http.StatusNotFound, confpay.CodeNotFound, msg)
}

// ---- JSON input ----

// decodeStrict decodes a JSON object body into v (a pointer to a struct)
// with internal/strictjson: one object, nothing after it, no unknown
// member, no member name given twice at any depth, no case variant of a
// documented name, every value of the right type. A refusal is 400
// invalid_request whose param is the documented name or dotted path of the
// member at fault ("body" for the body as a whole), taken from the
// decoder's own walk, never from an error text, so the answer is the same
// on every Go release. An empty body decodes as {}.
func decodeStrict(body []byte, v any) *apiError {
	err := strictjson.Decode(body, v)
	if err == nil {
		return nil
	}
	var se *strictjson.Error
	if errors.As(err, &se) && se.Path != "" {
		return errInvalid(se.Path, se.Error())
	}
	return errInvalid("body", "the body must be one valid JSON object")
}
