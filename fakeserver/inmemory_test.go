package fakeserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// mode is one way of reaching a server: over loopback, or in memory with
// no listener at all.
type mode struct {
	name string
	opts []fakeserver.Option
	// client returns the plain HTTP client and base URL to reach srv.
	client func(srv *fakeserver.Server) (*http.Client, string)
}

var modes = []mode{
	{"loopback", nil, func(srv *fakeserver.Server) (*http.Client, string) {
		return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, srv.URL()
	}},
	{"in-memory", []fakeserver.Option{fakeserver.WithoutListener()}, func(srv *fakeserver.Server) (*http.Client, string) {
		return srv.HTTPClient(), srv.URL()
	}},
}

// exchangeOutcome is what a scripted exchange observed, compared across
// transports.
type exchangeOutcome struct {
	Err        string
	Attempts   int
	Replayed   bool
	Transfers  int
	FaultsUsed []int
}

// faultedPayout pays @bob from @alice once through a 503, a dropped
// connection and a reset after commit, with the SDK on hc and base, and
// reports what happened.
func faultedPayout(t *testing.T, srv *fakeserver.Server, hc *http.Client, base string) exchangeOutcome {
	t.Helper()
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	for _, action := range []string{fakeserver.FaultError, fakeserver.FaultDropAfterCommit, fakeserver.FaultResetAfterCommit} {
		if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: action, RetryAfter: confpay.Ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := confpay.NewClient(alice.test(), confpay.WithBaseURL(base), confpay.WithHTTPClient(hc), confpay.WithInsecureHTTP(),
		confpay.WithMaxRetries(4), confpay.WithRetryBackoff(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var meta confpay.Response
	_, err = c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")}, confpay.WithResponse(&meta))
	var out exchangeOutcome
	if err != nil {
		out.Err = err.Error()
	}
	out.Attempts, out.Replayed = meta.Attempts, meta.IdempotentReplayed
	trs, err := srv.Transfers("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	out.Transfers = len(trs)
	for _, f := range srv.Faults() {
		out.FaultsUsed = append(out.FaultsUsed, f.Used)
	}
	return out
}

// TestInMemoryFaults checks that connection faults reach an in-memory
// client as they reach one over loopback: transport errors the SDK
// retries with one idempotency key, the payment made exactly once.
func TestInMemoryFaults(t *testing.T) {
	var got []exchangeOutcome
	for _, m := range modes {
		srv := fakeserver.New(t, m.opts...)
		hc, base := m.client(srv)
		out := faultedPayout(t, srv, hc, base)
		if out.Err != "" || out.Transfers != 1 || !out.Replayed {
			t.Errorf("%s: %+v, want one transfer, the last answer a replay", m.name, out)
		}
		got = append(got, out)
	}
	t.Logf("loopback %+v, in memory %+v", got[0], got[1])
	if got[0].Attempts != got[1].Attempts || !slices.Equal(got[0].FaultsUsed, got[1].FaultsUsed) {
		t.Errorf("loopback %+v, in memory %+v: want the same exchange", got[0], got[1])
	}
}

// framing is the shape of an HTTP answer that must not depend on the
// transport: status, framing and header names.
type framing struct {
	Status        int
	ContentLength int64
	Chunked       bool
	Headers       []string
	BodyLen       int
}

func shape(t *testing.T, hc *http.Client, req *http.Request) framing {
	t.Helper()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range resp.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	return framing{resp.StatusCode, resp.ContentLength, slices.Contains(resp.TransferEncoding, "chunked"), names, len(b)}
}

// TestInMemoryFraming checks that answers come framed as over loopback: a
// small one with Content-Length, a large one streamed in chunks, a request
// refused before its body is read answered and its connection closed.
func TestInMemoryFraming(t *testing.T) {
	var got [][]framing
	for _, m := range modes {
		srv := fakeserver.New(t, m.opts...)
		hc, base := m.client(srv)
		alice := newAccount(t, srv, "@alice")
		newAccount(t, srv, "@bob")
		srv.AddFunds(t, "@alice", "USDG", "100")
		c := srv.Client(alice.info.TestKey)
		for range 20 {
			send(t, c, "@bob", "1")
		}
		get := func(path, key string, body io.Reader) *http.Request {
			method := "GET"
			if body != nil {
				method = "POST"
			}
			req, err := http.NewRequest(method, base+path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+key)
			return req
		}
		got = append(got, []framing{
			shape(t, hc, get("/v1/accounts/me", alice.test(), nil)),
			shape(t, hc, get("/v1/transfers?limit=20", alice.test(), nil)),
			shape(t, hc, get("/v1/transfers", "hc_test_wrong", strings.NewReader(strings.Repeat(" ", 600<<10)))),
		})
	}
	lo, mem := got[0], got[1]
	t.Logf("loopback %+v\nin memory %+v", lo, mem)
	for i := range lo {
		if !slices.Equal(lo[i].Headers, mem[i].Headers) || lo[i].Status != mem[i].Status || lo[i].Chunked != mem[i].Chunked ||
			lo[i].ContentLength != mem[i].ContentLength && !lo[i].Chunked {
			t.Errorf("answer %d: loopback %+v, in memory %+v", i, lo[i], mem[i])
		}
	}
	if lo[0].ContentLength <= 0 || !lo[1].Chunked || lo[2].Status != http.StatusUnauthorized {
		t.Errorf("loopback framing %+v: want a Content-Length, a chunked list and a 401", lo)
	}
}

// TestInMemoryContext checks that the caller's context and the client's
// timeout end a request held by a delay fault, in memory as over a
// socket, and that the server lets go of it.
func TestInMemoryContext(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithoutListener())
	alice := newAccount(t, srv, "@alice")
	if _, err := srv.AddFault(fakeserver.Fault{Path: "/v1/accounts/me", Action: fakeserver.FaultDelay, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c := srv.Client(alice.info.TestKey, confpay.WithMaxRetries(0))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Accounts.Me(ctx)
		done <- err
	}()
	for srv.Faults()[0].Used == 0 { // wait until the request is held
		srv.Sync()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}

	short := srv.Client(alice.info.TestKey, confpay.WithMaxRetries(0), confpay.WithTimeout(10*time.Millisecond))
	_, err := short.Accounts.Me(t.Context())
	var te *confpay.TransportError
	if !errors.As(err, &te) || te.Attempts != 1 {
		t.Errorf("timed out: %v, want a *confpay.TransportError after one attempt", err)
	}
	srv.Close() // returns: both held requests were let go
}

// TestInMemoryClosed checks that a closed server refuses in-memory
// connections as a closed port would, whether its client was made before
// or after.
func TestInMemoryClosed(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithoutListener())
	before := srv.HTTPClient()
	if resp, err := before.Get(srv.URL() + "/v1/accounts/me"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	srv.Close()
	for i, hc := range []*http.Client{before, srv.HTTPClient()} {
		_, err := hc.Get(fakeserver.InMemoryURL + "/v1/accounts/me")
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("client %d after Close: %v, want connection refused", i, err)
		}
	}
}

// TestInMemoryURL checks the base URL of a server without listener, and
// that a server that listens is reached in memory too.
func TestInMemoryURL(t *testing.T) {
	if got := fakeserver.New(t, fakeserver.WithoutListener()).URL(); got != fakeserver.InMemoryURL {
		t.Errorf("URL without listener %q, want %q", got, fakeserver.InMemoryURL)
	}
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	c := srv.Client(alice.info.TestKey)
	if c.BaseURL() != srv.URL() || !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") && !strings.HasPrefix(srv.URL(), "http://[::1]:") {
		t.Errorf("client base %q, server %q", c.BaseURL(), srv.URL())
	}
	if _, err := c.Accounts.Me(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestClientPanicsWithoutKey checks that Client refuses a bad key loudly,
// without echoing it.
func TestClientPanicsWithoutKey(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithoutListener())
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "fakeserver: Client") || strings.Contains(msg, "nothunter2") {
			t.Errorf("panic %v", r)
		}
	}()
	srv.Client("hc_nope_nothunter2")
}

// BenchmarkTransferCreateInMemory is BenchmarkTransferCreateLoopback
// through HTTPClient, on a server without listener: run both in one
// invocation to compare.
func BenchmarkTransferCreateInMemory(b *testing.B) {
	srv, key := benchTransferServer(b, fakeserver.WithoutListener())
	benchPostWith(b, srv.HTTPClient(), srv.URL()+"/v1/transfers", key, http.StatusCreated)
}

// BenchmarkTransferCreateHandlerOnly is the floor for the two above: the
// same requests through an http.Client whose RoundTripper only calls
// Handler with an httptest.ResponseRecorder (no framing, faults or
// cancellation).
func BenchmarkTransferCreateHandlerOnly(b *testing.B) {
	srv, key := benchTransferServer(b, fakeserver.WithoutListener())
	benchPostWith(b, &http.Client{Transport: handlerOnly{srv.Handler()}}, srv.URL()+"/v1/transfers", key, http.StatusCreated)
}

// handlerOnly is a RoundTripper that calls a handler and nothing more.
type handlerOnly struct{ h http.Handler }

func (t handlerOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// BenchmarkAccountMeLoopback and BenchmarkAccountMeInMemory compare the
// transports on a call whose handler costs little (GET /v1/accounts/me),
// where the transport is most of the round trip.
func BenchmarkAccountMeLoopback(b *testing.B) {
	srv, key := benchTransferServer(b)
	benchGet(b, benchClient(), srv.URL()+"/v1/accounts/me", key)
}

func BenchmarkAccountMeInMemory(b *testing.B) {
	srv, key := benchTransferServer(b, fakeserver.WithoutListener())
	benchGet(b, srv.HTTPClient(), srv.URL()+"/v1/accounts/me", key)
}

// benchGet sends GETs from parallel goroutines and checks for 200.
func benchGet(b *testing.B, hc *http.Client, url, key string) {
	defer hc.CloseIdleConnections()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}
