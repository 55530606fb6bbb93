package confpay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestErrorCodes checks the sentinels through a real answer: every code
// (and one the SDK does not know) round-trips into APIError.Code, matches
// its own Err and Code values under errors.Is and no other code.
func TestErrorCodes(t *testing.T) {
	known := []ErrorCode{
		ErrInvalidRequest, ErrInsufficientBalance, ErrRecipientNotFound, ErrRecipientNotConfidentialReady,
		ErrInvalidPolicy, ErrNotAgentOwner, ErrTransactionNotFound, ErrTransactionExpired, ErrUnauthorized,
		ErrKYCRequired, ErrDecryptionProofInvalid, ErrPolicyViolation, ErrAgentNotActive, ErrNotFound,
		ErrMethodNotAllowed, ErrAgentNameTaken, ErrIdempotencyKeyInUse, ErrRequestTooLarge,
		ErrIdempotencyKeyReused, ErrRateLimited, ErrInternal,
	}
	var answer ErrorCode
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 409, []byte(`{"code":"`+string(answer)+`","message":"m"}`))
	})
	for _, code := range append(known, "service_moved_on") {
		answer = code
		_, err := c.Accounts.Me(context.Background())
		var ae *APIError
		if !errors.As(err, &ae) || ae.Code != code {
			t.Fatalf("code %s: error %v", code, err)
		}
		if !errors.Is(err, code) || !errors.Is(err, ErrorCode(string(code))) {
			t.Errorf("code %s: errors.Is does not match its own code", code)
		}
		for _, other := range known {
			if other != code && errors.Is(err, other) {
				t.Errorf("code %s matches %s", code, other)
			}
		}
		if !strings.Contains(err.Error(), "409 "+string(code)+": m") {
			t.Errorf("error %q", err)
		}
		if s := fmt.Sprintf("%v %s", ae.Code, ae.Code); s != string(code)+" "+string(code) {
			t.Errorf("code prints as %q", s)
		}
	}
	if !errors.Is(&ParamError{Param: "to", Problem: "is required"}, ErrInvalidRequest) || !errors.Is(&ParamError{}, CodeInvalidRequest) {
		t.Error("ParamError does not match ErrInvalidRequest")
	}
}
