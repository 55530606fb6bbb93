// Package memhttp is an http.RoundTripper that calls an http.Handler
// directly, with no socket, and answers what net/http's client and server
// would over one: the fakeserver's in-memory client. See Transport.
package memhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport is the fakeserver's in-memory transport (HTTPClient's). It calls the server's handler
// directly, with no connection: each request becomes the *http.Request
// net/http's server would have parsed from the wire, the handler runs on a
// worker goroutine, and its answer, once the handler returns, becomes the
// *http.Response net/http's client would have read, with the headers
// net/http's server adds (Date, Content-Length or chunked framing, a
// sniffed Content-Type, Connection: close) and net/http's client removes.
//
// What would touch the connection is modelled on it too:
//   - A handler that hijacks the connection (the drop_after_commit and
//     reset_after_commit faults, an answer refused before the body is
//     read) gets an in-memory net.Conn; what it writes there is read back
//     with http.ReadResponse once it closes it: nothing is a dropped
//     connection, part of a head a malformed answer.
//   - A dropped connection (that, a panicking handler, or Close with the
//     request in flight) is resent once by itself, as net/http does, when
//     net/http would have sent the request on a reused keep-alive
//     connection and may replay it (GET, HEAD, OPTIONS, TRACE, or an
//     Idempotency-Key header, with a body it can rewind). So the
//     transport keeps the keep-alive pool net/http would keep: a
//     connection goes idle once its answer is read to the end (unless
//     either side said Connection: close), and leaves the pool after
//     IdleConnTimeout.
//   - The caller's context, the client's timeout and Request.Cancel end
//     the wait at once and cancel the handler's context, as a closed
//     connection would.
//
// Every goroutine it starts waits on channels or locks only, so it works
// inside a testing/synctest bubble.
type Transport struct {
	h    http.Handler
	base context.Context // the server requests' parent, with the values net/http's server sets
	done chan struct{}   // closed by close

	mu     sync.Mutex
	closed bool
	idle   []time.Time    // when each keep-alive connection went idle, oldest first
	active sync.WaitGroup // handlers running

	// Handlers run on worker goroutines that wait for the next request
	// once done (as net/http's server runs a connection's requests on
	// one goroutine), so that a request does not pay for growing a new
	// goroutine's stack.
	work        chan *memWriter // to a waiting worker
	workers     sync.WaitGroup
	idleWorkers atomic.Int32
}

// The client-side settings HTTPClient's net/http transport had, which the
// keep-alive pool follows.
const (
	// IdleConnTimeout is how long a connection of the pool stays idle
	// before it is closed (net/http's Transport.IdleConnTimeout).
	IdleConnTimeout        = 90 * time.Second
	memMaxIdleConnsPerHost = 100
)

// The server-side constants of net/http this transport follows.
const (
	// bufferBeforeChunking is net/http's bufferBeforeChunkingSize: an
	// answer larger than this, without a Content-Length, is sent chunked.
	bufferBeforeChunking = 2048
	// MaxPostHandlerRead is net/http's maxPostHandlerReadBytes: how much
	// of an unread request body the server reads after the handler to keep
	// the connection; above it, it closes it.
	MaxPostHandlerRead = 256 << 10
	// maxHeaderBytes is net/http's DefaultMaxHeaderBytes and the slack its
	// reader allows over it.
	maxHeaderBytes = http.DefaultMaxHeaderBytes + 4096
)

// errDropped is an exchange whose connection closed without an answer.
var errDropped = errors.New("fakeserver: connection dropped")

// The errors net/http's client returns in the same places.
var (
	errCannotRewind        = errors.New("net/http: cannot rewind body after connection loss")
	errRequestCanceled     = errors.New("net/http: request canceled")
	errReadOnClosedResBody = errors.New("http: read on closed response body")
)

// New returns a Transport whose every request goes to h.
func New(h http.Handler) *Transport {
	base := context.WithValue(context.Background(), http.ServerContextKey, &http.Server{Handler: h})
	base = context.WithValue(base, http.LocalAddrContextKey, net.Addr(Addr{}))
	return &Transport{h: h, base: base, done: make(chan struct{}), work: make(chan *memWriter)}
}

