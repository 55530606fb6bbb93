package fakeserver

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/internal/strictjson"
)

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
	// route is the matched route, "POST /v1/transfers", for the audit.
	route string
	body  []byte   // the whole request body, read under MaxBodyBytes
	acct  *account // the key's account (nil on admin routes)
	key   *apiKey
	net   *network // the key's network (nil on admin routes)
	// header is extra response headers the handler wants set (setHeader;
	// nil until one is).
	header http.Header

	// Set by a scripted fault: drop the connection once the call is
	// answered; make the transfer it creates fail at confirmation.
	drop          bool
	reset         bool // write part of the answer, then close
	failAtConfirm bool
	delay         time.Duration // hold the call this long (server time) first

	// What the audit records of the answer (audit.go).
	status     int
	code       confpay.ErrorCode
	param      string
	transferID string    // the transfer a payment or approval answered
	created    *transfer // the transfer a payment created (its answer may be kept as it: idempotency.go)
	replayed   bool
	recorded   bool          // recordCall ran
	arrived    time.Duration // clock.Mono when the call reached serve
	seen       mark          // what its answer waits for (persist.go, lockFor)
	slot       *slot         // its place in the commit order under an Idempotency-Key (persist_hooks.go)
	at         time.Time     // the server's clock then

	// Computed once for the idempotency store and the audit (fingerprint,
	// owner).
	digest    [32]byte
	hasDigest bool
	ownerKey  string
}

// setHeader sets response header k to v for the answer.
func (c *call) setHeader(k, v string) {
	if c.header == nil {
		c.header = http.Header{}
	}
	c.header.Set(k, v)
}

// routeTable is the whole HTTP face, /v1 and /_fake, by ServeMux pattern.
// It is the support matrix in code.
func (s *Server) routeTable() map[string][]route {
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
	return table
}

// queryParams names the query parameters each route takes, by "METHOD
// pattern"; a route not named here takes none. checkQuery applies it to
// every route, /v1 and /_fake alike.
var queryParams = map[string][]string{
	"GET /v1/accounts/me/balances":             {"decryption_proof"},
	"GET /v1/transfers":                        {"limit", "offset", "status", "from", "to"},
	"GET /v1/webhooks/{webhook_id}/deliveries": {"limit", "offset"},
	"GET /_fake/books/{account}":               {"network"},
	"GET /_fake/transfers":                     {"account", "network"},
	"GET /_fake/events":                        {"account", "network"},
	"GET /_fake/deliveries":                    {"account", "network"},
	"GET /_fake/audit":                         {"account", "network"},
	"GET /_fake/chaos":                         {"account"},
	"GET /_fake/held":                          {"account", "network"},
	"POST /_fake/reset":                        {"to"},
}

