package fakeserver

import "net/http"

// STUB: owned by the agents/policy engineer, who replaces this file.

// heldBook holds one network's agent payments awaiting a decision.
type heldBook struct{}

func (b *heldBook) init() {}

// policy is an agent's spend policy.
type policy struct{}

func (s *Server) handleListAgents(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleCreateAgent(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleGetPolicy(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleUpdatePolicy(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleListPending(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleApprove(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleReject(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}

// heldTx is an agent payment held for the owner's decision.
type heldTx struct {
	id           string
	agent        *account
	p            *payment
	toText       string
	asset        string
	confidential bool
	transfer     *transfer // set once approved and submitted
}

// agentPayLocked judges an agent's payment (the one place every rule is
// enforced), then holds it, or submits it and records its spend.
func (s *Server) agentPayLocked(n *network, p *payment, k *apiKey) (*transfer, *heldTx, *apiError) {
	return nil, nil, newError(http.StatusNotImplemented, "not_implemented", "stub")
}
