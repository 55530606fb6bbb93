package fakeserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
	"github.com/confpay/confpay-go/internal/strictjson"
)

// Seeds: a server's starting state in one value, the same JSON as the
// binary's -seed file. Load creates a seed's accounts, agents, keys and
// balances all or nothing, and remembers it for ResetToSeed and
// POST /_fake/reset?to=seed.

// Seed is a server's starting state: accounts, then agents, with their
// keys and balances. Its JSON form is the binary's -seed file:
//
//	{"accounts": [
//	  {"handle": "@alice", "generate_encryption_key": true,
//	   "balances": {"test": {"USDG": "100"}}},
//	  {"handle": "@shop", "type": "business"}
//	 ],
//	 "agents": [
//	  {"owner": "@alice", "name": "buyer",
//	   "spend_policy": {"daily_limit_usdg": 500, "per_transaction_limit_usdg": 100, "hitl_threshold_usdg": 20},
//	   "balances": {"test": {"USDG": "50"}}}
//	 ]}
//
// Read one with ParseSeed, or write it as a Go literal; load it with
// Server.Load (or the test helper Server.Seed).
type Seed struct {
	Accounts []SeedAccount `json:"accounts"`
	Agents   []SeedAgent   `json:"agents,omitempty"`
}

// SeedAccount is an account of a Seed: the fields of AccountParams (POST
// /_fake/accounts) and its balances. It gets one test and one live API
// key, as CreateAccount gives.
type SeedAccount struct {
	Handle                string              `json:"handle"`
	Type                  confpay.AccountType `json:"type,omitempty"`
	KYCStatus             confpay.KYCStatus   `json:"kyc_status,omitempty"`
	EncryptionKey         string              `json:"encryption_key,omitempty"`
	GenerateEncryptionKey bool                `json:"generate_encryption_key,omitempty"`
	Balances              Balances            `json:"balances,omitempty"`
}

// SeedAgent is an agent of a Seed.
type SeedAgent struct {
	// Owner is the owner's handle: an account of the same seed, so that
	// a seed stands alone and loads again after a reset.
	Owner string `json:"owner"`
	// Name is the agent's name: its handle is Owner's handle, "/", Name.
	Name string `json:"name"`
	// SpendPolicy is the spend_policy object of POST
	// /v1/accounts/me/agents, as JSON, set on both networks:
	//
	//	json.RawMessage(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 100}`)
	SpendPolicy json.RawMessage `json:"spend_policy"`
	// Status is active (the default), paused or disabled.
	Status confpay.AgentStatus `json:"status,omitempty"`
	// Keys are the agent's API keys. Nil (absent) gives it one test and
	// one live key named "default", as an account gets; an empty list
	// gives it none, as POST /v1/accounts/me/agents does.
	Keys     []SeedKey `json:"keys,omitempty"`
	Balances Balances  `json:"balances,omitempty"`
}

// SeedKey is an API key to issue to a seeded agent.
type SeedKey struct {
	// Network is test or live.
	Network confpay.Network `json:"network"`
	// Name defaults to "default".
	Name string `json:"name,omitempty"`
}

// Balances are funds per network and asset, as decimal strings:
//
//	fakeserver.Balances{"test": {"USDG": "100", "ETH": "0.5"}}
type Balances map[confpay.Network]map[string]string

// SeedError is a seed that cannot be loaded. Field names the member at
// fault as a path of the seed's JSON ("agents[1].spend_policy.daily_limit_usdg");
// it is empty when the seed as a whole is at fault.
type SeedError struct {
	Field   string
	Problem string
}

// Error is "seed: " then the field and the problem.
func (e *SeedError) Error() string {
	if e.Field == "" {
		return "seed: " + e.Problem
	}
	return "seed: " + e.Field + ": " + e.Problem
}

// ParseSeed decodes a seed strictly: one JSON object, no unknown member,
// no member given twice or in another letter case, nothing after it. An
// error is a *SeedError naming the member. What the members say (handles,
// policies, amounts) is checked by Load, against the server's assets and
// accounts.
func ParseSeed(b []byte) (*Seed, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &SeedError{Problem: `is empty: it needs a JSON object such as {"accounts": []}`}
	}
	var seed Seed
	if err := strictjson.Decode(b, &seed); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			return nil, &SeedError{Field: se.Path, Problem: se.Problem}
		}
		return nil, &SeedError{Problem: "is not one valid JSON object"}
	}
	return &seed, nil
}

