package fakeserver

// The direct state API: what a Go test calls beside the wire, each method
// one domain operation that takes the lock itself. The /_fake routes
// (admin.go) call these. Seeds are in seed.go, faults in faults.go, the
// moves of money a test makes by hand (Settle, FailTransfer) in pay.go,
// and the clock on Server (server.go). The test helpers that take t are
// in testing.go.

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

func accountViewLocked(a *account) AccountView {
	v := AccountView{Account: *a.view(), Status: a.agentStatus, Domains: append([]string(nil), a.domains...)}
	if a.owner != nil {
		v.OwnerID = a.owner.id
	}
	return v
}

// Account returns an account (an agent included) by id or handle.
func (s *Server) Account(accountRef string) (AccountView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return AccountView{}, err
	}
	return accountViewLocked(a), nil
}

// Accounts returns every account, agents included, oldest first.
func (s *Server) Accounts() []AccountView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accountsLocked()
}

func (s *Server) accountsLocked() []AccountView {
	all := make([]*account, 0, len(s.accounts))
	for _, a := range s.accounts {
		all = append(all, a)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	out := make([]AccountView, 0, len(all))
	for _, a := range all {
		out = append(out, accountViewLocked(a))
	}
	return out
}

// Snapshot returns the server's state. See the type for what it holds.
func (s *Server) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Accounts: s.accountsLocked(), Networks: map[confpay.Network]NetworkSnapshot{}}
	for _, k := range s.keysByID {
		snap.Keys = append(snap.Keys, k.info())
	}
	sort.Slice(snap.Keys, func(i, j int) bool { return snap.Keys[i].KeyID < snap.Keys[j].KeyID })
	for name, n := range s.nets {
		ns := NetworkSnapshot{
			Balances:  map[string][]BookEntry{},
			Supply:    map[string]string{},
			Pending:   n.transfers.pending.len(),
			Transfers: map[string]TransferRecord{},
			Held:      map[string]confpay.AgentTransaction{},
			Webhooks:  s.hooks.AllSubscriptions(name),
			Events:    s.hooks.EventCount(name),
			Policies:  map[string]confpay.SpendPolicy{},
		}
		for id, p := range n.policies {
			ns.Policies[id] = *p.view()
		}
		for id, h := range n.held.byID {
			v := *h.view()
			v.EncryptedNote, v.NoteReaders = "", nil
			ns.Held[id] = v
		}
		for _, id := range n.ledger.Accounts() {
			if a := s.accounts[id]; a != nil { // else the outside world (Inbound)
				ns.Balances[id] = s.booksLocked(n, a)
			}
		}
		ns.Supply = n.ledger.Supply()
		for t := range n.transfers.byID.all {
			ns.Transfers[t.id] = s.recordLocked(n, t)
		}
		snap.Networks[name] = ns
	}
	return snap
}

// CreateAccount creates a personal or business account with one test and
// one live API key.
func (s *Server) CreateAccount(p AccountParams) (*AccountInfo, error) {
	n, apiErr := newAccount(p)
	if apiErr != nil {
		return nil, apiErr
	}
	s.mu.Lock()
	info, err := s.createAccountLocked(n)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	info.Client = s.Client(info.TestKey) // builds a client, takes no lock
	return info, nil
}

// IssueKey issues a new API key for an account (an agent included) on a
// network. The key is in the answer only.
func (s *Server) IssueKey(accountRef string, n confpay.Network, name string) (*NewKey, error) {
	if n != confpay.NetworkTest && n != confpay.NetworkLive {
		return nil, errInvalid("network", "network must be test or live")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = "default"
	}
	k := s.issueKeyLocked(a, n, name)
	return &k, nil
}

// RevokeKey revokes a key at once.
func (s *Server) RevokeKey(keyID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keysByID[keyID]
	if !ok {
		return errNotFound("no key " + keyID)
	}
	if k.revokedAt == nil {
		now := s.clock.Now()
		k.revokedAt = &now
		s.markKey(k, false)
	}
	return nil
}

// Keys lists an account's keys with their usage, oldest first.
func (s *Server) Keys(accountRef string) ([]KeyInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return nil, err
	}
	var mine []*apiKey
	for _, k := range s.keysByID {
		if k.acct == a {
			mine = append(mine, k)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].seq < mine[j].seq })
	out := make([]KeyInfo, 0, len(mine))
	for _, k := range mine {
		out = append(out, k.info())
	}
	return out, nil
}

