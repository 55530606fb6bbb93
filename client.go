package confpay

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Version is the version of this SDK, sent in the User-Agent header.
const Version = "0.1.0"

// Defaults used by NewClient.
const (
	// DefaultBaseURL is the service's address; tests point the client
	// elsewhere with WithBaseURL.
	DefaultBaseURL = "https://api.confpay.example"
	// DefaultMaxRetries is how many times a failed attempt is retried.
	DefaultMaxRetries = 2
	// DefaultTimeout bounds each attempt (not the whole call).
	DefaultTimeout = 30 * time.Second
)

// Retry timing. The wait before retry n (counting from 0) is
// base · 2^n with ±25 % jitter, capped at max: by default
// DefaultRetryBackoffBase and DefaultRetryBackoffMax (WithRetryBackoff
// changes both). A Retry-After header on the answer replaces it; one
// longer than maxRetryAfter is a wait the client will not make, so the
// answer is returned at once.
const (
	// DefaultRetryBackoffBase is the wait before the first retry, before
	// jitter (see WithRetryBackoff).
	DefaultRetryBackoffBase = 500 * time.Millisecond
	// DefaultRetryBackoffMax caps every backoff wait (see WithRetryBackoff).
	DefaultRetryBackoffMax = 8 * time.Second

	baseBackoff   = DefaultRetryBackoffBase
	maxBackoff    = DefaultRetryBackoffMax
	maxRetryAfter = 30 * time.Second
	// maxRetryAfterParsed is where parseRetryAfter saturates.
	maxRetryAfterParsed = 999_999_999 * time.Second
)

// maxBody caps every response body the client reads.
const maxBody = 1 << 20

// Client talks to the payments service with one API key. It is safe for
// concurrent use. Create it with NewClient; the services below carry one
// method per endpoint.
type Client struct {
	Accounts  *AccountsService  // the authenticated account, balances, agents list
	Transfers *TransfersService // payments
	Agents    *AgentsService    // agent accounts, spend policies, held payments
	Webhooks  *WebhooksService  // subscriptions, deliveries, replay

	network    Network
	baseURL    string                // without a trailing slash
	auth       []string              // {"Bearer <key>"}: shared, never modified
	userAgent  []string              // {"confpay-go/... go/..."}: shared, never modified
	httpClient *http.Client          // the caller's or our own, with the counting transport inside
	rc         *retryablehttp.Client // built once; its hooks find the call in the request's context
	maxRetries int
	logger     *slog.Logger
	// wait is the backoff before retry n (from 0) after resp (nil for a
	// connection error). Tests replace it so that they do not sleep.
	wait func(retry int, resp *http.Response) time.Duration
}

type service struct{ client *Client }

// AccountsService reads the authenticated account and its balances.
type AccountsService service

// TransfersService creates, reads and lists payments.
type TransfersService service

// AgentsService manages agent accounts, their spend policies and the
// payments held for the owner's decision.
type AgentsService service

// WebhooksService manages webhook subscriptions and their deliveries.
type WebhooksService service

// Option configures a Client in NewClient.
type Option func(*clientConfig)

type clientConfig struct {
	baseURL      string
	httpClient   *http.Client
	maxRetries   int
	timeout      time.Duration
	timeoutSet   bool
	uaSuffix     string
	logger       *slog.Logger
	insecureHTTP bool
	backoff      backoff
}

// WithBaseURL sets the service's address, such as a fakeserver's
// "http://127.0.0.1:8080". It must be an absolute http or https URL without
// query, fragment or user info. Plain http is accepted only for a loopback
// host (localhost, 127.0.0.0/8, ::1) unless WithInsecureHTTP is given too:
// over plain http anyone on the path reads the API key.
func WithBaseURL(u string) Option { return func(c *clientConfig) { c.baseURL = u } }

// WithInsecureHTTP lets WithBaseURL name a plain http URL on a host that is
// not loopback, such as a fakeserver in another container of a test
// network. The API key then crosses the network in clear text: never use it
// with a live key outside a network you control.
func WithInsecureHTTP() Option { return func(c *clientConfig) { c.insecureHTTP = true } }

