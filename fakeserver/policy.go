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
// are never touched. All of it is guarded by s.mu. Reading a policy is a
// view (views.go), changing one an agent operation (agents.go).

// policy is an agent's spend policy (account.policy).
type policy struct {
	id        string        // policy_...
	rules     *rules.Policy // immutable
	updatedAt time.Time
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
