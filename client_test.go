package confpay

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewClientKey(t *testing.T) {
	for _, tc := range []struct {
		key     string
		network Network
		chain   uint64
		wantErr string
	}{
		{key: testKey, network: NetworkTest, chain: 46630},
		{key: "hc_live_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh", network: NetworkLive, chain: 4663},
		{key: "", wantErr: "API key is empty"},
		{key: "sk_test_4eC39HqLyjWDarjtT1zdp7dc", wantErr: "must start with hc_test_ or hc_live_"},
		{key: "hc_test_", wantErr: "must start with hc_test_ or hc_live_"},
		{key: "HC_TEST_4eC39HqLyjWDarjtT1zdp7dc", wantErr: "must start with"},
		{key: "hc_test_4eC39HqLyjWD\narjtT1zdp7dc", wantErr: "only A-Z, a-z and 0-9"},
		{key: " hc_live_4eC39HqLyjWDarjtT1zdp7dc", wantErr: "must start with"},
	} {
		c, err := NewClient(tc.key)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewClient(%q) error %v, want %q", tc.key, err, tc.wantErr)
			}
			if err != nil && len(tc.key) > 8 && strings.Contains(err.Error(), tc.key[8:]) {
				t.Errorf("error %q echoes the key", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("NewClient(%q): %v", tc.key, err)
		}
		if c.Network() != tc.network || c.ChainID() != tc.chain {
			t.Errorf("%q: network %q chain %d, want %q %d", tc.key, c.Network(), c.ChainID(), tc.network, tc.chain)
		}
		if c.BaseURL() != DefaultBaseURL {
			t.Errorf("base URL %q", c.BaseURL())
		}
	}
}

func TestNewClientOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     Option
		wantErr string
	}{
		{"relative base", WithBaseURL("/v1"), "base URL"},
		{"ftp base", WithBaseURL("ftp://example.com"), "base URL"},
		{"base with query", WithBaseURL("https://example.com/?a=b"), "base URL"},
		{"base with credentials", WithBaseURL("https://user:hunter2@example.com"), "base URL"},
		{"negative retries", WithMaxRetries(-1), "max retries"},
		{"negative timeout", WithTimeout(-time.Second), "timeout"},
		{"negative backoff", WithRetryBackoff(-time.Millisecond, time.Second), "WithRetryBackoff"},
		{"backoff cap under base", WithRetryBackoff(time.Second, time.Millisecond), "WithRetryBackoff"},
		{"bad user agent", WithUserAgent("app\r\nX-Evil: 1"), "user agent"},
	} {
		c, err := NewClient(testKey, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want %q (client %v)", tc.name, err, tc.wantErr, c)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %q echoes the password", tc.name, err)
		}
	}
	c, err := NewClient(testKey, WithBaseURL("http://127.0.0.1:8080/api/"))
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "http://127.0.0.1:8080/api" {
		t.Errorf("base URL %q, want the trailing slash trimmed", c.BaseURL())
	}
}

func TestClientNeverPrintsKey(t *testing.T) {
	c, err := NewClient(testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s %q %x", c, c, c, c, c, c),
		fmt.Sprintf("%+v %#v", *c, *c), c.String(), c.GoString(),
	} {
		if strings.Contains(s, testKey[8:]) || strings.Contains(s, "Bearer") {
			t.Errorf("printed client %q shows the key", s)
		}
		if !strings.Contains(s, "network=test") {
			t.Errorf("printed client %q does not name the network", s)
		}
	}
	p := BalancesParams{DecryptionProof: "AQEABFVTREcAAAAAAAAAAwJ5vmZ-"}
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%+v %#v %s", p, &p, p), slogLine(p), slogLine(&p)} {
		if strings.Contains(s, "AQEAB") {
			t.Errorf("printed params %q show the proof", s)
		}
	}
	wh := Webhook{WebhookID: "wh_1", URL: "https://x.example/hook", Secret: "whsec_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh"}
	for _, s := range []string{fmt.Sprint(wh), fmt.Sprintf("%+v %#v", wh, &wh), slogLine(wh), slogLine(&wh), slogLine(wh.Secret)} {
		if strings.Contains(s, "4eC39Hq") || !strings.Contains(s, "REDACTED") {
			t.Errorf("printed webhook %q shows the secret", s)
		}
	}
	if s := slogLine(&wh); !strings.Contains(s, "wh_1") || !strings.Contains(s, "https://x.example/hook") {
		t.Errorf("logged webhook %q lacks its id or URL", s)
	}
}

