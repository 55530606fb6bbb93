package fakeserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/internal/openapicheck"
)

// The OpenAPI documents the whole test suite is checked against: every
// request any test sends to any server of this package, every answer, and
// every webhook delivery body (TestMain installs the recorder).
var (
	v1Doc    = openapicheck.MustLoad(confpay.OpenAPI())
	adminDoc = openapicheck.MustLoad(AdminOpenAPI())
	recorded = &recorder{}
)

// recorder collects what does not match the documents.
type recorder struct {
	mu         sync.Mutex
	violations []string
	exchanges  int
	deliveries int
	shapes     map[string]int // exchanges seen per method, route and status
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, err.Error())
}

// linzUserAgent marks the requests of TestLinearizable (tens of
// thousands, in a few shapes), and BulkUserAgent those of the tests that
// build a large state through the handler (TestDataDirRestartTime): of
// those, samplesPerShape per method, route and status are checked, since
// validation costs far more than the exchange (about 1 ms against 40 µs
// for a transfer create). Every other request of the suite is checked.
const linzUserAgent = "confpay-linearizability-test"

// BulkUserAgent is the User-Agent of a test's bulk requests: the OpenAPI
// recorder checks only a sample of them (linzUserAgent).
const BulkUserAgent = "confpay-bulk-test"

// samplesPerShape is how many of TestLinearizable's exchanges of one
// method, route and status are checked.
const samplesPerShape = 64

// idSegment is a path segment that is an id (tr_..., atx_..., wh_...).
var idSegment = regexp.MustCompile(`/[a-z]+_[A-Za-z0-9]+`)

// sample reports whether this exchange is to be checked.
func (r *recorder) sample(method, path string, status int) bool {
	shape := fmt.Sprint(method, " ", idSegment.ReplaceAllString(path, "/{id}"), " ", status)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shapes == nil {
		r.shapes = map[string]int{}
	}
	r.shapes[shape]++
	return r.shapes[shape] <= samplesPerShape
}

func (r *recorder) count(delivery bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if delivery {
		r.deliveries++
	} else {
		r.exchanges++
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	// Benchmarks measure the server, not the check (which costs
	// milliseconds a request): with -bench the recorder stays off.
	record := !benchmarking()
	if record {
		testHooks.handler = recordHandler
		testHooks.transport = recordTransport
	}
	cleanData := dataDirEverywhere()
	code := m.Run()
	testHooks.handler, testHooks.transport, testHooks.dataDir = nil, nil, nil
	cleanData()
	if record && code == 0 && !runFiltered() {
		// The whole suite ran: every operation of the document must have
		// been reached with a success, so the document lists nothing the
		// server lacks.
		for _, op := range v1Doc.Unexercised() {
			if deviant(op) {
				continue
			}
			recorded.fail(fmt.Errorf("%s: documented in openapi.yaml, never answered with a 2xx by the test suite", op))
		}
		for _, op := range adminDoc.Unexercised() {
			recorded.fail(fmt.Errorf("%s: documented in openapi-fake.yaml, never answered with a 2xx by the test suite", op))
		}
	}
	if len(recorded.violations) > 0 {
		fmt.Fprintf(os.Stderr, "--- FAIL: the server and its OpenAPI documents disagree (%d):\n", len(recorded.violations))
		for _, v := range recorded.violations {
			fmt.Fprintf(os.Stderr, "    %s\n", strings.ReplaceAll(v, "\n", "\n    "))
		}
		code = 1
	} else if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "openapi: %d exchanges and %d webhook deliveries matched the documents\n", recorded.exchanges, recorded.deliveries)
	}
	os.Exit(code)
}

// benchmarking reports whether -bench selected benchmarks to run.
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// runFiltered reports whether -run or -skip narrowed the suite.
func runFiltered() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// docFor picks the document that covers a path.
func docFor(path string) *openapicheck.Doc {
	// GET / leads to the dashboard: a convenience of the /_fake side,
	// documented there; /v1 has no such path.
	if strings.HasPrefix(path, "/_fake/") || path == "/_fake" || path == "/" {
		return adminDoc
	}
	return v1Doc
}