// start runs w's handler on a waiting worker, or a new one.
func (t *Transport) start(w *memWriter) {
	select {
	case t.work <- w:
	default:
		t.workers.Add(1)
		go t.worker(w)
	}
}

// worker runs w's handler, then the next ones it is given, until Close
// (or while more than memMaxIdleConnsPerHost others wait).
func (t *Transport) worker(w *memWriter) {
	defer t.workers.Done()
	for {
		w.serve()
		if t.idleWorkers.Add(1) > memMaxIdleConnsPerHost {
			t.idleWorkers.Add(-1)
			return
		}
		select {
		case w = <-t.work:
			t.idleWorkers.Add(-1)
		case <-t.done:
			t.idleWorkers.Add(-1)
			return
		}
	}
}

// Close refuses every request from now on, drops the ones waiting for an
// answer and waits for their handlers to return.
func (t *Transport) Close() {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		t.idle = nil
		close(t.done) // every exchange waiting cancels its handler's context
	}
	t.mu.Unlock()
	t.active.Wait()
	t.workers.Wait()
}

// CloseIdleConnections empties the keep-alive pool (http.Client's
// CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	t.idle = nil
	t.mu.Unlock()
}

// takeConn takes a connection for one exchange: the most recently idle
// one when the pool has one (reused), else a new one. It refuses when the
// server is closed.
func (t *Transport) takeConn() (httptrace.GotConnInfo, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return httptrace.GotConnInfo{}, ErrRefused
	}
	info := httptrace.GotConnInfo{Conn: noConn}
	now := time.Now()
	for len(t.idle) > 0 && now.Sub(t.idle[0]) > IdleConnTimeout {
		t.idle = t.idle[1:]
	}
	if n := len(t.idle); n > 0 {
		info.Reused, info.WasIdle, info.IdleTime = true, true, now.Sub(t.idle[n-1])
		t.idle = t.idle[:n-1]
	}
	t.active.Add(1)
	return info, nil
}

// noConn is the connection GotConn reports: nothing can be read from or
// written to it.
var noConn net.Conn = &memConn{closed: true}

// errTooManyIdle is net/http's refusal to keep one more idle connection.
var errTooManyIdle = errors.New("http: putIdleConn: too many idle connections for host")

// putIdle puts a connection whose exchange ended cleanly in the pool.
func (t *Transport) putIdle(trace *httptrace.ClientTrace) {
	t.mu.Lock()
	var err error
	switch {
	case t.closed:
		err = errors.New("http: CloseIdleConnections called")
	case len(t.idle) >= memMaxIdleConnsPerHost:
		err = errTooManyIdle
	default:
		t.idle = append(t.idle, time.Now())
	}
	t.mu.Unlock()
	if trace != nil && trace.PutIdleConn != nil {
		trace.PutIdleConn(err)
	}
}