// slogLine logs v through slog's JSON and text handlers and returns what
// they wrote.
func slogLine(v any) string {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("v", "v", v)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("v", "v", v)
	return buf.String()
}

func TestUserAgentAndHTTPClient(t *testing.T) {
	var rec recorder
	var rt countingTransport
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeJSON(w, 200, golden(t, "responses/account.json"))
	}, WithUserAgent("shop/1.2"), WithHTTPClient(&http.Client{Transport: &rt}))
	if _, err := c.Accounts.Me(context.Background()); err != nil {
		t.Fatal(err)
	}
	ua := rec.all()[0].Header.Get("User-Agent")
	if !strings.HasPrefix(ua, "confpay-go/0.1.0 go/1.") || !strings.HasSuffix(ua, " shop/1.2") {
		t.Errorf("User-Agent %q", ua)
	}
	if rt.n.Load() != 1 {
		t.Errorf("custom HTTP client used %d times, want 1", rt.n.Load())
	}
}

type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestPerAttemptTimeout(t *testing.T) {
	var n atomic.Int32
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // the first attempt never answers
			return
		}
		writeJSON(w, 200, golden(t, "responses/account.json"))
	}, WithTimeout(500*time.Millisecond), WithMaxRetries(1))
	var meta Response
	if _, err := c.Accounts.Me(context.Background(), WithResponse(&meta)); err != nil {
		t.Fatalf("Me: %v", err)
	}
	if meta.Attempts != 2 || n.Load() != 2 {
		t.Errorf("attempts %d, server saw %d; want 2", meta.Attempts, n.Load())
	}
}

func TestCallOptions(t *testing.T) {
	var rec recorder
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, 201, golden(t, "responses/transfer_created.json"))
	})
	var meta Response
	_, err := c.Transfers.Create(context.Background(),
		&TransferCreateParams{To: "@bob", Amount: MustParseAmount("1")},
		WithIdempotencyKey("order-42"), WithHeader("X-Trace", "abc"), WithResponse(&meta))
	if err != nil {
		t.Fatal(err)
	}
	r := rec.all()[0]
	if got := r.Header.Get("Idempotency-Key"); got != "order-42" {
		t.Errorf("Idempotency-Key %q, want the caller's", got)
	}
	if got := r.Header.Get("X-Trace"); got != "abc" {
		t.Errorf("X-Trace %q", got)
	}
	if !meta.IdempotentReplayed || meta.StatusCode != 201 || meta.RequestID != "req_test0001" || meta.Header.Get("Content-Type") != "application/json" {
		t.Errorf("metadata %+v", meta)
	}

	// Two calls without a key get two different generated keys.
	for range 2 {
		if _, err := c.Webhooks.Replay(context.Background(), "wh_1", "evt_1"); err != nil {
			t.Fatal(err)
		}
	}
	reqs := rec.all()
	if a, b := reqs[1].Header.Get("Idempotency-Key"), reqs[2].Header.Get("Idempotency-Key"); a == "" || a == b {
		t.Errorf("generated keys %q and %q, want two distinct", a, b)
	}

	// Refused options send nothing.
	for _, o := range []CallOption{
		WithIdempotencyKey(strings.Repeat("k", 256)),
		WithIdempotencyKey("a\nb"),
		WithHeader("Authorization", "Bearer other"),
		WithHeader("idempotency-key", "x"),
		WithHeader("X-Ok", "bad\r\nvalue"),
		WithHeader("Bad Name", "v"),
	} {
		_, err := c.Transfers.Create(context.Background(), &TransferCreateParams{To: "@bob", Amount: MustParseAmount("1")}, o)
		var pe *ParamError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("refused option: error %v, want a *ParamError", err)
		}
	}
	if n := len(rec.all()); n != 3 {
		t.Errorf("%d requests sent, want 3 (refused options send nothing)", n)
	}
}

