package webhookverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// delivery builds a signed POST the way the service sends one.
func delivery(t *testing.T, secret string, body []byte) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(SignatureHeader, Sign(secret, body))
	r.Header.Set(EventIDHeader, "evt_header_only")
	r.Header.Set(AttemptHeader, "1")
	return r
}

func eventBody(t *testing.T, id string) []byte {
	t.Helper()
	ev := sampleEvents()[1].(*TransferEvent)
	c := *ev
	c.EventID = id
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recorder counts calls to the next function.
type recorder struct {
	calls  atomic.Int32
	status int // what next answers; 0 writes nothing
}

func (rec *recorder) next(w http.ResponseWriter, _ *http.Request, _ Event) {
	rec.calls.Add(1)
	if rec.status != 0 {
		w.WriteHeader(rec.status)
	}
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerDeliversVerifiedEvent(t *testing.T) {
	body := eventBody(t, "evt_ok")
	var got Event
	var raw, reread []byte
	h := Handler(HandlerOptions{Secrets: []string{testSecret}}, func(w http.ResponseWriter, r *http.Request, ev Event) {
		got = ev
		raw = Body(r)
		var err error
		reread, err = io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		io.WriteString(w, "thanks")
	})
	w := serve(h, delivery(t, testSecret, body))
	if w.Code != http.StatusOK || w.Body.String() != "thanks" {
		t.Fatalf("status %d body %q, want 200 from the handler", w.Code, w.Body)
	}
	want, err := ParseEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event mismatch (-want +got):\n%s", diff)
	}
	if !bytes.Equal(raw, body) || !bytes.Equal(reread, body) {
		t.Errorf("Body(r) = %q, r.Body = %q, want the exact delivered bytes", raw, reread)
	}
	if Body(httptest.NewRequest(http.MethodPost, "/", nil)) != nil {
		t.Error("Body of a request outside Handler is not nil")
	}
}

func TestHandlerMethodNotAllowed(t *testing.T) {
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}}, rec.next)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodHead, http.MethodDelete} {
		body := eventBody(t, "evt_m")
		r := delivery(t, testSecret, body)
		r.Method = m
		w := serve(h, r)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost {
			t.Errorf("%s: status %d Allow %q, want 405 Allow POST", m, w.Code, w.Header().Get("Allow"))
		}
	}
	if n := rec.calls.Load(); n != 0 {
		t.Errorf("handler called %d times", n)
	}
}

func TestHandlerRejectsBadSignatures(t *testing.T) {
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}}, rec.next)
	body := eventBody(t, "evt_sig")
	good := Sign(testSecret, body)
	tests := map[string]func(r *http.Request){
		"missing":    func(r *http.Request) { r.Header.Del(SignatureHeader) },
		"empty":      func(r *http.Request) { r.Header.Set(SignatureHeader, "") },
		"truncated":  func(r *http.Request) { r.Header.Set(SignatureHeader, good[:63]) },
		"over-long":  func(r *http.Request) { r.Header.Set(SignatureHeader, good+"0") },
		"not hex":    func(r *http.Request) { r.Header.Set(SignatureHeader, strings.Repeat("x", 64)) },
		"wrong key":  func(r *http.Request) { r.Header.Set(SignatureHeader, Sign("whsec_other", body)) },
		"wrong body": func(r *http.Request) { r.Header.Set(SignatureHeader, Sign(testSecret, append(body, ' '))) },
		"header only": func(r *http.Request) {
			r.Header.Set(SignatureHeader, Sign(testSecret, []byte(r.Header.Get(EventIDHeader))))
		},
	}
	for name, mutate := range tests {
		r := delivery(t, testSecret, body)
		mutate(r)
		w := serve(h, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, w.Code)
		}
		if got := w.Body.String(); got != "Unauthorized\n" {
			t.Errorf("%s: body %q, want only the status text", name, got)
		}
	}
	// Tampering after signing.
	r := delivery(t, testSecret, body)
	tampered := bytes.Replace(body, []byte("@bob"), []byte("@eve"), 1)
	r.Body = io.NopCloser(bytes.NewReader(tampered))
	if w := serve(h, r); w.Code != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d, want 401", w.Code)
	}
	if n := rec.calls.Load(); n != 0 {
		t.Errorf("handler called %d times for bad signatures", n)
	}
}