// RoundTrip sends req to the handler and returns its answer.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkClientRequest(req); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	orig := req
	for {
		if err := req.Context().Err(); err != nil {
			closeRequestBody(req)
			return nil, context.Cause(req.Context())
		}
		trace := httptrace.ContextClientTrace(req.Context())
		if trace != nil && trace.GetConn != nil {
			trace.GetConn(canonicalHostPort(req.URL))
		}
		info, err := t.takeConn()
		if err != nil {
			closeRequestBody(req)
			return nil, err
		}
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(info)
		}
		resp, err := t.exchange(req, trace)
		if err == nil {
			resp.Request = orig
			return resp, nil
		}
		if err != errDropped {
			return nil, err
		}
		if !info.Reused || !replayable(req) {
			return nil, io.EOF
		}
		// net/http resends a replayable request that a reused connection
		// lost, on another connection, once per lost connection.
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// exchange runs one request through the handler, on a connection taken
// with takeConn.
func (t *Transport) exchange(req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	sr, body, early := serverRequest(req)
	if trace != nil {
		if trace.WroteHeaderField != nil && sr != nil {
			trace.WroteHeaderField("Host", []string{sr.Host})
			for k, vs := range sr.Header {
				trace.WroteHeaderField(k, vs)
			}
		}
		if trace.WroteHeaders != nil {
			trace.WroteHeaders()
		}
		if trace.WroteRequest != nil {
			trace.WroteRequest(httptrace.WroteRequestInfo{})
		}
	}
	if early != nil { // net/http's server refuses it before any handler
		t.active.Done()
		closeRequestBody(req)
		if trace != nil && trace.GotFirstResponseByte != nil {
			trace.GotFirstResponseByte()
		}
		return early, nil
	}
	// Not a child of a context Close cancels: registering with a shared
	// parent would serialise parallel requests; Close cancels it below.
	ctx, cancel := context.WithCancel(t.base)
	sr = sr.WithContext(ctx)
	w := &memWriter{t: t, trace: trace, req: sr, cancel: cancel, body: body, handlerHeader: http.Header{}, clen: -1, ready: make(chan struct{})}
	t.start(w)
	select {
	case <-w.ready:
	case <-req.Context().Done():
		cancel()
		body.detach()
		return nil, context.Cause(req.Context())
	//lint:ignore SA1019 net/http's client still sets and honours it (Client.Timeout with a RoundTripper of its own)
	case <-req.Cancel:
		cancel()
		body.detach()
		return nil, errRequestCanceled
	case <-t.done:
		cancel()
		body.detach()
		return nil, errDropped
	}
	if err := body.clientError(); err != nil {
		return nil, err
	}
	var resp *http.Response
	var err error
	switch {
	case w.conn != nil:
		resp, err = w.conn.response(req)
	case w.dropped:
		err = errDropped
	default:
		resp = w.response(req)
	}
	if resp != nil && trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	return resp, err
}

// checkClientRequest refuses what net/http's client refuses before
// sending.
func checkClientRequest(req *http.Request) error {
	switch {
	case req.URL == nil:
		return errors.New("http: nil Request.URL")
	case req.Header == nil:
		return errors.New("http: nil Request.Header")
	case req.URL.Scheme == "https":
		// The server does not speak TLS: what net/http says when a
		// server answers a TLS handshake in plain HTTP.
		return errors.New("http: server gave HTTP response to HTTPS client")
	case req.URL.Scheme != "http":
		return fmt.Errorf("unsupported protocol scheme %q", req.URL.Scheme)
	case req.Method != "" && !isToken(req.Method):
		return fmt.Errorf("net/http: invalid method %q", req.Method)
	case req.URL.Host == "":
		return errors.New("http: no Host in request URL")
	}
	if err := checkHeader(req.Header, "header"); err != nil {
		return err
	}
	if err := checkHeader(req.Trailer, "trailer"); err != nil {
		return err
	}
	if host := clientHost(req); !validHeaderValue(host) || strings.ContainsAny(host, " /") {
		return errors.New("http: invalid Host header")
	}
	return nil
}

// checkHeader refuses a header net/http's client would refuse to send.
func checkHeader(h http.Header, what string) error {
	for k, vs := range h {
		if !isToken(k) {
			return fmt.Errorf("net/http: invalid %s field name %q", what, k)
		}
		for _, v := range vs {
			if !validHeaderValue(v) {
				// Not the value: it may be a secret.
				return fmt.Errorf("net/http: invalid %s field value for %q", what, k)
			}
		}
	}
	return nil
}

// tokenChars are the bytes of an RFC 9110 token.
var tokenChars = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