// SetKYC changes an account's KYC status.
func (s *Server) SetKYC(accountRef string, status confpay.KYCStatus) error {
	if !validKYC(status) {
		return errInvalid("kyc_status", "kyc_status must be unverified, pending, verified or enhanced")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return err
	}
	if a.isAgent() {
		return errInvalid("kyc_status", "agents follow their owner's KYC status")
	}
	a.kyc = status
	s.markAccount(a)
	return nil
}

// SetAgentStatus sets an agent's status: active, paused or disabled.
func (s *Server) SetAgentStatus(accountRef string, status confpay.AgentStatus) error {
	switch status {
	case confpay.AgentActive, confpay.AgentPaused, confpay.AgentDisabled:
	default:
		return errInvalid("status", "status must be active, paused or disabled")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return err
	}
	if !a.isAgent() {
		return errInvalid("status", "only agents have a status")
	}
	a.agentStatus = status
	s.markAccount(a)
	return nil
}

// RegisterDomain registers an x402 payee domain to an account, so that
// payments to that name reach it.
func (s *Server) RegisterDomain(accountRef, domain string) error {
	if !names.IsDomain(domain) {
		return errInvalid("domain", "domain must be a DNS name such as api.example.com")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return err
	}
	d := strings.ToLower(domain)
	if owner, taken := s.domains[d]; taken && owner != a {
		return newError(http.StatusConflict, confpay.CodeInvalidRequest, "domain is registered to another account").withParam("domain")
	}
	if _, mine := s.domains[d]; !mine {
		s.domains[d] = a
		a.domains = append(a.domains, d)
		s.markAccount(a)
	}
	return nil
}

// SetMaxHeldPerAgent sets how many payments may wait for the owner's
// decision per agent and network (see WithMaxHeldPerAgent). Payments
// already held stay held; n below 1 is taken as 1.
func (s *Server) SetMaxHeldPerAgent(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxHeld = max(n, 1)
}

// HeldPayment returns the held agent payment id (atx_…) on either network,
// whatever its status: pending_approval, approved (with its TransferID),
// rejected or expired.
func (s *Server) HeldPayment(id string) (*HeldPayment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		if r, ok := n.held.all[id]; ok {
			return s.heldViewLocked(n, r), nil
		}
	}
	return nil, newError(http.StatusNotFound, confpay.CodeTransactionNotFound, "no held payment "+id)
}

// HeldPayments returns every payment held on a network for an agent, or
// for all the agents of an owner, whatever its status, oldest first (in
// the order they were held).
func (s *Server) HeldPayments(accountRef string, n confpay.Network) ([]*HeldPayment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	if err != nil {
		return nil, err
	}
	var mine []heldRecord
	for _, r := range nw.held.all {
		if r.h.agent == a || r.h.agent.owner == a {
			mine = append(mine, r)
		}
	}
	slices.SortFunc(mine, func(x, y heldRecord) int {
		return cmp.Or(x.h.requestedAt.Compare(y.h.requestedAt), cmp.Compare(x.h.seq, y.h.seq))
	})
	out := make([]*HeldPayment, 0, len(mine))
	for _, r := range mine {
		out = append(out, s.heldViewLocked(nw, r))
	}
	return out, nil
}

// Books returns an account's plaintext balances on a network, one entry per
// asset it has ever held, sorted by asset. They are for test assertions;
// compare them with what a decryption proof reveals.
func (s *Server) Books(accountRef string, n confpay.Network) ([]BookEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	if err != nil {
		return nil, err
	}
	return s.booksLocked(nw, a), nil
}

