package fakeserver

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Identities: accounts (people, businesses and agents), their API keys,
// KYC, lookups by id, handle or address, and authentication. Identities
// and keys are shared by both networks; all of it is guarded by s.mu. An
// agent's policy on each network is policy.go; what it spends and has
// held, per network, is held.go.

// account is an identity: a person, a business or an agent. Identities are
// shared by both networks.
type account struct {
	id        string
	handle    string // as registered: "@alice" or "@alice/bot"
	typ       confpay.AccountType
	address   common.Address
	addrHex   string // address.Hex(), set by addAccountLocked (a checksum costs a Keccak hash)
	kyc       confpay.KYCStatus
	createdAt time.Time
	seq       uint64 // creation order, server-wide
	// encKey is the public encryption key; nil when the account has none
	// (it is then not confidential-ready). An agent uses its owner's.
	encKey  *decrypt.PublicKey
	encHex  string   // encKey.Hex(), cached on first use (under s.mu)
	domains []string // x402 payee domains registered to it

	// Agents only.
	owner       *account
	agentName   string
	agentStatus confpay.AgentStatus
	policyID    string // its spend policy's id, the same on both networks (policy.go)

	// Owners only: their agents in creation order.
	agents []*account
}

func (a *account) isAgent() bool { return a.owner != nil }

// encryptionKey is the key that reads this account's figures: its own, or
// for an agent its owner's.
func (a *account) encryptionKey() *decrypt.PublicKey {
	if a.owner != nil {
		return a.owner.encKey
	}
	return a.encKey
}

// encryptionKeyHex is encryptionKey().Hex(), cached; "" without a key.
// s.mu must be held.
func (a *account) encryptionKeyHex() string {
	if a.owner != nil {
		return a.owner.encryptionKeyHex()
	}
	if a.encHex == "" && a.encKey != nil {
		a.encHex = a.encKey.Hex()
	}
	return a.encHex
}

// kycStatus is the account's status; agents follow their owner.
func (a *account) kycStatus() confpay.KYCStatus {
	if a.owner != nil {
		return a.owner.kyc
	}
	return a.kyc
}

// kycOK reports whether the account may move money.
func (a *account) kycOK() bool {
	k := a.kycStatus()
	return k == confpay.KYCVerified || k == confpay.KYCEnhanced
}

// spendPolicyID is the id of an agent's spend policy, "" for an account
// that has none.
func (a *account) spendPolicyID() string { return a.policyID }

// apiKey is a bearer key. Only its SHA-256 is kept.
type apiKey struct {
	id           string
	name         string
	network      confpay.Network
	acct         *account
	hash         [32]byte
	createdAt    time.Time
	lastUsedAt   *time.Time
	revokedAt    *time.Time
	requestCount int64
	usdgMoved    *big.Int // micro-USDG sent with this key
	seq          uint64   // issue order, server-wide

	// owner is auditOwner of the key's account and network, made by the
	// first call that needs it and shared by every later one (the
	// idempotency store and the audit keep it with each request).
	owner atomic.Pointer[string]
}

// KeyInfo describes an API key without the key itself.
type KeyInfo struct {
	KeyID        string          `json:"key_id"`
	Name         string          `json:"name"`
	Network      confpay.Network `json:"network"`
	AccountID    string          `json:"account_id"`
	CreatedAt    time.Time       `json:"created_at"`
	LastUsedAt   *time.Time      `json:"last_used_at"`
	RevokedAt    *time.Time      `json:"revoked_at"`
	RequestCount int64           `json:"request_count"`
	USDGMoved    confpay.Amount  `json:"usdg_moved"`
}

func (k *apiKey) info() KeyInfo {
	return KeyInfo{
		KeyID: k.id, Name: k.name, Network: k.network, AccountID: k.acct.id,
		CreatedAt: k.createdAt, LastUsedAt: k.lastUsedAt, RevokedAt: k.revokedAt,
		RequestCount: k.requestCount, USDGMoved: confpay.AmountFromUnits(k.usdgMoved, 6),
	}
}

// NewKey is an API key as issued: the key itself is shown this once.
type NewKey struct {
	KeyID     string          `json:"key_id"`
	APIKey    confpay.Secret  `json:"api_key"`
	Network   confpay.Network `json:"network"`
	Name      string          `json:"name"`
	CreatedAt time.Time       `json:"created_at"`
}

