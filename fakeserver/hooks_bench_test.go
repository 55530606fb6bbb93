package fakeserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/webhookverify"
)

// leanReceiver answers 204 to everything and keeps nothing, so that the
// benchmarks measure the sender.
func leanReceiver(b *testing.B) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(hs.Close)
	return hs
}

// BenchmarkDeliveryThroughput emits b.N events and waits until every one
// has been delivered (signed POST, answer recorded). With one subscription
// the attempts are sequential (one in flight per subscription keeps
// events in order); with eight, the pool works in parallel.
func BenchmarkDeliveryThroughput(b *testing.B) {
	for _, subs := range []int{1, 8} {
		b.Run("subscriptions="+strconv.Itoa(subs), func(b *testing.B) {
			s := New(b)
			hs := leanReceiver(b)
			var trs []*transfer
			for i := range subs {
				payer := newTestParty(b, s, "@payer"+strconv.Itoa(i))
				payee := newTestParty(b, s, "@payee"+strconv.Itoa(i))
				subscribeHooks(b, payer, hs.URL+"/hook", webhookverify.KindTransferConfirmed)
				trs = append(trs, handTransfer(s, payer.acct, payee.acct))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				emitTransfer(s, webhookverify.KindTransferConfirmed, trs[i%subs])
			}
			s.Sync()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			n := 0
			for _, d := range s.hooks.DeliveryRecords(confpay.NetworkTest, "") {
				if d.Status != confpay.DeliverySucceeded {
					b.Fatalf("delivery %s is %s", d.DeliveryID, d.Status)
				}
				n++
			}
			if n != b.N {
				b.Fatalf("%d deliveries for %d events", n, b.N)
			}
		})
	}
}

// BenchmarkDeliveryBaselinePOST is the same work without the server: the
// same number of goroutines POST a signed body of the same size to the
// same kind of receiver. It bounds what loopback HTTP allows.
func BenchmarkDeliveryBaselinePOST(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			hs := leanReceiver(b)
			client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
			defer client.CloseIdleConnections()
			body := bytes.Repeat([]byte("x"), 330)
			jobs := make(chan int)
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range jobs {
						if code := benchPOST(client, hs.URL+"/hook", body, "evt_"+strconv.Itoa(n)); code != http.StatusNoContent {
							panic(fmt.Sprintf("status %d", code))
						}
					}
				}()
			}
			for i := range b.N {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkEmitNoSubscribers is what every transfer pays for its events
// when nobody subscribed: two payloads marshalled and recorded.
func BenchmarkEmitNoSubscribers(b *testing.B) {
	s := New(b)
	alice, bob := newTestParty(b, s, "@alice"), newTestParty(b, s, "@bob")
	tr := handTransfer(s, alice.acct, bob.acct)
	b.ReportAllocs()
	for b.Loop() {
		emitTransfer(s, webhookverify.KindTransferConfirmed, tr)
	}
}

// benchPOST is one signed delivery POST as internal/hooks makes it: the
// same headers, the answer drained, the connection kept.
func benchPOST(client *http.Client, url string, body []byte, eventID string) int {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", hooks.UserAgent)
	req.Header.Set(webhookverify.SignatureHeader, webhookverify.Sign("whsec_bench", body))
	req.Header.Set(webhookverify.EventIDHeader, eventID)
	req.Header.Set(webhookverify.AttemptHeader, "1")
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode
}