// Fund credits an account (an agent included) with amount of asset on a
// network, as the dashboard's test funding does. amount is a decimal string
// such as "100" or "0.25", at most the asset's decimals.
func (s *Server) Fund(accountRef string, n confpay.Network, asset, amount string) error {
	units, apiErr := s.assets.parseUnits("amount", asset, amount)
	if apiErr != nil {
		return apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	if err != nil {
		return err
	}
	if apiErr := s.fundLocked(nw, a, asset, units); apiErr != nil {
		return apiErr
	}
	return nil
}

// InboundParams is a payment into an account from outside the API
// (Inbound).
type InboundParams struct {
	// From is the payer: a 0x address (EIP-55 checked when mixed case),
	// an external wallet unless an account holds it; or an account's
	// @handle. An external wallet's money enters the simulated chain; an
	// account pays from its own books, as a transfer it sent.
	From string
	// To is the recipient account, by id or handle (an agent included).
	To string
	// Network defaults to test.
	Network confpay.Network
	// Asset defaults to USDG.
	Asset string
	// Amount is a decimal string such as "25" or "0.5", at most the
	// asset's decimals, greater than zero.
	Amount string
	// Confidential defaults to true when nil, which needs a recipient
	// with an encryption key; set it to confpay.Ptr(false) to pay
	// publicly.
	Confidential *bool
	// Memo is sealed with the amount, at most 1024 bytes of UTF-8.
	Memo string
}

// Inbound pays an account from outside: a real transfer, pending now and
// confirmed at the block time (or by Settle), listed for the recipient by
// GET /v1/transfers, announced by transfer.initiated and
// transfer.confirmed events with direction received to the recipient's
// subscriptions, its note sealed to the recipient (and to the sender when
// it is an account with a key), and its amount in the balance ciphertext
// a decryption proof reveals once confirmed. It returns the transfer as
// the books hold it; an external sender's FromAccountID is empty and its
// From is its checksummed address. Bad input is an error naming the field
// and changes nothing.
func (s *Server) Inbound(p InboundParams) (TransferRecord, error) {
	if p.To == "" {
		return TransferRecord{}, errInvalid("to", "to is required")
	}
	var fromHandle string
	var fromAddr common.Address
	switch {
	case p.From == "":
		return TransferRecord{}, errInvalid("from", "from is required")
	case strings.HasPrefix(p.From, "0x") || strings.HasPrefix(p.From, "0X"):
		a, err := names.ParseAddress(p.From)
		if err != nil {
			return TransferRecord{}, errInvalid("from", "from: "+err.Error())
		}
		fromAddr = a
	case names.IsHandle(p.From):
		fromHandle = p.From
	default:
		return TransferRecord{}, errInvalid("from", "from must be a 0x address or an account's @handle")
	}
	if p.Network == "" {
		p.Network = confpay.NetworkTest
	}
	pay := &payment{asset: p.Asset, confidential: p.Confidential == nil || *p.Confidential, memo: p.Memo}
	if pay.asset == "" {
		pay.asset = confpay.AssetUSDG
	}
	if p.Amount == "" {
		return TransferRecord{}, errInvalid("amount", "amount is required")
	}
	units, apiErr := s.assets.parseUnits("amount", pay.asset, p.Amount)
	if apiErr != nil {
		return TransferRecord{}, apiErr
	}
	pay.units = units
	if len(p.Memo) > decrypt.MaxMemoBytes {
		return TransferRecord{}, errInvalid("memo", "memo is longer than 1024 bytes")
	}
	if !utf8.ValidString(p.Memo) {
		return TransferRecord{}, errInvalid("memo", "memo is not valid UTF-8")
	}
	return s.inbound(p.Network, p.To, fromHandle, fromAddr, pay)
}

// Transfer returns one transfer by id, from whichever network holds it.
func (s *Server) Transfer(id string) (TransferRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, t := s.findTransferLocked(id)
	if t == nil {
		return TransferRecord{}, errNotFound("no transfer " + id)
	}
	return s.recordLocked(n, t), nil
}

// Transfers returns every transfer an account sent or received on a
// network, newest first.
func (s *Server) Transfers(accountRef string, n confpay.Network) ([]TransferRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	if err != nil {
		return nil, err
	}
	list := nw.transfers.byAcct[a]
	out := make([]TransferRecord, 0, len(list))
	for i := len(list) - 1; i >= 0; i-- {
		out = append(out, s.recordLocked(nw, list[i]))
	}
	return out, nil
}

// SubscribeHandler subscribes h, an http.Handler in this process, to the
// events of kinds (every kind when none is given) of the account
// accountRef on network n, signed with secret. Deliveries reach h through
// an in-memory connection: no socket, no URL to know in advance, so a
// test's own webhook handler can be given the secret before the first
// event, and a whole test with webhooks can run inside a testing/synctest
// bubble. Everything else is as for a subscription made with POST
// /v1/webhooks: the same signing, schedule, records, replay and limit of
// subscriptions; /v1 lists it with a URL on the .invalid domain.
func (s *Server) SubscribeHandler(accountRef string, n confpay.Network, h http.Handler, secret confpay.Secret, kinds ...confpay.EventKind) (*confpay.Webhook, error) {
	if h == nil {
		return nil, errInvalid("handler", "the handler is nil")
	}
	if !strings.HasPrefix(secret.Reveal(), "whsec_") || len(secret.Reveal()) < len("whsec_")+16 {
		return nil, errInvalid("secret", `the secret must start with "whsec_" and hold at least 16 more characters`)
	}
	events := make([]string, len(kinds))
	for i, k := range kinds {
		events[i] = string(k)
	}
	if len(events) == 0 {
		events = webhookverify.Kinds()
	}
	if apiErr := checkEventKinds(events); apiErr != nil {
		return nil, apiErr
	}
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if a := s.accounts[acct]; a != nil {
		s.chaos.learn(a.id, a.handle) // the handle its deliveries' chaos draws for
	}
	s.mu.Unlock()
	defer s.hooksDurable() // the webhook state is read outside s.mu (persist.go)
	w, err := s.hooks.Subscribe(n, acct, s.receivers.add(h), events, secret)
	if err != nil {
		return nil, hooksError(err)
	}
	return w, nil
}

// Events returns the events recorded for accountRef on network n (those
// its subscriptions receive or could replay), oldest first, from the
// 30-day history window and at most the last WithMaxEvents of the
// account. Events are recorded whether or not anyone subscribed.
func (s *Server) Events(accountRef string, n confpay.Network) ([]EventRecord, error) {
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	defer s.hooksDurable() // the webhook state is read outside s.mu (persist.go)
	recs := s.hooks.Events(n, acct)
	out := make([]EventRecord, len(recs))
	for i, r := range recs {
		out[i] = EventRecord{ID: r.ID, Kind: confpay.EventKind(r.Kind), At: r.At, Payload: r.Payload}
	}
	return out, nil
}

// Deliveries returns the delivery records of accountRef's live
// subscriptions on network n, each with every attempt made (AttemptLog):
// per subscription (oldest subscription first), oldest delivery first;
// the account keeps at most about WithMaxDeliveryRecords finished ones.
func (s *Server) Deliveries(accountRef string, n confpay.Network) ([]DeliveryRecord, error) {
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	defer s.hooksDurable() // the webhook state is read outside s.mu (persist.go)
	recs := s.hooks.DeliveryRecords(n, acct)
	out := make([]DeliveryRecord, len(recs))
	for i, r := range recs {
		log := make([]DeliveryAttempt, len(r.Log))
		for j, a := range r.Log {
			log[j] = DeliveryAttempt{At: a.At, ResponseStatus: a.Status, Duration: a.Duration, Fault: a.Fault}
		}
		out[i] = DeliveryRecord{WebhookID: r.WebhookID, Delivery: r.Delivery, AttemptLog: log}
	}
	return out, nil
}

// CreateAgent creates an agent of owner (a handle or account id) with a
// spend policy on both networks, as a seed does (POST
// /v1/accounts/me/agents sets it on the owner's key's network only; the
// checks and errors are the same), and issues it one test and one live
// API key named "default".
func (s *Server) CreateAgent(owner, name string, policy confpay.SpendPolicyParams) (*AgentInfo, error) {
	body, err := json.Marshal(policy)
	if err != nil {
		return nil, errInvalid("spend_policy", "the spend policy does not encode as JSON")
	}
	return s.createAgent(owner, name, body, nil)
}

// Policy returns agent agentRef's spend policy on network n, as GET
// /v1/agents/{id}/spend-policy answers a key of n. Policies are per
// network: an agent created with a key of one network allows nothing on
// the other (both limits 0) until a key of that network sets one.
func (s *Server) Policy(agentRef string, n confpay.Network) (*confpay.SpendPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.agentOnLocked(agentRef, n)
	if err != nil {
		return nil, err
	}
	return nw.policyOf(a.id).view(), nil
}

// SetPolicy changes the fields set in p of agent agentRef's spend policy
// on network n, as PATCH /v1/agents/{id}/spend-policy does with the
// owner's key of n: validated as the merged result (so on a network where
// none was set it must set both limits), answered whole, and announced as
// agent.policy.updated on n only when a value changed.
func (s *Server) SetPolicy(agentRef string, n confpay.Network, p confpay.SpendPolicyParams) (*confpay.SpendPolicy, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, errInvalid("body", "the spend policy does not encode as JSON")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.agentOnLocked(agentRef, n)
	if err != nil {
		return nil, err
	}
	return s.patchPolicyLocked(nw, a, body)
}

// agentOnLocked finds an agent by id or handle, and a network by name.
func (s *Server) agentOnLocked(agentRef string, n confpay.Network) (*account, *network, error) {
	a, nw, err := s.accountOnLocked(agentRef, n)
	if err != nil {
		return nil, nil, err
	}
	if !a.isAgent() {
		return nil, nil, errNotFound(agentRef + " is no agent")
	}
	return a, nw, nil
}

// heldViewLocked renders a held payment for the direct API. A payment
// still waiting at or after its expires_at is expired first, as a
// decision would find it (a real clock's timer may trail by a moment).
func (s *Server) heldViewLocked(n *network, r heldRecord) *HeldPayment {
	h := r.h
	if h.status == heldPending && !s.clock.Now().Before(h.expiresAt) {
		s.expireLocked(n, h)
	}
	v := h.view()
	dec, _ := s.assets.decimals(h.asset)
	return &HeldPayment{
		AgentTransaction: *v,
		Network:          n.name,
		AgentID:          h.agent.id,
		Amount:           confpay.AmountFromUnits(r.units, dec),
		Memo:             r.memo,
	}
}

// Webhooks returns accountRef's live subscriptions on network n, oldest
// first, as GET /v1/webhooks lists them (without their secrets).
func (s *Server) Webhooks(accountRef string, n confpay.Network) ([]*confpay.Webhook, error) {
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	defer s.hooksDurable() // the webhook state is read outside s.mu (persist.go)
	return s.hooks.Subscriptions(n, acct), nil
}

// Replay sends event eventID again to subscription webhookID of accountRef
// on network n, as POST /v1/webhooks/{webhook_id}/replay/{event_id} does
// with the account's key: the same event id and body, a fresh signature,
// the same errors.
func (s *Server) Replay(accountRef string, n confpay.Network, webhookID, eventID string) (*confpay.Replay, error) {
	acct, err := s.accountID(accountRef, n)
	if err != nil {
		return nil, err
	}
	defer s.hooksDurable() // the webhook state is read outside s.mu (persist.go)
	r, err := s.hooks.Replay(n, acct, webhookID, eventID)
	if err != nil {
		return nil, hooksError(err)
	}
	return r, nil
}

// ApproveHeld approves held payment id (atx_…) on whichever network holds
// it, as its agent's owner would with POST
// /v1/agents/transactions/{id}/approve: the same checks against the policy
// and balance in force now, the same errors (the payment stays held after
// a refusal), the same events. It returns the decided payment.
func (s *Server) ApproveHeld(id string) (*HeldPayment, error) {
	return s.decideHeld(id, s.approveLocked)
}

// RejectHeld rejects held payment id as its agent's owner would with POST
// /v1/agents/transactions/{id}/reject: nothing moves.
func (s *Server) RejectHeld(id string) (*HeldPayment, error) {
	return s.decideHeld(id, s.rejectLocked)
}

// decideHeld finds the network that holds id and decides it as the
// agent's owner, with decide.
func (s *Server) decideHeld(id string, decide func(*network, *account, string) (*heldTx, *apiError)) (*HeldPayment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
		n := s.nets[name]
		if h, ok := n.held.byID[id]; ok {
			if _, apiErr := decide(n, h.agent.owner, id); apiErr != nil {
				return nil, apiErr
			}
			return s.heldViewLocked(n, n.held.all[id]), nil
		}
	}
	return nil, newError(http.StatusNotFound, confpay.CodeTransactionNotFound, "no held transaction with that id awaits a decision")
}