func TestHandlerRotation(t *testing.T) {
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{"whsec_old", testSecret}}, rec.next)
	if w := serve(h, delivery(t, testSecret, eventBody(t, "evt_r1"))); w.Code != http.StatusOK {
		t.Errorf("signed with the second secret: status %d, want 200", w.Code)
	}
	if w := serve(h, delivery(t, "whsec_old", eventBody(t, "evt_r2"))); w.Code != http.StatusOK {
		t.Errorf("signed with the first secret: status %d, want 200", w.Code)
	}
	if w := serve(h, delivery(t, "whsec_neither", eventBody(t, "evt_r3"))); w.Code != http.StatusUnauthorized {
		t.Errorf("signed with neither: status %d, want 401", w.Code)
	}
	if n := rec.calls.Load(); n != 2 {
		t.Errorf("handler called %d times, want 2", n)
	}
}

func TestHandlerUnparseableBody(t *testing.T) {
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}}, rec.next)
	for name, body := range map[string][]byte{
		"empty":            {},
		"not JSON":         []byte("hello"),
		"missing event_id": []byte(`{"event":"transfer.confirmed"}`),
		"wrong type":       []byte(`{"event":"transfer.confirmed","event_id":"e","confidential":1}`),
	} {
		w := serve(h, delivery(t, testSecret, body))
		if w.Code != http.StatusBadRequest || w.Body.String() != "Bad Request\n" {
			t.Errorf("%s: status %d body %q, want a bare 400", name, w.Code, w.Body)
		}
	}
	if n := rec.calls.Load(); n != 0 {
		t.Errorf("handler called %d times", n)
	}
}

// trackedBody reports how much of the body is left unread.
type trackedBody struct {
	*bytes.Reader
	closed bool
}

func (b *trackedBody) Close() error { b.closed = true; return nil }

func TestHandlerBodyLimit(t *testing.T) {
	const limit = 4096
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, MaxBodyBytes: limit}, rec.next)

	// Exactly at the cap: accepted (JSON allows trailing whitespace).
	body := eventBody(t, "evt_cap")
	atCap := append(body, bytes.Repeat([]byte(" "), limit-len(body))...)
	if w := serve(h, delivery(t, testSecret, atCap)); w.Code != http.StatusOK {
		t.Fatalf("body of exactly MaxBodyBytes: status %d, want 200", w.Code)
	}

	for _, size := range []int{limit + 1, limit + limit/2, 2 * limit} {
		for _, knownLength := range []bool{true, false} {
			big := append(body, bytes.Repeat([]byte(" "), size-len(body))...)
			r := delivery(t, testSecret, big) // validly signed: only the size is wrong
			tb := &trackedBody{Reader: bytes.NewReader(big)}
			r.Body = tb
			r.ContentLength = int64(len(big))
			if !knownLength {
				r.ContentLength = -1
			}
			w := serve(h, r)
			if w.Code != http.StatusBadRequest || w.Body.String() != "Bad Request\n" {
				t.Errorf("size %d: status %d body %q, want a bare 400", size, w.Code, w.Body)
			}
			if tb.Len() != 0 {
				t.Errorf("size %d (length known: %v): %d bytes left undrained", size, knownLength, tb.Len())
			}
			if w.Header().Get("Connection") == "close" {
				t.Errorf("size %d: connection closed although the body was drained", size)
			}
		}
	}

	// Far beyond the cap: read no more than another cap, then close.
	for _, knownLength := range []bool{true, false} {
		huge := bytes.Repeat([]byte(" "), 10*limit)
		r := delivery(t, testSecret, huge)
		tb := &trackedBody{Reader: bytes.NewReader(huge)}
		r.Body = tb
		if !knownLength {
			r.ContentLength = -1
		}
		w := serve(h, r)
		if w.Code != http.StatusBadRequest || w.Header().Get("Connection") != "close" {
			t.Errorf("huge body (length known: %v): status %d Connection %q, want 400 and close", knownLength, w.Code, w.Header().Get("Connection"))
		}
		if read := len(huge) - tb.Len(); read > 2*limit+1 {
			t.Errorf("huge body (length known: %v): read %d bytes, want at most %d", knownLength, read, 2*limit+1)
		}
	}
	if n := rec.calls.Load(); n != 1 {
		t.Errorf("handler called %d times, want 1 (only the body at the cap)", n)
	}
}

