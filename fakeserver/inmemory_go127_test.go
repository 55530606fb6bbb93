//go:build go1.27

package fakeserver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/confpay/confpay-go/fakeserver"
)

// TestInMemoryParityHTTPTest runs the same scripted exchange (a 503, a
// dropped connection, a reset after commit) through our in-memory
// transport and through Go 1.27's httptest.NewTestServer, which serves
// the same handler over its own in-memory network: both must see the same
// thing. (fakeserver itself cannot use httptest: it links the testing
// package into every program that imports fakeserver.)
func TestInMemoryParityHTTPTest(t *testing.T) {
	ours := fakeserver.New(t, fakeserver.WithoutListener())
	want := faultedPayout(t, ours, ours.HTTPClient(), ours.URL())

	srv := fakeserver.New(t, fakeserver.WithoutListener())
	ts := httptest.NewTestServer(t, srv.Handler())
	got := faultedPayout(t, srv, ts.Client(), ts.URL)
	if got.Err != want.Err || got.Attempts != want.Attempts || got.Replayed != want.Replayed || got.Transfers != want.Transfers {
		t.Errorf("httptest.NewTestServer %+v, ours %+v", got, want)
	}
}

// BenchmarkTransferCreateHTTPTestInMemory is BenchmarkTransferCreateInMemory
// through Go 1.27's httptest.NewTestServer.
func BenchmarkTransferCreateHTTPTestInMemory(b *testing.B) {
	srv, key := benchTransferServer(b, fakeserver.WithoutListener())
	ts := httptest.NewTestServer(b, srv.Handler())
	benchPostWith(b, ts.Client(), ts.URL+"/v1/transfers", key, http.StatusCreated)
}
