package fakeserver_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

func TestFaultErrorThenRetry(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := cAccount(t, srv, "@alice")
	cAccount(t, srv, "@bob")
	cFund(t, srv, "@alice", confpay.NetworkTest, "USDG", "10")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 2, Action: fakeserver.FaultError,
		Status: 503, RetryAfter: confpay.Ptr(0)}); err != nil {
		t.Fatal(err)
	}
	var resp confpay.Response
	tr, err := cSDK(t, srv, alice.test(), nil).Transfers.Create(context.Background(),
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
	a := cRaw(t, srv, "GET", "/v1/accounts/me", alice.test(), "")
	if a.status != 429 || a.err().Code != confpay.CodeRateLimited || a.header.Get("Retry-After") != "7" {
		t.Fatalf("%d %s %v", a.status, a.body, a.header)
	}
	if a := cRaw(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 200 {
		t.Fatalf("after the fault: %d", a.status)
	}
}

func TestFaultMatching(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := cAccount(t, srv, "@alice")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "GET", Path: "/v1/transfers/*", Action: fakeserver.FaultError, Status: 500}); err != nil {
		t.Fatal(err)
	}
	if a := cRaw(t, srv, "GET", "/v1/transfers", alice.test(), ""); a.status != 200 {
		t.Fatalf("list: %d", a.status)
	}
	for range 3 { // Times 0: until cleared
		if a := cRaw(t, srv, "GET", "/v1/transfers/tr_x", alice.test(), ""); a.status != 500 || a.err().Code != confpay.CodeInternal {
			t.Fatalf("get: %d %s", a.status, a.body)
		}
	}
	// The admin interface is never faulted, even by a catch-all.
	if _, err := srv.AddFault(fakeserver.Fault{Path: "*", Action: fakeserver.FaultError, Status: 502}); err != nil {
		t.Fatal(err)
	}
	if a := cRaw(t, srv, "GET", "/_fake/clock", "", ""); a.status != 200 {
		t.Fatalf("admin: %d", a.status)
	}
	if a := cRaw(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 502 || a.err().Code != "bad_gateway" {
		t.Fatalf("catch-all: %d %s", a.status, a.body)
	}
	srv.ClearFaults()
	if a := cRaw(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status != 200 {
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
	alice := cAccount(t, srv, "@alice")
	if _, err := srv.AddFault(fakeserver.Fault{Path: "/v1/accounts/me", Times: 2, Action: fakeserver.FaultDelay, Delay: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	base := srv.Clock().Pending()
	// A client that gives up first sees a timeout.
	c := cSDK(t, srv, alice.test(), nil, confpay.WithMaxRetries(0), confpay.WithTimeout(50*time.Millisecond))
	_, err := c.Accounts.Me(context.Background())
	var te *confpay.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a transport error", err)
	}
	// The server notices and drops the held request's timer.
	for srv.Clock().Pending() != base {
		runtime.Gosched()
	}
	// A patient one gets its answer once the server clock has moved on.
	done := make(chan error)
	go func() {
		_, err := cSDK(t, srv, alice.test(), nil).Accounts.Me(context.Background())
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
	alice := cAccount(t, srv, "@alice")
	cAccount(t, srv, "@bob")
	cFund(t, srv, "@alice", confpay.NetworkTest, "USDG", "10")
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultFailAtConfirmation}); err != nil {
		t.Fatal(err)
	}
	c := cSDK(t, srv, alice.test(), nil)
	doomed := cSend(t, c, "@bob", "3")
	fine := cSend(t, c, "@bob", "4")
	third := cSend(t, c, "@bob", "1")
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
	if a, b := cSettled(t, srv, "@alice", confpay.NetworkTest, "USDG"), cSettled(t, srv, "@bob", confpay.NetworkTest, "USDG"); a != "6" || b != "4" {
		t.Fatalf("alice %s bob %s", a, b)
	}
}
