package browsertest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// pages are the dashboard's pages, by the name of their screenshot.
var pages = []struct{ name, path string }{
	{"accounts", "/_fake/ui/"},
	{"keys", "/_fake/ui/keys"},
	{"agents", "/_fake/ui/agents"},
	{"approvals", "/_fake/ui/approvals"},
	{"transfers", "/_fake/ui/transfers"},
	{"webhooks", "/_fake/ui/webhooks"},
	{"controls", "/_fake/ui/controls"},
}

// screenshotDir is where the docs keep the dashboard's screenshots.
const screenshotDir = "../../../docs/images"

// browser starts headless Chromium for the test, or skips it (fails it
// under CI) when Chromium is not installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		msg := "headless Chromium is not installed: apt-get update && apt-get install -y chromium (Debian's package), then run these tests again"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI must run them: .ci/run installs it)")
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // as root in a container
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text is the visible text of the page's main element.
func text(t *testing.T, ctx context.Context) string {
	t.Helper()
	var s string
	run(t, ctx, "read the page", chromedp.Text("main", &s, chromedp.ByQuery))
	return s
}

func wantText(t *testing.T, page, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Errorf("%s: the page lacks %q", page, s)
		}
	}
}

// world is a server with state made through /v1 and /_fake.
type world struct {
	srv           *fakeserver.Server
	alice, agentC *confpay.Client
	agentID       string
	held          *confpay.AgentTransaction
	transferID    string
	webhookID     string
	eventID       string
	ownerID       string
}

func newWorld(t *testing.T, opts ...fakeserver.Option) *world {
	t.Helper()
	srv := fakeserver.NewServer(opts...)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	w := &world{srv: srv}
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob", Type: confpay.AccountBusiness, GenerateEncryptionKey: true})
	w.ownerID = alice.AccountID
	w.alice = srv.Client(alice.TestKey)
	if err := srv.Fund("@alice", confpay.NetworkTest, "USDG", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Fund("@bob", confpay.NetworkLive, "USDG", "25"); err != nil {
		t.Fatal(err)
	}
	// An agent through /v1, with a policy that holds payments over 50 USDG.
	l := func(s string) *confpay.Limit { v := confpay.MustParseLimit(s); return &v }
	agent, err := w.alice.Agents.Create(ctx, &confpay.AgentCreateParams{Name: "shopper", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG: l("500"), PerTransactionLimitUSDG: l("200"), HITLThresholdUSDG: l("50"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	w.agentID = agent.AccountID
	k, err := srv.IssueKey(agent.AccountID, confpay.NetworkTest, "shopper-ci")
	if err != nil {
		t.Fatal(err)
	}
	w.agentC = srv.Client(k.APIKey)
	if err := srv.Fund(agent.AccountID, confpay.NetworkTest, "USDG", "300"); err != nil {
		t.Fatal(err)
	}
	// A webhook through /v1, to a receiver on loopback.
	recv := httpServer(t)
	hook, err := w.alice.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: recv + "/hook", Events: []confpay.EventKind{"transfer.initiated", "transfer.confirmed"}})
	if err != nil {
		t.Fatal(err)
	}
	w.webhookID = hook.WebhookID
	tr, err := w.alice.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("42.5"), Memo: "invoice 7"})
	if err != nil {
		t.Fatal(err)
	}
	w.transferID = tr.TransferID
	// A payment held for approval.
	_, err = w.agentC.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("80"), Memo: "new laptop bag"})
	var held *confpay.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("the agent's 80 USDG: %v, want held", err)
	}
	w.held = held.Payment
	if _, err := srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Action: fakeserver.FaultError, Status: 503, Times: 1}); err != nil {
		t.Fatal(err)
	}
	srv.Sync()
	evs, err := srv.Events("@alice", confpay.NetworkTest)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events: %v %v", evs, err)
	}
	w.eventID = evs[0].ID
	waitDelivered(t, srv, w.eventID)
	return w
}

// httpServer is a webhook receiver on loopback answering 200.
func httpServer(t *testing.T) string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	ln, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// waitDelivered waits until event id has a finished delivery: the server
// delivers on its own goroutines.
func waitDelivered(t *testing.T, srv *fakeserver.Server, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ds, _ := srv.Deliveries("@alice", confpay.NetworkTest)
		for _, d := range ds {
			if d.EventID == id && d.Status != "pending" {
				return
			}
		}
		srv.Sync()
		select {
		case <-time.After(10 * time.Millisecond): // polling a condition, not waiting out a guess
		case <-t.Context().Done():
			return
		}
	}
	t.Fatalf("event %s never delivered", id)
}