// AgentInfo is a created agent with its API keys.
type AgentInfo struct {
	AccountID string `json:"account_id"`
	// Handle is "@owner/name".
	Handle    string              `json:"handle"`
	Name      string              `json:"name"`
	OwnerID   string              `json:"owner_id"`
	PublicKey string              `json:"public_key"`
	Status    confpay.AgentStatus `json:"status"`
	// SpendPolicy is the policy as GET /v1/agents/{id}/spend-policy
	// shows it when the agent was made: a seed and CreateAgent set it on
	// both networks (Server.Policy reads one network's later).
	SpendPolicy *confpay.SpendPolicy `json:"spend_policy"`
	// TestKey and LiveKey are the agent's first key on each network; empty
	// when it has none there.
	TestKey confpay.Secret `json:"test_key,omitempty"`
	LiveKey confpay.Secret `json:"live_key,omitempty"`
	// Keys are all the keys issued with the agent, in order.
	Keys []NewKey `json:"keys"`
	// Client is an SDK client with TestKey on the server (Server.Client),
	// nil when the agent has no test key.
	Client *confpay.Client `json:"-"`
}

// String describes the agent without its keys, so that an AgentInfo
// printed by accident reveals none.
func (a AgentInfo) String() string {
	return fmt.Sprintf("fakeserver.AgentInfo{%s %s, keys REDACTED}", a.AccountID, a.Handle)
}

// GoString is String.
func (a AgentInfo) GoString() string { return a.String() }

// Format prints String for every verb.
func (a AgentInfo) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, a.String()) }

// LogValue is what log/slog writes for an AgentInfo: never a key.
func (a AgentInfo) LogValue() slog.Value {
	return slog.GroupValue(slog.String("account_id", a.AccountID), slog.String("handle", a.Handle),
		slog.String("status", string(a.Status)), slog.String("keys", "REDACTED"))
}

// PrivateKey returns the account's private encryption key when the server
// generated it (GenerateEncryptionKey), parsed for decrypt and the SDK's
// ReadBalances; nil otherwise.
func (a *AccountInfo) PrivateKey() *decrypt.PrivateKey {
	if a == nil || a.DecryptionKey == "" {
		return nil
	}
	k, err := decrypt.ParsePrivateKeyHex(a.DecryptionKey.Reveal())
	if err != nil {
		return nil
	}
	return k
}

// Seeded is what a seed created, in the seed's order.
type Seeded struct {
	Accounts []*AccountInfo `json:"accounts"`
	Agents   []*AgentInfo   `json:"agents,omitempty"`
}

// ---- answers that hand a secret over ----

// A confpay.Secret encodes as REDACTED, so that a struct holding one never
// shows it by accident (in a log, say). The answers below are the places
// where a secret is handed to whoever asked for it: each mirrors its type
// with the secrets as plain strings (a field of the outer struct hides the
// embedded one of the same JSON name), and only the handlers and
// SeededAnswer encode them. (POST /v1/webhooks's is in api_webhooks.go.)

// newKeyJSON is a NewKey as POST /_fake/accounts/{account}/keys answers it.
type newKeyJSON struct {
	NewKey
	APIKey string `json:"api_key"`
}

func newKeyAnswer(k NewKey) newKeyJSON { return newKeyJSON{k, k.APIKey.Reveal()} }

// accountInfoJSON is an AccountInfo as POST /_fake/accounts answers it.
type accountInfoJSON struct {
	AccountInfo
	DecryptionKey string `json:"decryption_key,omitempty"`
	TestKey       string `json:"test_key"`
	LiveKey       string `json:"live_key"`
}

func accountInfoAnswer(a *AccountInfo) accountInfoJSON {
	return accountInfoJSON{*a, a.DecryptionKey.Reveal(), a.TestKey.Reveal(), a.LiveKey.Reveal()}
}

// agentInfoJSON is an AgentInfo as a seed's answer shows it.
type agentInfoJSON struct {
	AgentInfo
	TestKey string       `json:"test_key,omitempty"`
	LiveKey string       `json:"live_key,omitempty"`
	Keys    []newKeyJSON `json:"keys"`
}

func agentInfoAnswer(a *AgentInfo) agentInfoJSON {
	out := agentInfoJSON{AgentInfo: *a, TestKey: a.TestKey.Reveal(), LiveKey: a.LiveKey.Reveal(), Keys: make([]newKeyJSON, len(a.Keys))}
	for i, k := range a.Keys {
		out.Keys[i] = newKeyAnswer(k)
	}
	return out
}

