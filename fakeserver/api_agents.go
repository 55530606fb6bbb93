package fakeserver

// The /v1 agent handlers (agents, spend policies, held payments): parse,
// one domain call, render. Handlers never lock (TestLayout checks it).

import (
	"encoding/json"
	"net/http"
)

// handleCreateAgent answers POST /v1/accounts/me/agents: the policy sent
// is the one on the key's network.
func (s *Server) handleCreateAgent(c *call) (int, any, error) {
	var body struct {
		Name        string          `json:"name"`
		SpendPolicy json.RawMessage `json:"spend_policy"`
	}
	if apiErr := decodeStrict(c.body, &body); apiErr != nil {
		return 0, nil, apiErr
	}
	pr, apiErr := s.parsePolicy(body.SpendPolicy, "spend_policy.", "spend_policy")
	v, apiErr := s.createOwnAgent(c, body.Name, pr, apiErr)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	return http.StatusCreated, v, nil
}

// handleListAgents answers GET /v1/accounts/me/agents.
func (s *Server) handleListAgents(c *call) (int, any, error) {
	return http.StatusOK, s.agentsOf(c.acct), nil
}

// handleListPending lists the caller's held payments on the key's network
// that still await a decision, oldest first, each with the amount and memo
// sealed to the owner. A note is sealed once, on the first listing, outside
// the lock.
func (s *Server) handleListPending(c *call) (int, any, error) {
	l, err := s.pendingFor(c.net, c.acct)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, l, nil
}

// handleApprove answers POST /v1/agents/transactions/{id}/approve.
func (s *Server) handleApprove(c *call) (int, any, error) {
	return s.approve(c, c.r.PathValue("transaction_id"))
}

// handleReject answers POST /v1/agents/transactions/{id}/reject.
func (s *Server) handleReject(c *call) (int, any, error) {
	return s.reject(c, c.r.PathValue("transaction_id"))
}

// handleGetPolicy answers GET /v1/agents/{account_id}/spend-policy: the
// policy on the key's network.
func (s *Server) handleGetPolicy(c *call) (int, any, error) {
	p, apiErr := s.agentPolicy(c.net, c.acct, c.r.PathValue("account_id"))
	if apiErr != nil {
		return 0, nil, apiErr
	}
	return http.StatusOK, p, nil
}

// handleUpdatePolicy changes only the fields sent of the policy on the
// key's network, validates the merged result and answers the whole policy.
// When a value actually changed, the policy gets a new updated_at and
// agent.policy.updated is emitted on the caller's network only; a PATCH
// that changes nothing is answered as a read.
func (s *Server) handleUpdatePolicy(c *call) (int, any, error) {
	p, err := s.updatePolicy(c, c.r.PathValue("account_id"), c.body)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, p, nil
}