// recordHandler wraps a server's handler: it keeps a copy of the request
// body and of the answer, and checks the exchange once answered.
func recordHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Keep what the handler reads of the body, without reading it
		// first: a request refused before its body is read (a bad key)
		// must not wait for a body that may never end.
		var read bytes.Buffer
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(r.Body, &read), r.Body}
		rw := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		body := read.Bytes()
		if rw.hijacked {
			return // a dropped or reset connection: no answer to check
		}
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		recorded.count(false)
		if ua := r.UserAgent(); (ua == linzUserAgent || ua == BulkUserAgent) && !recorded.sample(r.Method, r.URL.Path, status) {
			return
		}
		ex := openapicheck.Exchange{
			Method: r.Method, URL: r.URL, ReqHeader: r.Header, ReqBody: body,
			Status: status, Header: w.Header(), Body: rw.body.Bytes(),
		}
		if err := checkExchange(ex); err != nil {
			recorded.fail(err)
		}
	})
}

// checkExchange checks one exchange against the document for its path.
// Its own hook, so that the mutation tests can call it on answers they
// changed.
func checkExchange(ex openapicheck.Exchange) error {
	if ex.Status == http.StatusServiceUnavailable && bytes.Contains(ex.Body, []byte(`"request_abandoned"`)) {
		return nil // a request held by a delay fault whose client has gone: nobody reads it
	}
	if err := docFor(ex.URL.Path).Check(ex); err != nil {
		for _, d := range knownDeviations {
			if strings.Contains(err.Error(), d.match) {
				return nil // reported by its own failing test (d.test)
			}
		}
		return err
	}
	// Every timestamp is UTC and whole milliseconds (decisions.md, Wire
	// conventions).
	if err := checkTimestamps(ex.Body); err != nil {
		return fmt.Errorf("%s %s answered %d: %v", ex.Method, ex.URL.Path, ex.Status, err)
	}
	// Figures never sit in a cache (decisions.md, Balances).
	if ex.URL.Path == "/v1/accounts/me/balances" && ex.Status == http.StatusOK &&
		bytes.Contains(ex.Body, []byte(`"amount"`)) && ex.Header.Get("Cache-Control") != "no-store" {
		return fmt.Errorf("GET /v1/accounts/me/balances: an answer with figures without Cache-Control: no-store")
	}
	return nil
}

// knownDeviations are the places where the server does not yet follow
// decisions.md, each shown by a test of its own that fails until the
// server is fixed; the suite-wide check does not report them again.
var knownDeviations = []struct{ op, match, test string }{}

// deviant reports whether an operation is only ever answered in a way a
// known deviation covers.
func deviant(op string) bool {
	for _, d := range knownDeviations {
		if d.op == op {
			return true
		}
	}
	return false
}

// recordingWriter tees an answer.
type recordingWriter struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (w *recordingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets the drop_after_commit and reset_after_commit faults reach
// the connection.
func (w *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	w.hijacked = true
	return hj.Hijack()
}

// recordTransport wraps the webhook delivery transport: every delivery
// body and its headers are checked against the document's webhooks.
func recordTransport(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if err := v1Doc.CheckDelivery(r.Header, body); err != nil {
				recorded.fail(err)
			}
			if err := checkTimestamps(body); err != nil {
				recorded.fail(fmt.Errorf("webhook delivery %s: %v", r.Header.Get("X-Service-Event-Id"), err))
			}
			recorded.count(true)
		}
		return next.RoundTrip(r)
	})
}

