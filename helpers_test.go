package confpay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testKey is a well-formed test-network key; it must never show up in an
// error, a log line or a printed value.
const testKey = "hc_test_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh"

// captured is one request as the test server saw it.
type captured struct {
	Method string
	Path   string // escaped path
	Query  string
	Header http.Header
	Body   []byte
}

// recorder keeps every request a test server receives.
type recorder struct {
	mu   sync.Mutex
	reqs []captured
}

func (r *recorder) add(req *http.Request) captured {
	body, _ := io.ReadAll(req.Body)
	c := captured{Method: req.Method, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery, Header: req.Header.Clone(), Body: body}
	r.mu.Lock()
	r.reqs = append(r.reqs, c)
	r.mu.Unlock()
	return c
}

func (r *recorder) all() []captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]captured(nil), r.reqs...)
}

// newTestClient starts h on an httptest server and returns a client aimed
// at it whose retries do not wait.
func newTestClient(t testing.TB, h http.HandlerFunc, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(testKey, append([]Option{WithBaseURL(srv.URL)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(int, *http.Response) time.Duration { return 0 }
	return c
}

// golden reads a file under testdata/.
func golden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonDiff compares two JSON texts by value; numbers are compared as their
// text, never through a float.
func jsonDiff(t testing.TB, want, got []byte) string {
	t.Helper()
	decode := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("bad JSON %q: %v", b, err)
		}
		return v
	}
	return cmp.Diff(decode(want), decode(got))
}

// writeJSON answers with status and body, and a request id.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_test0001")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func tsp(s string) *time.Time { t := ts(s); return &t }

var httpResponse422 = http.Response{StatusCode: 422, Header: http.Header{}}