// WithHTTPClient makes the client send its requests through hc, for a custom
// transport, proxy or TLS configuration. The client works on a copy of hc
// (hc itself is never modified) whose transport counts attempts on the wire
// around hc's transport, and which follows a redirect only to the base URL's
// own origin (scheme, host and port), so that the key, the idempotency key
// and the body never reach another one; within that, hc's CheckRedirect
// applies. hc's connection pool is shared and never emptied by the client.
// hc's own Timeout bounds each attempt unless WithTimeout is given too.
// Retries are the client's own: hc should not retry by itself.
func WithHTTPClient(hc *http.Client) Option { return func(c *clientConfig) { c.httpClient = hc } }

// WithMaxRetries sets how many times a failed attempt is retried (default 2;
// 0 disables retries).
func WithMaxRetries(n int) Option { return func(c *clientConfig) { c.maxRetries = n } }

// WithRetryBackoff sets the wait before each retry: base · 2^n before retry
// n (from 0), with ±25 % jitter, never more than max (default 0.5 s and
// 8 s). base must be at least 0 and max at least base; base 0 retries at
// once. A Retry-After header on the answer still replaces the backoff:
// the server asked for that wait (one longer than 30 s returns the answer
// at once). Tests use a small backoff,
// such as WithRetryBackoff(time.Millisecond, 10*time.Millisecond), so that
// a retried transport error costs milliseconds; the client a fakeserver
// hands out (fakeserver.Server.Client) has one already.
func WithRetryBackoff(base, max time.Duration) Option {
	return func(c *clientConfig) { c.backoff = backoff{base: base, max: max} }
}

// WithTimeout bounds each attempt, from sending the request to reading the
// answer's body (default 30 s; 0 means no bound). A timed-out attempt is
// retried. To bound a whole call, retries included, use a context deadline
// or WithCallTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.timeout, c.timeoutSet = d, true }
}

// WithUserAgent appends suffix (for example "myapp/1.2") to the User-Agent
// header.
func WithUserAgent(suffix string) Option { return func(c *clientConfig) { c.uaSuffix = suffix } }

// WithLogger makes the client write one debug line per attempt (method,
// path, status, attempt, request id, duration) to l. The key, bodies, query
// strings and figures are never logged. The client is silent by default.
func WithLogger(l *slog.Logger) Option { return func(c *clientConfig) { c.logger = l } }

