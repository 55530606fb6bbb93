package fakeserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/confpay/confpay-go/fakeserver/internal/memhttp"
	"github.com/google/go-cmp/cmp"
)

// exchangeRecord is what a client observed of one request: everything but
// what differs by nature between a socket and memory (the port in URLs,
// the Date header's value).
type exchangeRecord struct {
	Err              string
	Status           string
	Proto            string
	Header           http.Header
	ContentLength    int64
	TransferEncoding []string
	Close            bool
	Body             string
	BodyErr          string
	Writes           int // httptrace WroteRequest calls: how often it went on the wire
	Reused           []bool
}

// echo is what the parity handlers report of the request they got.
type echo struct {
	Method, RequestURI, Host, Proto, Path, RawQuery string
	Header                                          http.Header
	ContentLength                                   int64
	TransferEncoding                                []string
	Close                                           bool
	Body                                            string
	BodyErr                                         string
}

func echoRequest(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	e := echo{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host, Proto: r.Proto, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header, ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding, Close: r.Close, Body: string(b)}
	if err != nil {
		e.BodyErr = err.Error()
	}
	_ = json.NewEncoder(w).Encode(e)
}

// parityCase is a handler and the requests a client sends it in turn.
type parityCase struct {
	name    string
	handler http.HandlerFunc
	reqs    []func(base string) *http.Request
}