// SettleTransfer confirms one pending transfer now, as if its block had
// been mined (a transfer scripted to fail at confirmation fails instead).
// A transfer that is not pending is a 409-style error.
func (s *Server) SettleTransfer(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, t, err := s.pendingTransferLocked(id)
	if err != nil {
		return err
	}
	s.confirmLocked(n, t, s.clock.Now())
	return nil
}

// ---- proofs and notes for clients without the SDK (test-only) ----

// proveWith builds, with key, a decryption proof over the current balances
// of account accountRef on network n exactly as the SDK does
// (confpay.BuildDecryptionProof over the no-proof answer of the balances
// call), and the answer the balances call gives with that proof. The proof
// is nil when the account holds nothing to prove; the answer is then the
// no-proof one. A proof gone stale in between (a payment landed) is built
// again once, as ReadBalances does. Errors never carry the key or a figure.
func (s *Server) proveWith(accountRef string, n confpay.Network, key *decrypt.PrivateKey) (*confpay.BalancesParams, *confpay.BalanceList, error) {
	s.mu.Lock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	var me *confpay.Account
	if err == nil {
		me = a.view()
	}
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if me.EncryptionKey == "" {
		return nil, nil, errInvalid("account", "the account has no encryption key, so it holds no confidential balance to prove")
	}
	for try := 0; ; try++ {
		current, err := s.balances(nw, a, nil)
		if err != nil {
			return nil, nil, err
		}
		params, err := confpay.BuildDecryptionProof(key, nw.chainID, me, current.Balances)
		switch {
		case errors.Is(err, decrypt.ErrNotForThisKey):
			return nil, nil, errInvalid("decryption_key", "decryption_key is not the account's private encryption key")
		case err != nil:
			return nil, nil, newError(http.StatusInternalServerError, confpay.CodeInternal, "could not build the proof")
		case params == nil:
			return nil, current, nil
		}
		raw, err := decrypt.DecodeBase64(params.DecryptionProof)
		if err != nil {
			return nil, nil, newError(http.StatusInternalServerError, confpay.CodeInternal, "could not build the proof")
		}
		list, err := s.balances(nw, a, raw)
		var ae *apiError
		if try == 0 && errors.As(err, &ae) && ae.body.Reason == confpay.ReasonStale {
			continue // a balance changed since it was read: prove again
		}
		if err != nil {
			return nil, nil, err
		}
		return params, list, nil
	}
}

