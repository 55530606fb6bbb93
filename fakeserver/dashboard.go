package fakeserver

// The dashboard: server-rendered pages under /_fake/ui/ over the direct
// state API, for a person in a browser. Each page reads what the direct
// API returns and each form is one call into it, as the /_fake routes
// (admin.go) are: no second state, no second set of rules. The templates
// and assets are embedded (dashboard/), so the pages work offline.
//
// Who may use it is who may use /_fake: no delivery ever (admit), and,
// when the server has an admin token, whoever gave it once on the login
// form. The login keeps a session in an HttpOnly, SameSite=Strict cookie
// scoped to /_fake/ui/ (the only place the guard accepts it); every form
// that changes state carries a CSRF token bound to that session, and a
// POST without it is refused (403) with nothing done. A session is
// stateless: a random nonce and its HMAC under a key the server draws at
// start, so nothing here takes a lock.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// dashboardFiles are the dashboard's templates and assets.
//
//go:embed dashboard/*.html dashboard/*.css dashboard/*.js
var dashboardFiles embed.FS

// uiFuncs are the functions the templates call.
var uiFuncs = template.FuncMap{
	"when":     formatWhen,
	"timeLeft": formatTimeLeft,
	"join":     strings.Join,
	"kinds":    joinKinds,
	"list":     func(xs ...string) []string { return xs },
	"latency":  formatLatency,
}

// uiLayout is the layout alone (the login form and short pages).
var uiLayout = template.Must(template.New("").Funcs(uiFuncs).ParseFS(dashboardFiles, "dashboard/layout.html"))

// uiTemplates are the pages, each the layout with its own file, which
// defines "body" and "livebody".
var uiTemplates = func() map[string]*template.Template {
	files := map[string]string{"/": "accounts", "/keys": "keys", "/agents": "agents", "/approvals": "approvals",
		"/transfers": "transfers", "/webhooks": "webhooks", "/controls": "controls"}
	out := map[string]*template.Template{}
	for p, f := range files {
		out[p] = template.Must(template.New("").Funcs(uiFuncs).ParseFS(dashboardFiles, "dashboard/layout.html", "dashboard/"+f+".html"))
	}
	return out
}()

const (
	// uiPrefix is where the dashboard lives.
	uiPrefix = "/_fake/ui/"
	// uiCookie names the session cookie.
	uiCookie = "confpay_fake_session"
	// uiPoll is how often a page asks for its live part, in milliseconds.
	uiPoll = 2000
)

// uiPage is one bookmarkable page: the query parameters it takes (besides
// fragment), what it shows, and the forms it answers.
type uiPage struct {
	title   string
	params  []string
	data    func(s *Server, q url.Values) (any, error)
	actions map[string]uiAction
}

// uiAction is one form's call into the direct API: it returns a message
// for the page and, for a secret shown once, what to show.
type uiAction func(s *Server, f url.Values) (msg string, shown any, err error)

// uiPages are the pages by path below /_fake/ui.
var uiPages = map[string]*uiPage{
	"/":          {title: "Accounts", data: uiAccountsData, actions: map[string]uiAction{"create": uiCreateAccount, "kyc": uiSetKYC, "fund": uiFund}},
	"/keys":      {title: "API keys", data: uiKeysData, actions: map[string]uiAction{"generate": uiGenerateKey, "revoke": uiRevokeKey}},
	"/agents":    {title: "Agents", data: uiAgentsData, actions: map[string]uiAction{"status": uiAgentStatus}},
	"/approvals": {title: "Approvals", data: uiApprovalsData, actions: map[string]uiAction{"approve": uiApprove, "reject": uiReject}},
	"/transfers": {title: "Transfers", params: []string{"account", "status", "from", "to"}, data: uiTransfersData, actions: map[string]uiAction{"settle": uiSettleOne, "fail": uiFailOne, "settle_all": uiSettleAll}},
	"/webhooks":  {title: "Webhooks", params: []string{"account"}, data: uiWebhooksData, actions: map[string]uiAction{"replay": uiReplay}},
	"/controls":  {title: "Clock, faults and reset", data: uiControlsData, actions: map[string]uiAction{"advance": uiAdvance, "set": uiSetClock, "fault": uiAddFault, "clear_faults": uiClearFaults, "reset": uiReset}},
}