// NewClient returns a client acting with apiKey, which must start with
// hc_test_ (test network) or hc_live_ (live network).
func NewClient(apiKey string, opts ...Option) (*Client, error) {
	if apiKey == "" {
		return nil, errors.New("confpay: API key is empty")
	}
	network, ok := NetworkOfKey(apiKey)
	if !ok {
		return nil, errors.New("confpay: API key must start with " + KeyPrefixTest + " or " + KeyPrefixLive)
	}
	for i := len(KeyPrefixTest); i < len(apiKey); i++ { // both prefixes are 8 bytes
		if !isAlnum(apiKey[i]) {
			return nil, errors.New("confpay: API key may hold only A-Z, a-z and 0-9 after its prefix")
		}
	}

	cfg := clientConfig{baseURL: DefaultBaseURL, maxRetries: DefaultMaxRetries, timeout: DefaultTimeout, backoff: defaultBackoff}
	for _, o := range opts {
		o(&cfg)
	}
	u, err := url.Parse(cfg.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("confpay: base URL must be an absolute http or https URL without query")
	}
	if u.User != nil {
		// The key is the only credential; a user:password would be printed
		// by String and BaseURL.
		return nil, errors.New("confpay: base URL must not carry user info (credentials)")
	}
	if u.Scheme == "http" && !cfg.insecureHTTP && !isLoopbackHost(u.Hostname()) {
		return nil, errors.New("confpay: base URL uses plain http on a host that is not loopback, which would send the API key in clear text; use https, or WithInsecureHTTP to accept it")
	}
	if cfg.maxRetries < 0 {
		return nil, errors.New("confpay: max retries must be at least 0")
	}
	if cfg.timeout < 0 {
		return nil, errors.New("confpay: timeout must be at least 0")
	}
	if cfg.backoff.base < 0 || cfg.backoff.max < cfg.backoff.base {
		return nil, errors.New("confpay: WithRetryBackoff: base must be at least 0 and max at least base")
	}
	if !validHeaderValue(cfg.uaSuffix) {
		return nil, errors.New("confpay: user agent suffix holds control characters")
	}

	var hc http.Client
	if cfg.httpClient == nil {
		hc = http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			Timeout:   cfg.timeout,
			// The API never redirects; a redirect is answered as it is.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	} else {
		hc = *cfg.httpClient
		if cfg.timeoutSet {
			hc.Timeout = cfg.timeout
		}
		hc.CheckRedirect = sameOriginRedirects(hc.CheckRedirect)
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// The counting transport hides base's CloseIdleConnections, which
	// retryablehttp calls after a cancelled or failed call: the pool of a
	// caller's shared client stays as it is.
	hc.Transport = wireCounter{base}

	ua := "confpay-go/" + Version + " go/" + strings.TrimPrefix(runtime.Version(), "go")
	if cfg.uaSuffix != "" {
		ua += " " + cfg.uaSuffix
	}
	c := &Client{
		network:    network,
		baseURL:    strings.TrimRight(u.String(), "/"),
		auth:       []string{"Bearer " + apiKey},
		userAgent:  []string{ua},
		httpClient: &hc,
		maxRetries: cfg.maxRetries,
		logger:     cfg.logger,
		wait:       cfg.backoff.wait,
	}
	c.rc = &retryablehttp.Client{
		HTTPClient:   c.httpClient,
		RetryMax:     c.maxRetries,
		CheckRetry:   c.checkRetry,
		Backoff:      noBackoff,
		PrepareRetry: waitBeforeRetry,
		ErrorHandler: giveUp,
	}
	if c.logger != nil {
		c.rc.RequestLogHook = beforeAttempt
	}
	c.Accounts = &AccountsService{client: c}
	c.Transfers = &TransfersService{client: c}
	c.Agents = &AgentsService{client: c}
	c.Webhooks = &WebhooksService{client: c}
	return c, nil
}

// Network returns the network the client's key acts on.
func (c *Client) Network() Network { return c.network }

// ChainID returns the chain id of the client's network: 46630 for test,
// 4663 for live.
func (c *Client) ChainID() uint64 { return c.network.ChainID() }

// BaseURL returns the address the client sends its requests to.
func (c *Client) BaseURL() string { return c.baseURL }

// String describes the client without its key.
func (c Client) String() string {
	return "confpay.Client(network=" + string(c.network) + ", base=" + c.baseURL + ")"
}

// GoString describes the client without its key.
func (c Client) GoString() string { return c.String() }

// Format describes the client without its key, for every verb.
func (c Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// Ptr returns a pointer to v, for optional fields such as
// TransferCreateParams.Confidential, SpendPolicyParams.ActiveHours or
// SpendPolicyParams.DailyLimitUSDG.
func Ptr[T any](v T) *T { return &v }

// CallOption adjusts one call: its idempotency key, timeout or headers, or
// asks for the answer's metadata.
type CallOption func(*callConfig)

type callConfig struct {
	idemKey string
	timeout time.Duration
	header  [][2]string
	resp    *Response
}

// WithIdempotencyKey sends key as the call's Idempotency-Key (1 to 255
// printable ASCII characters) instead of a generated one. Reusing a key
// replays the first answer; it only applies to POST, PATCH and DELETE.
func WithIdempotencyKey(key string) CallOption {
	return func(c *callConfig) { c.idemKey = key }
}

// WithCallTimeout bounds the whole call, retries and waits included.
func WithCallTimeout(d time.Duration) CallOption {
	return func(c *callConfig) { c.timeout = d }
}

// WithHeader adds a header to the call. Headers the client sets itself
// (Authorization, Content-Type, Idempotency-Key, User-Agent, ...) are
// refused.
func WithHeader(key, value string) CallOption {
	return func(c *callConfig) { c.header = append(c.header, [2]string{key, value}) }
}

// WithResponse fills r with the metadata of the call once it has sent
// anything: on success, on an answer with an error status, and on a
// transport error (then StatusCode is 0 and Header nil). It is left alone
// when the client refused the call before sending (a *ParamError).
func WithResponse(r *Response) CallOption {
	return func(c *callConfig) { c.resp = r }
}

// Response is the metadata of a call, read with WithResponse.
type Response struct {
	// StatusCode is the last answer's HTTP status, 0 when none came.
	StatusCode int
	// RequestID is the answer's X-Request-Id; quote it in support requests.
	RequestID string
	Header    http.Header
	// IdempotentReplayed is true when the service replayed the stored
	// answer of an earlier call with the same idempotency key.
	IdempotentReplayed bool
	// IdempotencyKey is the Idempotency-Key the call sent (the caller's
	// own or the generated one), empty for GET. Repeating the call with
	// WithIdempotencyKey(IdempotencyKey) and the same parameters is safe
	// whatever happened: the service runs it at most once.
	IdempotencyKey string
	// Attempts is how many times the request went on the wire, counted at
	// the transport: the client's own retries and the resends net/http
	// makes by itself when a reused connection dies before any answer
	// byte. A try that failed before reaching the server (a refused
	// connection, a TLS failure) counts as one.
	Attempts int
}

// reservedHeaders are set by the client and cannot be overridden.
var reservedHeaders = map[string]bool{
	"Authorization": true, "Content-Type": true, "Content-Length": true,
	"Idempotency-Key": true, "User-Agent": true, "Host": true, "Accept": true,
	"Transfer-Encoding": true, "Connection": true,
}

// hdrJSON is a shared header value; never modified.
var hdrJSON = []string{"application/json"}

// do is the one request path: every method goes through it. It builds the
// request (auth, user agent, JSON body, idempotency key for POST, PATCH and
// DELETE), sends it with retries, and decodes the answer into out or into an
// *APIError. path must already be escaped; query is encoded, without "?".
func (c *Client) do(ctx context.Context, method, path, query string, body, out any, opts []CallOption) error {
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	mutating := method != http.MethodGet && method != http.MethodHead
	if cfg.idemKey != "" && !ValidIdempotencyKey(cfg.idemKey) {
		return &ParamError{Param: "idempotency key", Problem: "must be 1 to 255 printable ASCII characters"}
	}
	for _, h := range cfg.header {
		k := http.CanonicalHeaderKey(h[0])
		if reservedHeaders[k] {
			return &ParamError{Param: "header " + k, Problem: "is set by the client"}
		}
		if !validHeaderName(h[0]) || !validHeaderValue(h[1]) {
			return &ParamError{Param: "header " + k, Problem: "has an invalid name or value"}
		}
	}
	if ctx == nil {
		return &ParamError{Param: "ctx", Problem: "is nil"}
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}

	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("confpay: %s %s: encoding the request: %w", method, path, err)
		}
		raw = b
	}
	target := c.baseURL + path
	if query != "" {
		target += "?" + query
	}
	var rawBody any // a nil []byte is not a nil interface
	if raw != nil {
		rawBody = raw
	}
	cl := &call{c: c, method: method, path: path}
	cl.trace.WroteRequest = cl.wrote
	cl.Context = httptrace.WithClientTrace(ctx, &cl.trace)
	req, err := retryablehttp.NewRequestWithContext(cl, method, target, rawBody)
	if err != nil {
		return fmt.Errorf("confpay: %s %s: building the request failed", method, path)
	}
	for _, h := range cfg.header {
		req.Header.Add(h[0], h[1])
	}
	req.Header["Authorization"] = c.auth
	req.Header["User-Agent"] = c.userAgent
	req.Header["Accept"] = hdrJSON
	if raw != nil {
		req.Header["Content-Type"] = hdrJSON
	}
	if mutating {
		cl.idemKey = cfg.idemKey
		if cl.idemKey == "" {
			cl.idemKey = rand.Text()
		}
		req.Header["Idempotency-Key"] = []string{cl.idemKey}
	}

	resp, err := c.rc.Do(req)
	if err != nil {
		if cfg.resp != nil {
			*cfg.resp = Response{IdempotencyKey: cl.idemKey, Attempts: cl.attempts()}
		}
		return cl.transportError(err)
	}
	defer closeBody(resp.Body)

	if cfg.resp != nil {
		*cfg.resp = Response{
			StatusCode:         resp.StatusCode,
			RequestID:          resp.Header.Get("X-Request-Id"),
			Header:             resp.Header,
			IdempotentReplayed: resp.Header.Get("Idempotent-Replayed") == "true",
			IdempotencyKey:     cl.idemKey,
			Attempts:           cl.attempts(),
		}
	}

	data, err := readBody(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := newAPIError(resp, data) // with what could be read
		e.IdempotencyKey = cl.idemKey
		return e
	}
	if errors.Is(err, errBodyTooLarge) {
		return fmt.Errorf("confpay: %s %s: %w", method, path, err)
	}
	if err != nil {
		return cl.transportError(err)
	}
	if t, ok := out.(statusTarget); ok {
		out = t.target(resp.StatusCode)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("confpay: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// statusTarget is an answer whose shape depends on the HTTP status, such
// as the 201 or 202 of POST /v1/transfers: target returns where to decode.
type statusTarget interface{ target(status int) any }

// callKey finds a call in a context.
type callKey struct{}

// call is the state of one call across its attempts. It is the context of
// the call's request, so that the retry hooks and the counting transport,
// shared by every call of a Client, find it there.
type call struct {
	context.Context
	c       *Client
	method  string
	path    string
	idemKey string // the Idempotency-Key sent, "" for GET
	tries   int    // the client's own tries so far (retry hooks run in sequence)
	wait    time.Duration
	start   time.Time // start of the current try (only when logging)

	written atomic.Int64 // writes of the request on a connection (httptrace)
	sent    atomic.Int64 // attempts on the wire, counted by wireCounter
	trace   httptrace.ClientTrace
}

// Value makes the call findable from any context derived from it.
func (cl *call) Value(key any) any {
	if key == (callKey{}) {
		return cl
	}
	return cl.Context.Value(key)
}

// callOf returns the call whose context ctx is or derives from, or nil.
func callOf(ctx context.Context) *call {
	if cl, ok := ctx.(*call); ok {
		return cl
	}
	cl, _ := ctx.Value(callKey{}).(*call)
	return cl
}

// wrote counts one write of the request on a connection: net/http reports
// each, its own silent resends included.
func (cl *call) wrote(httptrace.WroteRequestInfo) { cl.written.Add(1) }

func (cl *call) attempts() int { return int(cl.sent.Load()) }

func (cl *call) transportError(err error) *TransportError {
	return &TransportError{Method: cl.method, Path: cl.path, IdempotencyKey: cl.idemKey, Attempts: cl.attempts(), Err: cleanCause(err)}
}

// wireCounter is the RoundTripper inside every Client's http.Client.
// It counts each request that went on the wire: one per round trip, or as
// many as net/http wrote when it resent the request by itself on a fresh
// connection. It deliberately has no CloseIdleConnections: retryablehttp
// calls that on the http.Client after every cancelled or failed call, which
// would empty the pool of a caller's shared client.
type wireCounter struct{ base http.RoundTripper }

// RoundTrip sends req through the base transport and counts it.
func (t wireCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	cl := callOf(req.Context())
	if cl == nil {
		return t.base.RoundTrip(req)
	}
	before := cl.written.Load()
	resp, err := t.base.RoundTrip(req)
	cl.sent.Add(max(1, cl.written.Load()-before))
	return resp, err
}

// sameOriginRedirects wraps a caller's CheckRedirect: a redirect to another
// origin (scheme, host or port) than the first request's is not followed,
// and the redirect itself is answered, so the key, the idempotency key and
// the body never go there. Within the origin, next decides (nil: net/http's
// default of 10 redirects).
func sameOriginRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if !strings.EqualFold(req.URL.Scheme, first.Scheme) || !strings.EqualFold(hostPort(req.URL), hostPort(first)) {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// hostPort is u's host with its port, the scheme's default when none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return u.Hostname() + ":" + port
}

// isLoopbackHost reports whether host (without port or brackets) is
// localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func beforeAttempt(_ retryablehttp.Logger, req *http.Request, _ int) {
	if cl := callOf(req.Context()); cl != nil {
		cl.start = time.Now()
	}
}

// checkRetry is the retry policy. It runs after every try.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	cl := callOf(ctx)
	cl.tries++
	if c.logger != nil {
		cl.log(resp, err)
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if !retryable(resp, err) || cl.tries > c.maxRetries {
		return false, nil
	}
	if tooLongToWait(resp) {
		return false, nil // the server asked for a wait the client will not make: answer now
	}
	wait := c.wait(cl.tries-1, resp)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		return false, nil // the wait would outlast the call: answer now
	}
	cl.wait = wait
	return true, nil
}

// noBackoff leaves the wait to waitBeforeRetry: retryablehttp's Backoff
// gets no context when the try failed without an answer.
func noBackoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration { return 0 }

// waitBeforeRetry waits the backoff checkRetry chose, after the answer's
// body was drained (so its connection is back in the pool), and stops at
// once when the call's context ends.
func waitBeforeRetry(req *http.Request) error {
	cl := callOf(req.Context())
	if cl.wait <= 0 {
		return nil
	}
	t := time.NewTimer(cl.wait)
	defer t.Stop()
	select {
	case <-req.Context().Done():
		return req.Context().Err()
	case <-t.C:
		return nil
	}
}

// giveUp runs when the last try failed. A received answer is passed on so
// that it becomes a typed *APIError; otherwise the cause is.
func giveUp(resp *http.Response, err error, _ int) (*http.Response, error) {
	if resp != nil && err == nil {
		return resp, nil
	}
	if resp != nil {
		closeBody(resp.Body)
	}
	if err == nil {
		err = errors.New("no answer")
	}
	return nil, err
}

func (cl *call) log(resp *http.Response, err error) {
	attrs := []slog.Attr{
		slog.String("method", cl.method),
		slog.String("path", cl.path),
		slog.Int("attempt", cl.tries),
		slog.Duration("duration", time.Since(cl.start)),
	}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode), slog.String("request_id", resp.Header.Get("X-Request-Id")))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", cleanCause(err).Error()))
	}
	cl.c.logger.LogAttrs(cl.Context, slog.LevelDebug, "confpay: request", attrs...)
}

