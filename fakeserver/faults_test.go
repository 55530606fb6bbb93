package fakeserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

func TestFaultErrorThenRetry(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 2, Action: fakeserver.FaultError,
		Status: 503, RetryAfter: confpay.Ptr(0)}); err != nil {
		t.Fatal(err)
	}
	var resp confpay.Response
	tr, err := newClient(t, srv, alice.test(), nil).Transfers.Create(context.Background(),
		&confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}, confpay.WithResponse(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 3 || resp.StatusCode != 201 || tr.TransferID == "" {
		t.Fatalf("%+v", resp)
	}
	if f := srv.Faults(); len(f) != 1 || f[0].Used != 2 {
		t.Fatalf("faults %+v", f)
	}
	if ts, _ := srv.Transfers("@alice", confpay.NetworkTest); len(ts) != 1 {
		t.Fatalf("%d transfers", len(ts))
	}

	// Without retries the client sees the injected answer.
	srv.ClearFaults()
	if _, err := srv.AddFault(fakeserver.Fault{Action: fakeserver.FaultError, Status: 429, RetryAfter: confpay.Ptr(7), Times: 1}); err != nil {
		t.Fatal(err)
	}
	a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), "")
	if a.status != 429 || a.err().Code != confpay.CodeRateLimited || a.header.Get("Retry-After") != "7" {
		t.Fatalf("%d %s %v", a.status, a.body, a.header)
	}
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 200 {
		t.Fatalf("after the fault: %d", a.status)
	}
}

func TestFaultMatching(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "GET", Path: "/v1/transfers/*", Action: fakeserver.FaultError, Status: 500}); err != nil {
		t.Fatal(err)
	}
	if a := rawCall(t, srv, "GET", "/v1/transfers", alice.test(), ""); a.status != 200 {
		t.Fatalf("list: %d", a.status)
	}
	for range 3 { // Times 0: until cleared
		if a := rawCall(t, srv, "GET", "/v1/transfers/tr_x", alice.test(), ""); a.status != 500 || a.err().Code != confpay.CodeInternal {
			t.Fatalf("get: %d %s", a.status, a.body)
		}
	}
	// The admin interface is never faulted, even by a catch-all.
	if _, err := srv.AddFault(fakeserver.Fault{Path: "*", Action: fakeserver.FaultError, Status: 502}); err != nil {
		t.Fatal(err)
	}
	if a := rawCall(t, srv, "GET", "/_fake/clock", "", ""); a.status != 200 {
		t.Fatalf("admin: %d", a.status)
	}
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 502 || a.err().Code != "bad_gateway" {
		t.Fatalf("catch-all: %d %s", a.status, a.body)
	}
	srv.ClearFaults()
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 200 {
		t.Fatalf("cleared: %d", a.status)
	}
	for _, f := range []fakeserver.Fault{
		{Action: "explode"},
		{Action: fakeserver.FaultError, Status: 200},
		{Action: fakeserver.FaultDelay},
		{Action: fakeserver.FaultError, Times: -1},
		{Action: fakeserver.FaultError, Path: "["},
		{Action: fakeserver.FaultError, TransferID: "tr_x"},
		{Action: fakeserver.FaultFailAtConfirmation, TransferID: "tr_nope"},
	} {
		if _, err := srv.AddFault(f); err == nil {
			t.Errorf("AddFault(%+v) succeeded", f)
		}
	}
}

func TestFaultDelay(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	if _, err := srv.AddFault(fakeserver.Fault{Path: "/v1/accounts/me", Times: 2, Action: fakeserver.FaultDelay, Delay: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	base := fakeserver.PendingTimers(srv)
	// A client that gives up first sees a timeout.
	c := newClient(t, srv, alice.test(), nil, confpay.WithMaxRetries(0), confpay.WithTimeout(50*time.Millisecond))
	_, err := c.Accounts.Me(context.Background())
	var te *confpay.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a transport error", err)
	}
	// The server notices and drops the held request's timer.
	for fakeserver.PendingTimers(srv) != base {
		runtime.Gosched()
	}
	// A patient one gets its answer once the server clock has moved on.
	done := make(chan error)
	go func() {
		_, err := newClient(t, srv, alice.test(), nil).Accounts.Me(context.Background())
		done <- err
	}()
	waitTimers(srv, base+1)
	srv.Advance(5 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFaultFailAtConfirmation(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultFailAtConfirmation}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv, alice.test(), nil)
	doomed := send(t, c, "@bob", "3")
	fine := send(t, c, "@bob", "4")
	third := send(t, c, "@bob", "1")
	if _, err := srv.AddFault(fakeserver.Fault{Action: fakeserver.FaultFailAtConfirmation, TransferID: third.TransferID}); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	for id, want := range map[string]confpay.TransferStatus{doomed.TransferID: confpay.StatusFailed, fine.TransferID: confpay.StatusConfirmed, third.TransferID: confpay.StatusFailed} {
		got, err := c.Transfers.Get(context.Background(), id)
		if err != nil || got.Status != want {
			t.Fatalf("%s: %v %v, want %s", id, got, err, want)
		}
	}
	if a, b := settled(t, srv, "@alice", confpay.NetworkTest, "USDG"), settled(t, srv, "@bob", confpay.NetworkTest, "USDG"); a != "6" || b != "4" {
		t.Fatalf("alice %s bob %s", a, b)
	}
}

// TestFaultRetryAfterDefault: an injected 429 or 503 without retry_after
// carries Retry-After: 1; other statuses carry none.
func TestFaultRetryAfterDefault(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	for _, tc := range []struct {
		status int
		want   string
	}{{429, "1"}, {503, "1"}, {500, ""}, {502, ""}} {
		if _, err := srv.AddFault(fakeserver.Fault{Action: fakeserver.FaultError, Status: tc.status, Times: 1}); err != nil {
			t.Fatal(err)
		}
		a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), "")
		if a.status != tc.status || a.header.Get("Retry-After") != tc.want {
			t.Errorf("injected %d: %d Retry-After %q, want %q", tc.status, a.status, a.header.Get("Retry-After"), tc.want)
		}
	}
	// Over the admin interface too.
	a := rawCall(t, srv, "POST", "/_fake/faults", "", `{"action":"error","status":503,"times":1}`)
	if a.status != 201 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 503 || a.header.Get("Retry-After") != "1" {
		t.Errorf("injected 503 over /_fake: %d Retry-After %q", a.status, a.header.Get("Retry-After"))
	}
}