// isToken reports whether s is an RFC 9110 token (a method, a header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChars[s[i]] {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v may be sent as a header value: no
// control byte but a tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// canonicalHostPort is the host:port GetConn reports.
func canonicalHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func clientHost(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// replayable is net/http's Request.isReplayable: what its client resends
// by itself after losing a reused connection.
func replayable(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.GetBody != nil {
		switch r.Method {
		case "", "GET", "HEAD", "OPTIONS", "TRACE":
			return true
		}
		if _, ok := r.Header["Idempotency-Key"]; ok {
			return true
		}
		if _, ok := r.Header["X-Idempotency-Key"]; ok {
			return true
		}
	}
	return false
}

// rewind is req with a fresh body for a resend.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errCannotRewind
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = b
	return &r, nil
}

// excludedRequestHeaders are the client's headers net/http writes from
// other fields (reqWriteExcludeHeader).
var excludedRequestHeaders = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// serverRequest is the request net/http's server would read from what
// net/http's client writes for req, or (early) the answer the server gives
// before any handler runs: 431 to a head over its limit, 400 to a target
// that does not parse.
func serverRequest(req *http.Request) (sr *http.Request, body *memReqBody, early *http.Response) {
	ruri := req.URL.RequestURI()
	u, err := url.ParseRequestURI(ruri)
	if err != nil {
		return nil, nil, serverRefusal(req, http.StatusBadRequest)
	}
	n, size, plain := 0, len(ruri), true
	for k, vs := range req.Header {
		n += len(vs)
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
		plain = plain && textproto.CanonicalMIMEHeaderKey(k) == k
	}
	if size > maxHeaderBytes {
		return nil, nil, serverRefusal(req, http.StatusRequestHeaderFieldsTooLarge)
	}
	h := make(http.Header, len(req.Header)+4)
	vals := make([]string, 0, n+4) // the header's values and the 4 below
	copyHeader := func(k string, vs []string) {
		if excludedRequestHeaders[k] {
			return
		}
		ck := textproto.CanonicalMIMEHeaderKey(k)
		start := len(vals)
		for _, v := range vs {
			vals = append(vals, textproto.TrimString(v))
		}
		h[ck] = append(h[ck], vals[start:len(vals):len(vals)]...)
	}
	if plain {
		for k, vs := range req.Header {
			copyHeader(k, vs)
		}
	} else {
		// Two names of one header ("x-a", "X-A") join in the order
		// net/http writes them: sorted.
		for _, k := range slices.Sorted(maps.Keys(req.Header)) {
			copyHeader(k, req.Header[k])
		}
	}
	add := func(k, v string) { i := len(vals); vals = append(vals, v); h[k] = vals[i : i+1 : i+1] }
	if ua, ok := req.Header["User-Agent"]; !ok {
		add("User-Agent", "Go-http-client/1.1")
	} else if len(ua) > 0 && ua[0] != "" {
		add("User-Agent", ua[0])
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	cl := req.ContentLength
	hasBody := req.Body != nil && req.Body != http.NoBody
	if !hasBody {
		cl = 0
	} else if cl == 0 {
		cl = -1 // net/http sends a body of unknown length chunked
	}
	switch {
	case cl > 0, cl == 0 && (method == "POST" || method == "PUT" || method == "PATCH"):
		add("Content-Length", strconv.FormatInt(cl, 10))
	}
	if _, ok := req.Header["Accept-Encoding"]; !ok && req.Header.Get("Range") == "" && method != "HEAD" {
		add("Accept-Encoding", "gzip") // HTTPClient's net/http transport asked for compression
	}
	closeReq := req.Close || hasToken(h["Connection"], "close")
	if req.Close && !hasToken(h["Connection"], "close") {
		add("Connection", "close")
	}
	sr = &http.Request{
		Method:        method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: cl,
		Close:         closeReq,
		Host:          clientHost(req),
		RemoteAddr:    "pipe",
		RequestURI:    ruri,
		Body:          http.NoBody,
	}
	body = &memReqBody{rc: req.Body, cl: cl, left: cl}
	if cl == -1 {
		sr.TransferEncoding = []string{"chunked"}
	}
	if cl != 0 {
		sr.Body = body
	}
	body.expect = hasToken(h["Expect"], "100-continue")
	return sr, body, nil
}

// serverRefusal is the plain answer net/http's server sends, and closes
// the connection after, to a request it cannot read.
func serverRefusal(req *http.Request, status int) *http.Response {
	text := strconv.Itoa(status) + " " + http.StatusText(status)
	return &http.Response{
		Status: text, StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
		Body:          io.NopCloser(strings.NewReader(text)),
		ContentLength: -1,
		Close:         true,
		Request:       req,
	}
}

// hasToken reports whether one of the comma-separated values vs is token,
// regardless of case.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(part), token) {
				return true
			}
		}
	}
	return false
}

