package confpay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchServer answers every request with a canned body, as fast as it can.
func benchServer(b *testing.B, status int, body []byte) (*httptest.Server, *http.Client) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["X-Request-Id"] = []string{"req_bench0001"}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return srv, &http.Client{Transport: tr}
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
	srv, hc := benchServer(b, 201, golden(b, "responses/transfer_created.json"))
	params := &TransferCreateParams{To: "@bob", Amount: MustParseAmount("12.5"), Memo: "invoice 42"}
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		c, err := NewClient(testKey, WithBaseURL(srv.URL), WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Transfers.Create(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var t Transfer
			if err := baselineDo(ctx, hc, http.MethodPost, srv.URL+"/v1/transfers", params, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkTransfersGet(b *testing.B) {
	srv, hc := benchServer(b, 200, golden(b, "responses/transfer.json"))
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		c, err := NewClient(testKey, WithBaseURL(srv.URL), WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Transfers.Get(ctx, "tr_3k9d8f7g6h5j"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var t Transfer
			if err := baselineDo(ctx, hc, http.MethodGet, srv.URL+"/v1/transfers/tr_3k9d8f7g6h5j", nil, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