// SeededAnswer is what a seed created, as it is handed to whoever must
// receive the keys: its JSON encoding holds the API and decryption keys in
// clear, where Seeded's shows REDACTED in their place (see
// confpay.Secret). POST /_fake/reset?to=seed answers one, and the binary
// prints one, with its URL, when it starts. Printed with fmt or logged
// with slog, it shows no key.
type SeededAnswer struct {
	// URL is the server's base URL, left out of the JSON when empty.
	URL string
	// Seeded is what the seed created.
	Seeded *Seeded
}

// MarshalJSON encodes the answer with the keys in clear:
// {"url":…,"accounts":[…],"agents":[…]}.
func (a SeededAnswer) MarshalJSON() ([]byte, error) {
	out := struct {
		URL      string            `json:"url,omitempty"`
		Accounts []accountInfoJSON `json:"accounts"`
		Agents   []agentInfoJSON   `json:"agents,omitempty"`
	}{URL: a.URL, Accounts: []accountInfoJSON{}}
	if a.Seeded != nil {
		for _, x := range a.Seeded.Accounts {
			out.Accounts = append(out.Accounts, accountInfoAnswer(x))
		}
		for _, x := range a.Seeded.Agents {
			out.Agents = append(out.Agents, agentInfoAnswer(x))
		}
	}
	return json.Marshal(out)
}

// String describes the answer without its keys.
func (a SeededAnswer) String() string {
	n, m := 0, 0
	if a.Seeded != nil {
		n, m = len(a.Seeded.Accounts), len(a.Seeded.Agents)
	}
	return fmt.Sprintf("fakeserver.SeededAnswer{%s, %d accounts, %d agents, keys REDACTED}", a.URL, n, m)
}

// GoString is String.
func (a SeededAnswer) GoString() string { return a.String() }

// Format prints String for every verb.
func (a SeededAnswer) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, a.String()) }

// LogValue is what log/slog writes for a SeededAnswer: never a key.
func (a SeededAnswer) LogValue() slog.Value { return slog.StringValue(a.String()) }

// Account returns the seeded account with this handle (any case), or nil.
func (sd *Seeded) Account(handle string) *AccountInfo {
	for _, a := range sd.Accounts {
		if strings.EqualFold(a.Handle, handle) {
			return a
		}
	}
	return nil
}

// Agent returns the seeded agent with this handle ("@alice/buyer", any
// case), or nil.
func (sd *Seeded) Agent(handle string) *AgentInfo {
	for _, a := range sd.Agents {
		if strings.EqualFold(a.Handle, handle) {
			return a
		}
	}
	return nil
}

// createAgent creates and keys one agent (nil keys: a test and a live key).
func (s *Server) createAgent(owner, name string, policy json.RawMessage, keys []SeedKey) (*AgentInfo, error) {
	pr, policyErr := s.parsePolicy(policy, "spend_policy.", "spend_policy")
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookupAccountLocked(owner)
	if err != nil {
		return nil, errNotFound("owner " + owner + " is no account").withParam("owner")
	}
	a, apiErr := s.createAgentLocked(o, name, pr, policyErr, nil) // both networks
	if apiErr != nil {
		return nil, apiErr
	}
	return s.keyAgentLocked(a, keys), nil
}

// keyAgentLocked issues an agent's keys and describes it.
func (s *Server) keyAgentLocked(a *account, keys []SeedKey) *AgentInfo {
	if keys == nil {
		keys = []SeedKey{{Network: confpay.NetworkTest}, {Network: confpay.NetworkLive}}
	}
	info := &AgentInfo{
		AccountID: a.id, Handle: a.handle, Name: a.agentName, OwnerID: a.owner.id, PublicKey: a.address.Hex(),
		Status: a.agentStatus, SpendPolicy: s.nets[confpay.NetworkTest].policyOf(a.id).view(), Keys: []NewKey{},
	}
	for _, k := range keys {
		name := k.Name
		if name == "" {
			name = "default"
		}
		nk := s.issueKeyLocked(a, k.Network, name)
		info.Keys = append(info.Keys, nk)
		if k.Network == confpay.NetworkTest && info.TestKey == "" {
			info.TestKey = nk.APIKey
		}
		if k.Network == confpay.NetworkLive && info.LiveKey == "" {
			info.LiveKey = nk.APIKey
		}
	}
	if info.TestKey != "" {
		info.Client = s.Client(info.TestKey) // builds a client, takes no lock
	}
	return info
}

// seedPlan is a seed checked outside the lock: accounts with their keys
// made, policies parsed, amounts in base units.
type seedPlan struct {
	accounts []*newAccountParams
	agents   []*rules.Policy
	funds    []seedFund // in seed order
}