// routes builds the HTTP handler over routeTable.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	table := s.routeTable()
	named := 0
	for path, rs := range table {
		for _, rt := range rs {
			if _, ok := queryParams[rt.method+" "+path]; ok {
				named++
			}
		}
		mux.Handle(path, s.dispatch(path, rs))
	}
	if named != len(queryParams) {
		panic("fakeserver: queryParams names a route that does not exist")
	}
	mux.Handle("/", s.dispatch("", nil))
	// The dashboard (dashboard.go), and GET / leading to it.
	mux.HandleFunc(uiPrefix, s.serveDashboard)
	mux.Handle("/{$}", s.dispatch("/{$}", []route{{"GET", false, redirectToDashboard}}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Whatever listener this came through is the server's own: no
		// webhook may deliver to it (selfguard.go).
		s.self.learnNetAddr(r.Context().Value(http.LocalAddrContextKey))
		id := names.NewID("req_")
		w.Header()["X-Request-Id"] = []string{id} // Set's, with the key already canonical
		// Before the mux, which would answer an unclean path with a
		// redirect to its clean form rather than refuse it.
		if apiErr := s.admit(r); apiErr != nil {
			s.refuseUnread(&call{s: s, w: w, r: r, reqID: id}, apiErr)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// admit runs the checks every request passes before any route sees it:
// the path is clean (checkPath), no webhook delivery reaches /_fake
// (refuseDelivery), and no web page does either (refuseCrossOrigin).
func (s *Server) admit(r *http.Request) *apiError {
	if apiErr := checkPath(r.URL.Path); apiErr != nil {
		return apiErr
	}
	if isAdminPath(r.URL.Path) {
		if apiErr := refuseDelivery(r); apiErr != nil {
			return apiErr
		}
		return refuseCrossOrigin(r)
	}
	return nil
}

// checkPath refuses (400 invalid_request, param "path") a path that is not
// its own clean form: one that does not start with "/", or that has an
// empty segment ("//"), a "." or a ".." segment, written plainly or
// %-encoded (%2e%2e, %2F), a final "/" aside. ServeMux would redirect such
// a path to its clean form (so //_fake/reset would reach /_fake/reset past
// every check made on the path as sent); the server refuses it instead,
// nothing done.
func checkPath(p string) *apiError {
	clean := p != "" && p[0] == '/'
	if clean {
		c := path.Clean(p)
		if strings.HasSuffix(p, "/") && c != "/" {
			c += "/"
		}
		clean = c == p
	}
	if !clean {
		return errInvalid("path", "the path must be clean: no empty, . or .. segment (as written or %-encoded)")
	}
	return nil
}

// dispatch picks the route for the method and runs it through the one
// request pipeline: request id, faults, body limit, auth, idempotency.
func (s *Server) dispatch(pattern string, rs []route) http.Handler {
	query := make([][]string, len(rs))    // the parameters each method takes
	routeNames := make([]string, len(rs)) // "METHOD pattern", made once
	methods := make([]string, len(rs))
	for i, rt := range rs {
		routeNames[i] = rt.method + " " + pattern
		query[i] = queryParams[routeNames[i]]
		methods[i] = rt.method
	}
	allow := strings.Join(methods, ", ") // the Allow header of a 405
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{s: s, w: w, r: r}
		if id := w.Header()["X-Request-Id"]; len(id) > 0 { // Get's, with the key already canonical
			c.reqID = id[0]
		}
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
		var params []string
		for i := range rs {
			if rs[i].method == r.Method {
				rt, params, c.route = &rs[i], query[i], routeNames[i]
			}
		}
		if rt == nil {
			w.Header().Set("Allow", allow)
			s.writeError(c, newError(http.StatusMethodNotAllowed, confpay.CodeMethodNotAllowed, "method not allowed on this path"))
			return
		}
		s.serve(c, rt, params)
	})
}

// serve runs the pipeline for one matched route, which takes the query
// parameters named in params.
func (s *Server) serve(c *call, rt *route, params []string) {
	r := c.r
	// The key is checked before a byte of the body is read, so that a
	// caller without one cannot hold the server reading (httpserver.go).
	if rt.auth {
		if apiErr := s.authenticate(c); apiErr != nil {
			s.refuseUnread(c, apiErr)
			return
		}
		c.arrived, c.at = clock.Mono(), s.clock.Now()
		defer s.recordCall(c)
		if s.testHook != nil {
			s.testHook("authenticated")
		}
	}
	body, err := readBody(r)
	if err != nil {
		s.writeError(c, newError(http.StatusBadRequest, confpay.CodeInvalidRequest, "could not read the request body"))
		return
	}
	if len(body) > MaxBodyBytes {
		s.writeError(c, newError(http.StatusRequestEntityTooLarge, confpay.CodeRequestTooLarge, "request body is over 1 MiB"))
		return
	}
	c.body = body
	if apiErr := checkQuery(r.URL.RawQuery, params); apiErr != nil {
		s.writeError(c, apiErr)
		return
	}
	if rt.auth { // faults and chaos script the /v1 interface, never the admin one
		if f := s.pickFault(c); f != nil {
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
		defer func() {
			s.recordCall(c) // before the client can see the drop and ask the audit
			if s.testHook != nil {
				s.testHook("cut")
			}
			dropConnection(real)
		}()
	case c.reset:
		// Run the call in full, then send part of its answer and close.
		real := c.w
		cw := &discardWriter{header: real.Header().Clone()}
		c.w = cw
		defer func() {
			s.recordCall(c) // before the client can see the reset and ask the audit
			if s.testHook != nil {
				s.testHook("cut")
			}
			resetConnection(real, cw)
		}()
	}
	if rt.auth && r.Method != http.MethodGet {
		s.serveIdempotent(c, rt)
		return
	}
	s.finish(c, rt.h)
}

// checkQuery is the one query rule of every route, /v1 and /_fake: the
// query parses (a ";" separator or a bad "%" escape is refused, never read
// as whatever part of it parsed: param "query"), every parameter has a
// name (param "query"), is one the route takes (allowed) and is given at
// most once (param naming it). Parameters are checked in name order, so
// the answer names the same one every time. An empty query costs nothing.
func checkQuery(raw string, allowed []string) *apiError {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return errInvalid("query", "the query string does not parse: separate parameters with & and escape with %XX")
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case k == "":
			return errInvalid("query", "a query parameter without a name")
		case !slices.Contains(allowed, k):
			if len(allowed) == 0 {
				return errInvalid(k, "unknown query parameter "+strconv.Quote(k)+": this endpoint takes none")
			}
			return errInvalid(k, "unknown query parameter "+strconv.Quote(k)+": this endpoint takes "+strings.Join(allowed, ", "))
		case len(q[k]) != 1:
			return errInvalid(k, k+" may be given once")
		}
	}
	return nil
}

