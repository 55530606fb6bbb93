package confpay

import (
	"fmt"
	"net/http"
	"strings"
)

//go:generate go run ./internal/gensentinels

// ErrorCode is the code of an error answer: the "code" field of its body.
// The Code constants are the one list of codes the SDK knows; a code the
// service adds later decodes as well, as an ErrorCode of its own value.
//
// An ErrorCode is also an error, so that every code is a target for
// errors.Is: errors.Is(err, confpay.CodeInsufficientBalance) holds when err
// is (or wraps) an APIError with that code. The Err constants are the same
// codes under the names Go code conventionally gives sentinels. An
// ErrorCode prints as the bare code.
type ErrorCode string

// Error codes the service answers with. The first group is the interface's
// own table; the second comes from the project's interface decisions
// (docs/interface.md). The Err constants of errors_sentinels.go are
// generated from this block.
const (
	CodeInvalidRequest                ErrorCode = "invalid_request"
	CodeInsufficientBalance           ErrorCode = "insufficient_balance"
	CodeRecipientNotFound             ErrorCode = "recipient_not_found"
	CodeRecipientNotConfidentialReady ErrorCode = "recipient_not_confidential_ready"
	CodeInvalidPolicy                 ErrorCode = "invalid_policy"
	CodeNotAgentOwner                 ErrorCode = "not_agent_owner"
	CodeTransactionNotFound           ErrorCode = "transaction_not_found"
	CodeTransactionExpired            ErrorCode = "transaction_expired"
	CodeUnauthorized                  ErrorCode = "unauthorized"
	CodeKYCRequired                   ErrorCode = "kyc_required"
	CodeDecryptionProofInvalid        ErrorCode = "decryption_proof_invalid"

	CodePolicyViolation      ErrorCode = "policy_violation"
	CodeAgentNotActive       ErrorCode = "agent_not_active"
	CodeNotFound             ErrorCode = "not_found"
	CodeMethodNotAllowed     ErrorCode = "method_not_allowed"
	CodeAgentNameTaken       ErrorCode = "agent_name_taken"
	CodeAgentLimitReached    ErrorCode = "agent_limit_reached"
	CodeIdempotencyKeyInUse  ErrorCode = "idempotency_key_in_use"
	CodeRequestTooLarge      ErrorCode = "request_too_large"
	CodeIdempotencyKeyReused ErrorCode = "idempotency_key_reused"
	CodeRateLimited          ErrorCode = "rate_limited"
	CodeInternal             ErrorCode = "internal_error"
)

// Error returns the code itself, so that an ErrorCode prints the same in
// every format and as a field of a log record.
func (c ErrorCode) Error() string { return string(c) }

// Rules named by a policy_violation error's Rule field.
const (
	RuleAssetNotAllowed     = "asset_not_allowed"
	RuleRecipientNotAllowed = "recipient_not_allowed"
	RuleOutsideActiveHours  = "outside_active_hours"
	RulePerTransactionLimit = "per_transaction_limit"
	RuleDailyLimit          = "daily_limit"
)

// Reasons named by a decryption_proof_invalid error's Reason field.
const (
	ReasonMalformed          = "malformed"
	ReasonStale              = "stale"
	ReasonVerificationFailed = "verification_failed"
)

// ErrorBody is the flat error body every error response carries.
type ErrorBody struct {
	Code      ErrorCode `json:"code"`
	Message   string    `json:"message"`
	RequestID string    `json:"request_id,omitempty"`
	Param     string    `json:"param,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// APIError is the error for every non-2xx answer from the service. Use
// errors.Is with the Err (or Code) constants to test the code, or errors.As to
// read the fields.
type APIError struct {
	StatusCode int       // HTTP status
	Code       ErrorCode // one of the Code constants (or a newer one)
	Message    string    // human-readable, from the service
	Param      string    // the request field at fault, when there is one
	Rule       string    // for policy_violation: which rule refused the payment
	Reason     string    // for decryption_proof_invalid: malformed, stale or verification_failed
	RequestID  string    // the X-Request-Id of the answer; quote it in support requests
	Body       []byte    // the raw response body, at most 1 MiB

	// IdempotencyKey is the Idempotency-Key the call sent, empty for GET.
	// A refusal decided on the state (402, 403, 404, 422) is kept under
	// it and replayed; after 400 or 413 the same key may be sent again
	// with a corrected body. A different body needs a new key.
	IdempotencyKey string

	// Response is the HTTP response; its Body has been read and closed.
	Response *http.Response
}

// Error describes the failure. It never contains the API key, a proof or a
// figure: only the status, code, message, field, rule and request id.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "confpay: %d %s", e.StatusCode, string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, " (rule %s)", e.Rule)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (reason %s)", e.Reason)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Is reports whether target is e's code, so that
// errors.Is(err, confpay.ErrInsufficientBalance) works (as does
// errors.Is(err, confpay.CodeInsufficientBalance), the same value).
func (e *APIError) Is(target error) bool {
	c, ok := target.(ErrorCode)
	return ok && c == e.Code
}

// TransportError is returned when no complete HTTP answer was received: the
// connection failed, was reset, or timed out, after every retry; the
// context was cancelled or its deadline passed; or a 2xx answer's body
// could not be read. A POST, PATCH or DELETE may still have taken effect:
// repeat it with WithIdempotencyKey(IdempotencyKey) and the same
// parameters, which the service runs at most once. It wraps the cause, so
// errors.Is(err, context.DeadlineExceeded) works.
type TransportError struct {
	Method string // HTTP method of the request
	Path   string // URL path of the request (never the query or a key)
	// IdempotencyKey is the Idempotency-Key the call sent, empty for GET.
	IdempotencyKey string
	// Attempts is how many times the request went on the wire (see
	// Response.Attempts).
	Attempts int
	Err      error // the last cause
}

// Error describes the failure without any secret.
func (e *TransportError) Error() string {
	return fmt.Sprintf("confpay: %s %s: no answer after %d attempt(s): %v", e.Method, e.Path, e.Attempts, e.Err)
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// ParamError reports a request parameter the client refused before sending
// anything: an empty id, a missing field, an amount with too many decimals.
// It matches ErrInvalidRequest under errors.Is, like the service's own 400.
type ParamError struct {
	Param   string // the parameter or field at fault, as named on the wire
	Problem string // what is wrong with it; never its value
}

// Error names the parameter and the problem.
func (e *ParamError) Error() string { return "confpay: " + e.Param + " " + e.Problem }

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *ParamError) Is(target error) bool { return target == ErrInvalidRequest }