// TestBrowserPages: every page, in a real browser, shows the state made
// through /v1 and /_fake. With CONFPAY_UPDATE_SCREENSHOTS=1 it rewrites
// the screenshots in docs/images.
func TestBrowserPages(t *testing.T) {
	w := newWorld(t)
	ctx := browser(t)
	want := map[string][]string{
		"accounts":  {"The sandbox's books", "@alice", "@bob", "@alice/shopper", "957.5 USDG", "42.5 USDG reserved", "25 USDG"},
		"keys":      {"shopper-ci", "Revoke", "Last used"},
		"agents":    {"@alice/shopper", "active", "500 USDG", "above 50 USDG", "Live network policy", "0 USDG"},
		"approvals": {w.held.TransactionID, "80 USDG", "new laptop bag", "24h0m0s"},
		"transfers": {w.transferID, "pending", "invoice 7", "Settle"},
		"webhooks":  {w.webhookID, "transfer.initiated", "succeeded", "200", "Replay"},
		"controls":  {"Faults in force", "/v1/transfers", "503", "Advance"},
	}
	update := os.Getenv("CONFPAY_UPDATE_SCREENSHOTS") != ""
	for _, p := range pages {
		run(t, ctx, "open "+p.path, chromedp.Navigate(w.srv.URL()+p.path), chromedp.WaitVisible("#live", chromedp.ByQuery))
		wantText(t, p.name, text(t, ctx), want[p.name]...)
		var title string
		run(t, ctx, "title", chromedp.Title(&title))
		if !strings.HasSuffix(title, "confpay fakeserver") {
			t.Errorf("%s: title %q", p.name, title)
		}
		if update {
			var png []byte
			run(t, ctx, "screenshot "+p.name, chromedp.FullScreenshot(&png, 100))
			if err := os.WriteFile(filepath.Join(screenshotDir, "dashboard-"+p.name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBrowserActions: generate and revoke a key, approve, replay and
// advance the clock in the browser; each effect is checked through the
// API afterwards. And a page updates itself without a reload.
func TestBrowserActions(t *testing.T) {
	w := newWorld(t)
	ctx := browser(t)
	bg := context.Background()
	base := w.srv.URL()

	// Generate a key: shown once, and it works.
	var apiKey, keyID string
	var ok bool
	run(t, ctx, "generate a key",
		chromedp.Navigate(base+"/_fake/ui/keys"),
		chromedp.SetValue(`select[name="account"]`, w.ownerID, chromedp.ByQuery),
		chromedp.SendKeys(`input[name="name"]`, "browser-made", chromedp.ByQuery),
		chromedp.Click(`//button[text()="Generate key"]`, chromedp.BySearch),
		chromedp.WaitVisible("#new-key", chromedp.ByQuery),
		chromedp.Text("#new-key", &apiKey, chromedp.ByQuery),
		chromedp.AttributeValue("#new-key", "data-key-id", &keyID, &ok, chromedp.ByQuery),
	)
	c := w.srv.Client(confpay.Secret(apiKey))
	if me, err := c.Accounts.Me(bg); err != nil || me.Handle != "@alice" {
		t.Fatalf("the generated key: %+v %v", me, err)
	}
	// Revoke it: refused at once.
	run(t, ctx, "revoke the key",
		chromedp.Navigate(base+"/_fake/ui/keys"),
		chromedp.Click(`tr[data-key="`+keyID+`"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-key="`+keyID+`"] .status-revoked`, chromedp.ByQuery),
	)
	var apiErr *confpay.APIError
	if _, err := c.Accounts.Me(bg); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the revoked key: %v, want 401", err)
	}

	// Approve the held payment: a transfer is submitted.
	run(t, ctx, "approve",
		chromedp.Navigate(base+"/_fake/ui/approvals"),
		chromedp.Click(`button[aria-label="Approve `+w.held.TransactionID+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.msg`, chromedp.ByQuery),
	)
	if p := w.srv.Held(t, w.held.TransactionID); p.Status != confpay.DecisionApproved || p.TransferID == "" {
		t.Fatalf("after approving in the browser: %s %q", p.Status, p.TransferID)
	}

	// Replay a delivered event: a delivery with trigger replay.
	sel := `tr[data-delivery] button[aria-label="Replay ` + w.eventID + ` to ` + w.webhookID + `"]`
	run(t, ctx, "replay",
		chromedp.Navigate(base+"/_fake/ui/webhooks"),
		chromedp.Click(sel, chromedp.ByQuery),
		chromedp.WaitVisible(`p.msg`, chromedp.ByQuery),
	)
	ds, err := w.alice.Webhooks.Deliveries(bg, w.webhookID, nil)
	if err != nil {
		t.Fatal(err)
	}
	replayed := false
	for _, d := range ds.Deliveries {
		replayed = replayed || d.EventID == w.eventID && d.Trigger == "replay"
	}
	if !replayed {
		t.Errorf("no replay of %s in GET /v1/webhooks/%s/deliveries", w.eventID, w.webhookID)
	}

	// Advance the clock by 25 hours.
	start := w.srv.Now()
	run(t, ctx, "advance the clock",
		chromedp.Navigate(base+"/_fake/ui/controls"),
		chromedp.SendKeys(`input[name="advance"]`, "25h", chromedp.ByQuery),
		chromedp.Click(`//button[text()="Advance"]`, chromedp.BySearch),
		chromedp.WaitVisible(`p.msg`, chromedp.ByQuery),
	)
	if got := w.srv.Now().Sub(start); got != 25*time.Hour {
		t.Errorf("the clock moved %v, want 25h", got)
	}

	// Live: a payment held after the page was opened appears without a
	// reload.
	run(t, ctx, "open approvals", chromedp.Navigate(base+"/_fake/ui/approvals"), chromedp.WaitVisible("#live", chromedp.ByQuery))
	_, err = w.agentC.Transfers.Create(bg, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("60")})
	var held *confpay.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("60 USDG: %v, want held", err)
	}
	run(t, ctx, "the new held payment appears", chromedp.WaitVisible(`tr[data-held="`+held.Payment.TransactionID+`"]`, chromedp.ByQuery))
}

// TestBrowserLogin: with an admin token the browser is asked for it once,
// keeps an HttpOnly, SameSite=Strict session cookie, and a form whose
// CSRF token was tampered with is refused with nothing done.
func TestBrowserLogin(t *testing.T) {
	const token = "browser-test-admin-token-0123"
	w := newWorld(t, fakeserver.WithAdminToken(token))
	ctx := browser(t)
	base := w.srv.URL()
	var h1 string
	run(t, ctx, "the login form",
		chromedp.Navigate(base+"/_fake/ui/keys"),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.Text("h1", &h1, chromedp.ByQuery),
	)
	if !strings.Contains(h1, "Sign in") {
		t.Fatalf("without a session: %q, want the login form", h1)
	}
	run(t, ctx, "sign in",
		chromedp.SendKeys("#token", token, chromedp.ByID),
		chromedp.Submit("#token", chromedp.ByID),
		chromedp.WaitVisible(`#live`, chromedp.ByQuery),
		chromedp.Text("h1", &h1, chromedp.ByQuery),
	)
	if h1 != "Accounts" {
		t.Fatalf("after signing in: %q", h1)
	}
	var cookies []*network.Cookie
	var script string
	run(t, ctx, "cookies", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().WithURLs([]string{base + "/_fake/ui/"}).Do(ctx)
		return err
	}), chromedp.Evaluate(`document.cookie`, &script))
	if len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict || cookies[0].Path != "/_fake/ui/" {
		t.Fatalf("cookies: %+v", cookies)
	}
	if strings.Contains(cookies[0].Value, token) || script != "" {
		t.Errorf("the token or the session is visible: cookie %q, document.cookie %q", cookies[0].Value, script)
	}
	// The pages work for the session, with no token sent again.
	run(t, ctx, "the keys page", chromedp.Navigate(base+"/_fake/ui/keys"), chromedp.WaitVisible(`input[name="name"]`, chromedp.ByQuery))

	// A form with a wrong CSRF token: refused, nothing done.
	before := len(keysOf(t, w.srv))
	var refused string
	run(t, ctx, "a tampered form",
		chromedp.SetValue(`//form[.//button[text()="Generate key"]]//input[@name="csrf"]`, "0000", chromedp.BySearch),
		chromedp.SendKeys(`input[name="name"]`, "forged", chromedp.ByQuery),
		chromedp.Click(`//button[text()="Generate key"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//h1[text()="Refused"]`, chromedp.BySearch),
		chromedp.Text("main", &refused, chromedp.ByQuery),
	)
	if !strings.Contains(refused, "CSRF") || len(keysOf(t, w.srv)) != before {
		t.Fatalf("a tampered form: %q, keys %d -> %d", refused, before, len(keysOf(t, w.srv)))
	}
}

func keysOf(t *testing.T, srv *fakeserver.Server) []fakeserver.KeyInfo {
	t.Helper()
	ks, err := srv.Keys("@alice")
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestScreenshotsExist: the docs' screenshots are there, one a page;
// TestBrowserPages makes them (CONFPAY_UPDATE_SCREENSHOTS=1).
func TestScreenshotsExist(t *testing.T) {
	for _, p := range pages {
		f := filepath.Join(screenshotDir, "dashboard-"+p.name+".png")
		b, err := os.ReadFile(f)
		if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
			t.Errorf("%s: missing or not a PNG (%v): run CONFPAY_UPDATE_SCREENSHOTS=1 go test -run TestBrowserPages in fakeserver/dashboard/browsertest", f, err)
		}
	}
}