// seedFund is one balance of a seed.
type seedFund struct {
	field string // "accounts[0].balances.test.USDG"
	agent bool
	i     int // index in accounts or agents
	net   confpay.Network
	asset string
	units *big.Int
}

// seedErr turns an error of the direct API into a *SeedError under
// prefix ("accounts[0]."), naming its param, or whole when it names none.
func seedErr(err error, prefix, whole string) *SeedError {
	var e *apiError
	if errors.As(err, &e) {
		field := whole
		if e.body.Param != "" {
			field = prefix + e.body.Param
		}
		return &SeedError{Field: field, Problem: problemOf(e)}
	}
	return &SeedError{Field: whole, Problem: "could not be created"}
}

// problemOf is an error's message without the field name it starts with,
// which the SeedError's Field says in full.
func problemOf(e *apiError) string {
	if p := e.body.Param; p != "" {
		if rest, ok := strings.CutPrefix(e.body.Message, p+" "); ok {
			return rest
		}
	}
	return e.body.Message
}

// planSeed checks what can be checked without the lock. It changes
// nothing.
func (s *Server) planSeed(seed *Seed) (*seedPlan, error) {
	p := &seedPlan{}
	balances := func(prefix string, agent bool, i int, b Balances) error {
		nets := make([]confpay.Network, 0, len(b))
		for n := range b {
			nets = append(nets, n)
		}
		slices.Sort(nets)
		for _, n := range nets {
			field := prefix + "balances." + string(n)
			if n != confpay.NetworkTest && n != confpay.NetworkLive {
				return &SeedError{Field: field, Problem: "is not a network: use test or live"}
			}
			assets := make([]string, 0, len(b[n]))
			for a := range b[n] {
				assets = append(assets, a)
			}
			slices.Sort(assets)
			for _, asset := range assets {
				units, apiErr := s.assets.parseUnits("amount", asset, b[n][asset])
				if apiErr != nil {
					return &SeedError{Field: field + "." + asset, Problem: problemOf(apiErr)}
				}
				p.funds = append(p.funds, seedFund{field: field + "." + asset, agent: agent, i: i, net: n, asset: asset, units: units})
			}
		}
		return nil
	}
	for i, a := range seed.Accounts {
		prefix := "accounts[" + strconv.Itoa(i) + "]."
		n, apiErr := newAccount(AccountParams{
			Handle: a.Handle, Type: a.Type, KYCStatus: a.KYCStatus,
			EncryptionKey: a.EncryptionKey, GenerateEncryptionKey: a.GenerateEncryptionKey,
		})
		if apiErr != nil {
			return nil, seedErr(apiErr, prefix, prefix+"handle")
		}
		if err := balances(prefix, false, i, a.Balances); err != nil {
			return nil, err
		}
		p.accounts = append(p.accounts, n)
	}
	for i, a := range seed.Agents {
		prefix := "agents[" + strconv.Itoa(i) + "]."
		pr, apiErr := s.parsePolicy(a.SpendPolicy, prefix+"spend_policy.", prefix+"spend_policy")
		if apiErr != nil {
			return nil, &SeedError{Field: apiErr.body.Param, Problem: problemOf(apiErr)}
		}
		switch a.Status {
		case "", confpay.AgentActive, confpay.AgentPaused, confpay.AgentDisabled:
		default:
			return nil, &SeedError{Field: prefix + "status", Problem: "must be active, paused or disabled"}
		}
		for j, k := range a.Keys {
			if k.Network != confpay.NetworkTest && k.Network != confpay.NetworkLive {
				return nil, &SeedError{Field: prefix + "keys[" + strconv.Itoa(j) + "].network", Problem: "must be test or live"}
			}
		}
		if err := balances(prefix, true, i, a.Balances); err != nil {
			return nil, err
		}
		p.agents = append(p.agents, pr)
	}
	return p, nil
}

// Load creates a seed's accounts, then its agents (with their policies,
// statuses and keys), then funds their balances, and returns what it
// created. It is all or nothing: on an error, a *SeedError naming the
// member at fault ("accounts[1].handle"), the server is left as it was.
// The seed becomes the server's seed, which ResetToSeed and POST
// /_fake/reset?to=seed load again (with new ids and keys).
func (s *Server) Load(seed *Seed) (*Seeded, error) {
	if seed == nil {
		return nil, &SeedError{Problem: "is nil"}
	}
	keep, err := json.Marshal(seed) // a copy the caller cannot change
	if err != nil {
		return nil, &SeedError{Problem: "does not encode as JSON"}
	}
	plan, err := s.planSeed(seed)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.applySeedLocked(seed, plan)
	if err != nil {
		return nil, err
	}
	var copied Seed
	_ = json.Unmarshal(keep, &copied) // it was just encoded from a Seed
	s.seed = &copied
	return out, nil
}

