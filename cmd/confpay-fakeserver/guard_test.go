package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/internal/tcpforward"
)

// The binary's guards of /_fake: no webhook delivery acts on it (whether
// it reaches this server through a forwarder or another server), unclean
// paths and unknown query parameters are refused, and it is never served
// beyond loopback without an admin token.

// seeded is a binary started with @alice (funded) and @bob.
type seeded struct {
	*running
	aliceKey string
}

func launchSeeded(t *testing.T, args ...string) seeded {
	t.Helper()
	seed := writeSeed(t, `{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"100"}}},{"handle":"@bob"}]}`)
	r := launch(t, append([]string{"-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock", "-log-level", "off"}, args...)...)
	var line struct {
		Accounts []struct {
			Handle  string `json:"handle"`
			TestKey string `json:"test_key"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(r.line, &line); err != nil || len(line.Accounts) != 2 || line.Accounts[0].Handle != "@alice" {
		t.Fatalf("start line %s (%v)", r.line, err)
	}
	return seeded{r, line.Accounts[0].TestKey}
}

// do sends one request and returns the status and body.
func do(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// accounts returns how many accounts the server at url holds.
func accounts(t *testing.T, url string) int {
	t.Helper()
	st, b := do(t, "GET", url+"/_fake/accounts", "", "")
	var v struct {
		Accounts []json.RawMessage `json:"accounts"`
	}
	if err := json.Unmarshal(b, &v); st != 200 || err != nil {
		t.Fatalf("GET /_fake/accounts: %d %s", st, b)
	}
	return len(v.Accounts)
}

// TestBinaryWebhooksNeverReachFake: a test key on binary A subscribes two
// webhooks, one through a local TCP forwarder to A's own /_fake/reset, one
// to binary B's /_fake/reset, and pays once. Both deliveries are answered
// 403 and both servers keep their accounts.
func TestBinaryWebhooksNeverReachFake(t *testing.T) {
	a, b := launchSeeded(t), launchSeeded(t)
	fwd := tcpforward.Start(t, strings.TrimPrefix(a.url, "http://"))
	c, err := confpay.NewClient(a.aliceKey, confpay.WithBaseURL(a.url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var hooks []string
	for _, url := range []string{"http://" + fwd + "/_fake/reset", b.url + "/_fake/reset"} {
		w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: url, Events: []confpay.EventKind{"transfer.initiated"}})
		if err != nil {
			t.Fatalf("subscribing %s: %v", url, err)
		}
		hooks = append(hooks, w.WebhookID)
	}
	if _, err := c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1"), Confidential: confpay.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	// POST /_fake/clock runs everything due, the deliveries included,
	// before it answers.
	if st, body := do(t, "POST", a.url+"/_fake/clock", "", `{}`); st != 200 {
		t.Fatalf("POST /_fake/clock: %d %s", st, body)
	}
	if n := accounts(t, a.url); n != 2 {
		t.Fatalf("server A holds %d accounts, want 2: a delivery through the forwarder reset it", n)
	}
	if n := accounts(t, b.url); n != 2 {
		t.Fatalf("server B holds %d accounts, want 2: server A's delivery reset it", n)
	}
	for i, id := range hooks {
		l, err := c.Webhooks.Deliveries(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Deliveries) != 1 || l.Deliveries[0].ResponseStatus != http.StatusForbidden {
			t.Errorf("webhook %d: deliveries %+v, want one answered 403", i, l.Deliveries)
		}
	}
}

// TestBinaryUncleanPathsRefused: request lines with unclean paths, sent
// byte for byte, are 400 invalid_request (param path), never a redirect,
// and reset nothing.
func TestBinaryUncleanPathsRefused(t *testing.T) {
	r := launchSeeded(t)
	host := strings.TrimPrefix(r.url, "http://")
	for _, p := range []string{"//_fake/reset", "/v1/../_fake/reset", "/_fake/./reset", "/_fake//reset", "/_fake/%2e%2e/_fake/reset", "/_fake/%2E/reset", "/_fake/%2Freset", "/v1/%2e%2e/_fake/reset"} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // guards the test against hanging only
		_, _ = conn.Write([]byte("POST " + p + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("POST %s: %v", p, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		var e confpay.ErrorBody
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != 400 || e.Code != confpay.CodeInvalidRequest || e.Param != "path" || resp.Header.Get("Location") != "" {
			t.Errorf("POST %s: %d %s (param %q, Location %q), want 400 invalid_request (param path), no redirect", p, resp.StatusCode, e.Code, e.Param, resp.Header.Get("Location"))
		}
		if n := accounts(t, r.url); n != 2 {
			t.Fatalf("after POST %s the server holds %d accounts, want 2", p, n)
		}
	}
}

// TestBinaryUnknownQueryRefused: an unknown query parameter is 400
// invalid_request naming it, on /v1 endpoints that take a query and those
// that take none, and on /_fake, nothing done.
func TestBinaryUnknownQueryRefused(t *testing.T) {
	r := launchSeeded(t)
	for _, tc := range []struct{ method, path, key, param string }{
		{"GET", "/v1/agents/transactions/pending?limit=10", r.aliceKey, "limit"},
		{"GET", "/v1/accounts/me?expand=1", r.aliceKey, "expand"},
		{"GET", "/v1/transfers?bogus=1", r.aliceKey, "bogus"},
		{"POST", "/_fake/reset?bogus=1", "", "bogus"},
		{"POST", "/_fake/settle?now=1", "", "now"},
	} {
		st, body := do(t, tc.method, r.url+tc.path, tc.key, "")
		var e confpay.ErrorBody
		_ = json.Unmarshal(body, &e)
		if st != 400 || e.Code != confpay.CodeInvalidRequest || e.Param != tc.param {
			t.Errorf("%s %s: %d %s, want 400 invalid_request (param %s)", tc.method, tc.path, st, body, tc.param)
		}
	}
	if n := accounts(t, r.url); n != 2 {
		t.Fatalf("the server holds %d accounts, want 2", n)
	}
}

// refused runs the binary with args and returns what it printed and its
// error; should it start instead, it is stopped as soon as it prints its
// start line.
func refused(args ...string) (string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &stopOnWrite{stop: cancel}
	err := run(ctx, args, out, io.Discard)
	return out.buf.String(), err
}

// stopOnWrite keeps what is written to it and calls stop on each write.
type stopOnWrite struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	stop func()
}

func (w *stopOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop()
	return w.buf.Write(p)
}

// TestBinaryRefusesOpenFakeBeyondLoopback: on any address but a loopback
// one, the binary refuses to start without an admin token, saying how to
// set one; with a token it starts and /_fake needs it. A token under 16
// bytes is refused wherever it listens, and the refusal never holds it.
func TestBinaryRefusesOpenFakeBeyondLoopback(t *testing.T) {
	t.Setenv(adminTokenEnv, "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		printed, err := refused("-addr", addr, "-log-level", "off")
		if err != nil && strings.Contains(err.Error(), "address family not supported") {
			continue // no IPv6 here
		}
		if err == nil || !strings.Contains(err.Error(), adminTokenEnv) || !strings.Contains(err.Error(), "-admin-token") || printed != "" {
			t.Errorf("-addr %s without a token: %v, printed %q; want a refusal naming %s and -admin-token", addr, err, printed, adminTokenEnv)
		}
	}
	// Loopback needs no token, named or numbered.
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		if u := startRun(t, "-addr", addr, "-log-level", "off"); accounts(t, u) != 0 {
			t.Errorf("-addr %s: accounts on an empty server", addr)
		}
	}
	const token = "tok-0123456789abcdef"
	open := launch(t, "-addr", "0.0.0.0:0", "-admin-token", token, "-log-level", "off")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(open.url, "http://"))
	base := "http://127.0.0.1:" + port
	if st, _ := do(t, "GET", base+"/_fake/accounts", "", ""); st != 401 {
		t.Errorf("0.0.0.0 with a token, no credentials: %d, want 401", st)
	}
	if st, _ := do(t, "GET", base+"/_fake/accounts", token, ""); st != 200 {
		t.Errorf("0.0.0.0 with a token, the token: %d, want 200", st)
	}

	short := "0123456789abcde" // 15 bytes
	for _, args := range [][]string{{"-addr", "127.0.0.1:0", "-admin-token", short}, {"-addr", "0.0.0.0:0", "-admin-token", short}} {
		printed, err := refused(args...)
		if err == nil || !strings.Contains(err.Error(), "16 bytes") || strings.Contains(err.Error(), short) || printed != "" {
			t.Errorf("run(%q): %v; want a refusal naming 16 bytes, not the token", args, err)
		}
	}
	t.Setenv(adminTokenEnv, short)
	if _, err := refused("-addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "16 bytes") {
		t.Errorf("a short $%s: %v, want a refusal", adminTokenEnv, err)
	}
}