func TestHandlerDefaultBodyLimit(t *testing.T) {
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}}, rec.next)
	body := eventBody(t, "evt_def")
	big := append(body, bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1-len(body))...)
	if w := serve(h, delivery(t, testSecret, big)); w.Code != http.StatusBadRequest {
		t.Errorf("1 MiB + 1 byte: status %d, want 400", w.Code)
	}
	if w := serve(h, delivery(t, testSecret, big[:DefaultMaxBodyBytes])); w.Code != http.StatusOK {
		t.Errorf("1 MiB: status %d, want 200", w.Code)
	}
}

func TestHandlerDuplicateDelivery(t *testing.T) {
	rec := &recorder{}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, Store: NewMemoryStore(0)}, rec.next)
	body := eventBody(t, "evt_dup")
	for attempt := 1; attempt <= 3; attempt++ {
		r := delivery(t, testSecret, body)
		r.Header.Set(AttemptHeader, fmt.Sprint(attempt))
		if w := serve(h, r); w.Code != http.StatusOK {
			t.Fatalf("attempt %d: status %d, want 200", attempt, w.Code)
		}
	}
	if n := rec.calls.Load(); n != 1 {
		t.Fatalf("handler called %d times for one event, want 1", n)
	}
	// A different event with the same (unsigned) header id still goes through.
	if w := serve(h, delivery(t, testSecret, eventBody(t, "evt_other"))); w.Code != http.StatusOK {
		t.Fatalf("second event: status %d", w.Code)
	}
	if n := rec.calls.Load(); n != 2 {
		t.Fatalf("handler called %d times for two events, want 2", n)
	}
}

// TestHandlerConcurrentDuplicates delivers one event from many goroutines
// while the first delivery is still inside the handler.
func TestHandlerConcurrentDuplicates(t *testing.T) {
	const n = 16
	var calls atomic.Int32
	entered := make(chan struct{})
	release := make(chan struct{})
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, Store: NewMemoryStore(0)},
		func(w http.ResponseWriter, r *http.Request, ev Event) {
			if calls.Add(1) == 1 {
				close(entered)
			}
			<-release
		})
	body := eventBody(t, "evt_conc")
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { codes <- serve(h, delivery(t, testSecret, body)).Code })
	}
	<-entered
	// Every other delivery answers while the first is held in the handler.
	for i := 0; i < n-1; i++ {
		if c := <-codes; c != http.StatusConflict {
			t.Errorf("concurrent duplicate answered %d, want 409", c)
		}
	}
	close(release)
	wg.Wait()
	if c := <-codes; c != http.StatusOK {
		t.Errorf("first delivery answered %d, want 200", c)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler called %d times, want 1", got)
	}
	if w := serve(h, delivery(t, testSecret, body)); w.Code != http.StatusOK || calls.Load() != 1 {
		t.Errorf("later retry: status %d, calls %d; want 200 and still 1", w.Code, calls.Load())
	}
}

func TestHandlerFailureAllowsRetry(t *testing.T) {
	rec := &recorder{status: http.StatusServiceUnavailable}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, Store: NewMemoryStore(0)}, rec.next)
	body := eventBody(t, "evt_retry")
	if w := serve(h, delivery(t, testSecret, body)); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("failing handler: status %d, want its 503", w.Code)
	}
	rec.status = http.StatusNoContent
	if w := serve(h, delivery(t, testSecret, body)); w.Code != http.StatusNoContent {
		t.Fatalf("retry: status %d, want 204 from the handler", w.Code)
	}
	if w := serve(h, delivery(t, testSecret, body)); w.Code != http.StatusOK {
		t.Fatalf("after success: status %d, want 200", w.Code)
	}
	if n := rec.calls.Load(); n != 2 {
		t.Errorf("handler called %d times, want 2 (failure, then success)", n)
	}
}