// applySeedLocked creates a checked seed, or undoes what it created and
// answers why.
func (s *Server) applySeedLocked(seed *Seed, plan *seedPlan) (out *Seeded, err error) {
	// Funding is checked first (it is the last step, and cannot be
	// undone), against each network's supply.
	supply := map[confpay.Network]map[string]*big.Int{}
	for _, f := range plan.funds {
		if supply[f.net] == nil {
			supply[f.net] = map[string]*big.Int{}
			for asset, text := range s.nets[f.net].ledger.Supply() {
				supply[f.net][asset], _ = new(big.Int).SetString(text, 10)
			}
		}
		sum := supply[f.net][f.asset]
		if sum == nil {
			sum = new(big.Int)
			supply[f.net][f.asset] = sum
		}
		if sum.Add(sum, f.units).Cmp(ledger.MaxUnits) >= 0 {
			return nil, &SeedError{Field: f.field, Problem: "would take the asset's supply on this network to 2^256 base units"}
		}
	}

	var accts, agents []*account
	defer func() {
		if err != nil {
			for _, a := range slices.Concat(agents, accts) {
				s.forgetAccountLocked(a)
			}
		}
	}()
	out = &Seeded{Accounts: []*AccountInfo{}}
	for i, n := range plan.accounts {
		info, err := s.createAccountLocked(n)
		if err != nil {
			prefix := "accounts[" + strconv.Itoa(i) + "]."
			return nil, seedErr(err, prefix, prefix+"handle")
		}
		accts = append(accts, s.accounts[info.AccountID])
		info.Client = s.Client(info.TestKey) // builds a client, takes no lock
		out.Accounts = append(out.Accounts, info)
	}
	for i, a := range seed.Agents {
		prefix := "agents[" + strconv.Itoa(i) + "]."
		owner := slices.IndexFunc(accts, func(o *account) bool { return strings.EqualFold(o.handle, a.Owner) })
		if owner < 0 {
			return nil, &SeedError{Field: prefix + "owner", Problem: "must be the handle of an account of the seed"}
		}
		agent, apiErr := s.createAgentLocked(accts[owner], a.Name, plan.agents[i], nil, nil) // both networks
		if apiErr != nil {
			return nil, seedErr(apiErr, prefix, prefix+"owner")
		}
		agents = append(agents, agent)
		if a.Status != "" {
			agent.agentStatus = a.Status
		}
		out.Agents = append(out.Agents, s.keyAgentLocked(agent, a.Keys))
	}
	for _, f := range plan.funds {
		to := accts
		if f.agent {
			to = agents
		}
		// Checked above: the supply has room.
		_ = s.fundLocked(s.nets[f.net], to[f.i], f.asset, f.units)
	}
	return out, nil
}

// forgetAccountLocked undoes the creation of an account or agent that
// nothing else refers to yet: its keys, its names, its place in its
// owner's list, its policies.
func (s *Server) forgetAccountLocked(a *account) {
	for _, n := range s.nets {
		delete(n.policies, a.id)
	}
	for h, k := range s.keys {
		if k.acct == a {
			delete(s.keys, h)
			delete(s.keysByID, k.id)
		}
	}
	delete(s.accounts, a.id)
	delete(s.byHandle, strings.ToLower(a.handle))
	delete(s.byAddr, strings.ToLower(a.address.Hex()))
	if a.owner != nil {
		a.owner.agents = slices.DeleteFunc(a.owner.agents, func(x *account) bool { return x == a })
	}
}

// ResetToSeed empties the server (as Reset does) and loads its seed again:
// the seed Load last loaded. The ids, API keys and generated decryption
// keys are new. Without a seed it answers an error and changes nothing.
func (s *Server) ResetToSeed() (*Seeded, error) {
	s.mu.Lock()
	seed := s.seed
	s.mu.Unlock()
	if seed == nil {
		return nil, errInvalid("to", "the server has no seed to reload: Load one first")
	}
	s.Reset()
	return s.Load(seed)
}

// seedAnswer is POST /_fake/reset?to=seed without WithResetSeed: 200 with
// what the seed created, or 400 param "to" when there is none.
func (s *Server) seedAnswer() (int, any, error) {
	out, err := s.ResetToSeed()
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, SeededAnswer{Seeded: out}, nil
}
