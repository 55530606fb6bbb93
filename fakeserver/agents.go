package fakeserver

import (
	"errors"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Agent operations of an owner: creating an agent and changing its spend
// policy, each one critical section (announcing the change is the
// policy's event). Identities and their lookups are identity.go; an
// agent's spending and held payments are held.go, the judge pay.go.

// createOwnAgent creates owner's agent name with the parsed policy pr on
// n, the network of the owner's key (or answers policyErr, the parse's
// error, in the documented order). On the other network the agent's
// policy allows nothing until a key of that network sets one.
func (s *Server) createOwnAgent(c *call, name string, pr *rules.Policy, policyErr *apiError) (*confpay.Agent, *apiError) {
	n, owner := c.net, c.acct
	s.lockFor(c)
	defer s.mu.Unlock()
	a, apiErr := s.createAgentLocked(owner, name, pr, policyErr, n)
	if apiErr != nil {
		return nil, apiErr
	}
	return agentView(a), nil
}

// updatePolicy applies a PATCH body to the policy on n of owner's agent
// agentID and announces what changed on n.
func (s *Server) updatePolicy(c *call, agentID string, body []byte) (*confpay.SpendPolicy, error) {
	n, owner := c.net, c.acct
	s.lockFor(c)
	defer s.mu.Unlock()
	a, apiErr := s.ownedAgentLocked(owner, agentID)
	if apiErr != nil {
		return nil, apiErr
	}
	return s.patchPolicyLocked(n, a, body)
}

// patchPolicyLocked applies a PATCH body to agent a's policy on n,
// validated as the merged result; a change gets a new updated_at and is
// announced on n only.
func (s *Server) patchPolicyLocked(n *network, a *account, body []byte) (*confpay.SpendPolicy, error) {
	cur := n.policyOf(a.id)
	next, changed, err := cur.rules.Patch(body)
	if err == nil {
		err = s.assets.policyAssetsKnown(next)
	}
	if err != nil {
		var fe *rules.FieldError
		if errors.As(err, &fe) && fe.Field == "" {
			return nil, errInvalid("body", "the body must be one JSON object of spend-policy fields")
		}
		return nil, policyError(err, "", "body")
	}
	if len(changed) > 0 {
		cur = &policy{id: a.policyID, rules: next, updatedAt: s.clock.Now()}
		n.policies[a.id] = cur
		s.markPolicy(n, a.id)
		s.emitPolicyUpdatedLocked(n, a, changed)
	}
	return cur.view(), nil
}
