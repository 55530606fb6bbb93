// Package leakcheck records every HTTP answer a test client receives and
// fails the test if a plaintext figure appears in any of them.
//
// The payments service never returns an amount: not in a transfer, not in
// an event, not in an error. A test wires a Recorder into the SDK client,
// runs its flow, and calls Check with the figures it used:
//
//	rec := leakcheck.New(nil)
//	client := srv.Client(alice.TestKey, confpay.WithHTTPClient(rec.Client()))
//	... create transfers of "1234.56" ...
//	rec.Check(t, "1234.56", "1234560000")
//
// A figure is searched as a whole token: it matches only where the
// characters on either side are not letters, digits, '.', '_' or '-'
// (except a sign before it and a full stop that ends a sentence after it).
// So "100" is found in {"amount":"100"}, "sent 100 USDG", "sent 100." or
// "-100" but not inside a base64url ciphertext such as "aB100xY" nor
// inside "1000", "0.100" or "tr-100".
//
// The Date header, which net/http writes from the wall clock, is not
// searched. Timestamps in bodies are: a short figure such as "20" can match
// the minutes of "09:20:00Z". Use distinctive figures with a fraction, such
// as "20.000123", as the service's own tests do.
package leakcheck

import (
	"bytes"
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
)

// Recorder is an http.RoundTripper that keeps a copy of every response's
// headers and body. It is safe for concurrent use.
type Recorder struct {
	base http.RoundTripper

	mu      sync.Mutex
	answers []answer
}

type answer struct {
	method, path string
	status       int
	header       http.Header
	body         []byte
}

// New returns a Recorder sending requests through base (nil means
// http.DefaultTransport).
func New(base http.RoundTripper) *Recorder {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Recorder{base: base}
}

// Client returns an *http.Client that sends through the Recorder, for
// confpay.WithHTTPClient.
func (r *Recorder) Client() *http.Client {
	return &http.Client{
		Transport:     r,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// RoundTrip sends req and records the answer. The response body is read in
// full and replaced by an in-memory copy, so the caller sees it unchanged.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.answers = append(r.answers, answer{
		method: req.Method, path: req.URL.Path, status: resp.StatusCode,
		header: resp.Header.Clone(), body: body,
	})
	r.mu.Unlock()
	_ = rerr // a short body is passed on as it arrived, and checked as such
	return resp, nil
}

// Len returns how many answers have been recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.answers)
}

// Reset forgets every recorded answer.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.answers = nil
	r.mu.Unlock()
}

// Leak is one place where a figure was found.
type Leak struct {
	Method, Path string // the request
	Status       int    // the answer's status
	Where        string // "body" or "header <Name>"
	Figure       string // the figure found
}

// Find returns every place where one of figures appears as a whole token
// in a recorded answer's headers or body. Empty figures are ignored.
func (r *Recorder) Find(figures ...string) []Leak {
	r.mu.Lock()
	answers := append([]answer(nil), r.answers...)
	r.mu.Unlock()
	var leaks []Leak
	for _, a := range answers {
		names := make([]string, 0, len(a.header))
		for k := range a.header {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, f := range figures {
			if f == "" {
				continue
			}
			for _, k := range names {
				if k == "Date" {
					continue // written by net/http from the wall clock
				}
				if containsToken([]byte(k), f) {
					leaks = append(leaks, Leak{a.method, a.path, a.status, "header name " + k, f})
				}
				for _, v := range a.header[k] {
					if containsToken([]byte(v), f) {
						leaks = append(leaks, Leak{a.method, a.path, a.status, "header " + k, f})
					}
				}
			}
			if containsToken(a.body, f) {
				leaks = append(leaks, Leak{a.method, a.path, a.status, "body", f})
			}
		}
	}
	return leaks
}

// Check fails t for every figure that appears in a recorded answer, and
// fails it too when nothing was recorded (a check over no traffic proves
// nothing).
func (r *Recorder) Check(t testing.TB, figures ...string) {
	t.Helper()
	if r.Len() == 0 {
		t.Errorf("leakcheck: no answers were recorded")
		return
	}
	for _, l := range r.Find(figures...) {
		t.Errorf("leakcheck: figure %q appears in the %s of the answer to %s %s (status %d)",
			l.Figure, l.Where, l.Method, l.Path, l.Status)
	}
}

// Contains reports whether figure appears as a whole token in b. It is the
// matching rule of Check, exported for tests of other channels (webhook
// bodies, logs).
func Contains(b []byte, figure string) bool { return figure != "" && containsToken(b, figure) }

func containsToken(b []byte, f string) bool {
	fb := []byte(f)
	for i := 0; ; {
		j := bytes.Index(b[i:], fb)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(fb)
		if startsToken(b, start) && endsToken(b, end) {
			return true
		}
		i = start + 1
	}
}

// startsToken reports whether a figure may start at b[start]: nothing
// before it continues a token, or only a sign does ("-100" holds 100).
func startsToken(b []byte, start int) bool {
	if start == 0 || !tokenByte(b[start-1]) {
		return true
	}
	return b[start-1] == '-' && (start == 1 || !tokenByte(b[start-2]))
}

// endsToken reports whether a figure may end before b[end]: nothing after
// it continues a token, or only a full stop that ends a sentence ("you
// hold 12.5." holds 12.5; "12.50" and "12.5.1" do not).
func endsToken(b []byte, end int) bool {
	if end == len(b) || !tokenByte(b[end]) {
		return true
	}
	return b[end] == '.' && (end+1 == len(b) || !tokenByte(b[end+1]))
}

// tokenByte reports whether c continues a figure or a base64url string.
func tokenByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '_' || c == '-'
}