// memReqBody is the request body as the handler reads it: the client's
// body, ended after Content-Length bytes.
type memReqBody struct {
	rc      io.ReadCloser
	cl      int64 // Content-Length; -1 when sent chunked
	expect  bool  // Expect: 100-continue
	gone    atomic.Bool
	rcClose sync.Once

	mu     sync.Mutex
	left   int64 // bytes still to come, when cl >= 0
	read   int64
	sawEOF bool
	closed bool  // closed by the server
	err    error // the client's own failure to send the body
}

// Read reads the client's body as net/http's server body would.
func (b *memReqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return 0, http.ErrBodyReadAfterClose
	case b.sawEOF:
		return 0, io.EOF
	case b.gone.Load() || b.err != nil:
		return 0, io.ErrUnexpectedEOF // the connection is gone
	case b.left == 0:
		b.sawEOF = true
		return 0, io.EOF
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if b.left > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF && b.left > 0:
		b.err = fmt.Errorf("http: ContentLength=%d with Body length %d", b.cl, b.read)
		return n, io.ErrUnexpectedEOF
	case err == io.EOF, err == nil && b.left == 0:
		b.sawEOF = true
		return n, io.EOF
	case err != nil:
		b.err = err // net/http's client fails the request with its body's error
		return n, io.ErrUnexpectedEOF
	}
	return n, nil
}