func TestCallTimeout(t *testing.T) {
	release := make(chan struct{})
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	_, err := c.Accounts.Me(context.Background(), WithCallTimeout(20*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	var te *TransportError
	if !errors.As(err, &te) || te.Method != "GET" || te.Path != "/v1/accounts/me" {
		t.Errorf("error %#v, want a *TransportError for GET /v1/accounts/me", err)
	}
}

// TestValidationSendsNothing checks every client-side refusal: an error
// naming the field, matching ErrInvalidRequest, and no request.
func TestValidationSendsNothing(t *testing.T) {
	var n atomic.Int32
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { n.Add(1) })
	ctx := context.Background()
	tr := func(p TransferCreateParams) error { _, err := c.Transfers.Create(ctx, &p); return err }
	list := func(p TransferListParams) error { _, err := c.Transfers.List(ctx, &p); return err }
	limit := Ptr(MustParseLimit("10"))
	for _, tc := range []struct {
		param string
		err   error
	}{
		{"params", func() error { _, err := c.Transfers.Create(ctx, nil); return err }()},
		{"to", tr(TransferCreateParams{Amount: MustParseAmount("1")})},
		{"amount", tr(TransferCreateParams{To: "@bob"})},
		{"amount", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("0.000")})},
		{"amount", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1.0000001")})},
		{"amount", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("0.0000000000000000001"), Asset: "ETH"})},
		{"memo", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1"), Memo: strings.Repeat("m", 1025)})},
		{"memo", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1"), Memo: strings.Repeat("é", 512) + "m"})},
		{"memo", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1"), Memo: "rent \xff"})},
		{"memo", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1"), Memo: "\xe2\x82"})},
		{"memo", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1"), Memo: "\xed\xa0\x80"})}, // a surrogate's UTF-8 form
		{"memo", tr(TransferCreateParams{To: "@bob", Amount: MustParseAmount("1"), Memo: "\xc0\xaf"})},     // overlong
		{"transferID", func() error { _, err := c.Transfers.Get(ctx, ""); return err }()},
		{"transferID", func() error { _, err := c.Transfers.Get(ctx, ".."); return err }()},
		{"limit", list(TransferListParams{Limit: -1})},
		{"limit", list(TransferListParams{Limit: 101})},
		{"offset", list(TransferListParams{Offset: -1})},
		{"params", func() error { _, err := c.Agents.Create(ctx, nil); return err }()},
		{"name", func() error { _, err := c.Agents.Create(ctx, &AgentCreateParams{}); return err }()},
		{"spend_policy.daily_limit_usdg", func() error {
			_, err := c.Agents.Create(ctx, &AgentCreateParams{Name: "bot", SpendPolicy: SpendPolicyParams{PerTransactionLimitUSDG: limit}})
			return err
		}()},
		{"spend_policy.per_transaction_limit_usdg", func() error {
			_, err := c.Agents.Create(ctx, &AgentCreateParams{Name: "bot", SpendPolicy: SpendPolicyParams{DailyLimitUSDG: limit}})
			return err
		}()},
		{"agentID", func() error { _, err := c.Agents.GetPolicy(ctx, ""); return err }()},
		{"agentID", func() error { _, err := c.Agents.UpdatePolicy(ctx, "", &SpendPolicyParams{}); return err }()},
		{"params", func() error { _, err := c.Agents.UpdatePolicy(ctx, "acct_1", nil); return err }()},
		{"allowed_recipients", func() error {
			_, err := c.Agents.UpdatePolicy(ctx, "acct_1", &SpendPolicyParams{AnyRecipient: true, AllowedRecipients: []string{"@bob"}})
			return err
		}()},
		{"hitl_threshold_usdg", func() error {
			_, err := c.Agents.UpdatePolicy(ctx, "acct_1", &SpendPolicyParams{NoHITLThreshold: true, HITLThresholdUSDG: limit})
			return err
		}()},
		{"spend_policy.allowed_recipients", func() error {
			_, err := c.Agents.Create(ctx, &AgentCreateParams{Name: "bot", SpendPolicy: SpendPolicyParams{
				DailyLimitUSDG: limit, PerTransactionLimitUSDG: limit, AnyRecipient: true, AllowedRecipients: []string{}}})
			return err
		}()},
		{"transactionID", func() error { _, err := c.Agents.Approve(ctx, ""); return err }()},
		{"transactionID", func() error { _, err := c.Agents.Reject(ctx, ""); return err }()},
		{"params", func() error { _, err := c.Webhooks.Create(ctx, nil); return err }()},
		{"url", func() error {
			_, err := c.Webhooks.Create(ctx, &WebhookCreateParams{Events: []EventKind{EventTransferConfirmed}})
			return err
		}()},
		{"events", func() error {
			_, err := c.Webhooks.Create(ctx, &WebhookCreateParams{URL: "https://x.example"})
			return err
		}()},
		{"webhookID", c.Webhooks.Delete(ctx, "")},
		{"webhookID", func() error { _, err := c.Webhooks.Replay(ctx, "", "evt_1"); return err }()},
		{"eventID", func() error { _, err := c.Webhooks.Replay(ctx, "wh_1", ""); return err }()},
		{"webhookID", func() error { _, err := c.Webhooks.Deliveries(ctx, "", nil); return err }()},
	} {
		var pe *ParamError
		if !errors.As(tc.err, &pe) || pe.Param != tc.param {
			t.Errorf("error %v, want a *ParamError for %q", tc.err, tc.param)
			continue
		}
		if !errors.Is(tc.err, ErrInvalidRequest) || !strings.Contains(tc.err.Error(), tc.param) {
			t.Errorf("error %q does not match ErrInvalidRequest or name %q", tc.err, tc.param)
		}
	}
	if n.Load() != 0 {
		t.Errorf("%d requests sent, want none", n.Load())
	}
}

func TestPathEscaping(t *testing.T) {
	var rec recorder
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeJSON(w, 200, []byte(`{}`))
	})
	ctx := context.Background()
	_, _ = c.Transfers.Get(ctx, "tr/../x y?z#")
	_, _ = c.Webhooks.Replay(ctx, "wh 1", "evt/2")
	_, _ = c.Agents.GetPolicy(ctx, "%41")
	want := []string{
		"/v1/transfers/tr%2F..%2Fx%20y%3Fz%23",
		"/v1/webhooks/wh%201/replay/evt%2F2",
		"/v1/agents/%2541/spend-policy",
	}
	for i, r := range rec.all() {
		if r.Path != want[i] || r.Query != "" {
			t.Errorf("path %q query %q, want %q", r.Path, r.Query, want[i])
		}
	}
}

func TestAPIError(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/transfers":
			writeJSON(w, 403, golden(t, "responses/error_policy_violation.json"))
		case "/v1/accounts/me/balances":
			w.Header().Set("X-Request-Id", "req_hdr")
			w.WriteHeader(422)
			_, _ = w.Write(golden(t, "responses/error_proof_stale.json"))
		case "/v1/accounts/me":
			w.WriteHeader(418)
			_, _ = w.Write([]byte("<html>teapot</html>"))
		default:
			w.WriteHeader(400)
			_, _ = w.Write(bytes.Repeat([]byte("x"), 3<<20))
		}
	})
	ctx := context.Background()
	var meta Response
	_, err := c.Transfers.Create(ctx, &TransferCreateParams{To: "@shop", Amount: MustParseAmount("99.5")}, WithResponse(&meta))
	if !errors.Is(err, ErrPolicyViolation) || errors.Is(err, ErrInsufficientBalance) {
		t.Fatalf("error %v, want ErrPolicyViolation only", err)
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %T, want *APIError", err)
	}
	if ae.StatusCode != 403 || ae.Code != CodePolicyViolation || ae.Rule != RulePerTransactionLimit || ae.RequestID != "req_test0001" ||
		ae.Message == "" || !bytes.Equal(ae.Body, golden(t, "responses/error_policy_violation.json")) || ae.Response == nil {
		t.Errorf("APIError %+v", ae)
	}
	if meta.StatusCode != 403 {
		t.Errorf("metadata status %d on error, want 403", meta.StatusCode)
	}
	msg := err.Error()
	for _, bad := range []string{testKey[8:], "99.5", "Bearer"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error %q contains %q", msg, bad)
		}
	}
	for _, want := range []string{"403", "policy_violation", "per_transaction_limit", "req_test0001"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}

	_, err = c.Accounts.Balances(ctx, &BalancesParams{DecryptionProof: "AQEABFVTREcAAAAAAAAAAwJ5vmZ-"})
	if !errors.As(err, &ae) || ae.Reason != ReasonStale || ae.Param != "decryption_proof" || ae.RequestID != "req_hdr" || !errors.Is(err, ErrDecryptionProofInvalid) {
		t.Errorf("stale proof error %+v", err)
	}
	if strings.Contains(err.Error(), "AQEAB") {
		t.Errorf("error %q contains the proof", err)
	}

	_, err = c.Accounts.Me(ctx)
	if !errors.As(err, &ae) || ae.StatusCode != 418 || ae.Code != "" || ae.Message != "I'm a teapot" || string(ae.Body) != "<html>teapot</html>" {
		t.Errorf("non-JSON error %+v", err)
	}

	_, err = c.Webhooks.List(ctx)
	if !errors.As(err, &ae) || len(ae.Body) != 1<<20 {
		t.Errorf("huge error body: %v (body %d bytes), want it capped at 1 MiB", err, len(ae.Body))
	}
}