// newReq makes a request; body, when not nil, makes its body afresh.
func newReq(method, target string, body func() io.Reader, hdr ...string) func(string) *http.Request {
	return func(base string) *http.Request {
		var b io.Reader
		if body != nil {
			b = body()
		}
		r, err := http.NewRequest(method, base+target, b)
		if err != nil {
			panic(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		return r
	}
}

// text is a body of known length that can be sent again (GetBody).
func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

// bodyOnce is a body of unknown length (sent chunked) that cannot be sent
// again.
func bodyOnce(s string) func() io.Reader {
	return func() io.Reader { return io.MultiReader(strings.NewReader(s)) }
}

func noBody() io.Reader { return http.NoBody }

func hijackDrop(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Drop") == "" {
		echoRequest(w, r)
		return
	}
	_, _ = io.ReadAll(r.Body)
	dropConnection(w)
}

// dropped counts the requests the "resent after a drop" handler saw.
var dropped atomic.Int32

var parityCases = []parityCase{
	{"request as the handler sees it", echoRequest, []func(string) *http.Request{
		newReq("GET", "/a/b%2Fc?x=1&y=%20", nil, "X-Lower", " padded\t", "x-two", "1", "X-Two", "2", "Accept-Encoding", "identity"),
		newReq("POST", "/p", text(`{"a":1}`), "Content-Type", "application/json", "User-Agent", "mine"),
		newReq("POST", "/p", noBody, "User-Agent", ""),
		newReq("PUT", "/chunked", bodyOnce("abc")),
		newReq("DELETE", "/d", nil),
		newReq("HEAD", "/h", nil),
		func(base string) *http.Request {
			r := newReq("GET", "/close", nil)(base)
			r.Close = true
			r.Host = "example.test:81"
			return r
		},
	}},
	{"framing", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			_, _ = io.WriteString(w, "<html>hi</html>")
		case "/2048":
			_, _ = w.Write(bytes.Repeat([]byte("a"), 2048))
		case "/2049":
			_, _ = w.Write(bytes.Repeat([]byte("a"), 2049))
		case "/flush":
			w.Header().Set("Content-Type", "text/plain")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "after")
		case "/cl":
			w.Header().Set("Content-Length", "3000")
			_, _ = w.Write(bytes.Repeat([]byte("b"), 3000))
		case "/short":
			w.Header().Set("Content-Length", "10")
			_, _ = io.WriteString(w, "12345")
		case "/204":
			w.Header().Set("Content-Type", "x/y")
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "nope")
			w.Header().Set("X-Late", "ignored")
			_ = err
		case "/304":
			w.Header().Set("Content-Type", "x/y")
			w.WriteHeader(http.StatusNotModified)
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		case "/identity":
			w.Header().Set("Transfer-Encoding", "identity")
			_, _ = io.WriteString(w, "until close")
		case "/date":
			w.Header().Set("Date", "yesterday")
			w.WriteHeader(299)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}, []func(string) *http.Request{
		newReq("GET", "/small", nil), newReq("GET", "/2048", nil), newReq("GET", "/2049", nil), newReq("GET", "/flush", nil),
		newReq("GET", "/cl", nil), newReq("GET", "/204", nil), newReq("GET", "/304", nil), newReq("GET", "/date", nil),
		newReq("GET", "/nothing", nil), newReq("HEAD", "/small", nil), newReq("GET", "/close", nil), newReq("GET", "/small", nil),
		newReq("GET", "/identity", nil), newReq("GET", "/short", nil), newReq("GET", "/small", nil),
	}},
	{"unread bodies", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		_, _ = io.WriteString(w, "ok")
	}, []func(string) *http.Request{
		newReq("POST", "/unread", text(strings.Repeat("x", 1000))),
		newReq("POST", "/unread", text(strings.Repeat("x", 300<<10))),
		newReq("POST", "/read", text(strings.Repeat("x", 300<<10))),
		newReq("POST", "/unread", bodyOnce(strings.Repeat("x", 300<<10))),
		newReq("POST", "/unread", text("x"), "Expect", "100-continue"),
	}},
	{"dropped connections", hijackDrop, []func(string) *http.Request{
		newReq("POST", "/drop", text("{}"), "X-Drop", "1"), // a new connection: EOF
		newReq("GET", "/ok", nil),
		newReq("POST", "/drop", text("{}"), "X-Drop", "1"), // reused, not replayable: EOF
		newReq("GET", "/ok", nil),
		newReq("POST", "/drop", bodyOnce("{}"), "X-Drop", "1", "Idempotency-Key", "k"), // no GetBody: EOF
		newReq("GET", "/ok", nil),
		newReq("GET", "/drop", nil, "X-Drop", "1"), // resent once, dropped again: EOF
	}},
	{"resent after a drop", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/drop-once" && dropped.Add(1) == 1 {
			dropConnection(w)
			return
		}
		echoRequest(w, r)
	}, []func(string) *http.Request{
		newReq("GET", "/ok", nil),
		newReq("POST", "/drop-once", text("{}"), "Idempotency-Key", "k"), // reused: resent, answered
	}},
	{"reset after the head", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" {
			cw := &discardWriter{header: http.Header{"X-Request-Id": {"req_1"}}, status: http.StatusCreated}
			resetConnection(w, cw)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}, []func(string) *http.Request{
		newReq("GET", "/ok", nil), newReq("GET", "/reset", nil), newReq("GET", "/ok", nil),
	}},
	{"refused before the body", func(w http.ResponseWriter, r *http.Request) {
		s := &Server{}
		s.refuseUnread(&call{s: s, w: w, r: r, reqID: "req_1", header: http.Header{}}, errNotFound("no"))
	}, []func(string) *http.Request{
		newReq("POST", "/x", text(strings.Repeat(" ", 600<<10))), newReq("GET", "/x", nil),
	}},
	{"panics", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/late":
			w.Header().Set("Content-Length", "5000")
			_, _ = w.Write(bytes.Repeat([]byte("c"), 4000))
			panic(http.ErrAbortHandler)
		case "/panic":
			panic("boom")
		}
		_, _ = io.WriteString(w, "ok")
	}, []func(string) *http.Request{
		newReq("GET", "/panic", nil), newReq("GET", "/ok", nil), newReq("POST", "/abort", nil),
		newReq("GET", "/ok", nil), newReq("GET", "/late", nil), newReq("GET", "/ok", nil), newReq("GET", "/abort", nil),
	}},
	{"client errors", echoRequest, []func(string) *http.Request{
		newReq("GET", "/ok", nil, "Bad Name", "v"),
		newReq("GET", "/ok", nil, "X-Bad", "a\r\nb"),
		func(base string) *http.Request {
			r := newReq("POST", "/ok", text("abc"))(base)
			r.ContentLength = 10
			return r
		},
		newReq("GET", "/ok", nil, "X-Big", strings.Repeat("h", 1<<20+8192)),
		func(base string) *http.Request {
			r := newReq("GET", "/ok", nil)(base)
			r.URL.Scheme = "ftp"
			return r
		},
	}},
}

// record sends each request of c through hc in turn.
func (c parityCase) record(t *testing.T, hc *http.Client, base string) []exchangeRecord {
	t.Helper()
	dropped.Store(0)
	var out []exchangeRecord
	for _, mk := range c.reqs {
		req := mk(base)
		var rec exchangeRecord
		var writes atomic.Int32 // net/http may call WroteRequest after Do returns
		trace := &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { writes.Add(1) },
			GotConn:      func(i httptrace.GotConnInfo) { rec.Reused = append(rec.Reused, i.Reused) },
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := hc.Do(req)
		rec.Writes = int(writes.Load())
		if req.ContentLength >= memhttp.MaxPostHandlerRead || req.Body != nil && strings.HasPrefix(req.URL.Path, "/unread") {
			// Whether net/http's client has written a large body the
			// server does not read when the answer arrives depends on the
			// socket's buffers; in memory it always has.
			rec.Writes = -1
		}
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			rec.Err = err.Error()
			out = append(out, rec)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			rec.BodyErr = err.Error()
		}
		rec.Body = strings.ReplaceAll(string(b), strings.TrimPrefix(base, "http://"), "HOST")
		if resp.Header.Get("Date") != "" && resp.Header.Get("Date") != "yesterday" {
			if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil {
				t.Errorf("Date %q: %v", resp.Header.Get("Date"), err)
			}
			resp.Header.Set("Date", "now")
		}
		rec.Status, rec.Proto, rec.Header, rec.ContentLength, rec.TransferEncoding, rec.Close =
			resp.Status, resp.Proto, resp.Header, resp.ContentLength, resp.TransferEncoding, resp.Close
		out = append(out, rec)
	}
	return out
}