// retryable reports whether an attempt's outcome is worth another try:
// connection errors (not certificate failures), 408, 429, 500, 502, 503,
// 504, and 409 idempotency_key_in_use.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		var cert *tls.CertificateVerificationError
		return !errors.As(err, &cert)
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusConflict:
		// Peek at the code, and put the body back for the caller.
		data, rerr := readBody(resp)
		closeBody(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if rerr != nil {
			return false
		}
		var eb ErrorBody
		return json.Unmarshal(data, &eb) == nil && eb.Code == CodeIdempotencyKeyInUse
	}
	return false
}

// backoff is the wait before a retry: base·2^n ±25 %, capped at max.
type backoff struct{ base, max time.Duration }

// defaultBackoff is 0.5 s·2^n, capped at 8 s.
var defaultBackoff = backoff{base: baseBackoff, max: maxBackoff}

// retryWait is the default wait before retry n (from 0).
func retryWait(n int, resp *http.Response) time.Duration { return defaultBackoff.wait(n, resp) }

// tooLongToWait reports whether resp carries a Retry-After longer than
// maxRetryAfter: retrying sooner would go against the server's word, and
// sleeping that long would stall the caller, so the call answers at once.
func tooLongToWait(resp *http.Response) bool {
	if resp == nil {
		return false
	}
	d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return ok && d > maxRetryAfter
}

