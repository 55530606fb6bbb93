package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/confpay/confpay-go/fakeserver"
)

// keepAlive makes one request on a keep-alive connection of client and
// leaves the connection idle in client's pool.
func keepAlive(b *testing.B, client *http.Client, url string) {
	resp, err := client.Get(url + "/_fake/clock")
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// BenchmarkShutdownIdle measures a stop of an idle server, from the
// signal to the end of run: the binary with an idle keep-alive connection
// and a connection that has not sent a byte, against net/http's own
// Shutdown of the same handler with only the idle keep-alive connection
// (with the fresh one, net/http waits until it is 5 s old).
func BenchmarkShutdownIdle(b *testing.B) {
	b.Run("binary", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ctx, cancel := context.WithCancel(context.Background())
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-log-level", "off"}, pw, io.Discard)
				pw.Close()
			}()
			var out struct {
				URL string `json:"url"`
			}
			if err := json.NewDecoder(pr).Decode(&out); err != nil {
				b.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			client := &http.Client{Transport: &http.Transport{}}
			keepAlive(b, client, out.URL)
			fresh, err := net.Dial("tcp", strings.TrimPrefix(out.URL, "http://"))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			fresh.Close()
			client.CloseIdleConnections()
			b.StartTimer()
		}
	})
	b.Run("net-http-baseline", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			srv := fakeserver.NewUnstartedServer()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			hs := &http.Server{Handler: srv.Handler()}
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ln) }()
			client := &http.Client{Transport: &http.Transport{}}
			keepAlive(b, client, "http://"+ln.Addr().String())
			b.StartTimer()
			srv.Close()
			if err := hs.Shutdown(context.Background()); err != nil {
				b.Fatal(err)
			}
			<-served
			b.StopTimer()
			client.CloseIdleConnections()
			b.StartTimer()
		}
	})
}

// BenchmarkRequestLog measures a /v1 request over loopback HTTP with the
// request log off and on (text and JSON, to a discarding writer).
func BenchmarkRequestLog(b *testing.B) {
	seed := writeSeed(b, `{"accounts":[{"handle":"@alice"}]}`)
	for _, level := range []struct{ name, format, level string }{
		{"off", "text", "off"}, {"text", "text", "info"}, {"json", "json", "info"},
	} {
		b.Run(level.name, func(b *testing.B) {
			r := launch(b, "-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock", "-log-format", level.format, "-log-level", level.level)
			var start struct {
				Accounts []struct {
					TestKey string `json:"test_key"`
				} `json:"accounts"`
			}
			if err := json.Unmarshal(r.line, &start); err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
			req, _ := http.NewRequest("GET", r.url+"/v1/accounts/me", nil)
			req.Header.Set("Authorization", "Bearer "+start.Accounts[0].TestKey)
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(fmt.Sprint(resp.StatusCode))
				}
			}
			b.StopTimer()
			client.CloseIdleConnections()
			_ = r.stop()
		})
	}
}

// BenchmarkRequestLogHandler measures the same request in process (no
// network), where the log's share of the cost is the largest.
func BenchmarkRequestLogHandler(b *testing.B) {
	srv := fakeserver.NewUnstartedServer()
	defer srv.Close()
	alice, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice"})
	if err != nil {
		b.Fatal(err)
	}
	for _, level := range []struct{ name, format, level string }{
		{"off", "text", "off"}, {"text", "text", "info"}, {"json", "json", "info"},
	} {
		b.Run(level.name, func(b *testing.B) {
			log, err := newLogger(level.format, level.level, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			h := logRequests(log, srv.Handler())
			req := httptest.NewRequest("GET", "/v1/accounts/me", nil)
			req.Header.Set("Authorization", "Bearer "+string(alice.TestKey))
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
