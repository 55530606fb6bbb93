package confpay

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var oneUSDG = &TransferCreateParams{To: "@bob", Amount: MustParseAmount("1")}

// TestIdempotencyKeyReported checks that the key the call sent is reported
// on success, with an APIError and with a TransportError, generated or the
// caller's own.
func TestIdempotencyKeyReported(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if status.Load() == 0 {
			resetConn(t, w)
			return
		}
		writeJSON(w, int(status.Load()), []byte(`{"code":"insufficient_balance","message":"no"}`))
	}))
	defer srv.Close()
	c, err := NewClient(testKey, WithBaseURL(srv.URL), WithMaxRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(int, *http.Response) time.Duration { return 0 }
	last := func() string { mu.Lock(); defer mu.Unlock(); return seen[len(seen)-1] }

	for _, tc := range []struct {
		name   string
		status int // 0: the connection is reset
		own    string
	}{
		{"success, generated", 201, ""},
		{"success, own", 201, "order-42"},
		{"402, generated", 402, ""},
		{"402, own", 402, "order-43"},
		{"reset, generated", 0, ""},
		{"reset, own", 0, "order-44"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status.Store(int32(tc.status))
			var meta Response
			opts := []CallOption{WithResponse(&meta)}
			if tc.own != "" {
				opts = append(opts, WithIdempotencyKey(tc.own))
			}
			_, err := c.Transfers.Create(context.Background(), oneUSDG, opts...)
			sent := last()
			if sent == "" || (tc.own != "" && sent != tc.own) {
				t.Fatalf("sent key %q", sent)
			}
			if meta.IdempotencyKey != sent {
				t.Errorf("Response.IdempotencyKey %q, sent %q", meta.IdempotencyKey, sent)
			}
			var ae *APIError
			var te *TransportError
			switch {
			case tc.status == 201:
				if err != nil {
					t.Fatal(err)
				}
			case tc.status == 402:
				if !errors.As(err, &ae) || ae.IdempotencyKey != sent {
					t.Errorf("error %#v, want an APIError with key %q", err, sent)
				}
			default:
				if !errors.As(err, &te) || te.IdempotencyKey != sent {
					t.Fatalf("error %#v, want a TransportError with key %q", err, sent)
				}
				mu.Lock()
				n := 0
				for _, k := range seen {
					if k == sent {
						n++
					}
				}
				mu.Unlock()
				if te.Attempts != n || meta.Attempts != n || n < 2 || meta.StatusCode != 0 {
					t.Errorf("TransportError.Attempts %d, Response %+v; the server saw %d requests", te.Attempts, meta, n)
				}
			}
		})
	}

	// A GET carries no key and reports none.
	status.Store(200)
	var meta Response
	if _, err := c.Accounts.Me(context.Background(), WithResponse(&meta)); err != nil || meta.IdempotencyKey != "" || last() != "" {
		t.Errorf("GET: key %q reported, %q sent", meta.IdempotencyKey, last())
	}
}

// TestRetryWithReportedKey is the README's safe-retry pattern: after a
// transport error, the same call under the reported key runs once.
func TestRetryWithReportedKey(t *testing.T) {
	var (
		mu   sync.Mutex
		done = map[string]bool{}
		runs int
	)
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		first := !done[key]
		if first {
			done[key] = true
			runs++
		}
		mu.Unlock()
		if first {
			resetConn(t, w) // committed, answer lost
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, 201, golden(t, "responses/transfer_created.json"))
	}, WithMaxRetries(0))
	_, err := c.Transfers.Create(context.Background(), oneUSDG)
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("error %v, want a TransportError", err)
	}
	var meta Response
	if _, err := c.Transfers.Create(context.Background(), oneUSDG, WithIdempotencyKey(te.IdempotencyKey), WithResponse(&meta)); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || !meta.IdempotentReplayed {
		t.Errorf("%d runs, replayed %v; want 1 run and a replay", runs, meta.IdempotentReplayed)
	}
}

// connCounter counts the connections and requests a server sees, and
// closes a reused connection, once, before any answer byte.
type connCounter struct {
	conns    atomic.Int32
	requests atomic.Int32
	dropped  atomic.Int32
	mu       sync.Mutex
	served   map[string]int // requests per remote address
}