// Close is the server closing the body.
func (b *memReqBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// detach is the client going away: reads fail from now on, and the
// client's body is closed.
func (b *memReqBody) detach() {
	b.gone.Store(true)
	b.closeClient()
}

func (b *memReqBody) closeClient() {
	b.rcClose.Do(func() {
		if b.rc != nil {
			_ = b.rc.Close()
		}
	})
}

// clientError is the client's failure to send its body, if any.
func (b *memReqBody) clientError() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// afterHandler does what net/http's server does with a body the handler
// left unread before it answers: it reads up to MaxPostHandlerRead more,
// and closes the connection after the answer if more remains. It reports
// whether the connection must close.
func (b *memReqBody) afterHandler() (closeConn, tooBig bool) {
	if b.expect {
		b.mu.Lock()
		saw := b.sawEOF
		b.mu.Unlock()
		if !saw {
			return true, false
		}
	}
	b.mu.Lock()
	closed, saw, known := b.closed, b.sawEOF, b.cl >= 0
	left := b.left
	b.mu.Unlock()
	switch {
	case closed && !saw:
		return true, false
	case closed:
		return false, false
	case known && left >= MaxPostHandlerRead:
		return true, true
	}
	_, err := io.CopyN(io.Discard, b, MaxPostHandlerRead+1)
	switch err {
	case nil:
		return true, true
	case io.EOF:
		return false, false
	}
	return true, false
}

// memWriter is the http.ResponseWriter the handler writes to. It keeps the
// whole answer: the client gets it when the handler returns.
type memWriter struct {
	t      *Transport
	trace  *httptrace.ClientTrace
	req    *http.Request
	cancel context.CancelFunc // ends req's context
	body   *memReqBody

	handlerHeader http.Header
	header        http.Header // the handler's header as WriteHeader saw it
	status        int
	wroteHeader   bool
	clen          int64 // the handler's Content-Length, -1 if none
	written       int64
	buf           []byte
	// sentEarly: net/http would have sent the head before the handler
	// returned (a Flush, or more than bufferBeforeChunking bytes), so
	// without a Content-Length the answer is chunked; sniff is how much
	// of the body it had then, for the Content-Type.
	sentEarly bool
	sniff     int
	done      bool // the handler returned

	conn    *memConn // set by Hijack
	dropped bool     // the handler panicked before its head was sent

	// The answer's head as net/http's server sends it.
	final   http.Header
	chunked bool
	close   bool

	ready     chan struct{} // closed once the client can read the answer
	readyOnce sync.Once
}

func (w *memWriter) markReady() { w.readyOnce.Do(func() { close(w.ready) }) }

// serve runs the handler as net/http's server does, on a worker.
func (w *memWriter) serve() {
	defer w.t.active.Done()
	defer func() {
		if p := recover(); p != nil {
			w.panicked(p)
		} else {
			w.finish()
		}
		w.cancel()
		_ = w.body.Close()
		w.body.closeClient()
	}()
	w.t.h.ServeHTTP(w, w.req)
}

// panicked is net/http's answer to a panicking handler: a log line (but
// for http.ErrAbortHandler) and the connection closed.
func (w *memWriter) panicked(p any) {
	if p != http.ErrAbortHandler {
		buf := make([]byte, 64<<10)
		buf = buf[:runtime.Stack(buf, false)]
		log.Printf("http: panic serving %v: %v\n%s", w.req.RemoteAddr, p, buf)
	}
	w.done = true
	if w.conn != nil { // the connection is the handler's now
		return
	}
	if w.sentEarly { // the client has the head: the body ends short
		w.final, w.chunked, w.close = w.finalHead(false)
		w.close = true
		w.clen = max(w.clen, int64(len(w.buf))+1)
	} else {
		w.dropped = true
	}
	w.markReady()
}

// finish is net/http's finishRequest: a 200 if the handler wrote nothing,
// the head completed.
func (w *memWriter) finish() {
	if w.conn != nil {
		w.done = true
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.done = true
	w.final, w.chunked, w.close = w.finalHead(!w.sentEarly)
	if w.clen != -1 && w.written != w.clen && w.req.Method != "HEAD" {
		w.close = true
	}
	w.markReady()
}

// Header is the header the handler sets.
func (w *memWriter) Header() http.Header { return w.handlerHeader }

// WriteHeader records the status and the header as they are now.
func (w *memWriter) WriteHeader(code int) {
	if w.conn != nil || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		return // an informational answer: the client skips it
	}
	w.wroteHeader = true
	w.status = code
	w.header = w.handlerHeader.Clone()
	if cl := w.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.clen = v
		} else {
			w.header.Del("Content-Length")
		}
	}
}

