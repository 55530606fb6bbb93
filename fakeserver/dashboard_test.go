package fakeserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// uiClient is a browser without a browser: a cookie jar and the CSRF
// token of the last page it read. The real-browser tests are in
// dashboard/browsertest.
type uiClient struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func newUIClient(t *testing.T, srv *fakeserver.Server) *uiClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &uiClient{t: t, base: srv.URL(), hc: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// do sends a request and returns the answer with its body read.
func (u *uiClient) do(req *http.Request) (*http.Response, string) {
	u.t.Helper()
	resp, err := u.hc.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := csrfField.FindStringSubmatch(string(b)); m != nil {
		u.csrf = m[1]
	}
	return resp, string(b)
}

// get reads a page, wanting status.
func (u *uiClient) get(path string, status int) string {
	u.t.Helper()
	req, _ := http.NewRequest("GET", u.base+path, nil)
	resp, body := u.do(req)
	if resp.StatusCode != status {
		u.t.Fatalf("GET %s = %d, want %d:\n%s", path, resp.StatusCode, status, body)
	}
	return body
}

// post sends a page's form with the session's CSRF token, wanting status.
func (u *uiClient) post(path string, status int, fields ...string) string {
	u.t.Helper()
	f := url.Values{"csrf": {u.csrf}}
	for i := 0; i+1 < len(fields); i += 2 {
		f.Set(fields[i], fields[i+1])
	}
	return u.postForm(path, status, f)
}

func (u *uiClient) postForm(path string, status int, f url.Values) string {
	u.t.Helper()
	req, _ := http.NewRequest("POST", u.base+path, strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body := u.do(req)
	if resp.StatusCode != status {
		u.t.Fatalf("POST %s %s = %d, want %d:\n%s", path, f.Get("action"), resp.StatusCode, status, body)
	}
	return body
}

func wantIn(t *testing.T, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
}

// TestDashboardRedirect: GET / leads a browser to the dashboard; /v1 is
// untouched and other paths are still 404.
func TestDashboardRedirect(t *testing.T) {
	srv := fakeserver.New(t)
	u := newUIClient(t, srv)
	req, _ := http.NewRequest("GET", srv.URL()+"/", nil)
	resp, _ := u.do(req)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/_fake/ui/" {
		t.Fatalf("GET / = %d %q, want 303 to /_fake/ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	if a := rawCall(t, srv, "POST", "/", "", ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", a.status)
	}
	if a := rawCall(t, srv, "GET", "/nothing", "", ""); a.status != http.StatusNotFound {
		t.Errorf("GET /nothing = %d, want 404", a.status)
	}
}

// TestDashboardPages: every page shows state made through /v1 and /_fake.
func TestDashboardPages(t *testing.T) {
	f := newFixture(t)
	srv := f.srv
	fundOn(t, srv, "@alice", confpay.NetworkTest, "USDG", "500")
	agent, agentC := f.createAgent("bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("1000"), PerTransactionLimitUSDG: limit("200"), HITLThresholdUSDG: limit("50"),
	})
	fundOn(t, srv, agent.AccountID, confpay.NetworkTest, "USDG", "300")
	held := hold(t, agentC, "@mallory", "75", withMemo("a held memo"))
	tr := send(t, f.alice, "@mallory", "12.5", withMemo("lunch"))
	if _, err := srv.IssueKey("@alice", confpay.NetworkLive, "ci-runner"); err != nil {
		t.Fatal(err)
	}
	sink := newHookSink(t, http.StatusOK)
	hook, err := f.alice.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: sink.hs.URL + "/hook", Events: []confpay.EventKind{"transfer.confirmed"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Settle()
	srv.Sync()
	if _, err := srv.AddFault(fakeserver.Fault{Path: "/v1/transfers", Action: fakeserver.FaultError, Status: 503, Times: 2}); err != nil {
		t.Fatal(err)
	}

	u := newUIClient(t, srv)
	wantIn(t, u.get("/_fake/ui/", 200), "The sandbox's books", "@alice", "@mallory", "487.5 USDG", "@alice/bot")
	wantIn(t, u.get("/_fake/ui/keys", 200), "ci-runner", "live", "12.5") // alice's test key moved 12.5 USDG
	wantIn(t, u.get("/_fake/ui/agents", 200), "@alice/bot", "active", "1000 USDG", "above 50 USDG", "Pause @alice/bot")
	wantIn(t, u.get("/_fake/ui/approvals", 200), held.TransactionID, "75 USDG", "a held memo", "24h0m0s")
	wantIn(t, u.get("/_fake/ui/transfers", 200), tr.TransferID, "confirmed", "lunch")
	wantIn(t, u.get("/_fake/ui/transfers?status=pending", 200), "No transfers pass this filter")
	wantIn(t, u.get("/_fake/ui/transfers?account="+f.owner.AccountID+"&from=2000-01-01T00:00&to=2100-01-01T00:00:00Z", 200), tr.TransferID)
	wantIn(t, u.get("/_fake/ui/webhooks", 200), hook.WebhookID, "transfer.confirmed", "Delivery log")
	wantIn(t, u.get("/_fake/ui/webhooks?account="+f.owner.AccountID, 200), hook.WebhookID)
	wantIn(t, u.get("/_fake/ui/controls", 200), "Faults in force", "/v1/transfers", "503")
	live := u.get("/_fake/ui/approvals?fragment=live", 200)
	if strings.Contains(live, "<html") || !strings.Contains(live, held.TransactionID) {
		t.Errorf("the live fragment should be the live part alone:\n%s", live)
	}
	wantIn(t, u.get("/_fake/ui/assets/style.css", 200), "font")
	wantIn(t, u.get("/_fake/ui/assets/live.js", 200), "fragment")
	u.get("/_fake/ui/assets/nothing.css", 404)
	u.get("/_fake/ui/nothing", 404)
	wantIn(t, u.get("/_fake/ui/keys?status=pending", 400), "unknown query parameter")
	wantIn(t, u.get("/_fake/ui/transfers?from=yesterday", 400), "from must be a time")
}

// TestDashboardActions: each form does what it says, checked through the
// direct API and /v1 afterwards.
func TestDashboardActions(t *testing.T) {
	f := newFixture(t)
	srv := f.srv
	u := newUIClient(t, srv)
	u.get("/_fake/ui/", 200)

	// Accounts: create (keys shown once), KYC, fund.
	page := u.post("/_fake/ui/", 200, "action", "create", "handle", "@carol", "type", "business", "kyc_status", "verified", "generate_encryption_key", "on")
	key := regexp.MustCompile(`data-secret="test_key">([^<]+)<`).FindStringSubmatch(page)
	if key == nil {
		t.Fatalf("the created account's test key is not shown:\n%s", page)
	}
	carol := newClient(t, srv, key[1], nil)
	if me, err := carol.Accounts.Me(context.Background()); err != nil || me.Handle != "@carol" || me.Type != confpay.AccountBusiness {
		t.Fatalf("the shown key: %+v %v", me, err)
	}
	if strings.Contains(u.get("/_fake/ui/", 200), key[1]) {
		t.Error("the key is shown again on the next read")
	}
	u.post("/_fake/ui/", 200, "action", "kyc", "account", "@carol", "kyc_status", "pending")
	if v, _ := srv.Account("@carol"); v.KYCStatus != confpay.KYCPending {
		t.Errorf("kyc = %s, want pending", v.KYCStatus)
	}
	u.post("/_fake/ui/", 200, "action", "fund", "account", "@alice", "network", "test", "asset", "USDG", "amount", "250")
	if got := srv.Balance(t, "@alice", "USDG"); got.String() != "250" {
		t.Errorf("balance after funding = %s, want 250", got)
	}
	before := srv.Snapshot()
	wantIn(t, u.post("/_fake/ui/", 400, "action", "fund", "account", "@alice", "network", "test", "asset", "USDG", "amount", "1.0000001"), "amount")
	checkUnchanged(t, srv, before, "a bad amount from the dashboard")

	// Keys: generate (shown once), revoke.
	page = u.post("/_fake/ui/keys", 200, "action", "generate", "account", "@alice", "network", "test", "name", "from-the-dashboard")
	m := regexp.MustCompile(`data-key-id="([^"]+)">([^<]+)<`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the new key is not shown:\n%s", page)
	}
	keyID, apiKey := m[1], m[2]
	c := newClient(t, srv, apiKey, nil, noRetry)
	if _, err := c.Accounts.Me(context.Background()); err != nil {
		t.Fatalf("the generated key does not work: %v", err)
	}
	u.post("/_fake/ui/keys", 200, "action", "revoke", "key_id", keyID)
	if _, err := c.Accounts.Me(context.Background()); err == nil {
		t.Fatal("the revoked key still works")
	}

	// Agents: pause.
	agent, agentC := f.createAgent("bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("1000"), PerTransactionLimitUSDG: limit("200"), HITLThresholdUSDG: limit("50"),
	})
	fundOn(t, srv, agent.AccountID, confpay.NetworkTest, "USDG", "300")
	h1 := hold(t, agentC, "@mallory", "60")
	h2 := hold(t, agentC, "@mallory", "70")
	u.post("/_fake/ui/agents", 200, "action", "status", "account", agent.AccountID, "status", "paused")
	if v, _ := srv.Account(agent.AccountID); v.Status != confpay.AgentPaused {
		t.Errorf("agent status = %s, want paused", v.Status)
	}
	u.post("/_fake/ui/agents", 200, "action", "status", "account", agent.AccountID, "status", "active")

	// Approvals: approve one, reject the other.
	u.post("/_fake/ui/approvals", 200, "action", "approve", "transaction_id", h1.TransactionID)
	if p := srv.Held(t, h1.TransactionID); p.Status != confpay.DecisionApproved || p.TransferID == "" {
		t.Fatalf("after approve: %v %s", p.Status, p.TransferID)
	}
	u.post("/_fake/ui/approvals", 200, "action", "reject", "transaction_id", h2.TransactionID)
	if p := srv.Held(t, h2.TransactionID); p.Status != confpay.DecisionRejected {
		t.Fatalf("after reject: %v", p.Status)
	}
	wantIn(t, u.post("/_fake/ui/approvals", 404, "action", "approve", "transaction_id", h2.TransactionID), "awaits a decision")

	// Transfers: settle one, fail one, settle the rest.
	t1 := send(t, f.alice, "@mallory", "10")
	t2 := send(t, f.alice, "@mallory", "20")
	t3 := send(t, f.alice, "@mallory", "30")
	u.post("/_fake/ui/transfers", 200, "action", "settle", "transfer_id", t1.TransferID)
	u.post("/_fake/ui/transfers", 200, "action", "fail", "transfer_id", t2.TransferID)
	for id, want := range map[string]confpay.TransferStatus{t1.TransferID: confpay.StatusConfirmed, t2.TransferID: confpay.StatusFailed, t3.TransferID: confpay.StatusPending} {
		if got, _ := srv.Transfer(id); got.Status != want {
			t.Errorf("%s: %s, want %s", id, got.Status, want)
		}
	}
	u.post("/_fake/ui/transfers", 200, "action", "settle_all")
	if got, _ := srv.Transfer(t3.TransferID); got.Status != confpay.StatusConfirmed {
		t.Errorf("after settling all: %s", got.Status)
	}

	// Webhooks: replay an event.
	hook, err := srv.SubscribeHandler("@alice", confpay.NetworkTest, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), confpay.Secret("whsec_0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, f.alice, "@mallory", "1")
	evs, _ := srv.Events("@alice", confpay.NetworkTest)
	ev := evs[len(evs)-1]
	u.get("/_fake/ui/webhooks", 200)
	u.post("/_fake/ui/webhooks", 200, "action", "replay", "account", f.owner.AccountID, "network", "test", "webhook_id", hook.WebhookID, "event_id", ev.ID)
	srv.Sync()
	ds, _ := srv.Deliveries("@alice", confpay.NetworkTest)
	replayed := false
	for _, d := range ds {
		replayed = replayed || d.EventID == ev.ID && d.Trigger == "replay"
	}
	if !replayed {
		t.Errorf("no replay delivery of %s: %+v", ev.ID, ds)
	}

	// Controls: clock, faults, reset.
	start := srv.Now()
	u.post("/_fake/ui/controls", 200, "action", "advance", "advance", "25h")
	if got := srv.Now().Sub(start); got != 25*time.Hour {
		t.Errorf("advanced %v, want 25h", got)
	}
	u.post("/_fake/ui/controls", 200, "action", "set", "set", "2030-01-02T03:04:05Z")
	if got := srv.Now(); !got.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("set: %v", got)
	}
	wantIn(t, u.post("/_fake/ui/controls", 400, "action", "advance", "advance", "-1h"), "advance")
	u.post("/_fake/ui/controls", 200, "action", "fault", "path", "/v1/accounts/me", "fault_action", "error", "status", "503", "times", "1")
	if fs := srv.Faults(); len(fs) != 1 || fs[0].Path != "/v1/accounts/me" || fs[0].Status != 503 {
		t.Errorf("faults: %+v", fs)
	}
	u.post("/_fake/ui/controls", 200, "action", "clear_faults")
	if fs := srv.Faults(); len(fs) != 0 {
		t.Errorf("faults after clearing: %+v", fs)
	}
	u.post("/_fake/ui/controls", 200, "action", "reset")
	if as := srv.Accounts(); len(as) != 0 {
		t.Errorf("accounts after reset: %d", len(as))
	}
	wantIn(t, u.post("/_fake/ui/controls", 400, "action", "nothing"), "no such action")
}