// TestFaultResetAfterCommit: the request commits, part of the answer goes
// out, then the connection closes. A plain HTTP client sees an error on
// every request (net/http does not resend a request once it has received
// bytes), and the SDK reports a transport error after its retries, with
// exactly one transfer made.
func TestFaultResetAfterCommit(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")

	// Raw TCP: the status line and headers of the committed answer, then
	// the end of the connection.
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultResetAfterCommit}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"to":"@bob","amount":"1"}`
	fmt.Fprintf(conn, "POST /v1/transfers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: raw-1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", alice.test(), len(body), body)
	got, err := io.ReadAll(conn)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 201 Created\r\n") || !strings.Contains(string(got), "X-Request-Id: req_") || strings.Contains(string(got), "\r\n\r\n") {
		t.Fatalf("raw answer = %q, want the status line and headers of a 201, unfinished", got)
	}
	if ts, _ := srv.Transfers("@alice", confpay.NetworkTest); len(ts) != 1 {
		t.Fatalf("%d transfers after the raw request, want 1 (it committed)", len(ts))
	}

	// net/http on a reused connection: the fault applies three times,
	// three requests reach the wire, three errors come back.
	srv.ClearFaults()
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 3, Action: fakeserver.FaultResetAfterCommit}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{}
	for i := range 3 {
		rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), "") // a connection to reuse
		req, _ := http.NewRequest("POST", srv.URL()+"/v1/transfers", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+alice.test())
		req.Header.Set("Idempotency-Key", fmt.Sprintf("net-http-%d", i))
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("request %d: answer %d, want an error", i, resp.StatusCode)
		}
	}
	if f := srv.Faults(); f[0].Used != 3 {
		t.Errorf("the fault applied %d times, want 3 (no silent resend)", f[0].Used)
	}
	if ts, _ := srv.Transfers("@alice", confpay.NetworkTest); len(ts) != 4 {
		t.Fatalf("%d transfers, want 4", len(ts))
	}

	// The SDK: every attempt is reset (the retries replay the stored
	// answer, reset again); a transport error after its retries, one
	// transfer, and the key it reports finds it.
	srv.ClearFaults()
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Action: fakeserver.FaultResetAfterCommit}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv, alice.test(), nil, confpay.WithMaxRetries(2))
	_, err = c.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("2")}, confpay.WithIdempotencyKey("sdk-1"))
	var te *confpay.TransportError
	if !errors.As(err, &te) || te.Attempts != 3 {
		t.Fatalf("SDK error = %v (%#v), want a transport error after 3 attempts", err, te)
	}
	if f := srv.Faults(); f[0].Used != 3 {
		t.Errorf("the fault applied %d times, want 3", f[0].Used)
	}
	if ts, _ := srv.Transfers("@alice", confpay.NetworkTest); len(ts) != 5 {
		t.Fatalf("%d transfers, want 5 (exactly one for the SDK call)", len(ts))
	}
	srv.ClearFaults()
	var resp confpay.Response
	tr, err := c.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("2")}, confpay.WithIdempotencyKey("sdk-1"), confpay.WithResponse(&resp))
	if err != nil || !resp.IdempotentReplayed || tr.TransferID == "" {
		t.Fatalf("retry with the same key: %v replayed=%v", err, resp.IdempotentReplayed)
	}
	if got := srv.Balance(t, "@alice", "USDG").String(); got != "94" {
		t.Errorf("available = %s, want 94 (100 - 1 - 3 - 2)", got)
	}

	// The admin interface takes the action too.
	if a := rawCall(t, srv, "POST", "/_fake/faults", "", `{"action":"reset_after_commit","method":"POST","path":"/v1/transfers","times":1}`); a.status != 201 {
		t.Fatalf("POST /_fake/faults reset_after_commit: %d %s", a.status, a.body)
	}
	if fs := srv.Faults(); len(fs) != 1 || fs[0].Action != fakeserver.FaultResetAfterCommit {
		t.Fatalf("faults = %+v", fs)
	}
}