func (cc *connCounter) start(t *testing.T, answer func(http.ResponseWriter)) *httptest.Server {
	cc.served = map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc.requests.Add(1)
		cc.mu.Lock()
		cc.served[r.RemoteAddr]++
		reused := cc.served[r.RemoteAddr] > 1
		cc.mu.Unlock()
		if reused && r.Method == http.MethodPost && cc.dropped.Add(1) == 1 {
			resetConn(t, w) // the request was read: what a dropped answer looks like
			return
		}
		answer(w)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			cc.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestAttemptsCountNetHTTPResends makes net/http resend a POST by itself:
// the server closes the reused connection after reading the request and
// before any answer byte. The call sees no error, and Attempts must still
// say what the server saw.
func TestAttemptsCountNetHTTPResends(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run("own http.Client "+strconv.FormatBool(own), func(t *testing.T) {
			var cc connCounter
			srv := cc.start(t, func(w http.ResponseWriter) { writeJSON(w, 201, golden(t, "responses/transfer_created.json")) })
			// One connection at a time, so the POST is sent on the
			// connection the GET used.
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxConnsPerHost = 1
			opts := []Option{WithBaseURL(srv.URL)}
			if own {
				opts = append(opts, WithHTTPClient(&http.Client{Transport: tr}))
			}
			c, err := NewClient(testKey, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !own {
				c.httpClient.Transport = wireCounter{tr}
			}
			if _, err := c.Accounts.Me(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := cc.requests.Load()
			var meta Response
			if _, err := c.Transfers.Create(context.Background(), oneUSDG, WithResponse(&meta)); err != nil {
				t.Fatal(err)
			}
			seen := int(cc.requests.Load() - before)
			if cc.dropped.Load() != 1 || cc.conns.Load() != 2 || seen != 2 {
				t.Fatalf("dropped %d, %d connections, %d requests for the call: the scenario did not happen", cc.dropped.Load(), cc.conns.Load(), seen)
			}
			if meta.Attempts != seen {
				t.Errorf("Response.Attempts %d, the server saw %d requests", meta.Attempts, seen)
			}
		})
	}
}

// TestAttemptsAfterTransportError checks that Response is filled when no
// answer came.
func TestAttemptsAfterTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	c, err := NewClient(testKey, WithBaseURL(url), WithMaxRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(int, *http.Response) time.Duration { return 0 }
	var meta Response
	_, err = c.Transfers.Create(context.Background(), oneUSDG, WithResponse(&meta))
	var te *TransportError
	if !errors.As(err, &te) || te.Attempts != 3 || meta.Attempts != 3 || meta.IdempotencyKey == "" {
		t.Errorf("error %v, Response %+v; want 3 attempts and the key", err, meta)
	}
}

// TestOneRetryClientManyCalls checks that the retry machinery built once
// per Client keeps each call's state apart: concurrent calls that fail a
// different number of times each count their own attempts.
func TestOneRetryClientManyCalls(t *testing.T) {
	var mu sync.Mutex
	fails := map[string]int{}
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		want, _ := strconv.Atoi(strings.TrimPrefix(key, "k"))
		mu.Lock()
		fails[key]++
		n := fails[key]
		mu.Unlock()
		if n <= want%3 {
			writeJSON(w, 503, nil)
			return
		}
		writeJSON(w, 201, golden(t, "responses/transfer_created.json"))
	})
	rc := c.rc
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			var meta Response
			if _, err := c.Transfers.Create(context.Background(), oneUSDG, WithIdempotencyKey("k"+strconv.Itoa(i)), WithResponse(&meta)); err != nil {
				t.Error(err)
				return
			}
			if meta.Attempts != i%3+1 {
				t.Errorf("call %d: %d attempts, want %d", i, meta.Attempts, i%3+1)
			}
		})
	}
	wg.Wait()
	if c.rc != rc {
		t.Error("the retry client was rebuilt")
	}
}

// trackedConn reports its client-side Close.
type trackedConn struct {
	net.Conn
	closed *atomic.Int32
	once   sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.Conn.Close()
}

