package fakeserver

import (
	"errors"
	"net/http"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Spend policies: the glue between the pure rules (internal/rules) and
// the server. An agent's policy is an identity attribute, shared by both
// networks. A policy value is immutable: a PATCH installs a new value under
// the same policy id, so everything judged after the change sees the new
// rules, everything judged before keeps the old ones, and settled payments
// are never touched. All of it is guarded by s.mu.

// policy is an agent's spend policy (account.policy).
type policy struct {
	id        string        // policy_...
	rules     *rules.Policy // immutable
	updatedAt time.Time
}

// spendPolicyID is the id of an agent's spend policy, "" for an account
// that has none.
func (a *account) spendPolicyID() string {
	if a.policy == nil {
		return ""
	}
	return a.policy.id
}

// view renders the policy as the wire type.
func (p *policy) view() *confpay.SpendPolicy {
	r := p.rules
	v := &confpay.SpendPolicy{
		PolicyID:                p.id,
		DailyLimitUSDG:          limitOf(r.DailyLimit()),
		PerTransactionLimitUSDG: limitOf(r.PerTransactionLimit()),
		AllowedRecipients:       r.Recipients(),
		Assets:                  r.Assets(),
		ActiveHours:             r.ActiveHours().String(),
		UpdatedAt:               p.updatedAt,
	}
	if th, ok := r.Threshold(); ok {
		l := limitOf(th)
		v.HITLThresholdUSDG = &l
	}
	return v
}

// limitOf converts micro-USDG to the wire's exact Limit.
func limitOf(micro int64) confpay.Limit {
	return confpay.MustParseLimit(rules.FormatMicro(micro))
}

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

// ---- reading and changing a policy ----

// agentPolicy is the policy of owner's agent agentID.
func (s *Server) agentPolicy(owner *account, agentID string) (*confpay.SpendPolicy, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, apiErr := s.ownedAgentLocked(owner, agentID)
	if apiErr != nil {
		return nil, apiErr
	}
	return a.policy.view(), nil
}

// updatePolicy applies a PATCH body to the policy of owner's agent agentID
// and announces what changed on n.
func (s *Server) updatePolicy(n *network, owner *account, agentID string, body []byte) (*confpay.SpendPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, apiErr := s.ownedAgentLocked(owner, agentID)
	if apiErr != nil {
		return nil, apiErr
	}
	next, changed, err := a.policy.rules.Patch(body)
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
		a.policy = &policy{id: a.policy.id, rules: next, updatedAt: s.clock.Now()}
		s.emitPolicyUpdatedLocked(n, a, changed)
	}
	return a.policy.view(), nil
}