// String describes the key without the key itself.
func (k NewKey) String() string {
	return fmt.Sprintf("fakeserver.NewKey{%s %s %q, key REDACTED}", k.KeyID, k.Network, k.Name)
}

// GoString is String.
func (k NewKey) GoString() string { return k.String() }

// Format prints String for every verb.
func (k NewKey) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue is what log/slog writes for a NewKey: never the key.
func (k NewKey) LogValue() slog.Value {
	return slog.GroupValue(slog.String("key_id", k.KeyID), slog.String("network", string(k.Network)),
		slog.String("name", k.Name), slog.String("api_key", "REDACTED"))
}

// ---- accounts and keys ----

// AccountParams creates an account through the direct API or POST
// /_fake/accounts.
type AccountParams struct {
	// Handle is "@" then 3 to 20 of A-Z a-z 0-9 _, unique ignoring case.
	Handle string `json:"handle"`
	// Type is personal (default) or business.
	Type confpay.AccountType `json:"type,omitempty"`
	// KYCStatus defaults to verified.
	KYCStatus confpay.KYCStatus `json:"kyc_status,omitempty"`
	// EncryptionKey is the hex of a 33-byte public encryption key. Leave it
	// empty (and GenerateEncryptionKey false) for an account that is not
	// confidential-ready.
	EncryptionKey string `json:"encryption_key,omitempty"`
	// GenerateEncryptionKey makes the server generate a key pair and return
	// the decryption key once; the server keeps no copy.
	GenerateEncryptionKey bool `json:"generate_encryption_key,omitempty"`
}

// AccountInfo is a created account with its first keys.
type AccountInfo struct {
	AccountID     string              `json:"account_id"`
	Handle        string              `json:"handle"`
	Type          confpay.AccountType `json:"type"`
	PublicKey     string              `json:"public_key"`
	KYCStatus     confpay.KYCStatus   `json:"kyc_status"`
	EncryptionKey string              `json:"encryption_key,omitempty"`
	// DecryptionKey is the hex private encryption key, set only when the
	// server generated it.
	DecryptionKey confpay.Secret `json:"decryption_key,omitempty"`
	// TestKey and LiveKey are API keys for the two networks.
	TestKey confpay.Secret `json:"test_key"`
	LiveKey confpay.Secret `json:"live_key"`
	// Client is an SDK client with TestKey on the server (Server.Client),
	// set by CreateAccount, AddAccount and a seed.
	Client *confpay.Client `json:"-"`
}

// String describes the account without its keys, so that an AccountInfo
// printed by accident reveals none; read the fields (and Reveal the
// secrets) instead.
func (a AccountInfo) String() string {
	return fmt.Sprintf("fakeserver.AccountInfo{%s %s, keys REDACTED}", a.AccountID, a.Handle)
}

// GoString is String.
func (a AccountInfo) GoString() string { return a.String() }

// Format prints String for every verb.
func (a AccountInfo) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, a.String()) }

// LogValue is what log/slog writes for an AccountInfo, with text and JSON
// handlers alike: its public fields, never a key. (Its JSON encoding shows
// REDACTED for each key, as confpay.Secret does; the admin interface's
// answer is a mirror that holds them.)
func (a AccountInfo) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("account_id", a.AccountID), slog.String("handle", a.Handle),
		slog.String("type", string(a.Type)), slog.String("kyc_status", string(a.KYCStatus)),
		slog.String("keys", "REDACTED"))
}

// newAccountParams is a checked AccountParams with its encryption key,
// made outside the lock.
type newAccountParams struct {
	p    AccountParams
	pub  *decrypt.PublicKey
	priv *decrypt.PrivateKey // set only when generated here
}