// uiNav is the pages in the order the navigation shows them.
var uiNav = []string{"/", "/keys", "/agents", "/approvals", "/transfers", "/webhooks", "/controls"}

// uiView is what every page template gets.
type uiView struct {
	Title, Path string
	Nav         []uiNavItem
	CSRF        string
	Now         time.Time
	Virtual     bool
	Msg, Err    string
	Shown       any
	Data        any
	Query       url.Values
	Poll        int
	// LiveVersion is a digest of the live part as rendered, so the page's
	// script replaces it only when it changed.
	LiveVersion string
}

// uiNavItem is one link of the navigation.
type uiNavItem struct {
	Href, Title string
	Current     bool
}

// redirectToDashboard answers GET / with a redirect to the dashboard: a
// convenience of the /_fake side for a person who opens the server's
// address; /v1 is untouched.
func redirectToDashboard(c *call) (int, any, error) {
	c.setHeader("Location", uiPrefix)
	return http.StatusSeeOther, nil, nil
}

// serveDashboard answers every request under /_fake/ui/.
func (s *Server) serveDashboard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	p := "/" + strings.TrimPrefix(r.URL.Path, uiPrefix)
	if strings.HasPrefix(p, "/assets/") {
		s.uiAsset(w, r, strings.TrimPrefix(p, "/assets/"))
		return
	}
	nonce, hasSession := s.uiSession(r)
	authorized := s.opts.adminTokenHash == nil || hasSession || s.checkAdminToken(r) == nil
	if p == "/login" {
		s.uiLogin(w, r, authorized)
		return
	}
	page := uiPages[p]
	if page == nil {
		s.uiPlain(w, http.StatusNotFound, "Not found", "There is no dashboard page at this address.")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.uiPlain(w, http.StatusMethodNotAllowed, "Method not allowed", "Pages answer GET and their forms POST.")
		return
	}
	if !authorized {
		s.uiLoginPage(w, http.StatusUnauthorized, "")
		return
	}
	params := append([]string{"fragment"}, page.params...)
	if apiErr := checkQuery(r.URL.RawQuery, params); apiErr != nil {
		s.uiPlain(w, http.StatusBadRequest, "Bad query", apiErr.body.Message)
		return
	}
	v := &uiView{Title: page.title, Path: p, Query: r.URL.Query(), Poll: uiPoll}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		if !hasSession {
			s.uiPlain(w, http.StatusForbidden, "Refused", "This form has no session: reload the page and send it again. Nothing was done.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if err := r.ParseForm(); err != nil {
			s.uiPlain(w, http.StatusBadRequest, "Bad form", "The form could not be read. Nothing was done.")
			return
		}
		got, want := r.PostForm.Get("csrf"), s.uiCSRF(nonce)
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			s.uiPlain(w, http.StatusForbidden, "Refused", "The form's CSRF token is missing or does not belong to this session: reload the page and send it again. Nothing was done.")
			return
		}
		act := page.actions[r.PostForm.Get("action")]
		if act == nil {
			s.uiPlain(w, http.StatusBadRequest, "Bad form", "This page has no such action. Nothing was done.")
			return
		}
		msg, shown, err := act(s, r.PostForm)
		if err != nil {
			status, v.Err = uiError(err)
		} else {
			v.Msg, v.Shown = msg, shown
		}
	} else if !hasSession {
		nonce = s.uiNewSession(w, r)
	}
	v.CSRF = s.uiCSRF(nonce)
	v.Now, v.Virtual = s.Now(), s.clock.Virtual()
	for _, n := range uiNav {
		v.Nav = append(v.Nav, uiNavItem{Href: strings.TrimSuffix(uiPrefix, "/") + n, Title: uiPages[n].title, Current: n == p})
	}
	data, err := page.data(s, v.Query)
	if err != nil {
		status, v.Err = uiError(err)
	}
	v.Data = data
	name := "page"
	if r.Method == http.MethodGet && v.Query.Get("fragment") == "live" {
		name = "live"
	}
	s.uiRender(w, status, name, v)
}

// uiError is the status and message for a failed action or read.
func uiError(err error) (int, string) {
	var e *apiError
	if errors.As(err, &e) {
		msg := e.body.Message
		if e.body.Param != "" {
			msg = e.body.Param + ": " + msg
		}
		return e.status, msg
	}
	return http.StatusInternalServerError, "internal error"
}