// openNoteWith opens, with key, the note of transfer id (held false) or of
// held payment id (held true) on either network, as the SDK opens it (confpay.OpenTransferNote,
// confpay.OpenAgentTransactionNote), sealing it first if no read has yet.
// It returns the note and the decimals of its asset. A key that is not one
// of the note's readers is 400 on decryption_key; errors never carry the
// key, the amount or the memo.
func (s *Server) openNoteWith(id string, held bool, key *decrypt.PrivateKey) (*decrypt.Note, int, error) {
	open, what := s.openTransferNote, "no transfer "
	if held {
		open, what = s.openHeldNote, "no held payment "
	}
	note, err := open(id, key)
	switch {
	case errors.Is(err, decrypt.ErrNotForThisKey):
		return nil, 0, errInvalid("decryption_key", "decryption_key is not one of the note's readers (the sender's or recipient's key; an agent's payments open with its owner's)")
	case err != nil:
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, 0, ae
		}
		return nil, 0, newError(http.StatusInternalServerError, confpay.CodeInternal, "could not open the note")
	case note == nil:
		return nil, 0, errNotFound(what + id)
	}
	dec, ok := s.assets.decimals(note.Asset)
	if !ok {
		return nil, 0, newError(http.StatusInternalServerError, confpay.CodeInternal, "the note's asset is not known")
	}
	return note, dec, nil
}

