package fakeserver

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	confpay "github.com/confpay/confpay-go"
)

// withLookup replaces name resolution for the self-SSRF checks and the
// delivery dialer (tests only).
func withLookup(f func(ctx context.Context, host string) ([]netip.Addr, error)) Option {
	return func(o *options) { o.lookup = f }
}

// callAuth sends one request to s's listener and returns the status and the
// decoded error body (zero when the answer is not an error).
func callAuth(t *testing.T, s *Server, method, path, auth, body string, extraAuth ...string) (int, confpay.ErrorBody) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for _, a := range extraAuth {
		req.Header.Add("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e confpay.ErrorBody
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(b, &e)
	}
	return resp.StatusCode, e
}

func listenPort(t *testing.T, s *Server) string {
	t.Helper()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestWebhookURLsThatReachTheServerAreRefused: every spelling of the
// server's own listener, and every address no receiver lives at, is 400
// invalid_request param url at subscription, and changes nothing.
func TestWebhookURLsThatReachTheServerAreRefused(t *testing.T) {
	t.Parallel()
	s := New(t)
	alice := newTestParty(t, s, "@alice")
	key := "Bearer " + newKey(t, s, "@alice")
	port := listenPort(t, s)
	urls := []string{
		"http://127.0.0.1:" + port + "/_fake/reset",
		"http://127.0.0.2:" + port + "/_fake/reset",
		"http://localhost:" + port + "/_fake/reset",
		"http://LocalHost.:" + port + "/_fake/reset",
		"http://api.localhost:" + port + "/v1/transfers",
		"http://[::1]:" + port + "/_fake/reset",
		"http://[::ffff:127.0.0.1]:" + port + "/_fake/reset",
		"http://[0:0:0:0:0:0:0:1]:" + port + "/_fake/reset",
		"http://2130706433:" + port + "/_fake/reset",
		"http://0177.0.0.1:" + port + "/_fake/reset",
		"http://0x7f.0.0.1:" + port + "/_fake/reset",
		"http://0x7f000001:" + port + "/_fake/reset",
		"http://127.1:" + port + "/_fake/reset",
		"http://127.0.0.1.:" + port + "/_fake/reset",
		"https://0.0.0.0/hooks",
		"https://0.1.2.3/hooks",
		"https://[::]/hooks",
		"https://169.254.169.254/latest/meta-data",
		"https://[fe80::1]/hooks",
		"https://[fd00:ec2::254]/hooks",
		"https://[64:ff9b::a9fe:a9fe]/hooks",   // 169.254.169.254 through NAT64
		"https://[64:ff9b:1::a9fe:a9fe]/hooks", // local-use NAT64
		"https://[::a9fe:a9fe]/hooks",          // IPv4-compatible
		"https://[2002:a9fe:a9fe::1]/hooks",    // 6to4
		"https://[64:ff9b::0]/hooks",           // 0.0.0.0 through NAT64
		"https://100.100.100.200/hooks",        // Alibaba Cloud's metadata
		"http://127.0.0.1:0/hooks",
		"http://127.0.0.1:65536/hooks",
		"http://127.0.0.1:99999/hooks",
	}
	before := s.Snapshot()
	for _, u := range urls {
		status, e := callAuth(t, s, "POST", "/v1/webhooks", key, `{"url":"`+u+`","events":["transfer.initiated"]}`)
		if status != 400 || e.Code != confpay.CodeInvalidRequest || e.Param != "url" {
			t.Errorf("%s: %d %s param %q, want 400 invalid_request param url", u, status, e.Code, e.Param)
		}
	}
	if d := cmp.Diff(before, s.Snapshot(),
		cmpopts.IgnoreFields(KeyInfo{}, "LastUsedAt", "RequestCount"),
		cmp.Comparer(func(a, b confpay.Amount) bool { return a.String() == b.String() }),
		cmp.Comparer(func(a, b confpay.Limit) bool { return a.String() == b.String() }),
	); d != "" {
		t.Errorf("refused subscriptions changed the state (-before +after):\n%s", d)
	}
	// A receiver of the test's own on loopback stays welcome.
	rc := newHookReceiver(t, s, answerAlways(200))
	subscribeHooks(t, alice, rc.url(), "transfer.initiated")
}

// newKey issues a fresh test key for an account.
func newKey(t *testing.T, s *Server, handle string) string {
	t.Helper()
	k, err := s.IssueKey(handle, confpay.NetworkTest, "ssrf")
	if err != nil {
		t.Fatal(err)
	}
	return k.APIKey.Reveal()
}

// TestWebhookNameResolvingToTheServerIsRefused: a name that resolves to
// the server's listener is refused at subscription.
func TestWebhookNameResolvingToTheServerIsRefused(t *testing.T) {
	t.Parallel()
	s := New(t, withLookup(func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "evil.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "meta.test":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("192.0.2.10")}, nil
	}))
	newTestParty(t, s, "@alice")
	key := "Bearer " + newKey(t, s, "@alice")
	port := listenPort(t, s)
	for _, u := range []string{"https://evil.test:" + port + "/_fake/reset", "https://meta.test/latest"} {
		status, e := callAuth(t, s, "POST", "/v1/webhooks", key, `{"url":"`+u+`","events":["transfer.initiated"]}`)
		if status != 400 || e.Param != "url" {
			t.Errorf("%s: %d %s param %q, want 400 param url", u, status, e.Code, e.Param)
		}
	}
	if status, _ := callAuth(t, s, "POST", "/v1/webhooks", key, `{"url":"https://good.test/hooks","events":["transfer.initiated"]}`); status != 201 {
		t.Errorf("a name resolving elsewhere: %d, want 201", status)
	}
}