func TestAnswerBodyLimits(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/webhooks" {
			writeJSON(w, 200, append([]byte(`{"webhooks":[`), bytes.Repeat([]byte(" "), 2<<20)...))
			return
		}
		writeJSON(w, 200, []byte(`{"account_id": 12}`))
	})
	if _, err := c.Webhooks.List(context.Background()); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("oversized answer: error %v, want one naming the 1 MiB cap", err)
	}
	if _, err := c.Accounts.Me(context.Background()); err == nil || !strings.Contains(err.Error(), "decoding") {
		t.Errorf("bad answer: error %v, want a decoding error", err)
	}
}

func TestTransportErrorHidesURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	c, err := NewClient(testKey, WithBaseURL(url), WithMaxRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(int, *http.Response) time.Duration { return 0 }
	_, err = c.Transfers.List(context.Background(), &TransferListParams{Status: StatusConfirmed, From: ts("2026-07-01T00:00:00Z")})
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("error %T %v, want *TransportError", err, err)
	}
	if te.Attempts != 3 || te.Method != "GET" || te.Path != "/v1/transfers" || te.Err == nil {
		t.Errorf("TransportError %+v", te)
	}
	msg := err.Error()
	for _, bad := range []string{url, "status=", "from=", "?", testKey[8:]} {
		if strings.Contains(msg, bad) {
			t.Errorf("error %q contains %q", msg, bad)
		}
	}
	var ae *APIError
	if errors.As(err, &ae) {
		t.Error("a transport error matches *APIError")
	}
}

func TestTLSFailureNotRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is expected
	srv.StartTLS()
	defer srv.Close()
	c, err := NewClient(testKey, WithBaseURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(int, *http.Response) time.Duration { return 0 }
	_, err = c.Accounts.Me(context.Background())
	var te *TransportError
	if !errors.As(err, &te) || te.Attempts != 1 {
		t.Errorf("error %v, want a *TransportError after 1 attempt", err)
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	var n atomic.Int32
	// The time and the duration are replaced by constants: their digits
	// change every run and could contain a figure the test looks for.
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{}
			case "duration":
				return slog.Int64("duration", 0)
			}
			return a
		},
	}))
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			writeJSON(w, 503, []byte(`{"code":"internal_error","message":"try again"}`))
			return
		}
		writeJSON(w, 200, golden(t, "responses/balances_proof.json"))
	}, WithLogger(logger))
	proof := "AQEABFVTREcAAAAAAAAAAwJ5vmZ-"
	if _, err := c.Accounts.Balances(context.Background(), &BalancesParams{DecryptionProof: proof}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Transfers.List(context.Background(), &TransferListParams{Status: StatusConfirmed}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want one per attempt (3):\n%s", len(lines), out)
	}
	for _, want := range []string{`"level":"DEBUG"`, `"method":"GET"`, `"path":"/v1/accounts/me/balances"`, `"status":503`, `"attempt":1`, `"request_id":"req_test0001"`, `"duration":`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s lacks %s", lines[0], want)
		}
	}
	if !strings.Contains(lines[1], `"attempt":2`) || !strings.Contains(lines[1], `"status":200`) {
		t.Errorf("second line %s", lines[1])
	}
	for _, bad := range []string{testKey[8:], proof, "1250", "status=confirmed", "encrypted", "Bearer"} {
		if strings.Contains(out, bad) {
			t.Errorf("log contains %q:\n%s", bad, out)
		}
	}
}

