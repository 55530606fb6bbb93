package confpay

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// AgentStatus is an agent's state. Only an active agent can pay.
type AgentStatus string

// Agent statuses.
const (
	AgentActive   AgentStatus = "active"
	AgentPaused   AgentStatus = "paused"
	AgentDisabled AgentStatus = "disabled"
)

// Agent is an agent account owned by the authenticated account.
type Agent struct {
	AccountID string `json:"account_id"`
	// Handle is shaped @owner/name.
	Handle string `json:"handle"`
	// PublicKey is the agent's own EIP-55 chain address.
	PublicKey     string      `json:"public_key"`
	Status        AgentStatus `json:"status"`
	SpendPolicyID string      `json:"spend_policy_id"`
	CreatedAt     time.Time   `json:"created_at,omitzero"`
}

// AgentList is the answer of GET /v1/accounts/me/agents.
type AgentList struct {
	Agents []*Agent `json:"agents"`
}

// AgentCreateParams is the body of POST /v1/accounts/me/agents.
type AgentCreateParams struct {
	// Name is 1 to 32 of a-z 0-9 - _; the handle becomes @owner/name.
	Name string `json:"name"`
	// SpendPolicy needs DailyLimitUSDG and PerTransactionLimitUSDG.
	SpendPolicy SpendPolicyParams `json:"spend_policy"`
}

