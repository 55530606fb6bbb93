package fakeserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/internal/strictjson"
)

// The admin interface: the dashboard's jobs (accounts, keys, funding,
// domains) and the test controls (books, clock, settlement, faults, reset)
// over HTTP under /_fake, for tests in any language and for curl against
// the binary. It takes no bearer key unless WithAdminToken sets one (the
// binary listens on loopback, and needs a token anywhere else). No
// webhook delivery ever reaches a route (refuseDelivery, selfguard.go).
// Every route is the HTTP face of a method of the direct state API.

// adminRoutes is the /_fake admin interface (no bearer key).
func (s *Server) adminRoutes() map[string][]route {
	return map[string][]route{
		"/_fake/accounts":                     {{"GET", false, s.adminListAccounts}, {"POST", false, s.adminCreateAccount}},
		"/_fake/accounts/{account}":           {{"GET", false, s.adminGetAccount}, {"PATCH", false, s.adminPatchAccount}},
		"/_fake/accounts/{account}/keys":      {{"GET", false, s.adminListKeys}, {"POST", false, s.adminIssueKey}},
		"/_fake/keys/{key_id}":                {{"DELETE", false, s.adminRevokeKey}},
		"/_fake/fund":                         {{"POST", false, s.adminFund}},
		"/_fake/inbound":                      {{"POST", false, s.adminInbound}},
		"/_fake/domains":                      {{"POST", false, s.adminRegisterDomain}},
		"/_fake/books/{account}":              {{"GET", false, s.adminBooks}},
		"/_fake/transfers":                    {{"GET", false, s.adminListTransfers}},
		"/_fake/transfers/{transfer_id}":      {{"GET", false, s.adminGetTransfer}},
		"/_fake/transfers/{transfer_id}/fail": {{"POST", false, s.adminFailTransfer}},
		"/_fake/clock":                        {{"GET", false, s.adminGetClock}, {"POST", false, s.adminSetClock}},
		"/_fake/settle":                       {{"POST", false, s.adminSettle}},
		"/_fake/faults":                       {{"GET", false, s.adminListFaults}, {"POST", false, s.adminAddFault}, {"DELETE", false, s.adminClearFaults}},
		"/_fake/chaos":                        {{"GET", false, s.adminChaos}}, // chaos.go
		"/_fake/delivery-faults":              {{"GET", false, s.adminListDeliveryFaults}, {"POST", false, s.adminAddDeliveryFault}, {"DELETE", false, s.adminClearDeliveryFaults}},
		"/_fake/reset":                        {{"POST", false, s.adminReset}},
		"/_fake/snapshot":                     {{"GET", false, s.adminSnapshot}}, // backup.go
		"/_fake/events":                       {{"GET", false, s.adminListEvents}},
		"/_fake/deliveries":                   {{"GET", false, s.adminListDeliveries}},
		"/_fake/audit":                        {{"GET", false, s.adminAudit}},    // audit.go
		"/_fake/held":                         {{"GET", false, s.adminListHeld}}, // held.go
		"/_fake/held/{transaction_id}":        {{"GET", false, s.adminGetHeld}},  // held.go
		"/_fake/assets":                       {{"GET", false, s.adminListAssets}, {"POST", false, s.adminSetAsset}},
		"/_fake/prove":                        {{"POST", false, s.adminProve}},
		"/_fake/open-note":                    {{"POST", false, s.adminOpenNote}},
		"/_fake/openapi.yaml":                 {{"GET", false, s.adminOpenAPI}},     // openapi.go
		"/_fake/openapi-fake.yaml":            {{"GET", false, s.adminOpenAPIFake}}, // openapi.go
	}
}

// ---- accounts ----

// AccountView is an account as the admin interface shows it: the
// account object of GET /v1/accounts/me, plus an agent's status and owner,
// and the domains registered to it.
type AccountView struct {
	confpay.Account
	// Status is an agent's status (active, paused, disabled); empty for
	// other accounts.
	Status confpay.AgentStatus `json:"status,omitempty"`
	// OwnerID is an agent's owner.
	OwnerID string   `json:"owner_id,omitempty"`
	Domains []string `json:"domains,omitempty"`
}