// readBody reads the request body, at most MaxBodyBytes+1 bytes of it,
// as io.ReadAll(io.LimitReader(...)) would, but into a buffer sized from
// Content-Length when the client sent one (up to 64 KiB; a larger body
// grows it as ReadAll does), so that a small body costs one allocation.
func readBody(r *http.Request) ([]byte, error) {
	size := 512 // io.ReadAll's first buffer
	if n := r.ContentLength; n >= 0 && n < 64<<10 {
		size = int(n) + 1 // room to see EOF without growing
	}
	b := make([]byte, 0, size)
	lr := io.LimitedReader{R: r.Body, N: MaxBodyBytes + 1}
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the larger buffer
		}
	}
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
	status, v, err := h(c)
	c.transferID = answeredTransfer(status, v)
	return status, v, err
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
	if t, ok := v.(*confpay.Transfer); ok { // the create answer, without reflection
		var buf [512]byte
		if b, ok := appendTransferJSON(buf[:0], t); ok {
			return status, bytes.Clone(b) // kept for replay: of its size, as below
		}
	}
	buf := renderBuffers.Get().(*bytes.Buffer)
	defer putRenderBuffer(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return http.StatusInternalServerError, []byte(`{"code":"internal_error","message":"could not encode the answer"}` + "\n")
	}
	return status, bytes.Clone(buf.Bytes()) // the answer may be kept for replay: its own copy, of its size
}

// renderBuffers are render's work buffers.
var renderBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putRenderBuffer returns buf to the pool, unless a large answer grew it.
func putRenderBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		buf.Reset()
		renderBuffers.Put(buf)
	}
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
	c.status = status
	s.durableFor(c) // persist.go: nothing is answered before it is durable
	c.w.WriteHeader(status)
	if t, ok := v.(*confpay.Transfer); ok { // without reflection, as render
		var buf [512]byte
		if b, ok := appendTransferJSON(buf[:0], t); ok {
			_, _ = c.w.Write(b)
			return
		}
	}
	_ = json.NewEncoder(c.w).Encode(v)
}

// jsonContentType is the Content-Type header of every body writeRaw
// writes, one slice shared by every answer (net/http only reads it; an
// Add would copy it, its capacity being its length).
var jsonContentType = []string{"application/json"}

func (s *Server) writeRaw(c *call, status int, b []byte) {
	s.durableFor(c) // persist.go: nothing is answered before it is durable
	h := c.w.Header()
	for k, vs := range c.header {
		h[k] = vs
	}
	if b != nil {
		h["Content-Type"] = jsonContentType
	}
	c.status = status
	c.w.WriteHeader(status)
	if b != nil {
		_, _ = c.w.Write(b)
	}
}

// writeError renders any error as the flat error body.
func (s *Server) writeError(c *call, err error) {
	status, body := errorAnswer(c.reqID, err)
	if status == http.StatusInternalServerError && !errors.As(err, new(*apiError)) {
		// A failure of the server's own (an injected 500 is an apiError):
		// the answer says "internal error", the log says why. Error
		// strings never hold a secret.
		s.log.Error("internal error", "request_id", c.reqID, "method", c.r.Method, "path", c.r.URL.Path, "error", err.Error())
	}
	if e, ok := err.(*apiError); ok {
		c.code, c.param = e.body.Code, e.body.Param
		if e.retryAfter != "" {
			c.setHeader("Retry-After", e.retryAfter)
		}
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

// bearerCredential returns the credential of the request's Authorization
// header when there is exactly one such header and it uses the Bearer
// scheme, matched without regard to case (RFC 9110 §11.1): "Bearer",
// "bearer" and "BEARER" all do. Two Authorization headers are refused
// rather than one of them picked. The credential is one token: no space,
// tab or comma.
func bearerCredential(r *http.Request) (string, bool) {
	vs := r.Header.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, rest, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred := strings.TrimLeft(rest, " ")
	if cred == "" || strings.ContainsAny(cred, " \t,") {
		return "", false
	}
	return cred, true
}

// isAdminPath reports whether path is under the /_fake admin interface.
func isAdminPath(path string) bool {
	return path == "/_fake" || strings.HasPrefix(path, "/_fake/")
}

// checkAdminToken answers 401 to an admin request without the admin token,
// when the server has one (WithAdminToken). The hashes are compared in
// constant time; the token never reaches a log or an answer.
func (s *Server) checkAdminToken(r *http.Request) *apiError {
	want := s.opts.adminTokenHash
	if want == nil || !isAdminPath(r.URL.Path) {
		return nil
	}
	cred, ok := bearerCredential(r)
	got := sha256.Sum256([]byte(cred))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !ok {
		return newError(http.StatusUnauthorized, confpay.CodeUnauthorized, "missing or invalid admin token")
	}
	return nil
}