func TestHandlerPanicReleasesClaim(t *testing.T) {
	var calls int
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, Store: NewMemoryStore(0)},
		func(w http.ResponseWriter, r *http.Request, ev Event) {
			calls++
			if calls == 1 {
				panic("handler bug")
			}
		})
	body := eventBody(t, "evt_panic")
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic was swallowed")
			}
		}()
		serve(h, delivery(t, testSecret, body))
	}()
	if w := serve(h, delivery(t, testSecret, body)); w.Code != http.StatusOK || calls != 2 {
		t.Errorf("retry after panic: status %d calls %d, want 200 and 2", w.Code, calls)
	}
}

// failingStore fails Claim or Finish.
type failingStore struct {
	claimErr, finishErr error
	finished            []bool
}

func (s *failingStore) Claim(context.Context, string) (Claim, error) { return ClaimNew, s.claimErr }
func (s *failingStore) Finish(_ context.Context, _ string, ok bool) error {
	s.finished = append(s.finished, ok)
	return s.finishErr
}

func TestHandlerStoreErrors(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	rec := &recorder{}
	st := &failingStore{claimErr: errors.New("db down")}
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, Store: st, ErrorLog: logger}, rec.next)
	if w := serve(h, delivery(t, testSecret, eventBody(t, "evt_s"))); w.Code != http.StatusInternalServerError {
		t.Errorf("claim error: status %d, want 500", w.Code)
	}
	if rec.calls.Load() != 0 || len(st.finished) != 0 {
		t.Errorf("claim error: handler calls %d, finishes %v; want none", rec.calls.Load(), st.finished)
	}
	if !strings.Contains(logs.String(), "db down") || !strings.Contains(logs.String(), "evt_s") {
		t.Errorf("claim error not logged: %q", logs.String())
	}

	st.claimErr, st.finishErr = nil, errors.New("write failed")
	logs.Reset()
	if w := serve(h, delivery(t, testSecret, eventBody(t, "evt_s"))); w.Code != http.StatusOK {
		t.Errorf("finish error: status %d, want the handler's 200", w.Code)
	}
	if diff := cmp.Diff([]bool{true}, st.finished); diff != "" {
		t.Errorf("finish calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs.String(), "write failed") {
		t.Errorf("finish error not logged: %q", logs.String())
	}
}

func TestHandlerLogsWithoutSecrets(t *testing.T) {
	var logs bytes.Buffer
	h := Handler(HandlerOptions{Secrets: []string{testSecret}, ErrorLog: slog.New(slog.NewJSONHandler(&logs, nil))},
		(&recorder{}).next)
	body := eventBody(t, "evt_log")
	r := delivery(t, testSecret, body)
	wrong := Sign("whsec_other", body)
	r.Header.Set(SignatureHeader, wrong)
	serve(h, r)
	out := logs.String()
	if !strings.Contains(out, "signature does not match") || !strings.Contains(out, `"status":401`) {
		t.Errorf("rejection not logged with its reason: %s", out)
	}
	for _, s := range []string{testSecret, wrong, Sign(testSecret, body), "@bob"} {
		if strings.Contains(out, s) {
			t.Errorf("log contains %q: %s", s, out)
		}
	}
}

func TestHandlerPanicsOnBadOptions(t *testing.T) {
	next := (&recorder{}).next
	for name, f := range map[string]func(){
		"no secrets":   func() { Handler(HandlerOptions{}, next) },
		"empty secret": func() { Handler(HandlerOptions{Secrets: []string{testSecret, ""}}, next) },
		"nil next":     func() { Handler(HandlerOptions{Secrets: []string{testSecret}}, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Handler did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestSecretsDoNotPrint(t *testing.T) {
	opts := HandlerOptions{Secrets: []string{testSecret, "whsec_second"}, MaxBodyBytes: 10}
	h := Handler(opts, (&recorder{}).next)
	var out []string
	for _, v := range []any{opts, &opts, h} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
	}
	j, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, string(j))
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "opts", opts)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "opts", opts, "handler", h)
	out = append(out, logs.String())
	for _, s := range out {
		for _, secret := range []string{testSecret, "whsec_second", "whsec", fmt.Sprintf("%x", testSecret)} {
			if strings.Contains(s, secret) {
				t.Errorf("output %q contains a secret", s)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(opts), "2 redacted") {
		t.Errorf("String() = %q, want it to say how many secrets", fmt.Sprint(opts))
	}
}