// TestWebhookRebindIsRefusedAtDial: a name that resolved elsewhere at
// subscription but resolves to the server's own listener when the delivery
// dials is refused at dial time: the attempt fails with no answer and the
// server's state survives.
func TestWebhookRebindIsRefusedAtDial(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	target := netip.MustParseAddr("192.0.2.10")
	s := New(t, withLookup(func(_ context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		return []netip.Addr{target}, nil
	}))
	alice := newTestParty(t, s, "@alice")
	newTestParty(t, s, "@bob")
	if err := s.Fund("@alice", confpay.NetworkTest, "USDG", "10"); err != nil {
		t.Fatal(err)
	}
	w := subscribeHooks(t, alice, "https://rebind.test:"+listenPort(t, s)+"/_fake/reset", "transfer.initiated")
	mu.Lock()
	target = netip.MustParseAddr("127.0.0.1")
	mu.Unlock()

	if _, err := alice.client.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1"), Confidential: confpay.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	s.Sync()
	ds := listDeliveries(t, alice, w.WebhookID)
	if len(ds) != 1 || ds[0].Attempts != 1 || ds[0].ResponseStatus != 0 || ds[0].Status == "succeeded" {
		t.Fatalf("deliveries = %+v, want one failed attempt with no answer", ds)
	}
	if n := len(s.Accounts()); n != 2 {
		t.Fatalf("the server holds %d accounts, want 2: the delivery reached /_fake/reset", n)
	}
}

// TestDeliveryFollowsNoRedirect: a receiver answering 307 towards the
// admin interface gets no second request made for it; the attempt is a
// failure recorded with the 307.
func TestDeliveryFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	s := New(t)
	setJitter(s, noJitter)
	alice := newTestParty(t, s, "@alice")
	newTestParty(t, s, "@bob")
	if err := s.Fund("@alice", confpay.NetworkTest, "USDG", "10"); err != nil {
		t.Fatal(err)
	}
	var hits sync.WaitGroup
	hits.Add(1)
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer hits.Done()
		http.Redirect(w, r, s.URL()+"/_fake/reset", http.StatusTemporaryRedirect)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: redirect, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	w := subscribeHooks(t, alice, "http://"+ln.Addr().String()+"/hooks", "transfer.initiated")
	if _, err := alice.client.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1"), Confidential: confpay.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	s.Sync()
	hits.Wait()
	ds := listDeliveries(t, alice, w.WebhookID)
	if len(ds) != 1 || ds[0].ResponseStatus != http.StatusTemporaryRedirect || ds[0].Status == "succeeded" {
		t.Fatalf("deliveries = %+v, want one failed attempt recorded with 307", ds)
	}
	if n := len(s.Accounts()); n != 2 {
		t.Fatalf("the server holds %d accounts, want 2: the redirect was followed", n)
	}
}

