package fakeserver

import (
	"errors"
	"net/http"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Spend policies: the glue between the pure rules (internal/rules) and
// the server. A policy governs money, so it is per network, like the
// agent's wallet (decisions.md): each network keeps each agent's policy
// (network.policies, by agent account id), and a key reads and changes
// only its own network's.
// Creating an agent sets the policy sent on the creating key's network and
// rules.Closed, which allows nothing, on the other, until a key of that
// network sets both limits; a seed sets both. The policy id is the agent's
// (account.policyID), the same on both networks; updated_at is per
// network.
//
// A policy value is immutable: a PATCH installs a new value under the
// same policy id, so everything judged after the change sees the new
// rules, everything judged before keeps the old ones, and settled payments
// are never touched. All of it is guarded by s.mu. Reading a policy is a
// view (views.go), changing one an agent operation (agents.go).

// policy is an agent's spend policy on one network (network.policies).
type policy struct {
	id        string        // policy_..., the agent's (account.policyID)
	rules     *rules.Policy // immutable
	updatedAt time.Time
}

// setPoliciesLocked installs the policies of a new agent (account id
// agentID, policy id policyID): pr on network on (on every network when
// on is nil, as a seed does) and rules.Closed on the others, all updated
// now.
func (s *Server) setPoliciesLocked(agentID, policyID string, pr *rules.Policy, on *network) {
	now := s.clock.Now()
	for _, n := range s.nets {
		r := pr
		if on != nil && n != on {
			r = rules.Closed()
		}
		n.policies[agentID] = &policy{id: policyID, rules: r, updatedAt: now}
		s.markPolicy(n, agentID)
	}
}

// policyOf is the policy on n of the agent with account id agentID; nil
// only for an account that is no agent.
func (n *network) policyOf(agentID string) *policy { return n.policies[agentID] }

// policyError turns a validation failure into 400 invalid_policy naming
// the field; prefix is "spend_policy." inside an agent creation body.
func policyError(err error, prefix, whole string) *apiError {
	var fe *rules.FieldError
	if !errors.As(err, &fe) {
		return newError(http.StatusBadRequest, confpay.CodeInvalidPolicy, "the spend policy is invalid").withParam(whole)
	}
	param := whole
	if fe.Field != "" {
		param = prefix + fe.Field
	}
	msg := "the spend policy " + fe.Problem
	if fe.Field != "" {
		msg = param + " " + fe.Problem
	}
	if fe.Malformed {
		return errInvalid(param, msg)
	}
	return newError(http.StatusBadRequest, confpay.CodeInvalidPolicy, msg).withParam(param)
}

// ---- parsing a policy ----

// parsePolicy reads a spend-policy object for an agent's creation (rules
// and known assets), naming a field at fault under prefix (whole for the
// object itself).
func (s *Server) parsePolicy(raw []byte, prefix, whole string) (*rules.Policy, *apiError) {
	pr, err := rules.Parse(raw)
	if err == nil {
		err = s.assets.policyAssetsKnown(pr)
	}
	if err != nil {
		return nil, policyError(err, prefix, whole)
	}
	return pr, nil
}