// newAccount checks p, fills its defaults and makes (or parses) its
// encryption key. It changes nothing.
func newAccount(p AccountParams) (*newAccountParams, *apiError) {
	if !names.IsHandle(p.Handle) {
		return nil, errInvalid("handle", "handle must be @ then 3 to 20 of A-Z a-z 0-9 _")
	}
	switch p.Type {
	case "":
		p.Type = confpay.AccountPersonal
	case confpay.AccountPersonal, confpay.AccountBusiness:
	default:
		return nil, errInvalid("type", "type must be personal or business")
	}
	if p.KYCStatus == "" {
		p.KYCStatus = confpay.KYCVerified
	}
	if !validKYC(p.KYCStatus) {
		return nil, errInvalid("kyc_status", "kyc_status must be unverified, pending, verified or enhanced")
	}
	n := &newAccountParams{p: p}
	switch {
	case p.EncryptionKey != "" && p.GenerateEncryptionKey:
		return nil, errInvalid("encryption_key", "give encryption_key or generate_encryption_key, not both")
	case p.EncryptionKey != "":
		k, err := decrypt.ParsePublicKeyHex(p.EncryptionKey)
		if err != nil {
			return nil, errInvalid("encryption_key", "encryption_key must be the hex of a 33-byte compressed secp256k1 point")
		}
		n.pub = k
	case p.GenerateEncryptionKey:
		k, err := decrypt.GenerateKey(nil)
		if err != nil {
			return nil, newError(http.StatusInternalServerError, confpay.CodeInternal, "could not generate an encryption key")
		}
		n.priv, n.pub = k, k.PublicKey()
	}
	return n, nil
}

// createAccountLocked creates a checked account with one test and one live
// key, or answers 409 when its handle is taken.
func (s *Server) createAccountLocked(n *newAccountParams) (*AccountInfo, error) {
	p := n.p
	if _, taken := s.byHandle[strings.ToLower(p.Handle)]; taken {
		return nil, newError(http.StatusConflict, confpay.CodeInvalidRequest, "handle is taken").withParam("handle")
	}
	a := &account{
		id:        names.NewID("acct_"),
		handle:    p.Handle,
		typ:       p.Type,
		address:   newAddress(),
		kyc:       p.KYCStatus,
		createdAt: s.clock.Now(),
		encKey:    n.pub,
	}
	s.addAccountLocked(a)
	info := &AccountInfo{
		AccountID: a.id, Handle: a.handle, Type: a.typ, PublicKey: a.address.Hex(), KYCStatus: a.kyc,
		TestKey: s.issueKeyLocked(a, confpay.NetworkTest, "default").APIKey,
		LiveKey: s.issueKeyLocked(a, confpay.NetworkLive, "default").APIKey,
	}
	if n.pub != nil {
		info.EncryptionKey = n.pub.Hex()
	}
	if n.priv != nil {
		info.DecryptionKey = confpay.Secret(n.priv.Hex())
	}
	return info, nil
}

// addAccountLocked indexes a new account (person, business or agent).
func (s *Server) addAccountLocked(a *account) {
	s.accountSeq++
	a.seq = s.accountSeq
	s.accounts[a.id] = a
	s.byHandle[strings.ToLower(a.handle)] = a
	a.addrHex = a.address.Hex()
	s.byAddr[strings.ToLower(a.addrHex)] = a
	s.markAccount(a)
}

// newAddress returns a fresh random chain address.
func newAddress() common.Address {
	var a common.Address
	if _, err := rand.Read(a[:]); err != nil {
		panic("fakeserver: no randomness")
	}
	return a
}

func validKYC(k confpay.KYCStatus) bool {
	switch k {
	case confpay.KYCUnverified, confpay.KYCPending, confpay.KYCVerified, confpay.KYCEnhanced:
		return true
	}
	return false
}

// lookupAccountLocked finds an account by id or handle (any case).
func (s *Server) lookupAccountLocked(ref string) (*account, error) {
	if a, ok := s.accounts[ref]; ok {
		return a, nil
	}
	if a, ok := s.byHandle[strings.ToLower(ref)]; ok {
		return a, nil
	}
	return nil, errNotFound("no account " + ref)
}

func (s *Server) issueKeyLocked(a *account, n confpay.Network, name string) NewKey {
	prefix := confpay.KeyPrefixTest
	if n == confpay.NetworkLive {
		prefix = confpay.KeyPrefixLive
	}
	secret := prefix + names.Random(names.Base62, 32)
	k := &apiKey{
		id: names.NewID("key_"), name: name, network: n, acct: a,
		hash: sha256.Sum256([]byte(secret)), createdAt: s.clock.Now(), usdgMoved: new(big.Int),
	}
	s.keySeq++
	k.seq = s.keySeq
	s.keys[k.hash] = k
	s.keysByID[k.id] = k
	s.markKey(k, false)
	return NewKey{KeyID: k.id, APIKey: confpay.Secret(secret), Network: n, Name: name, CreatedAt: k.createdAt}
}