// wait is the wait before retry n (from 0): the answer's Retry-After when
// it has one (clamped to 30 s; checkRetry gives up before a longer one),
// else the backoff.
func (b backoff) wait(n int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return min(d, maxRetryAfter)
		}
	}
	return b.delay(n, randN)
}

// randN returns a uniform random duration in [0, n).
func randN(n time.Duration) time.Duration {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return time.Duration(v % uint64(n))
}

// delay is base·2^n ±25 %, capped at max; random(n) must return a
// duration in [0, n).
func (b backoff) delay(n int, random func(time.Duration) time.Duration) time.Duration {
	d := b.base
	for i := 0; i < n && d < b.max; i++ {
		d = min(d, b.max/2) * 2 // never past max·2: no overflow
	}
	d = min(d, b.max)
	lo, r := d-d/4, random(d/2+1)
	if r > b.max-lo { // past the cap (compared so as not to overflow)
		return b.max
	}
	return lo + r
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date. The
// result is at least 0; a figure past maxRetryAfterParsed reads as that
// (any such wait is too long to make).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if isDigits(v) {
		v = strings.TrimLeft(v, "0")
		if len(v) > 9 { // more than 30 years: saturate
			return maxRetryAfterParsed, true
		}
		secs := 0
		for i := 0; i < len(v); i++ {
			secs = secs*10 + int(v[i]-'0')
		}
		d = time.Duration(secs) * time.Second
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0, false
		}
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfterParsed), true
}