// TestAdminToken: with WithAdminToken, /_fake needs the token as a bearer
// credential (scheme in any case, one Authorization header); /v1 is
// unaffected.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	const token = "adm-0123456789abcdef"
	s := New(t, WithAdminToken(token))
	newTestParty(t, s, "@alice")
	key := newKey(t, s, "@alice")
	for _, tc := range []struct {
		name  string
		auth  []string
		want  int
		wantC confpay.ErrorCode
	}{
		{"none", nil, 401, confpay.CodeUnauthorized},
		{"wrong", []string{"Bearer adm-wrong"}, 401, confpay.CodeUnauthorized},
		{"prefix of it", []string{"Bearer " + token[:10]}, 401, confpay.CodeUnauthorized},
		{"an API key", []string{"Bearer " + key}, 401, confpay.CodeUnauthorized},
		{"basic scheme", []string{"Basic " + token}, 401, confpay.CodeUnauthorized},
		{"two headers", []string{"Bearer " + token, "Bearer " + token}, 401, confpay.CodeUnauthorized},
		{"right", []string{"Bearer " + token}, 200, ""},
		{"lower-case scheme", []string{"bearer " + token}, 200, ""},
		{"upper-case scheme", []string{"BEARER " + token}, 200, ""},
	} {
		var first string
		var rest []string
		if len(tc.auth) > 0 {
			first, rest = tc.auth[0], tc.auth[1:]
		}
		status, e := callAuth(t, s, "GET", "/_fake/accounts", first, "", rest...)
		if status != tc.want || e.Code != tc.wantC {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, e.Code, tc.want, tc.wantC)
		}
		if strings.Contains(e.Message, token) {
			t.Errorf("%s: the answer names the token", tc.name)
		}
	}
	if status, _ := callAuth(t, s, "GET", "/v1/accounts/me", "Bearer "+key, ""); status != 200 {
		t.Errorf("/v1 with an API key under an admin token: %d, want 200", status)
	}
	// Without the option, the admin interface takes no credentials.
	open := New(t)
	if status, _ := callAuth(t, open, "GET", "/_fake/accounts", "", ""); status != 200 {
		t.Errorf("no admin token configured: %d, want 200", status)
	}
}

// TestBearerScheme: /v1 matches the Bearer scheme in any case (RFC 9110)
// and answers 401 to two Authorization headers.
func TestBearerScheme(t *testing.T) {
	t.Parallel()
	s := New(t)
	newTestParty(t, s, "@alice")
	key := newKey(t, s, "@alice")
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		if status, _ := callAuth(t, s, "GET", "/v1/accounts/me", scheme+" "+key, ""); status != 200 {
			t.Errorf("scheme %q: %d, want 200", scheme, status)
		}
	}
	status, e := callAuth(t, s, "GET", "/v1/accounts/me", "Bearer "+key, "", "Bearer "+key)
	if status != 401 || e.Code != confpay.CodeUnauthorized {
		t.Errorf("two Authorization headers: %d %s, want 401 unauthorized", status, e.Code)
	}
}

// FuzzWebhookURL: the subscription-time check never panics, and whatever
// it accepts is https, or http on a loopback host, on a port in range, on a
// host that is neither unspecified, link-local nor a numeric spelling.
func FuzzWebhookURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hooks", "http://127.0.0.1:8080/x", "http://localhost/x",
		"http://2130706433/", "http://0x7f.1/", "https://[fe80::1%25eth0]/", "https://0.0.0.0/",
		"http://[::ffff:127.0.0.1]:80/", "https://a.b.c:65535/", "https://h:0/", "ftp://x/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if checkWebhookURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q that does not parse: %v", raw, err)
		}
		host := u.Hostname()
		switch u.Scheme {
		case "https":
		case "http":
			if !loopbackHost(host) {
				t.Fatalf("accepted http to a host that is not loopback: %q", raw)
			}
		default:
			t.Fatalf("accepted scheme %q: %q", u.Scheme, raw)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				t.Fatalf("accepted port %q: %q", p, raw)
			}
		}
		if a, err := netip.ParseAddr(host); err == nil {
			if forbiddenAddr(a) != "" {
				t.Fatalf("accepted a forbidden address: %q", raw)
			}
		} else if numericHost(host) {
			t.Fatalf("accepted a numeric host spelling: %q", raw)
		}
	})
}

// TestAdminTakesSameOriginAndNonBrowserRequests: the cross-origin refusal
// leaves alone what must work: curl, SDKs and test code (no browser
// headers), a page of the server's own origin (the dashboard), and safe
// methods from anywhere.
func TestAdminTakesSameOriginAndNonBrowserRequests(t *testing.T) {
	s := New(t)
	h := s.Handler()
	for _, c := range []struct {
		name, method string
		header       []string
	}{
		{"no browser headers", "POST", nil},
		{"same origin by Sec-Fetch-Site", "POST", []string{"Sec-Fetch-Site", "same-origin"}},
		{"same origin by Origin", "POST", []string{"Origin", "http://sandbox.test"}},
		{"typed into the address bar", "POST", []string{"Sec-Fetch-Site", "none"}},
		{"a cross-site GET", "GET", []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"}},
	} {
		r, err := http.NewRequest(c.method, "http://sandbox.test/_fake/clock", strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		if c.method == "POST" {
			r.Body = io.NopCloser(strings.NewReader(`{"advance":"1s"}`))
		}
		for i := 0; i+1 < len(c.header); i += 2 {
			r.Header.Set(c.header[i], c.header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Errorf("%s: %s /_fake/clock answered %d: %s", c.name, c.method, w.Code, w.Body)
		}
	}
}