// Write adds to the body, as net/http's response does.
func (w *memWriter) Write(p []byte) (int, error) {
	if w.conn != nil {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.clen != -1 && w.written > w.clen {
		return 0, http.ErrContentLength
	}
	w.buf = append(w.buf, p...)
	if !w.sentEarly && len(w.buf) > bufferBeforeChunking {
		w.sentEarly, w.sniff = true, len(w.buf)
	}
	return len(p), nil
}

// FlushError sends the head (net/http's Flush); the body follows when the
// handler returns.
func (w *memWriter) FlushError() error {
	if w.conn != nil {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentEarly {
		w.sentEarly, w.sniff = true, len(w.buf)
	}
	return nil
}

// Flush is FlushError without the error.
func (w *memWriter) Flush() { _ = w.FlushError() }

// SetReadDeadline and SetWriteDeadline accept any deadline: no connection
// can time out.
func (w *memWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *memWriter) SetWriteDeadline(time.Time) error { return nil }

// Hijack hands the handler the connection: an in-memory one, holding what
// was written so far, whose bytes the client reads once the handler
// closes it.
func (w *memWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.conn != nil {
		return nil, nil, http.ErrHijacked
	}
	if w.done {
		panic("net/http: Hijack called after ServeHTTP finished")
	}
	c := &memConn{w: w}
	if w.wroteHeader { // net/http sends what the handler wrote first
		if !w.sentEarly {
			w.sentEarly, w.sniff = true, len(w.buf)
		}
		h, chunked, _ := w.finalHead(false)
		c.out = appendHead(c.out, w.status, h)
		switch {
		case w.req.Method == "HEAD":
		case chunked && len(w.buf) > 0:
			c.out = fmt.Appendf(c.out, "%x\r\n%s\r\n", len(w.buf), w.buf)
		case !chunked:
			c.out = append(c.out, w.buf...)
		}
	}
	w.conn = c
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// finalHead is the head net/http's server sends (chunkWriter.writeHeader):
// the handler's header with Content-Length (when the handler has returned
// and the body fits), Content-Type sniffed from the body, Date,
// Transfer-Encoding: chunked, and Connection: close where the connection
// will close. handlerDone says whether the handler has returned.
func (w *memWriter) finalHead(handlerDone bool) (h http.Header, chunked, closeConn bool) {
	h = w.header
	isHEAD := w.req.Method == "HEAD"
	p := w.buf
	if !handlerDone {
		p = p[:w.sniff]
	}
	te := h.Get("Transfer-Encoding")
	hasTE := te != ""
	_, hasCLHeader := h["Content-Length"]
	if handlerDone && !hasTE && bodyAllowed(w.status) && !hasCLHeader && (!isHEAD || len(p) > 0) {
		w.clen = int64(len(p))
		h["Content-Length"] = []string{strconv.Itoa(len(p))}
	}
	hasCL := w.clen != -1
	closeConn = w.req.Close || hasToken(h["Connection"], "close")
	if !closeConn && w.req.ContentLength != 0 {
		var tooBig bool
		closeConn, tooBig = w.body.afterHandler()
		if tooBig {
			delete(h, "Connection")
			h["Connection"] = []string{"close"}
		}
	}
	if bodyAllowed(w.status) {
		_, haveType := h["Content-Type"]
		if !haveType && h.Get("Content-Encoding") == "" && !hasTE && len(p) > 0 {
			h["Content-Type"] = []string{http.DetectContentType(p)}
		}
	} else {
		delete(h, "Content-Length")
		delete(h, "Transfer-Encoding")
		if w.status == http.StatusNotModified {
			delete(h, "Content-Type")
		}
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{httpDate(time.Now())}
	}
	if hasCL && hasTE && te != "identity" {
		delete(h, "Content-Length")
		hasCL = false
	}
	switch {
	case isHEAD || !bodyAllowed(w.status):
		delete(h, "Transfer-Encoding")
	case hasCL:
		delete(h, "Transfer-Encoding")
	case hasTE && te == "identity":
		closeConn = true
		delete(h, "Transfer-Encoding")
	default:
		chunked = true
		h["Transfer-Encoding"] = []string{"chunked"}
		delete(h, "Content-Length")
	}
	if closeConn && !hasToken(w.header["Connection"], "close") {
		h["Connection"] = []string{"close"}
	}
	return h, chunked, closeConn
}

// lastDate is the Date of the second httpDate last formatted.
var lastDate atomic.Pointer[struct {
	sec  int64
	text string
}]

// httpDate is now in http.TimeFormat, formatted once per second.
func httpDate(now time.Time) string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.text
	}
	text := now.UTC().Format(http.TimeFormat)
	lastDate.Store(&struct {
		sec  int64
		text string
	}{sec, text})
	return text
}

// bodyAllowed is net/http's bodyAllowedForStatus.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified)
}

// statusLines are the statusLine of the codes net/http names.
var statusLines = func() map[int]string {
	m := map[int]string{}
	for code := 100; code < 600; code++ {
		if http.StatusText(code) != "" {
			m[code] = strconv.Itoa(code) + " " + http.StatusText(code)
		}
	}
	return m
}()

// statusLine is the text after "HTTP/1.1 " in the answer's first line.
func statusLine(code int) string {
	if l, ok := statusLines[code]; ok {
		return l
	}
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return strconv.Itoa(code) + " " + text
}