// newAPIError builds the error for a non-2xx answer from its body.
func newAPIError(resp *http.Response, body []byte) *APIError {
	e := &APIError{
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		Body:       body,
		Response:   resp,
	}
	var eb ErrorBody
	if json.Unmarshal(body, &eb) == nil {
		e.Code, e.Message, e.Param, e.Rule, e.Reason = eb.Code, eb.Message, eb.Param, eb.Rule, eb.Reason
		if e.RequestID == "" {
			e.RequestID = eb.RequestID
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

var errBodyTooLarge = errors.New("answer body exceeds 1 MiB")

// readBody reads at most 1 MiB of an answer's body. Past that it returns
// the first 1 MiB and errBodyTooLarge.
func readBody(resp *http.Response) ([]byte, error) {
	size := resp.ContentLength
	if size < 0 || size > maxBody {
		size = 512
	}
	lr := io.LimitedReader{R: resp.Body, N: maxBody + 1}
	b := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, err
		}
	}
	if len(b) > maxBody {
		return b[:maxBody], errBodyTooLarge
	}
	return b, nil
}

// closeBody drains a little of what is left (so the connection can be
// reused) and closes the body.
func closeBody(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 4<<10))
	_ = b.Close()
}

// cleanCause strips the URL (and so any query) from a transport error,
// keeping the underlying cause.
func cleanCause(err error) error {
	for {
		ue, ok := err.(*url.Error)
		if !ok || ue.Err == nil {
			return err
		}
		err = ue.Err
	}
}

// ValidIdempotencyKey reports whether k is an Idempotency-Key the service
// accepts: 1 to 255 printable ASCII characters. The SDK checks a caller's
// key with it before sending, and the fakeserver checks every request's.
func ValidIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// pathID escapes an id for use as one path segment, refusing an empty one.
func pathID(param, id string) (string, error) {
	if id == "" {
		return "", &ParamError{Param: param, Problem: "is empty"}
	}
	if id == "." || id == ".." {
		return "", &ParamError{Param: param, Problem: "is not a valid id"}
	}
	return url.PathEscape(id), nil
}
