package confpay

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// resetConn hijacks the connection and closes it without an answer.
func resetConn(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset rather than an orderly close
	}
	_ = conn.Close()
}

// TestRetryThenSucceed fails the first attempts in several ways and checks
// that the call succeeds, with one idempotency key on every attempt.
func TestRetryThenSucceed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    func(*testing.T, http.ResponseWriter)
		retries int
	}{
		{"connection reset", resetConn, 2},
		{"503 with Retry-After", func(_ *testing.T, w http.ResponseWriter) {
			w.Header().Set("Retry-After", "2")
			writeJSON(w, 503, []byte(`{"code":"internal_error","message":"busy"}`))
		}, 2},
		{"429", func(_ *testing.T, w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, []byte(`{"code":"rate_limited","message":"slow down"}`))
		}, 3},
		{"408, 500, 502, 504", func() func(*testing.T, http.ResponseWriter) {
			var i atomic.Int32
			return func(_ *testing.T, w http.ResponseWriter) {
				writeJSON(w, []int{408, 500, 502, 504}[i.Add(1)-1], nil)
			}
		}(), 4},
		{"409 idempotency_key_in_use", func(_ *testing.T, w http.ResponseWriter) {
			writeJSON(w, 409, []byte(`{"code":"idempotency_key_in_use","message":"still running"}`))
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			var n atomic.Int32
			c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				rec.add(r)
				if int(n.Add(1)) <= tc.retries {
					tc.fail(t, w)
					return
				}
				writeJSON(w, 201, golden(t, "responses/transfer_created.json"))
			}, WithMaxRetries(tc.retries))
			var mu sync.Mutex
			var waits []time.Duration
			c.wait = func(retry int, resp *http.Response) time.Duration {
				mu.Lock()
				defer mu.Unlock()
				if retry != len(waits) {
					t.Errorf("wait for retry %d, want %d", retry, len(waits))
				}
				waits = append(waits, retryWait(retry, resp)) // what would be waited
				return 0
			}
			var meta Response
			tr, err := c.Transfers.Create(context.Background(), &TransferCreateParams{To: "@bob", Amount: MustParseAmount("5")}, WithResponse(&meta))
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if tr.TransferID != "tr_3k9d8f7g6h5j" {
				t.Errorf("transfer %+v", tr)
			}
			reqs := rec.all()
			if len(reqs) != tc.retries+1 || meta.Attempts != tc.retries+1 {
				t.Fatalf("%d attempts (metadata %d), want %d", len(reqs), meta.Attempts, tc.retries+1)
			}
			key := reqs[0].Header.Get("Idempotency-Key")
			for i, r := range reqs {
				if got := r.Header.Get("Idempotency-Key"); key == "" || got != key {
					t.Errorf("attempt %d key %q, want %q on every attempt", i+1, got, key)
				}
				if d := jsonDiff(t, []byte(`{"to":"@bob","amount":"5"}`), r.Body); d != "" {
					t.Errorf("attempt %d body:\n%s", i+1, d)
				}
			}
			if len(waits) != tc.retries {
				t.Errorf("%d waits, want %d", len(waits), tc.retries)
			}
			switch tc.name {
			case "503 with Retry-After":
				for _, w := range waits {
					if w != 2*time.Second {
						t.Errorf("wait %v, want Retry-After's 2s", w)
					}
				}
			case "connection reset":
				for i, w := range waits {
					base := baseBackoff << i
					if w < base*3/4 || w > base*5/4 {
						t.Errorf("wait %d is %v, want %v ±25%%", i, w, base)
					}
				}
			}
		})
	}
}

func TestRetryKeepsCallersKey(t *testing.T) {
	var rec recorder
	var n atomic.Int32
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		if n.Add(1) == 1 {
			resetConn(t, w)
			return
		}
		w.WriteHeader(204)
	})
	if err := c.Webhooks.Delete(context.Background(), "wh_1", WithIdempotencyKey("delete-wh_1")); err != nil {
		t.Fatal(err)
	}
	for _, r := range rec.all() {
		if got := r.Header.Get("Idempotency-Key"); got != "delete-wh_1" {
			t.Errorf("key %q, want the caller's on every attempt", got)
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	for _, retries := range []int{0, 1, 3} {
		var n atomic.Int32
		c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			if r.Method == http.MethodPost {
				writeJSON(w, 409, []byte(`{"code":"idempotency_key_in_use","message":"still running","request_id":"req_9"}`))
				return
			}
			writeJSON(w, 503, []byte(`{"code":"internal_error","message":"down"}`))
		}, WithMaxRetries(retries))
		_, err := c.Accounts.Me(context.Background())
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Code != CodeInternal || !errors.Is(err, ErrInternal) {
			t.Errorf("retries %d: error %v, want the typed 503", retries, err)
		}
		if int(n.Load()) != retries+1 {
			t.Errorf("retries %d: %d attempts", retries, n.Load())
		}

		n.Store(0)
		_, err = c.Agents.Approve(context.Background(), "atx_1")
		if !errors.Is(err, ErrIdempotencyKeyInUse) || !errors.As(err, &ae) || ae.Message != "still running" || ae.RequestID != "req_test0001" {
			t.Errorf("retries %d: error %v, want the typed 409 with its body intact", retries, err)
		}
		if int(n.Load()) != retries+1 {
			t.Errorf("retries %d: %d attempts on 409", retries, n.Load())
		}
	}
}

func TestNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
	}{
		{400, `{"code":"invalid_request","param":"to"}`},
		{401, `{"code":"unauthorized"}`},
		{402, `{"code":"insufficient_balance"}`},
		{404, `{"code":"recipient_not_found"}`},
		{409, `{"code":"transaction_expired"}`},
		{409, `not json`},
		{422, `{"code":"idempotency_key_reused"}`},
		{501, `{}`},
	} {
		var n atomic.Int32
		c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			writeJSON(w, tc.status, []byte(tc.body))
		})
		_, err := c.Transfers.Create(context.Background(), &TransferCreateParams{To: "@bob", Amount: MustParseAmount("1")})
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != tc.status {
			t.Errorf("%d: error %v", tc.status, err)
		}
		if n.Load() != 1 {
			t.Errorf("%d %s: %d attempts, want 1", tc.status, tc.body, n.Load())
		}
	}
}

// blockingServer answers nothing until the test ends; it reports each
// request it receives on the returned channel.
func blockingServer(t *testing.T, opts ...Option) (*Client, <-chan struct{}) {
	got := make(chan struct{}, 10)
	release := make(chan struct{})
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		<-release
	}, opts...)
	t.Cleanup(func() { close(release) }) // runs before the server closes
	return c, got
}

func TestCancelInFlight(t *testing.T) {
	c, got := blockingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Transfers.Create(ctx, &TransferCreateParams{To: "@bob", Amount: MustParseAmount("1")})
		done <- err
	}()
	<-got
	cancel()
	err := <-done // would hang until the test's deadline if cancel were ignored
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	var te *TransportError
	if !errors.As(err, &te) || te.Attempts != 1 {
		t.Errorf("error %#v, want a *TransportError after 1 attempt", err)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	answered := make(chan struct{}, 10)
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, nil)
		answered <- struct{}{}
	})
	c.wait = func(int, *http.Response) time.Duration { return time.Hour }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Accounts.Me(ctx)
		done <- err
	}()
	<-answered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// TestWaitPastDeadline checks that a wait that would outlast the context's
// deadline is not started: the call answers at once with the typed error.
func TestWaitPastDeadline(t *testing.T) {
	var n atomic.Int32
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "20")
		writeJSON(w, 429, []byte(`{"code":"rate_limited","message":"slow down"}`))
	})
	c.wait = retryWait // the real one: 20 s, past the deadline below
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Accounts.Me(ctx)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("error %v, want the typed 429", err)
	}
	if n.Load() != 1 {
		t.Errorf("%d attempts, want 1", n.Load())
	}
	if ctx.Err() != nil {
		t.Error("the call waited until the deadline")
	}
}

