package fakeserver

import (
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// benchStore makes a server with accounts and n transfers among them,
// submitted directly (no HTTP), all confirmed. Every transfer touches
// accounts[0], so that it lists all n.
func benchStore(tb testing.TB, n, accounts int) (*Server, []*account) {
	s := NewUnstartedServer()
	tb.Cleanup(s.Close)
	var accts []*account
	for i := range accounts {
		info, err := s.CreateAccount(AccountParams{Handle: fmt.Sprintf("@bench%04d", i), GenerateEncryptionKey: true})
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Fund(info.AccountID, confpay.NetworkTest, "USDG", "1000000000"); err != nil {
			tb.Fatal(err)
		}
		s.mu.Lock()
		accts = append(accts, s.accounts[info.AccountID])
		s.mu.Unlock()
	}
	submitN(tb, s, accts, n)
	return s, accts
}

// submitN submits n one-micro-USDG transfers from accts[0] to the others in
// turn, advancing the clock a millisecond every 100, then confirms them.
func submitN(tb testing.TB, s *Server, accts []*account, n int) {
	net := s.nets[confpay.NetworkTest]
	one := big.NewInt(1)
	for i := 0; i < n; i++ {
		to := accts[1+i%(len(accts)-1)]
		s.mu.Lock()
		_, apiErr := s.submitLocked(net, &payment{from: accts[0], to: to, toAddr: to.address, toText: to.handle,
			asset: confpay.AssetUSDG, units: one, confidential: true}, nil)
		s.mu.Unlock()
		if apiErr != nil {
			tb.Fatal(apiErr)
		}
		if i%100 == 99 {
			s.clock.Set(s.clock.Now().Add(time.Millisecond)) // no timer is due yet
		}
	}
	s.Advance(time.Minute)
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTransferMemory stores 1,000,000 confirmed transfers among 100
// accounts and reports the heap they take per transfer: "B/transfer" for
// the whole server (the webhooks' event log included: two events per
// state change), and "core-B/transfer" with the event log emptied (the
// ledger, the transfer records and the listing indexes only).
func BenchmarkTransferMemory(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		s := NewUnstartedServer()
		var accts []*account
		for i := range 100 {
			info, err := s.CreateAccount(AccountParams{Handle: fmt.Sprintf("@mem%04d", i), GenerateEncryptionKey: true})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Fund(info.AccountID, confpay.NetworkTest, "USDG", "1000000000"); err != nil {
				b.Fatal(err)
			}
			accts = append(accts, s.accounts[info.AccountID])
		}
		before := heapInUse()
		submitN(b, s, accts, n)
		all := heapInUse()
		s.hooks.Reset() // drop the event log: what remains is the core's
		core := heapInUse()
		b.ReportMetric(float64(all-before)/n, "B/transfer")
		b.ReportMetric(float64(core-before)/n, "core-B/transfer")
		s.mu.Lock()
		if s.nets[confpay.NetworkTest].transfers.byID.len() != n {
			b.Fatal("transfers lost")
		}
		s.mu.Unlock()
		s.Close()
	}
}

// BenchmarkListPage reads one page of 100 transfers, newest first, deep in
// an account's history (offset n/2) through the handler, for n = 10,000 and
// n = 1,000,000. The goal is that the deep page in a million costs at most
// twice the one in ten thousand.
func BenchmarkListPage(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s, accts := benchStore(b, n, 10)
			key := s.issueKeyLockedForBench(accts[0])
			url := fmt.Sprintf("/v1/transfers?limit=100&offset=%d", n/2)
			get := func() {
				req := httptest.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				w := &countingWriter{header: http.Header{}}
				s.Handler().ServeHTTP(w, req)
				if w.status != http.StatusOK || w.n < 100*200 {
					b.Fatalf("status %d, %d bytes", w.status, w.n)
				}
			}
			get()        // seal the page's notes once, as a first reader would
			runtime.GC() // collect the setup's garbage before timing
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				get()
			}
		})
	}
}

func (s *Server) issueKeyLockedForBench(a *account) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueKeyLocked(a, confpay.NetworkTest, "bench").APIKey.Reveal()
}

// countingWriter is a ResponseWriter that keeps only the status and the
// size, as a network connection would cost nothing to buffer.
type countingWriter struct {
	header http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(s int)   { w.status = s }
func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}
