package fakeserver

import "net/http"

// STUB: owned by the webhooks engineer, who replaces this file.

// hookBook holds one network's subscriptions, events and delivery records.
type hookBook struct{}

func (b *hookBook) init() {}

func (s *Server) startDeliveries() {}
func (s *Server) stopDeliveries()  {}

func (s *Server) handleListWebhooks(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleCreateWebhook(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleDeleteWebhook(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleReplay(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleDeliveries(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}

// emitTransferLocked emits a transfer event (transfer.initiated, .confirmed,
// .failed) to the subscriptions of both sides, each with its direction.
func (s *Server) emitTransferLocked(n *network, kind string, t *transfer) {}

// emitAgentTransactionLocked emits agent.transaction.* to the owner.
func (s *Server) emitAgentTransactionLocked(n *network, kind string, h *heldTx) {}

// emitPolicyUpdatedLocked emits agent.policy.updated to the owner.
func (s *Server) emitPolicyUpdatedLocked(n *network, agent *account, changed []string) {}