// TestMemTransportParity sends the same requests to the same handlers
// through net/http over loopback and through memhttp.Transport: the client and
// the handler must see the same thing, request by request (status,
// headers, framing, body, errors, how often the request went out and on
// which connection).
func TestMemTransportParity(t *testing.T) {
	log.SetOutput(io.Discard) // net/http logs the panics, as memhttp.Transport does
	defer log.SetOutput(os.Stderr)
	for _, c := range parityCases {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			lo := serveOn(ln, "", c.handler)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
			want := c.record(t, hc, "http://"+lo.addr.String())
			hc.CloseIdleConnections()
			lo.close()

			mt := memhttp.New(c.handler)
			got := c.record(t, &http.Client{Transport: mt}, "http://"+lo.addr.String())
			mt.Close()
			for i := range want {
				if d := cmp.Diff(want[i], got[i]); d != "" {
					t.Errorf("request %d: loopback (-) vs in memory (+):\n%s", i, d)
				}
			}
		})
	}
}

// TestMemTransportCancel checks that the caller's context, the client's
// timeout and Request.Cancel end the wait at once and cancel the
// handler's context, and that close drops a request in flight, waits for
// its handler, and refuses requests from then on.
func TestMemTransportCancel(t *testing.T) {
	entered := make(chan struct{})
	exited := make(chan error, 1) // the handler's context error as it leaves
	release := make(chan struct{})
	mt := memhttp.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
		exited <- r.Context().Err()
	}))
	hc := &http.Client{Transport: mt}
	checkExit := func(what string) {
		t.Helper()
		if err := <-exited; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: the handler's context ended with %v, want canceled", what, err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-entered; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/", nil)
	if _, err := hc.Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	checkExit("cancelled")

	timed := &http.Client{Transport: mt, Timeout: 20 * time.Millisecond}
	go func() { <-entered }()
	// A timeout: net/http's client adds "(Client.Timeout exceeded ...)" to
	// the message when its own timer has fired first.
	if _, err := timed.Get("http://x/"); !isTimeout(err) {
		t.Errorf("timed out: %v", err)
	}
	checkExit("timed out")

	legacy := make(chan struct{})
	req, _ = http.NewRequest("GET", "http://x/", nil)
	req.Cancel = legacy //lint:ignore SA1019 the deprecated field still works
	go func() { <-entered; close(legacy) }()
	if _, err := hc.Do(req); err == nil || !strings.Contains(err.Error(), "request canceled") {
		t.Errorf("Request.Cancel: %v", err)
	}
	checkExit("Request.Cancel")

	// close with a request in flight: the client sees the connection
	// drop, close returns once the handler has.
	done := make(chan error, 1)
	go func() { _, err := hc.Get("http://x/"); done <- err }()
	<-entered
	closed := make(chan struct{})
	go func() { mt.Close(); close(closed) }()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("a request in flight at close: %v, want EOF", err)
	}
	checkExit("close") // before close returns: exited has room for one
	<-closed
	if _, err := hc.Get("http://x/"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after close: %v, want connection refused", err)
	}
	close(release)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMemTransportIdleTimeout checks the keep-alive pool against the
// clock, in a synctest bubble: a connection idle for less than
// IdleConnTimeout is reused, so a dropped replayable request is resent
// once; one idle longer has left the pool, so the drop reaches the caller.
func TestMemTransportIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mt := memhttp.New(http.HandlerFunc(hijackDrop))
		defer mt.Close()
		hc := &http.Client{Transport: mt}
		for _, idle := range []time.Duration{memhttp.IdleConnTimeout - time.Second, memhttp.IdleConnTimeout + time.Second} {
			resp, err := hc.Get("http://x/ok")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			time.Sleep(idle)
			var writes int
			var reused []bool
			trace := &httptrace.ClientTrace{
				WroteRequest: func(httptrace.WroteRequestInfo) { writes++ },
				GotConn:      func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
			}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", "http://x/drop", nil)
			req.Header.Set("X-Drop", "1")
			_, err = hc.Do(req)
			want := []bool{false}
			if idle < memhttp.IdleConnTimeout {
				want = []bool{true, false}
			}
			if !errors.Is(err, io.EOF) || writes != len(want) || !slices.Equal(reused, want) {
				t.Errorf("after %v idle: %v, %d writes on connections reused %v; want EOF, %d writes on %v", idle, err, writes, reused, len(want), want)
			}
		}
	})
}