// SpendPolicy is an agent's mandate on one network as the service holds it.
// Spend policies are per network, like the agent's wallet: GetPolicy and
// UpdatePolicy read and change the policy of the client's network
// (Client.Network), never the other's. PolicyID is the agent's, the same on
// both networks; UpdatedAt is the network's own. Both limits are 0 (no
// payment allowed) on a network where no key of that network has set the
// policy yet.
type SpendPolicy struct {
	PolicyID                string `json:"policy_id"`
	DailyLimitUSDG          Limit  `json:"daily_limit_usdg"`
	PerTransactionLimitUSDG Limit  `json:"per_transaction_limit_usdg"`
	// AllowedRecipients is nil when any recipient is allowed.
	AllowedRecipients []string `json:"allowed_recipients,omitempty"`
	Assets            []string `json:"assets"`
	// ActiveHours is "HH:MM-HH:MM" in UTC, inclusive; start after end wraps.
	ActiveHours string `json:"active_hours"`
	// HITLThresholdUSDG is nil when nothing is held for approval.
	HITLThresholdUSDG *Limit    `json:"hitl_threshold_usdg,omitempty"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// SpendPolicyParams sets spend-policy fields, on agent creation or in a
// PATCH. Only the fields set are sent, so "not sent" and "set to zero"
// differ: a nil pointer or nil slice is not sent. AnyRecipient with
// AllowedRecipients, or NoHITLThreshold with HITLThresholdUSDG, is refused.
type SpendPolicyParams struct {
	DailyLimitUSDG          *Limit
	PerTransactionLimitUSDG *Limit
	AllowedRecipients       []string
	Assets                  []string
	ActiveHours             *string
	HITLThresholdUSDG       *Limit

	// AnyRecipient sends allowed_recipients as null: the restriction is
	// removed and any recipient is allowed (PATCH only).
	AnyRecipient bool
	// NoHITLThreshold sends hitl_threshold_usdg as null: nothing is held
	// for approval any more (PATCH only).
	NoHITLThreshold bool
}

// check refuses fields set in two contradicting ways; prefix is the
// field's path on the wire ("spend_policy." on agent creation).
func (p *SpendPolicyParams) check(prefix string) error {
	switch {
	case p.AnyRecipient && p.AllowedRecipients != nil:
		return &ParamError{Param: prefix + "allowed_recipients", Problem: "is set together with AnyRecipient, which removes it"}
	case p.NoHITLThreshold && p.HITLThresholdUSDG != nil:
		return &ParamError{Param: prefix + "hitl_threshold_usdg", Problem: "is set together with NoHITLThreshold, which removes it"}
	}
	return nil
}

// MarshalJSON writes only the fields that are set.
func (p SpendPolicyParams) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	field := func(name string, v any) error {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.WriteString(`"` + name + `":`)
		buf.Write(b)
		return nil
	}
	type entry struct {
		name string
		set  bool
		v    any
	}
	for _, e := range []entry{
		{"daily_limit_usdg", p.DailyLimitUSDG != nil, p.DailyLimitUSDG},
		{"per_transaction_limit_usdg", p.PerTransactionLimitUSDG != nil, p.PerTransactionLimitUSDG},
		{"allowed_recipients", p.AllowedRecipients != nil || p.AnyRecipient, p.AllowedRecipients},
		{"assets", p.Assets != nil, p.Assets},
		{"active_hours", p.ActiveHours != nil, p.ActiveHours},
		{"hitl_threshold_usdg", p.HITLThresholdUSDG != nil || p.NoHITLThreshold, p.HITLThresholdUSDG},
	} {
		if !e.set {
			continue
		}
		if err := field(e.name, e.v); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// AgentTransaction is an agent payment held for the owner's decision: an
// item of the pending list, or the answer to approve and reject. The amount
// is never part of it: open EncryptedNote with the owner's decryption key.
type AgentTransaction struct {
	TransactionID string `json:"transaction_id"`
	// Agent is the agent's handle; empty in a HeldError, where the caller
	// is the agent.
	Agent        string `json:"agent,omitempty"`
	To           string `json:"to"`
	Asset        string `json:"asset,omitempty"`
	Confidential bool   `json:"confidential"`
	// Status is DecisionPending, DecisionApproved or DecisionRejected
	// (DecisionExpired in the fakeserver's direct API).
	Status      AgentTransactionStatus `json:"status,omitempty"`
	RequestedAt time.Time              `json:"requested_at"`
	ExpiresAt   time.Time              `json:"expires_at"`
	DecidedAt   *time.Time             `json:"decided_at,omitempty"`
	// TransferID and TxHash are set once an approved payment is submitted.
	TransferID string `json:"transfer_id,omitempty"`
	TxHash     string `json:"tx_hash,omitempty"`
	// EncryptedNote is the amount and memo sealed to the owner (pending
	// items only); NoteReaders lists the reader keys (hex) in seal order.
	EncryptedNote string   `json:"encrypted_note,omitempty"`
	NoteReaders   []string `json:"note_readers,omitempty"`
}

// AgentTransactionStatus is the state of an agent payment held for the
// owner's decision. A status the SDK does not know decodes as its own
// value.
type AgentTransactionStatus string

// Held-payment statuses: waiting, or the owner's decision, or none in time.
const (
	DecisionPending  AgentTransactionStatus = "pending_approval" // waiting for the owner
	DecisionApproved AgentTransactionStatus = "approved"         // approved and submitted as a transfer
	DecisionRejected AgentTransactionStatus = "rejected"         // rejected; nothing moved
	// DecisionExpired: the approval window closed without a decision;
	// nothing moved, and a decision now fails with ErrTransactionExpired.
	// The interface names no value for it on the wire: the fakeserver
	// shows it on its direct API and under /_fake.
	DecisionExpired AgentTransactionStatus = "expired"
)

// PendingList is the answer of GET /v1/agents/transactions/pending.
type PendingList struct {
	Pending []*AgentTransaction `json:"pending"`
}

// List returns every agent under the authenticated account
// (GET /v1/accounts/me/agents): the one way to list agents.
func (s *AgentsService) List(ctx context.Context, opts ...CallOption) ([]*Agent, error) {
	var l AgentList
	if err := s.client.do(ctx, http.MethodGet, "/v1/accounts/me/agents", "", nil, &l, opts); err != nil {
		return nil, err
	}
	return l.Agents, nil
}

// Create makes an agent account under the authenticated account
// (POST /v1/accounts/me/agents). The spend policy needs DailyLimitUSDG and
// PerTransactionLimitUSDG, and is set on the client's network only: on the
// other network the agent's policy allows nothing (both limits 0) until a
// client with a key of that network sets both limits with UpdatePolicy.
func (s *AgentsService) Create(ctx context.Context, params *AgentCreateParams, opts ...CallOption) (*Agent, error) {
	switch {
	case params == nil:
		return nil, &ParamError{Param: "params", Problem: "is nil"}
	case params.Name == "":
		return nil, &ParamError{Param: "name", Problem: "is required"}
	case params.SpendPolicy.DailyLimitUSDG == nil:
		return nil, &ParamError{Param: "spend_policy.daily_limit_usdg", Problem: "is required"}
	case params.SpendPolicy.PerTransactionLimitUSDG == nil:
		return nil, &ParamError{Param: "spend_policy.per_transaction_limit_usdg", Problem: "is required"}
	}
	if err := params.SpendPolicy.check("spend_policy."); err != nil {
		return nil, err
	}
	var a Agent
	if err := s.client.do(ctx, http.MethodPost, "/v1/accounts/me/agents", "", params, &a, opts); err != nil {
		return nil, err
	}
	return &a, nil
}

// GetPolicy returns an agent's spend policy on the client's network
// (GET /v1/agents/{account_id}/spend-policy); see SpendPolicy.
func (s *AgentsService) GetPolicy(ctx context.Context, agentID string, opts ...CallOption) (*SpendPolicy, error) {
	id, err := pathID("agentID", agentID)
	if err != nil {
		return nil, err
	}
	var p SpendPolicy
	if err := s.client.do(ctx, http.MethodGet, "/v1/agents/"+id+"/spend-policy", "", nil, &p, opts); err != nil {
		return nil, err
	}
	return &p, nil
}

// UpdatePolicy amends an agent's spend policy on the client's network
// (PATCH /v1/agents/{account_id}/spend-policy); the other network's policy
// is untouched, and agent.policy.updated goes out on the client's network
// only. Only the fields set in params are sent and changed; the merged
// result is validated, so where the policy was never set on this network
// params must set both limits. The answer is the whole updated policy.
func (s *AgentsService) UpdatePolicy(ctx context.Context, agentID string, params *SpendPolicyParams, opts ...CallOption) (*SpendPolicy, error) {
	id, err := pathID("agentID", agentID)
	if err != nil {
		return nil, err
	}
	if params == nil {
		return nil, &ParamError{Param: "params", Problem: "is nil"}
	}
	if err := params.check(""); err != nil {
		return nil, err
	}
	var p SpendPolicy
	if err := s.client.do(ctx, http.MethodPatch, "/v1/agents/"+id+"/spend-policy", "", params, &p, opts); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListPending returns the agent payments held for the owner's decision
// (GET /v1/agents/transactions/pending).
func (s *AgentsService) ListPending(ctx context.Context, opts ...CallOption) ([]*AgentTransaction, error) {
	var l PendingList
	if err := s.client.do(ctx, http.MethodGet, "/v1/agents/transactions/pending", "", nil, &l, opts); err != nil {
		return nil, err
	}
	return l.Pending, nil
}

// Approve lets a held agent payment go
// (POST /v1/agents/transactions/{transaction_id}/approve). The policy in
// force now is checked again; on success the payment is submitted at once
// and the answer carries its TransferID. After the approval window it fails
// with ErrTransactionExpired.
//
// A second decision on the same payment, approve or reject, fails with
// ErrTransactionNotFound (404), exactly as an unknown id does: the payment
// is no longer waiting. To make a retried decision safe, pass
// WithIdempotencyKey: the retry then answers the first decision again.
func (s *AgentsService) Approve(ctx context.Context, transactionID string, opts ...CallOption) (*AgentTransaction, error) {
	return s.decide(ctx, transactionID, "approve", opts)
}

// Reject discards a held agent payment
// (POST /v1/agents/transactions/{transaction_id}/reject). Nothing moves. A
// second decision fails with ErrTransactionNotFound, as for Approve.
func (s *AgentsService) Reject(ctx context.Context, transactionID string, opts ...CallOption) (*AgentTransaction, error) {
	return s.decide(ctx, transactionID, "reject", opts)
}

func (s *AgentsService) decide(ctx context.Context, transactionID, verb string, opts []CallOption) (*AgentTransaction, error) {
	id, err := pathID("transactionID", transactionID)
	if err != nil {
		return nil, err
	}
	var t AgentTransaction
	if err := s.client.do(ctx, http.MethodPost, "/v1/agents/transactions/"+id+"/"+verb, "", nil, &t, opts); err != nil {
		return nil, err
	}
	return &t, nil
}