// timestampLike is a JSON string that is meant as an instant.
var timestampLike = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T`)

// checkTimestamps finds every string of a JSON body that looks like an
// instant and reports the first that is not RFC 3339 in UTC with a whole
// number of milliseconds, naming its path. A body that is not JSON has
// none.
func checkTimestamps(body []byte) error {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var walk func(path string, v any) error
	walk = func(path string, v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if err := walk(path+"."+k, e); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range v {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
					return err
				}
			}
		case string:
			if !timestampLike.MatchString(v) {
				return nil
			}
			t, err := time.Parse(time.RFC3339Nano, v)
			switch {
			case err != nil:
				return fmt.Errorf("%s: %q is not RFC 3339: %v", path, v, err)
			case !strings.HasSuffix(v, "Z"):
				return fmt.Errorf("%s: %q is not in UTC (Z)", path, v)
			case t.Nanosecond()%int(time.Millisecond) != 0:
				return fmt.Errorf("%s: %q is finer than whole milliseconds", path, v)
			}
		}
		return nil
	}
	return walk("$", v)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOpenAPIServed: both documents are served, byte for byte.
func TestOpenAPIServed(t *testing.T) {
	s := New(t)
	if _, err := s.CreateAccount(AccountParams{Handle: "@alice"}); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(s.URL() + "/_fake/accounts/%40alice"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /_fake/accounts/%%40alice: %v %v", resp, err)
	}
	for path, want := range map[string][]byte{"/_fake/openapi.yaml": confpay.OpenAPI(), "/_fake/openapi-fake.yaml": AdminOpenAPI()} {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(got, want) {
			t.Errorf("GET %s: %d %q, %d bytes; want 200 application/yaml, the document (%d bytes)", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(got), len(want))
		}
	}
}

// TestOpenAPIMutation shows that the check catches a member missing on
// either side: a real answer passes; the same answer without a member the
// document requires fails; and the real answer fails against a document
// from which that member was removed.
func TestOpenAPIMutation(t *testing.T) {
	s := New(t)
	a, err := s.CreateAccount(AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", s.URL()+"/v1/accounts/me", nil)
	req.Header.Set("Authorization", "Bearer "+a.TestKey.Reveal())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ex := openapicheck.Exchange{Method: "GET", URL: req.URL, ReqHeader: req.Header, Status: resp.StatusCode, Header: resp.Header, Body: body}
	if err := checkExchange(ex); err != nil {
		t.Fatalf("the real answer fails: %v", err)
	}

	// The server drops a member.
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "handle")
	ex.Body, _ = json.Marshal(m)
	if err := checkExchange(ex); err == nil || !strings.Contains(err.Error(), "handle") {
		t.Errorf("an answer without handle: %v, want an error naming handle", err)
	}
	ex.Body = body

	// The server adds a member.
	m["handle"], m["balance"] = "@alice", "12.5"
	ex.Body, _ = json.Marshal(m)
	if err := checkExchange(ex); err == nil || !strings.Contains(err.Error(), "balance") {
		t.Errorf("an answer with an extra balance: %v, want an error naming balance", err)
	}

	// The document drops a member.
	doc := openapicheck.MustLoad(confpay.OpenAPI())
	acct := doc.T.Components.Schemas["Account"].Value
	delete(acct.Properties, "handle")
	acct.Required = slices.DeleteFunc(acct.Required, func(s string) bool { return s == "handle" })
	ex.Body = body
	if err := doc.Check(ex); err == nil || !strings.Contains(err.Error(), "handle") {
		t.Errorf("the real answer against a document without handle: %v, want an error naming handle", err)
	}
}

// TestOpenAPIDeliveryMutation: a webhook body missing a member fails.
func TestOpenAPIDeliveryMutation(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Service-Signature", strings.Repeat("ab", 32))
	h.Set("X-Service-Event-Id", "evt_1")
	h.Set("X-Service-Delivery-Attempt", "1")
	good := `{"event":"transfer.confirmed","event_id":"evt_1","account":"@alice","direction":"sent","counterparty":"@bob","asset":"USDG","confidential":true,"tx_hash":"0x` + strings.Repeat("0", 64) + `","transfer_id":"tr_1","timestamp":"2026-01-05T09:00:00Z"}`
	if err := v1Doc.CheckDelivery(h, []byte(good)); err != nil {
		t.Fatalf("a good delivery fails: %v", err)
	}
	if err := v1Doc.CheckDelivery(h, []byte(strings.Replace(good, `"direction":"sent",`, "", 1))); err == nil {
		t.Error("a delivery without direction passes")
	}
	if err := v1Doc.CheckDelivery(h, []byte(strings.Replace(good, `"asset":"USDG"`, `"asset":"USDG","amount":"1"`, 1))); err == nil {
		t.Error("a delivery with an amount passes")
	}
	h.Del("X-Service-Signature")
	if err := v1Doc.CheckDelivery(h, []byte(good)); err == nil {
		t.Error("a delivery without X-Service-Signature passes")
	}
}

// dataDirEnv set to 1 runs the whole suite with every server on a data
// directory of its own (WithDataDir and WithDataDirNoSync, unless the
// test names a directory): .ci/run does so once. The returned func
// removes the directories.
const dataDirEnv = "CONFPAY_TEST_DATA_DIR"

func dataDirEverywhere() (clean func()) {
	if os.Getenv(dataDirEnv) != "1" {
		return func() {}
	}
	root, err := os.MkdirTemp("", "confpay-fakeserver-test-")
	if err != nil {
		panic(err)
	}
	testHooks.dataDir = func() string {
		d, err := os.MkdirTemp(root, "srv-")
		if err != nil {
			panic(err)
		}
		return d
	}
	return func() { _ = os.RemoveAll(root) }
}