// appendHead appends an HTTP/1.1 answer's status line and header.
func appendHead(b []byte, code int, h http.Header) []byte {
	var buf bytes.Buffer
	buf.WriteString("HTTP/1.1 " + statusLine(code) + "\r\n")
	_ = h.Write(&buf)
	buf.WriteString("\r\n")
	return append(b, buf.Bytes()...)
}

// response is the answer as net/http's client reads it: the framing
// headers turned into fields, the body ready to read.
func (w *memWriter) response(req *http.Request) *http.Response {
	h := w.final
	resp := &http.Response{
		Status: statusLine(w.status), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h,
	}
	if hasToken(h["Connection"], "close") {
		resp.Close = true
		delete(h, "Connection")
	}
	switch {
	case w.chunked:
		delete(h, "Transfer-Encoding")
		resp.TransferEncoding = []string{"chunked"}
		resp.ContentLength = -1
	case !bodyAllowed(w.status):
		resp.ContentLength = 0
	case h["Content-Length"] != nil:
		resp.ContentLength, _ = strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	default:
		resp.ContentLength = -1 // until the connection closes
	}
	keep := !resp.Close && !w.close && !req.Close
	if req.Method == "HEAD" || resp.ContentLength == 0 && len(w.buf) == 0 || !bodyAllowed(w.status) {
		resp.Body = http.NoBody
		if keep {
			w.t.putIdle(w.trace)
		}
		return resp
	}
	b := &memRespBody{t: w.t, trace: w.trace, keep: keep, data: w.buf}
	if w.clen > int64(len(w.buf)) {
		b.short = true // the handler wrote less than its Content-Length
	}
	resp.Body = b
	return resp
}

// memRespBody is an answer's body. Read to the end, it puts its
// connection back in the pool, as net/http's client does.
type memRespBody struct {
	t     *Transport
	trace *httptrace.ClientTrace
	keep  bool // the connection may be reused
	short bool // the body ends before its Content-Length: the connection closed

	mu     sync.Mutex
	data   []byte
	off    int
	closed bool
	eof    bool
}

func (b *memRespBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errReadOnClosedResBody
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	if b.off < len(b.data) {
		return n, nil
	}
	if b.short {
		b.keep = false
		return n, io.ErrUnexpectedEOF
	}
	if !b.eof {
		b.eof = true
		if b.keep {
			b.mu.Unlock()
			b.t.putIdle(b.trace) // calls the caller's trace hook: not under b.mu
			b.mu.Lock()
		}
	}
	return n, io.EOF
}

func (b *memRespBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// memConn is the connection a hijacking handler gets: what it writes is
// kept for the client, which reads it once the handler closes it. The
// client sends nothing more.
type memConn struct {
	w      *memWriter
	mu     sync.Mutex
	out    []byte
	closed bool
}

func (c *memConn) Read([]byte) (int, error) { return 0, io.EOF }

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.out = append(c.out, p...)
	return len(p), nil
}

func (c *memConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if c.w != nil {
		c.w.markReady()
	}
	return nil
}

func (c *memConn) LocalAddr() net.Addr              { return Addr{} }
func (c *memConn) RemoteAddr() net.Addr             { return Addr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// response reads what the handler wrote on the connection as net/http's
// client would: nothing is a dropped connection, an answer cut short is
// the parser's error. The connection is not reused.
func (c *memConn) response(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	out := c.out
	c.mu.Unlock()
	if len(out) == 0 {
		return nil, errDropped
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), req)
	if err != nil {
		return nil, fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err)
	}
	return resp, nil
}

// ErrRefused is what a request through a closed Transport returns, as
// dialing a closed port would.
var ErrRefused = &net.OpError{Op: "dial", Net: "memory", Addr: Addr{}, Err: syscall.ECONNREFUSED}

// Addr is the in-memory server's address: not a TCP one, so the
// fakeserver's guard against delivering webhooks to itself ignores it.
type Addr struct{}

// Network is "memory".
func (Addr) Network() string { return "memory" }

// String is "fakeserver".
func (Addr) String() string { return "fakeserver" }