// TestCancelDuringBackoffKeepsCallersPool checks that a call cancelled
// while it waits to retry leaves the connections of the caller's shared
// http.Client open (retryablehttp empties the pool it is given).
func TestCancelDuringBackoffKeepsCallersPool(t *testing.T) {
	answered := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/warm" {
			writeJSON(w, 200, []byte(`{}`))
			return
		}
		// A body, so that the connection goes back to the pool only once
		// the client has read it, after the attempt returned (a bodiless
		// answer frees it earlier, and a cancel then still hits the attempt).
		writeJSON(w, 503, []byte(`{"code":"internal_error","message":"busy"}`))
		answered <- struct{}{}
	}))
	defer srv.Close()
	var opened, closed atomic.Int32
	var d net.Dialer
	// One connection per host: the call waits for the warm one rather than
	// racing it with a second dial.
	tr := &http.Transport{MaxConnsPerHost: 1, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		opened.Add(1)
		return &trackedConn{Conn: conn, closed: &closed}, nil
	}}
	defer tr.CloseIdleConnections()
	shared := &http.Client{Transport: tr}
	warm := func() {
		resp, err := shared.Get(srv.URL + "/warm")
		if err != nil {
			t.Fatal(err)
		}
		closeBody(resp.Body)
	}
	warm()
	pool := opened.Load() - closed.Load()

	c, err := NewClient(testKey, WithBaseURL(srv.URL), WithHTTPClient(shared))
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(int, *http.Response) time.Duration { return time.Hour }
	// Cancel once the 503's connection is back in the pool: the call is
	// then waiting to retry.
	idle := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		PutIdleConn: func(err error) {
			if err == nil {
				idle <- struct{}{}
			}
		},
	}))
	done := make(chan error, 1)
	go func() {
		_, err := c.Accounts.Me(ctx)
		done <- err
	}()
	<-answered
	<-idle
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if closed.Load() != 0 {
		t.Errorf("pool: %d connection(s) before the call, %d closed by it, %d open after", pool, closed.Load(), opened.Load()-closed.Load())
	}
}

// TestRedirectsStayOnOrigin checks that a redirect to another origin is
// not followed, so the key, the idempotency key and the body never reach
// it, with the default client and with a caller's; a redirect within the
// origin is followed only with a caller's client that allows it.
func TestRedirectsStayOnOrigin(t *testing.T) {
	var other recorder
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		writeJSON(w, 201, golden(t, "responses/transfer_created.json"))
	}))
	defer elsewhere.Close()
	var home recorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.add(r)
		switch r.URL.Path {
		case "/v1/transfers":
			http.Redirect(w, r, elsewhere.URL+"/v1/transfers", http.StatusTemporaryRedirect)
		case "/v1/accounts/me":
			http.Redirect(w, r, "/v1/accounts/me/", http.StatusTemporaryRedirect)
		default:
			writeJSON(w, 200, golden(t, "responses/account.json"))
		}
	}))
	defer srv.Close()
	// elsewhere differs from srv by port only: same scheme, same host.
	for _, tc := range []struct {
		name       string
		hc         *http.Client
		followHome bool
	}{
		{"default client", nil, false},
		{"caller's client", &http.Client{}, true},
		{"caller's client with CheckRedirect", &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []Option{WithBaseURL(srv.URL)}
			if tc.hc != nil {
				opts = append(opts, WithHTTPClient(tc.hc))
			}
			c, err := NewClient(testKey, opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Transfers.Create(context.Background(), oneUSDG)
			var ae *APIError
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusTemporaryRedirect {
				t.Errorf("error %v, want the redirect answered as an APIError", err)
			}
			if got := other.all(); len(got) != 0 {
				t.Errorf("the other origin received %d request(s), Authorization %q, Idempotency-Key %q, body %q",
					len(got), got[0].Header.Get("Authorization"), got[0].Header.Get("Idempotency-Key"), got[0].Body)
			}
			n := len(home.all())
			_, err = c.Accounts.Me(context.Background())
			if followed := len(home.all())-n == 2; followed != tc.followHome || (followed && err != nil) {
				t.Errorf("same-origin redirect followed %v (error %v), want %v", followed, err, tc.followHome)
			}
		})
	}
}

// TestBaseURLPlainHTTP checks that plain http is refused for a host that
// is not loopback, whatever the key's network, unless asked for by name.
func TestBaseURLPlainHTTP(t *testing.T) {
	const liveKey = "hc_live_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh"
	for _, base := range []string{
		"http://api.confpay.example", "http://10.0.0.7:8080", "http://[fe80::1]:80",
		"http://0.0.0.0:8080", "http://localhost.evil.example", "http://127.0.0.1.nip.io",
	} {
		for _, key := range []string{testKey, liveKey} {
			if _, err := NewClient(key, WithBaseURL(base)); err == nil || !strings.Contains(err.Error(), "WithInsecureHTTP") {
				t.Errorf("%s: error %v, want a refusal naming WithInsecureHTTP", base, err)
			}
			if _, err := NewClient(key, WithBaseURL(base), WithInsecureHTTP()); err != nil {
				t.Errorf("%s with WithInsecureHTTP: %v", base, err)
			}
		}
	}
	for _, base := range []string{
		"http://127.0.0.1:8080", "http://127.8.9.10", "http://[::1]:8080", "http://localhost:8080",
		"http://LOCALHOST", "https://api.confpay.example", "https://10.0.0.7",
	} {
		if _, err := NewClient(liveKey, WithBaseURL(base)); err != nil {
			t.Errorf("%s: %v", base, err)
		}
	}
}