// TestDashboardCSRF: a form without its session's CSRF token, or without
// a session, is refused (403) and changes nothing.
func TestDashboardCSRF(t *testing.T) {
	srv := fakeserver.New(t)
	newAccount(t, srv, "@alice")
	u := newUIClient(t, srv)
	u.get("/_fake/ui/", 200)
	before := srv.Snapshot()
	fund := url.Values{"action": {"fund"}, "account": {"@alice"}, "network": {"test"}, "amount": {"5"}}
	wantIn(t, u.postForm("/_fake/ui/", 403, fund), "CSRF token")
	other := newUIClient(t, srv)
	other.get("/_fake/ui/", 200)
	fund.Set("csrf", other.csrf) // another session's token
	u.postForm("/_fake/ui/", 403, fund)
	fresh := newUIClient(t, srv) // no session at all
	fund.Set("csrf", u.csrf)
	wantIn(t, fresh.postForm("/_fake/ui/", 403, fund), "no session")
	checkUnchanged(t, srv, before, "a form without its CSRF token")
	fund.Set("csrf", u.csrf)
	u.postForm("/_fake/ui/", 200, fund)
}

// TestDashboardAdminToken: with an admin token the dashboard asks for it
// once and keeps a session in an HttpOnly, SameSite=Strict cookie that
// only the dashboard accepts; deliveries and unclean paths are refused
// as on every /_fake route.
func TestDashboardAdminToken(t *testing.T) {
	const token = "0123456789abcdef-admin"
	srv := fakeserver.New(t, fakeserver.WithAdminToken(token))
	u := newUIClient(t, srv)
	wantIn(t, u.get("/_fake/ui/keys", 401), "Admin token")
	wantIn(t, u.get("/_fake/ui/login", 200), "Admin token")
	wantIn(t, u.postForm("/_fake/ui/login", 401, url.Values{"token": {"wrong-token-wrong-token"}}), "not the server")
	req, _ := http.NewRequest("POST", srv.URL()+"/_fake/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, _ := u.do(req)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/_fake/ui/" {
		t.Fatalf("login = %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"Path=/_fake/ui/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, token) {
		t.Error("the cookie holds the token itself")
	}
	u.get("/_fake/ui/keys", 200)
	u.get("/_fake/ui/login", 303) // signed in already
	u.post("/_fake/ui/", 200, "action", "create", "handle", "@dora")
	if _, err := srv.Account("@dora"); err != nil {
		t.Fatal(err)
	}
	// The cookie stands for the token on the dashboard only.
	req, _ = http.NewRequest("GET", srv.URL()+"/_fake/accounts", nil)
	for _, c := range u.hc.Jar.Cookies(mustURL(t, srv.URL()+"/_fake/ui/")) {
		req.AddCookie(c)
	}
	if resp, _ := u.do(req); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /_fake/accounts with the dashboard's cookie = %d, want 401", resp.StatusCode)
	}
	// The bearer token works on the dashboard too (a GET; forms need a
	// session).
	if a := rawCall(t, srv, "GET", "/_fake/ui/agents", "", "", "Authorization", "Bearer "+token); a.status != 200 {
		t.Errorf("GET /_fake/ui/agents with the bearer token = %d", a.status)
	}
	// Deliveries never, whatever they carry; unclean paths are refused.
	if a := rawCall(t, srv, "GET", "/_fake/ui/", "", "", "X-Service-Signature", "t=1,v1=00", "Authorization", "Bearer "+token); a.status != http.StatusForbidden {
		t.Errorf("a delivery's GET of the dashboard = %d, want 403", a.status)
	}
	if a := rawCall(t, srv, "GET", "/_fake/ui//keys", "", ""); a.status != http.StatusBadRequest {
		t.Errorf("GET /_fake/ui//keys = %d, want 400", a.status)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDashboardDeliveryAttemptLog: the webhooks page shows each
// delivery's attempt log: when each attempt was made, its answer (or
// none), its latency and the delivery fault it met.
func TestDashboardDeliveryAttemptLog(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithoutDeliveryJitter())
	newAccount(t, srv, "@shop")
	srv.AddWebhook(t, "@shop", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), hookSecret, confpay.EventTransferInitiated)
	srv.InjectDelivery(t, fakeserver.DeliveryFault{Times: 1, Action: fakeserver.DeliveryLoseAnswer})
	srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@shop", Amount: "1"})
	srv.Sync()
	srv.Advance(5 * time.Second) // the retry after the lost answer
	ds, err := srv.Deliveries("@shop", confpay.NetworkTest)
	if err != nil || len(ds) != 1 || len(ds[0].AttemptLog) != 2 {
		t.Fatalf("deliveries %+v, %v; want one with two attempts", ds, err)
	}
	log := ds[0].AttemptLog
	u := newUIClient(t, srv)
	for _, page := range []string{"/_fake/ui/webhooks", "/_fake/ui/webhooks?fragment=live"} {
		body := u.get(page, 200)
		row := body[strings.Index(body, `data-delivery="`+ds[0].DeliveryID+`"`):]
		row = row[:strings.Index(row, "</tr>")]
		wantIn(t, row,
			`<ol class="attempts"><li>`+log[0].At.UTC().Format("2006-01-02 15:04:05Z")+`: <span class="muted">no answer</span> in `+log[0].Duration.Round(time.Microsecond).String()+`, <em>lose_answer</em></li>`,
			`<li>`+log[1].At.UTC().Format("2006-01-02 15:04:05Z")+`: 200 in `+log[1].Duration.Round(time.Microsecond).String()+`</li></ol>`)
	}
}