// ---- agents ----

// createAgentLocked creates owner's agent name with policy pr on network
// on (on every network when on is nil; see setPoliciesLocked): the one
// path of POST /v1/accounts/me/agents, CreateAgent and seeds. Its checks,
// in order: the owner is no agent (403), its KYC is complete (403), the
// name is valid (400), then policyErr (pr's parse error, if any), then the
// name is free (409), then the owner has fewer agents than the bound
// (409 agent_limit_reached).
func (s *Server) createAgentLocked(owner *account, name string, pr *rules.Policy, policyErr *apiError, on *network) (*account, *apiError) {
	if owner.isAgent() {
		return nil, newError(http.StatusForbidden, confpay.CodeNotAgentOwner, "an agent cannot own agents")
	}
	if !owner.kycOK() {
		return nil, newError(http.StatusForbidden, confpay.CodeKYCRequired, "identity verification must be complete to create an agent")
	}
	if !names.IsAgentName(name) {
		return nil, errInvalid("name", "name must be 1 to 32 of a-z 0-9 - _")
	}
	if policyErr != nil {
		return nil, policyErr
	}
	handle := owner.handle + "/" + name
	if _, taken := s.byHandle[strings.ToLower(handle)]; taken {
		return nil, newError(http.StatusConflict, confpay.CodeAgentNameTaken, "the account already has an agent of that name").withParam("name")
	}
	if len(owner.agents) >= s.maxAgents {
		return nil, newError(http.StatusConflict, confpay.CodeAgentLimitReached,
			"the account has the most agents it may ("+strconv.Itoa(s.maxAgents)+")")
	}
	now := s.clock.Now()
	a := &account{
		id:          names.NewID("acct_"),
		handle:      handle,
		typ:         confpay.AccountAgent,
		address:     newAddress(),
		createdAt:   now,
		owner:       owner,
		agentName:   name,
		agentStatus: confpay.AgentActive,
		policyID:    names.NewID("policy_"),
	}
	s.addAccountLocked(a)
	s.setPoliciesLocked(a.id, a.policyID, pr, on)
	owner.agents = append(owner.agents, a)
	return a, nil
}

// ownedAgentLocked finds owner's agent agentID for a
// policy call: 404 not_found when there is no such agent, 403
// not_agent_owner when the caller is not its owner (the agent included).
func (s *Server) ownedAgentLocked(owner *account, agentID string) (*account, *apiError) {
	a, ok := s.accounts[agentID]
	if !ok || !a.isAgent() {
		return nil, errNotFound("no such agent")
	}
	if a.owner != owner {
		return nil, newError(http.StatusForbidden, confpay.CodeNotAgentOwner, "only the agent's owner may read or change its spend policy")
	}
	return a, nil
}

// ---- authentication ----

// errUnauthorized is 401 unauthorized: no key, or a key that is unknown,
// revoked or of another network.
func errUnauthorized() *apiError {
	return newError(http.StatusUnauthorized, confpay.CodeUnauthorized, "missing or invalid API key")
}

// kycOK reports whether the verification of c's account lets it move
// money.
func (s *Server) kycOK(c *call) bool {
	s.lockFor(c)
	defer s.mu.Unlock()
	return c.acct.kycOK()
}

// authenticate resolves the bearer key, or answers 401 unauthorized.
func (s *Server) authenticate(c *call) *apiError {
	secret, ok := bearerCredential(c.r)
	if !ok {
		return errUnauthorized()
	}
	n, ok := confpay.NetworkOfKey(secret)
	if !ok {
		return errUnauthorized()
	}
	var buf [96]byte // a key's text fits: its hash costs no allocation
	h := sha256.Sum256(append(buf[:0], secret...))
	s.lockFor(c)
	defer s.mu.Unlock()
	k, ok := s.keys[h] // a map keyed by the hash: the lookup compares hashes, never the key
	if !ok || k.revokedAt != nil || k.network != n {
		return errUnauthorized()
	}
	now := s.clock.Now()
	k.lastUsedAt = &now
	k.requestCount++
	s.markKey(k, true)
	c.key, c.acct, c.net = k, k.acct, s.nets[n]
	return nil
}
