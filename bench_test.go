package confpay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// wireCount counts what reached a bench server: connections opened and
// requests served.
type wireCount struct {
	conns, reqs atomic.Int64
	cpu         int64 // process CPU time at the reset
}

// report adds the counts since the last reset as per-call metrics, and
// fails the benchmark unless every call was one request and connections
// were reused.
func (c *wireCount) report(b *testing.B) {
	n := float64(b.N)
	if end, ok := processCPU(); ok {
		b.ReportMetric(float64(end-c.cpu)/n, "cpu-ns/op")
	}
	reqs, conns := float64(c.reqs.Load()), float64(c.conns.Load())
	b.ReportMetric(reqs/n, "reqs/op")
	b.ReportMetric(conns/n, "conns/op")
	if c.reqs.Load() != int64(b.N) || conns > 16 {
		b.Fatalf("%d calls made %d requests on %d connections", b.N, c.reqs.Load(), c.conns.Load())
	}
}

// reset zeroes the counts and starts the CPU clock: cpu-ns/op is the
// process's CPU time per call (client and server alike), which stays
// comparable when other processes compete for the cores.
func (c *wireCount) reset() {
	c.conns.Store(0)
	c.reqs.Store(0)
	c.cpu, _ = processCPU()
}

// benchServer answers every request with a canned body, as fast as it can,
// and counts connections and requests.
func benchServer(b *testing.B, status int, body []byte) (*httptest.Server, *http.Client, *wireCount) {
	var count wireCount
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.reqs.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["X-Request-Id"] = []string{"req_bench0001"}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			count.conns.Add(1)
		}
	}
	srv.Start()
	b.Cleanup(srv.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return srv, &http.Client{Transport: tr}, &count
}

// baselineDo is the same request written with plain net/http and
// encoding/json: what a caller without the SDK would write.
func baselineDo(ctx context.Context, hc *http.Client, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("User-Agent", "confpay-go/"+Version)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet {
		req.Header.Set("Idempotency-Key", rand.Text())
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func BenchmarkTransfersCreate(b *testing.B) {
	srv, hc, count := benchServer(b, 201, golden(b, "responses/transfer_created.json"))
	params := &TransferCreateParams{To: "@bob", Amount: MustParseAmount("12.5"), Memo: "invoice 42"}
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		c, err := NewClient(testKey, WithBaseURL(srv.URL), WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		count.reset()
		for b.Loop() {
			if _, err := c.Transfers.Create(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
		count.report(b)
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		count.reset()
		for b.Loop() {
			var t Transfer
			if err := baselineDo(ctx, hc, http.MethodPost, srv.URL+"/v1/transfers", params, &t); err != nil {
				b.Fatal(err)
			}
		}
		count.report(b)
	})
}

func BenchmarkTransfersGet(b *testing.B) {
	srv, hc, count := benchServer(b, 200, golden(b, "responses/transfer.json"))
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		c, err := NewClient(testKey, WithBaseURL(srv.URL), WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		count.reset()
		for b.Loop() {
			if _, err := c.Transfers.Get(ctx, "tr_3k9d8f7g6h5j"); err != nil {
				b.Fatal(err)
			}
		}
		count.report(b)
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		count.reset()
		for b.Loop() {
			var t Transfer
			if err := baselineDo(ctx, hc, http.MethodGet, srv.URL+"/v1/transfers/tr_3k9d8f7g6h5j", nil, &t); err != nil {
				b.Fatal(err)
			}
		}
		count.report(b)
	})
}