func (s *Server) adminListAccounts(c *call) (int, any, error) {
	return http.StatusOK, map[string]any{"accounts": s.Accounts()}, nil
}

func (s *Server) adminCreateAccount(c *call) (int, any, error) {
	var p AccountParams
	if apiErr := decodeStrict(c.body, &p); apiErr != nil {
		return 0, nil, apiErr
	}
	info, err := s.CreateAccount(p)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, accountInfoAnswer(info), nil
}

func (s *Server) adminGetAccount(c *call) (int, any, error) {
	v, err := s.Account(c.r.PathValue("account"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// accountPatch is the body of PATCH /_fake/accounts/{account}.
type accountPatch struct {
	KYCStatus *confpay.KYCStatus   `json:"kyc_status"`
	Status    *confpay.AgentStatus `json:"status"`
}

func (s *Server) adminPatchAccount(c *call) (int, any, error) {
	var p accountPatch
	if apiErr := decodeStrict(c.body, &p); apiErr != nil {
		return 0, nil, apiErr
	}
	ref := c.r.PathValue("account")
	if p.KYCStatus == nil && p.Status == nil {
		return 0, nil, errInvalid("body", "give kyc_status or status")
	}
	// Check both before changing either, so that a bad request changes
	// nothing.
	if p.KYCStatus != nil && !validKYC(*p.KYCStatus) {
		return 0, nil, errInvalid("kyc_status", "kyc_status must be unverified, pending, verified or enhanced")
	}
	if p.Status != nil {
		switch *p.Status {
		case confpay.AgentActive, confpay.AgentPaused, confpay.AgentDisabled:
		default:
			return 0, nil, errInvalid("status", "status must be active, paused or disabled")
		}
		v, err := s.Account(ref)
		if err != nil {
			return 0, nil, err
		}
		if v.Type != confpay.AccountAgent && v.OwnerID == "" {
			return 0, nil, errInvalid("status", "only agents have a status")
		}
	}
	if p.KYCStatus != nil {
		if err := s.SetKYC(ref, *p.KYCStatus); err != nil {
			return 0, nil, err
		}
	}
	if p.Status != nil {
		if err := s.SetAgentStatus(ref, *p.Status); err != nil {
			return 0, nil, err
		}
	}
	v, err := s.Account(ref)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// ---- keys ----

// keyRequest is the body of POST /_fake/accounts/{account}/keys.
type keyRequest struct {
	Network confpay.Network `json:"network"`
	Name    string          `json:"name"`
}

func (s *Server) adminIssueKey(c *call) (int, any, error) {
	var req keyRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	if req.Network == "" {
		req.Network = confpay.NetworkTest
	}
	k, err := s.IssueKey(c.r.PathValue("account"), req.Network, req.Name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, newKeyAnswer(*k), nil
}

func (s *Server) adminListKeys(c *call) (int, any, error) {
	ks, err := s.Keys(c.r.PathValue("account"))
	if err != nil {
		return 0, nil, err
	}
	if ks == nil {
		ks = []KeyInfo{}
	}
	return http.StatusOK, map[string]any{"keys": ks}, nil
}

func (s *Server) adminRevokeKey(c *call) (int, any, error) {
	if err := s.RevokeKey(c.r.PathValue("key_id")); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// ---- money ----

// fundRequest is the body of POST /_fake/fund.
type fundRequest struct {
	Account string          `json:"account"`
	Network confpay.Network `json:"network"`
	Asset   string          `json:"asset"`
	Amount  string          `json:"amount"`
}

func (s *Server) adminFund(c *call) (int, any, error) {
	var req fundRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	if req.Account == "" {
		return 0, nil, errInvalid("account", "account is required")
	}
	if req.Network == "" {
		req.Network = confpay.NetworkTest
	}
	if req.Asset == "" {
		req.Asset = confpay.AssetUSDG
	}
	if req.Amount == "" {
		return 0, nil, errInvalid("amount", "amount is required")
	}
	if err := s.Fund(req.Account, req.Network, req.Asset, req.Amount); err != nil {
		return 0, nil, err
	}
	v, err := s.Account(req.Account)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"account_id": v.AccountID, "network": req.Network, "asset": req.Asset}, nil
}

// inboundRequest is the body of POST /_fake/inbound.
type inboundRequest struct {
	From         string          `json:"from"`
	To           string          `json:"to"`
	Network      confpay.Network `json:"network"`
	Asset        string          `json:"asset"`
	Amount       string          `json:"amount"`
	Confidential *bool           `json:"confidential"`
	// Memo must reach the recipient byte for byte, as a transfer's does.
	Memo strictjson.ExactString `json:"memo"`
}

func (s *Server) adminInbound(c *call) (int, any, error) {
	var req inboundRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	r, err := s.Inbound(InboundParams{From: req.From, To: req.To, Network: req.Network, Asset: req.Asset,
		Amount: req.Amount, Confidential: req.Confidential, Memo: string(req.Memo)})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, r, nil
}

// domainRequest is the body of POST /_fake/domains.
type domainRequest struct {
	Account string `json:"account"`
	Domain  string `json:"domain"`
}

func (s *Server) adminRegisterDomain(c *call) (int, any, error) {
	var req domainRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	if req.Account == "" {
		return 0, nil, errInvalid("account", "account is required")
	}
	if err := s.RegisterDomain(req.Account, req.Domain); err != nil {
		return 0, nil, err
	}
	v, err := s.Account(req.Account)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"account_id": v.AccountID, "domain": req.Domain}, nil
}

// adminNetwork reads the network query parameter (default test).
func adminNetwork(c *call) (confpay.Network, *apiError) {
	n := confpay.Network(c.r.URL.Query().Get("network"))
	if n == "" {
		return confpay.NetworkTest, nil
	}
	if n != confpay.NetworkTest && n != confpay.NetworkLive {
		return "", errInvalid("network", "network must be test or live")
	}
	return n, nil
}

func (s *Server) adminBooks(c *call) (int, any, error) {
	n, apiErr := adminNetwork(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	ref := c.r.PathValue("account")
	books, err := s.Books(ref, n)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.Account(ref)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"account_id": v.AccountID, "handle": v.Handle, "network": n, "balances": books}, nil
}

// adminAccountQuery reads the ?account=&network= of a /_fake listing: the
// account is required, the network defaults to test.
func adminAccountQuery(c *call) (confpay.Network, string, *apiError) {
	n, apiErr := adminNetwork(c)
	if apiErr != nil {
		return "", "", apiErr
	}
	ref := c.r.URL.Query().Get("account")
	if ref == "" {
		return "", "", errInvalid("account", "the account query parameter is required")
	}
	return n, ref, nil
}

func (s *Server) adminListTransfers(c *call) (int, any, error) {
	n, ref, apiErr := adminAccountQuery(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	ts, err := s.Transfers(ref, n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"transfers": ts}, nil
}

func (s *Server) adminGetTransfer(c *call) (int, any, error) {
	t, err := s.Transfer(c.r.PathValue("transfer_id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, t, nil
}

// failRequest is the optional body of POST /_fake/transfers/{id}/fail.
type failRequest struct {
	// AtConfirmation fails the transfer when its confirmation comes
	// instead of now.
	AtConfirmation bool `json:"at_confirmation"`
}

func (s *Server) adminFailTransfer(c *call) (int, any, error) {
	var req failRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	id := c.r.PathValue("transfer_id")
	var err error
	if req.AtConfirmation {
		err = s.FailTransferAtConfirmation(id)
	} else {
		err = s.FailTransfer(id)
	}
	if err != nil {
		return 0, nil, err
	}
	t, err := s.Transfer(id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, t, nil
}

func (s *Server) adminSettle(c *call) (int, any, error) {
	n := s.Settle()
	s.Sync()
	return http.StatusOK, map[string]any{"confirmed": n}, nil
}

// ---- clock ----

// clockRequest is the body of POST /_fake/clock.
type clockRequest struct {
	Advance string `json:"advance"` // a Go duration such as "25h"
	Set     string `json:"set"`     // RFC 3339
}

func (s *Server) adminGetClock(c *call) (int, any, error) {
	return http.StatusOK, map[string]any{"now": s.Now(), "virtual": s.clock.Virtual()}, nil
}

func (s *Server) adminSetClock(c *call) (int, any, error) {
	var req clockRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	var now time.Time
	switch {
	case req.Advance != "" && req.Set != "":
		return 0, nil, errInvalid("advance", "give advance or set, not both")
	case req.Advance != "":
		d, err := time.ParseDuration(req.Advance)
		if err != nil || d < 0 {
			return 0, nil, errInvalid("advance", "advance must be a non-negative Go duration such as \"25h\" or \"1500ms\"")
		}
		now = s.Advance(d)
	case req.Set != "":
		t, err := time.Parse(time.RFC3339Nano, req.Set)
		if err != nil {
			return 0, nil, errInvalid("set", "set must be an RFC 3339 timestamp such as 2026-07-02T14:23:09Z")
		}
		now = s.Set(t)
	default:
		s.Sync()
		now = s.Now()
	}
	return http.StatusOK, map[string]any{"now": now, "virtual": s.clock.Virtual()}, nil
}

// ---- faults ----

// faultRequest is the body of POST /_fake/faults: a Fault with its delay
// as a Go duration string.
type faultRequest struct {
	Method         string      `json:"method"`
	Path           string      `json:"path"`
	Account        string      `json:"account"`
	KeyID          string      `json:"key_id"`
	IdempotencyKey string      `json:"idempotency_key"`
	Probability    BasisPoints `json:"probability_bp"`
	Times          int         `json:"times"`
	Action         string      `json:"action"`
	Status         int         `json:"status"`
	Code           string      `json:"code"`
	RetryAfter     *int        `json:"retry_after"`
	Delay          string      `json:"delay"`
	TransferID     string      `json:"transfer_id"`
}

// parseFaultDelay reads a fault's delay as the wire gives it, a Go
// duration string ("" for none); the error names the field and shows
// example. What the delay may be is checked by AddFault and
// AddDeliveryFault.
func parseFaultDelay(text, example string) (time.Duration, *apiError) {
	if text == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, errInvalid("delay", "delay must be a Go duration such as \""+example+"\"")
	}
	return d, nil
}

// faultDelayText is a fault's delay on the wire: "" (omitted) for none.
func faultDelayText(d time.Duration) string {
	if d > 0 {
		return d.String()
	}
	return ""
}

// faultView is a Fault on the wire.
type faultView struct {
	Fault
	Delay string `json:"delay,omitempty"`
}

func (s *Server) adminAddFault(c *call) (int, any, error) {
	var req faultRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	f := Fault{
		Method: req.Method, Path: req.Path, Account: req.Account, KeyID: req.KeyID, IdempotencyKey: req.IdempotencyKey,
		Probability: req.Probability, Times: req.Times, Action: req.Action,
		Status: req.Status, Code: req.Code, RetryAfter: req.RetryAfter, TransferID: req.TransferID,
	}
	var apiErr *apiError
	if f.Delay, apiErr = parseFaultDelay(req.Delay, "2s"); apiErr != nil {
		return 0, nil, apiErr
	}
	id, err := s.AddFault(f)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"fault_id": id}, nil
}

func (s *Server) adminListFaults(c *call) (int, any, error) {
	fs := s.Faults()
	out := make([]faultView, 0, len(fs))
	for _, f := range fs {
		out = append(out, faultView{Fault: f, Delay: faultDelayText(f.Delay)})
	}
	return http.StatusOK, map[string]any{"faults": out}, nil
}

// deliveryFaultRequest is the body of POST /_fake/delivery-faults: a
// DeliveryFault with its delay as a Go duration string.
type deliveryFaultRequest struct {
	WebhookID string            `json:"webhook_id"`
	Event     confpay.EventKind `json:"event"`
	Times     int               `json:"times"`
	Action    string            `json:"action"`
	Delay     string            `json:"delay"`
}

// deliveryFaultView is a DeliveryFault on the wire.
type deliveryFaultView struct {
	DeliveryFault
	Delay string `json:"delay,omitempty"`
}

func (s *Server) adminAddDeliveryFault(c *call) (int, any, error) {
	var req deliveryFaultRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	f := DeliveryFault{WebhookID: req.WebhookID, Event: req.Event, Times: req.Times, Action: req.Action}
	var apiErr *apiError
	if f.Delay, apiErr = parseFaultDelay(req.Delay, "2m"); apiErr != nil {
		return 0, nil, apiErr
	}
	id, err := s.AddDeliveryFault(f)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"fault_id": id}, nil
}

func (s *Server) adminListDeliveryFaults(c *call) (int, any, error) {
	fs := s.DeliveryFaults()
	out := make([]deliveryFaultView, 0, len(fs))
	for _, f := range fs {
		out = append(out, deliveryFaultView{DeliveryFault: f, Delay: faultDelayText(f.Delay)})
	}
	return http.StatusOK, map[string]any{"faults": out}, nil
}

func (s *Server) adminClearDeliveryFaults(c *call) (int, any, error) {
	s.ClearDeliveryFaults()
	return http.StatusNoContent, nil, nil
}

func (s *Server) adminClearFaults(c *call) (int, any, error) {
	s.ClearFaults()
	return http.StatusNoContent, nil, nil
}

func (s *Server) adminReset(c *call) (int, any, error) { return s.resetTo(c) }

// ---- snapshot ----

// Snapshot is the server's whole domain state, in a deterministic order,
// for comparisons in tests (with go-cmp): accounts, keys, domains, and per
// network every balance, the asset supply, every transfer and the agents'
// spend policies. Key usage
// (LastUsedAt, RequestCount) changes with every request; ignore those
// fields when comparing across requests. The idempotency cache of answers
// is not part of it.
type Snapshot struct {
	Accounts []AccountView
	Keys     []KeyInfo
	Networks map[confpay.Network]NetworkSnapshot
}

// NetworkSnapshot is one network's part of a Snapshot.
type NetworkSnapshot struct {
	// Balances by account id, each sorted by asset.
	Balances map[string][]BookEntry
	// Supply is everything funded and not paid out, per asset.
	Supply map[string]string
	// Pending is how many transfers await confirmation.
	Pending int
	// Transfers by id.
	Transfers map[string]TransferRecord
	// Held are the agent payments held for a decision (or expired), by
	// transaction id, without their sealed notes.
	Held map[string]confpay.AgentTransaction
	// Webhooks are the live subscriptions by id, without their secrets.
	Webhooks map[string]confpay.Webhook
	// Events is how many events have been emitted.
	Events int
	// Policies are the agents' spend policies on the network, by agent
	// account id.
	Policies map[string]confpay.SpendPolicy
}

// adminListAssets answers GET /_fake/assets
func (s *Server) adminListAssets(c *call) (int, any, error) {
	return http.StatusOK, map[string]any{"assets": s.Assets()}, nil
}

// assetRequest is the body of POST /_fake/assets: every field is required.
type assetRequest struct {
	Code     string       `json:"code"`
	Decimals *int         `json:"decimals"`
	USDGRate *json.Number `json:"usdg_rate"`
}

// adminSetAsset answers POST /_fake/assets
func (s *Server) adminSetAsset(c *call) (int, any, error) {
	var req assetRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	switch {
	case req.Code == "":
		return 0, nil, errInvalid("code", "code is required")
	case req.Decimals == nil:
		return 0, nil, errInvalid("decimals", "decimals is required")
	case req.USDGRate == nil:
		return 0, nil, errInvalid("usdg_rate", "usdg_rate is required: a JSON number of USDG per whole unit")
	}
	rate, err := confpay.ParseLimit(req.USDGRate.String())
	if err != nil {
		return 0, nil, errInvalid("usdg_rate", "usdg_rate must be a JSON number of at least 0 with at most 6 decimals")
	}
	a := Asset{Code: req.Code, Decimals: *req.Decimals, USDGRate: rate}
	if err := s.SetAsset(a); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, a, nil
}

func (s *Server) adminGetHeld(c *call) (int, any, error) {
	p, err := s.HeldPayment(c.r.PathValue("transaction_id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, p, nil
}

func (s *Server) adminListHeld(c *call) (int, any, error) {
	n, ref, apiErr := adminAccountQuery(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	ps, err := s.HeldPayments(ref, n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"held": ps}, nil
}

// adminListEvents answers GET /_fake/events?account=&network=: the
// account's events (Events), oldest first, each as its deliveries carry it.
func (s *Server) adminListEvents(c *call) (int, any, error) {
	n, ref, apiErr := adminAccountQuery(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	evs, err := s.Events(ref, n)
	if err != nil {
		return 0, nil, err
	}
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		out[i] = e.Payload
	}
	return http.StatusOK, map[string]any{"events": out}, nil
}

// adminListDeliveries answers GET /_fake/deliveries?account=&network=:
// the delivery records of the account's subscriptions (Deliveries).
func (s *Server) adminListDeliveries(c *call) (int, any, error) {
	n, ref, apiErr := adminAccountQuery(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	ds, err := s.Deliveries(ref, n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"deliveries": ds}, nil
}

// ---- proofs and notes for clients without the SDK (test-only) ----

// These two routes take a private decryption key over HTTP so that a test
// in a language without the SDK can take the production balance path (a
// decryption proof) and read a note. They exist for tests against the
// sandbox only: the real service never sees a decryption key. The key is
// never logged, kept or echoed, and no error carries it or a figure.

// parseKeyParam parses a hex private decryption key (0x optional) from
// the field param.
func parseKeyParam(param string, text confpay.Secret) (*decrypt.PrivateKey, *apiError) {
	if text == "" {
		return nil, errInvalid(param, param+" is required: the account's private encryption key, 64 hex digits")
	}
	k, err := decrypt.ParsePrivateKeyHex(strings.TrimPrefix(text.Reveal(), "0x"))
	if err != nil {
		return nil, errInvalid(param, param+" must be a private encryption key, 64 hex digits")
	}
	return k, nil
}

// proveRequest is the body of POST /_fake/prove.
type proveRequest struct {
	Account       string          `json:"account"`
	Network       confpay.Network `json:"network"`
	DecryptionKey confpay.Secret  `json:"decryption_key"`
}

// adminProve answers POST /_fake/prove: a decryption proof over the
// account's current balances, built with the given key exactly as the SDK
// builds one, and the balances GET /v1/accounts/me/balances answers with it.
func (s *Server) adminProve(c *call) (int, any, error) {
	var req proveRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	if req.Account == "" {
		return 0, nil, errInvalid("account", "account is required")
	}
	if req.Network == "" {
		req.Network = confpay.NetworkTest
	}
	if req.Network != confpay.NetworkTest && req.Network != confpay.NetworkLive {
		return 0, nil, errInvalid("network", "network must be test or live")
	}
	key, apiErr := parseKeyParam("decryption_key", req.DecryptionKey)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	params, list, err := s.proveWith(req.Account, req.Network, key)
	if err != nil {
		return 0, nil, err
	}
	c.setHeader("Cache-Control", "no-store") // figures
	ans := map[string]any{"balances": list.Balances}
	if params != nil {
		ans["decryption_proof"] = params.DecryptionProof
	}
	return http.StatusOK, ans, nil
}

// openNoteRequest is the body of POST /_fake/open-note: one of the ids.
type openNoteRequest struct {
	TransferID    string         `json:"transfer_id"`
	TransactionID string         `json:"transaction_id"`
	DecryptionKey confpay.Secret `json:"decryption_key"`
}

// adminOpenNote answers POST /_fake/open-note: the asset, amount and memo
// of a transfer's or a held payment's note, opened with the given key as
// the SDK opens it.
func (s *Server) adminOpenNote(c *call) (int, any, error) {
	var req openNoteRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return 0, nil, apiErr
	}
	id, held := req.TransferID, false
	switch {
	case req.TransferID != "" && req.TransactionID != "":
		return 0, nil, errInvalid("transaction_id", "give transfer_id or transaction_id, not both")
	case req.TransactionID != "":
		id, held = req.TransactionID, true
	case req.TransferID == "":
		return 0, nil, errInvalid("transfer_id", "transfer_id (a transfer) or transaction_id (a held payment) is required")
	}
	key, apiErr := parseKeyParam("decryption_key", req.DecryptionKey)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	note, dec, err := s.openNoteWith(id, held, key)
	if err != nil {
		return 0, nil, err
	}
	c.setHeader("Cache-Control", "no-store") // figures
	return http.StatusOK, map[string]any{
		"asset":  note.Asset,
		"amount": confpay.AmountFromUnits(note.Amount, dec),
		"memo":   note.Memo,
	}, nil
}