// uiRender renders template name ("page" or "live") of v's page.
func (s *Server) uiRender(w http.ResponseWriter, status int, name string, v *uiView) {
	var buf bytes.Buffer
	t := uiTemplates[v.Path]
	err := t.ExecuteTemplate(&buf, "live", v)
	sum := sha256.Sum256(buf.Bytes())
	v.LiveVersion = hex.EncodeToString(sum[:8])
	w.Header().Set("X-Live-Version", v.LiveVersion)
	if err == nil && name != "live" {
		buf.Reset()
		err = t.ExecuteTemplate(&buf, name, v)
	}
	if err != nil {
		s.log.Error("dashboard: render", "page", v.Path, "err", err.Error())
		s.uiPlain(w, http.StatusInternalServerError, "Internal error", "The page could not be rendered.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// uiPlain answers a short page with a heading and one sentence.
func (s *Server) uiPlain(w http.ResponseWriter, status int, title, msg string) {
	var buf bytes.Buffer
	_ = uiLayout.ExecuteTemplate(&buf, "plain", map[string]string{"Title": title, "Msg": msg})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// uiAsset serves an embedded stylesheet or script.
func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(dashboardFiles, "dashboard/"+name)
	if err != nil || strings.HasSuffix(name, ".html") || r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.uiPlain(w, http.StatusNotFound, "Not found", "No such asset.")
		return
	}
	ct := "text/css; charset=utf-8"
	if strings.HasSuffix(name, ".js") {
		ct = "text/javascript; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// ---- sessions ----

// uiSession returns the nonce of the request's session cookie, when it
// carries one this server made.
func (s *Server) uiSession(r *http.Request) (string, bool) {
	c, err := r.Cookie(uiCookie)
	if err != nil {
		return "", false
	}
	nonce, mac, ok := strings.Cut(c.Value, ".")
	if !ok || len(nonce) != 32 {
		return "", false
	}
	if !hmac.Equal([]byte(mac), []byte(s.uiMAC("session", nonce))) {
		return "", false
	}
	return nonce, true
}

// uiNewSession starts a session: a fresh nonce in an HttpOnly,
// SameSite=Strict cookie scoped to the dashboard.
func (s *Server) uiNewSession(w http.ResponseWriter, r *http.Request) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{
		Name: uiCookie, Value: nonce + "." + s.uiMAC("session", nonce), Path: uiPrefix,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return nonce
}

// uiCSRF is the CSRF token of the session nonce.
func (s *Server) uiCSRF(nonce string) string { return s.uiMAC("csrf", nonce) }

// uiMAC is the HMAC of purpose and nonce under the server's session key.
func (s *Server) uiMAC(purpose, nonce string) string {
	m := hmac.New(sha256.New, s.uiKey[:])
	m.Write([]byte(purpose + "\x00" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// uiLogin answers /_fake/ui/login: the form (GET), and the admin token
// checked once (POST), which starts a session and leads to the dashboard.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request, authorized bool) {
	if s.opts.adminTokenHash == nil || authorized && r.Method != http.MethodPost {
		http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
		return
	}
	if apiErr := checkQuery(r.URL.RawQuery, nil); apiErr != nil {
		s.uiPlain(w, http.StatusBadRequest, "Bad query", apiErr.body.Message)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.uiLoginPage(w, http.StatusOK, "")
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if r.ParseForm() != nil {
			s.uiLoginPage(w, http.StatusBadRequest, "The form could not be read.")
			return
		}
		got := sha256.Sum256([]byte(r.PostForm.Get("token")))
		if subtle.ConstantTimeCompare(got[:], s.opts.adminTokenHash[:]) != 1 {
			s.uiLoginPage(w, http.StatusUnauthorized, "That is not the server's admin token.")
			return
		}
		s.uiNewSession(w, r)
		http.Redirect(w, r, uiPrefix, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.uiPlain(w, http.StatusMethodNotAllowed, "Method not allowed", "The login form answers GET and POST.")
	}
}

// uiLoginPage renders the login form with an error message, if any.
func (s *Server) uiLoginPage(w http.ResponseWriter, status int, msg string) {
	var buf bytes.Buffer
	_ = uiLayout.ExecuteTemplate(&buf, "login", map[string]string{"Err": msg})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// ---- formatting ----

// formatLatency is a delivery attempt's duration, to the microsecond.
func formatLatency(d time.Duration) string { return d.Round(time.Microsecond).String() }

// formatWhen prints a time to the second in UTC, or "never".
func formatWhen(t any) string {
	switch t := t.(type) {
	case time.Time:
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if t == nil {
			return "never"
		}
		return formatWhen(*t)
	}
	return ""
}

// formatTimeLeft prints how long from now until t, to the second.
func formatTimeLeft(now, t time.Time) string {
	d := t.Sub(now).Truncate(time.Second)
	if d <= 0 {
		return "expired"
	}
	return d.String()
}

func joinKinds(ks []confpay.EventKind) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// networks is both networks, test first.
var networks = []confpay.Network{confpay.NetworkTest, confpay.NetworkLive}

// ---- accounts ----

// uiAccount is an account with its books on both networks.
type uiAccount struct {
	AccountView
	Test, Live []BookEntry
}

func uiAccountsData(s *Server, _ url.Values) (any, error) {
	var out []uiAccount
	for _, a := range s.Accounts() {
		ua := uiAccount{AccountView: a}
		ua.Test, _ = s.Books(a.AccountID, confpay.NetworkTest) // nil if reset since listed
		ua.Live, _ = s.Books(a.AccountID, confpay.NetworkLive)
		out = append(out, ua)
	}
	return out, nil
}

func uiCreateAccount(s *Server, f url.Values) (string, any, error) {
	info, err := s.CreateAccount(AccountParams{
		Handle: f.Get("handle"), Type: confpay.AccountType(f.Get("type")),
		KYCStatus: confpay.KYCStatus(f.Get("kyc_status")), GenerateEncryptionKey: f.Get("generate_encryption_key") == "on",
	})
	if err != nil {
		return "", nil, err
	}
	return "Created " + info.Handle + ".", info, nil
}

func uiSetKYC(s *Server, f url.Values) (string, any, error) {
	if err := s.SetKYC(f.Get("account"), confpay.KYCStatus(f.Get("kyc_status"))); err != nil {
		return "", nil, err
	}
	return "KYC status of " + f.Get("account") + " set to " + f.Get("kyc_status") + ".", nil, nil
}

func uiFund(s *Server, f url.Values) (string, any, error) {
	asset := cmpOr(f.Get("asset"), confpay.AssetUSDG)
	n := confpay.Network(f.Get("network"))
	if err := s.Fund(f.Get("account"), n, asset, f.Get("amount")); err != nil {
		return "", nil, err
	}
	return "Funded " + f.Get("account") + " with " + f.Get("amount") + " " + asset + " on " + string(n) + ".", nil, nil
}

// cmpOr is the first of a and b that is not empty.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ---- keys ----

// uiKey is a key with its account's handle.
type uiKey struct {
	KeyInfo
	Handle string
}

// uiKeysPage is the keys page: every account (for the form) and key.
type uiKeysPage struct {
	Accounts []AccountView
	Keys     []uiKey
}

func uiKeysData(s *Server, _ url.Values) (any, error) {
	p := uiKeysPage{Accounts: s.Accounts()}
	for _, a := range p.Accounts {
		ks, err := s.Keys(a.AccountID)
		if err != nil {
			continue
		}
		for _, k := range ks {
			p.Keys = append(p.Keys, uiKey{KeyInfo: k, Handle: a.Handle})
		}
	}
	return p, nil
}

func uiGenerateKey(s *Server, f url.Values) (string, any, error) {
	k, err := s.IssueKey(f.Get("account"), confpay.Network(f.Get("network")), f.Get("name"))
	if err != nil {
		return "", nil, err
	}
	return "Generated key " + k.KeyID + " (" + k.Name + ") for " + f.Get("account") + ".", k, nil
}

func uiRevokeKey(s *Server, f url.Values) (string, any, error) {
	if err := s.RevokeKey(f.Get("key_id")); err != nil {
		return "", nil, err
	}
	return "Revoked key " + f.Get("key_id") + ".", nil, nil
}

// ---- agents ----

// uiAgent is an agent with its owner's handle and its spend policy on
// each network.
type uiAgent struct {
	AccountView
	Owner      string
	Test, Live *confpay.SpendPolicy
}

func uiAgentsData(s *Server, _ url.Values) (any, error) {
	accts := s.Accounts()
	handles := map[string]string{}
	for _, a := range accts {
		handles[a.AccountID] = a.Handle
	}
	var out []uiAgent
	for _, a := range accts {
		if a.OwnerID == "" {
			continue
		}
		ag := uiAgent{AccountView: a, Owner: handles[a.OwnerID]}
		ag.Test, _ = s.Policy(a.AccountID, confpay.NetworkTest) // nil if reset since listed
		ag.Live, _ = s.Policy(a.AccountID, confpay.NetworkLive)
		out = append(out, ag)
	}
	return out, nil
}

func uiAgentStatus(s *Server, f url.Values) (string, any, error) {
	if err := s.SetAgentStatus(f.Get("account"), confpay.AgentStatus(f.Get("status"))); err != nil {
		return "", nil, err
	}
	return "Agent " + f.Get("account") + " is now " + f.Get("status") + ".", nil, nil
}

// ---- approvals ----

func uiApprovalsData(s *Server, _ url.Values) (any, error) {
	var out []*HeldPayment
	for _, a := range s.Accounts() {
		if a.OwnerID != "" {
			continue // an owner's list holds its agents' payments
		}
		for _, n := range networks {
			ps, err := s.HeldPayments(a.AccountID, n)
			if err != nil {
				continue
			}
			for _, p := range ps {
				if p.Status == "pending_approval" {
					out = append(out, p)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestedAt.Before(out[j].RequestedAt) })
	return out, nil
}

func uiApprove(s *Server, f url.Values) (string, any, error) {
	p, err := s.ApproveHeld(f.Get("transaction_id"))
	if err != nil {
		return "", nil, err
	}
	return "Approved " + p.TransactionID + ": transfer " + p.TransferID + " submitted.", nil, nil
}

func uiReject(s *Server, f url.Values) (string, any, error) {
	p, err := s.RejectHeld(f.Get("transaction_id"))
	if err != nil {
		return "", nil, err
	}
	return "Rejected " + p.TransactionID + ": nothing moved.", nil, nil
}

// ---- transfers ----

// uiTransfersPage is the transfers page: the filter's choices and the
// transfers that pass it, newest first.
type uiTransfersPage struct {
	Accounts  []AccountView
	Statuses  []string
	Transfers []TransferRecord
}

// uiTime reads a filter's time: RFC 3339, or a datetime-local value taken
// as UTC.
func uiTime(field, v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errInvalid(field, field+" must be a time such as 2026-07-02T14:23 (UTC) or an RFC 3339 timestamp")
}

func uiTransfersData(s *Server, q url.Values) (any, error) {
	p := uiTransfersPage{Accounts: s.Accounts(), Statuses: []string{"pending", "confirmed", "failed"}}
	acct, status := q.Get("account"), q.Get("status")
	var from, to time.Time
	var err error
	if v := q.Get("from"); v != "" {
		if from, err = uiTime("from", v); err != nil {
			return p, err
		}
	}
	if v := q.Get("to"); v != "" {
		if to, err = uiTime("to", v); err != nil {
			return p, err
		}
	}
	if status != "" && !slices.Contains(p.Statuses, status) {
		return p, errInvalid("status", "status must be pending, confirmed or failed")
	}
	seen := map[string]bool{}
	for _, a := range p.Accounts {
		if acct != "" && a.AccountID != acct && a.Handle != acct {
			continue
		}
		for _, n := range networks {
			ts, err := s.Transfers(a.AccountID, n)
			if err != nil {
				continue
			}
			for _, t := range ts {
				switch {
				case seen[t.TransferID],
					status != "" && string(t.Status) != status,
					!from.IsZero() && t.CreatedAt.Before(from),
					!to.IsZero() && !t.CreatedAt.Before(to):
					continue
				}
				seen[t.TransferID] = true
				p.Transfers = append(p.Transfers, t)
			}
		}
	}
	sort.SliceStable(p.Transfers, func(i, j int) bool { return p.Transfers[i].CreatedAt.After(p.Transfers[j].CreatedAt) })
	return p, nil
}

func uiSettleOne(s *Server, f url.Values) (string, any, error) {
	if err := s.SettleTransfer(f.Get("transfer_id")); err != nil {
		return "", nil, err
	}
	return "Settled " + f.Get("transfer_id") + ".", nil, nil
}

func uiFailOne(s *Server, f url.Values) (string, any, error) {
	if err := s.FailTransfer(f.Get("transfer_id")); err != nil {
		return "", nil, err
	}
	return "Failed " + f.Get("transfer_id") + ": the reservation went back to the sender.", nil, nil
}

func uiSettleAll(s *Server, _ url.Values) (string, any, error) {
	n := s.Settle()
	s.Sync()
	return "Settled " + strconv.Itoa(n) + " pending transfers.", nil, nil
}

// ---- webhooks ----

// uiHookAccount is one account's subscriptions, deliveries and events on
// one network.
type uiHookAccount struct {
	Handle, AccountID string
	Network           confpay.Network
	Webhooks          []*confpay.Webhook
	Deliveries        []DeliveryRecord
	Events            []EventRecord
}

// uiWebhooksPage is the webhooks page.
type uiWebhooksPage struct {
	Accounts []AccountView
	Books    []uiHookAccount
}

func uiWebhooksData(s *Server, q url.Values) (any, error) {
	p := uiWebhooksPage{Accounts: s.Accounts()}
	acct := q.Get("account")
	for _, a := range p.Accounts {
		if acct != "" && a.AccountID != acct && a.Handle != acct {
			continue
		}
		for _, n := range networks {
			hs, err1 := s.Webhooks(a.AccountID, n)
			ds, err2 := s.Deliveries(a.AccountID, n)
			es, err3 := s.Events(a.AccountID, n)
			if err1 != nil || err2 != nil || err3 != nil || len(hs)+len(ds)+len(es) == 0 {
				continue
			}
			slices.Reverse(ds) // newest first, as /v1 lists them
			slices.Reverse(es)
			p.Books = append(p.Books, uiHookAccount{Handle: a.Handle, AccountID: a.AccountID, Network: n, Webhooks: hs, Deliveries: ds, Events: es})
		}
	}
	return p, nil
}

func uiReplay(s *Server, f url.Values) (string, any, error) {
	r, err := s.Replay(f.Get("account"), confpay.Network(f.Get("network")), f.Get("webhook_id"), f.Get("event_id"))
	if err != nil {
		return "", nil, err
	}
	return "Replaying " + r.EventID + " to " + r.WebhookID + " (delivery " + r.DeliveryID + ").", nil, nil
}

// ---- controls ----

// uiControlsPage is the controls page: the faults in force.
type uiControlsPage struct {
	Faults []Fault
}

func uiControlsData(s *Server, _ url.Values) (any, error) {
	return uiControlsPage{Faults: s.Faults()}, nil
}

func uiAdvance(s *Server, f url.Values) (string, any, error) {
	d, err := time.ParseDuration(f.Get("advance"))
	if err != nil || d < 0 {
		return "", nil, errInvalid("advance", "advance must be a non-negative Go duration such as \"25h\" or \"90s\"")
	}
	now := s.Advance(d)
	return "The clock is now " + formatWhen(now) + ".", nil, nil
}

func uiSetClock(s *Server, f url.Values) (string, any, error) {
	t, err := uiTime("set", f.Get("set"))
	if err != nil {
		return "", nil, err
	}
	now := s.Set(t)
	return "The clock is now " + formatWhen(now) + ".", nil, nil
}

func uiAddFault(s *Server, f url.Values) (string, any, error) {
	ft := Fault{Method: f.Get("method"), Path: f.Get("path"), Action: f.Get("fault_action"), Code: f.Get("code")}
	for field, dst := range map[string]*int{"times": &ft.Times, "status": &ft.Status} {
		if v := f.Get(field); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", nil, errInvalid(field, field+" must be a whole number")
			}
			*dst = n
		}
	}
	if v := f.Get("delay"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", nil, errInvalid("delay", "delay must be a Go duration such as \"2s\"")
		}
		ft.Delay = d
	}
	id, err := s.AddFault(ft)
	if err != nil {
		return "", nil, err
	}
	return "Added fault " + id + ".", nil, nil
}

func uiClearFaults(s *Server, _ url.Values) (string, any, error) {
	s.ClearFaults()
	return "Every fault cleared.", nil, nil
}

func uiReset(s *Server, _ url.Values) (string, any, error) {
	s.Reset()
	return "The server is empty.", nil, nil
}