// TestLongRetryAfterAnswersAtOnce (issue 22 item 5): a Retry-After longer
// than the longest wait the client makes (30 s) is a wait it will not
// make: the call returns the typed error after one attempt, at once,
// instead of sleeping 30 s per retry and failing anyway. Up to 30 s the
// wait is made. The wait seam records the waits and sleeps none.
func TestLongRetryAfterAnswersAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, retryAfter string
		attempts         int32
	}{
		{"a day, in seconds", "86378", 1},
		{"31 s", "31", 1},
		{"an hour, as a date", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 1},
		{"30 s", "30", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.Header().Set("Retry-After", tc.retryAfter)
				writeJSON(w, 429, []byte(`{"code":"rate_limited","message":"the account keeps the most Idempotency-Keys it may"}`))
			})
			var waits []time.Duration
			c.wait = func(retry int, resp *http.Response) time.Duration {
				waits = append(waits, retryWait(retry, resp))
				return 0
			}
			_, err := c.Transfers.Create(context.Background(), &TransferCreateParams{To: "@bob", Amount: MustParseAmount("1")})
			if !errors.Is(err, ErrRateLimited) {
				t.Fatalf("error %v, want the typed 429", err)
			}
			if got := n.Load(); got != tc.attempts {
				t.Errorf("%d attempts, want %d (waits asked: %v)", got, tc.attempts, waits)
			}
			var ae *APIError
			if errors.As(err, &ae) && ae.IdempotencyKey == "" {
				t.Error("the error does not report the Idempotency-Key sent")
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	lowest := func(time.Duration) time.Duration { return 0 }
	highest := func(n time.Duration) time.Duration { return n - 1 }
	for n, base := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second} {
		lo, hi := defaultBackoff.delay(n, lowest), defaultBackoff.delay(n, highest)
		if lo != base*3/4 {
			t.Errorf("retry %d: lowest %v, want %v", n, lo, base*3/4)
		}
		if want := min(base*5/4, maxBackoff); hi != want {
			t.Errorf("retry %d: highest %v, want %v", n, hi, want)
		}
	}
	if d := defaultBackoff.delay(1000, highest); d != maxBackoff {
		t.Errorf("retry 1000: %v", d)
	}
	for range 100 {
		if d := retryWait(0, nil); d < 375*time.Millisecond || d > 625*time.Millisecond {
			t.Fatalf("default wait %v outside 0.5 s ±25%%", d)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 7, 2, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"2", 2 * time.Second, true},
		{"30", 30 * time.Second, true},
		{"120", 120 * time.Second, true},
		{"86378", 86378 * time.Second, true},
		{"999999999", maxRetryAfterParsed, true},
		{"99999999999999999999", maxRetryAfterParsed, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{" 2", 0, false},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second, true},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"tomorrow", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "7", "120", "Wed, 21 Oct 2026 07:28:00 GMT", "-3", "1e3"} {
		f.Add(s)
	}
	now := time.Date(2026, 7, 2, 14, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if d < 0 || d > maxRetryAfterParsed {
			t.Fatalf("parseRetryAfter(%q) = %v outside [0, %v]", s, d, maxRetryAfterParsed)
		}
		if n, err := strconv.Atoi(s); err == nil && isDigits(s) && n <= 999_999_999 && (!ok || d != time.Duration(n)*time.Second) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", s, d, ok)
		}
	})
}

// TestWithRetryBackoff checks that the option sets the base and the cap of
// the waits the client uses, that a Retry-After still replaces them, and
// that no base and cap overflow.
func TestWithRetryBackoff(t *testing.T) {
	c, err := NewClient(testKey, WithBaseURL("http://127.0.0.1:1"), WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for n, base := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond} {
		for range 50 {
			if d := c.wait(n, nil); d < base*3/4 || d > min(base*5/4, 50*time.Millisecond) {
				t.Fatalf("retry %d: wait %v, want %v ±25%% capped at 50ms", n, d, base)
			}
		}
	}
	resp := &http.Response{Header: http.Header{"Retry-After": {"2"}}}
	if d := c.wait(0, resp); d != 2*time.Second {
		t.Errorf("wait with Retry-After: 2 is %v, want 2s", d)
	}
	z, err := NewClient(testKey, WithRetryBackoff(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if d := z.wait(3, nil); d != 0 {
		t.Errorf("zero backoff waits %v", d)
	}
	highest := func(n time.Duration) time.Duration { return n - 1 }
	huge := backoff{base: time.Nanosecond, max: 1<<63 - 1}
	for _, n := range []int{0, 10, 62, 63, 64, 1000} {
		if d := huge.delay(n, highest); d <= 0 || d > huge.max {
			t.Errorf("retry %d with a huge cap: %v", n, d)
		}
	}
}

// TestRetryBackoffEndToEnd retries a dropped connection twice through the
// real wait (not the test seam) with a 1 ms backoff.
func TestRetryBackoffEndToEnd(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			resetConn(t, w)
			return
		}
		writeJSON(w, 200, golden(t, "responses/account.json"))
	}))
	defer srv.Close()
	c, err := NewClient(testKey, WithBaseURL(srv.URL), WithRetryBackoff(time.Millisecond, 2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	real := c.wait
	c.wait = func(retry int, resp *http.Response) time.Duration {
		d := real(retry, resp)
		waits = append(waits, d)
		return d
	}
	if _, err := c.Accounts.Me(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 || waits[0] > 2*time.Millisecond || waits[1] > 2*time.Millisecond {
		t.Errorf("waits %v, want two of at most 2ms", waits)
	}
}