// TestSilentByDefault checks that nothing reaches the default loggers
// (slog's or the log package's, which retryablehttp would use) without
// WithLogger.
func TestSilentByDefault(t *testing.T) {
	var slogBuf, logBuf bytes.Buffer
	prevSlog := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&slogBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	prevOut := log.Writer()
	log.SetOutput(&logBuf)
	t.Cleanup(func() { slog.SetDefault(prevSlog); log.SetOutput(prevOut) })

	var n atomic.Int32
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			writeJSON(w, 503, nil)
			return
		}
		writeJSON(w, 200, golden(t, "responses/account.json"))
	})
	if _, err := c.Accounts.Me(context.Background()); err != nil {
		t.Fatal(err)
	}
	if slogBuf.Len() != 0 || logBuf.Len() != 0 {
		t.Errorf("default logging: slog %q, log %q", slogBuf.String(), logBuf.String())
	}
}

// TestSecretRedactedInEveryEncoding: a Secret, alone or inside a struct, a
// slice or a map value, encodes as REDACTED with encoding/json, encoding/xml,
// encoding/gob and slog's JSON handler (which encodes a struct without
// LogValue as JSON). Decoding still reads the real value: answers carry
// secrets.
func TestSecretRedactedInEveryEncoding(t *testing.T) {
	const clear = "whsec_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh"
	type holder struct {
		S Secret
		W Webhook
	}
	wh := Webhook{WebhookID: "wh_1", Secret: clear}
	values := []any{Secret(clear), holder{S: clear, W: wh}, []Webhook{wh}, map[string]Secret{"k": clear}}
	var out bytes.Buffer
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%T): %v", v, err)
		}
		out.Write(b)
		out.WriteString(slogLine(v))
		if err := gob.NewEncoder(&out).Encode(v); err != nil {
			t.Fatalf("gob of %T: %v", v, err)
		}
	}
	b, err := xml.Marshal(holder{S: clear})
	if err != nil {
		t.Fatal(err)
	}
	out.Write(b)
	if strings.Contains(out.String(), "4eC39Hq") {
		t.Errorf("a secret was encoded in clear:\n%q", out.String())
	}
	if !strings.Contains(out.String(), `"S":"REDACTED"`) {
		t.Errorf("no REDACTED in place of the secret:\n%q", out.String())
	}
	var got Webhook
	if err := json.Unmarshal([]byte(`{"webhook_id":"wh_1","secret":"`+clear+`"}`), &got); err != nil || got.Secret.Reveal() != clear {
		t.Errorf("decoding an answer's secret: %v, match %v", err, got.Secret.Reveal() == clear)
	}
}