// openTransferNote is openNoteWith for a transfer: nil, nil when id is no
// transfer.
func (s *Server) openTransferNote(id string, key *decrypt.PrivateKey) (*decrypt.Note, error) {
	s.mu.Lock()
	n, t := s.findTransferLocked(id)
	s.mu.Unlock()
	if t == nil {
		return nil, nil
	}
	if err := s.sealNotes(n, []*transfer{t}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	v := transferViewLocked(t)
	s.mu.Unlock()
	if v.EncryptedNote == "" {
		return nil, errInvalid("transfer_id", "transfer "+id+" has no note: neither party has an encryption key")
	}
	return confpay.OpenTransferNote(key, n.chainID, v)
}

// openHeldNote is openNoteWith for a held payment: nil, nil when id is no
// held payment. A pending payment's note is sealed as the owner's pending
// list seals it.
func (s *Server) openHeldNote(id string, key *decrypt.PrivateKey) (*decrypt.Note, error) {
	find := func() (*network, *heldTx) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, name := range []confpay.Network{confpay.NetworkTest, confpay.NetworkLive} {
			if r, ok := s.nets[name].held.all[id]; ok {
				return s.nets[name], r.h
			}
		}
		return nil, nil
	}
	n, h := find()
	if h == nil {
		return nil, nil
	}
	s.mu.Lock()
	sealed, owner := h.note != "", h.agent.owner
	s.mu.Unlock()
	if !sealed {
		if _, err := s.pendingFor(n, owner); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	v := h.view()
	if h.note != "" {
		v.EncryptedNote, v.NoteReaders = h.note, []string{h.noteReader}
	}
	s.mu.Unlock()
	if v.EncryptedNote == "" {
		return nil, errInvalid("transaction_id", "held payment "+id+" has no note: it was decided or expired before its owner's pending list sealed one, or the owner has no encryption key; open its transfer's note instead")
	}
	return confpay.OpenAgentTransactionNote(key, n.chainID, v)
}
