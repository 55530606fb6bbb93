package confpay

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Balance is one asset's entry in GET /v1/accounts/me/balances.
//
// Without a proof the service reports only Nonzero, the encrypted balance
// and its version. With a valid decryption proof covering the asset, it
// reports Amount (read from the proof, never from the service's books).
type Balance struct {
	Asset string `json:"asset"`
	// Amount is present only when a valid proof covered this asset.
	Amount *Amount `json:"amount,omitempty"`
	// Nonzero, EncryptedBalance and BalanceVersion are the no-proof shape.
	Nonzero          *bool  `json:"nonzero,omitempty"`
	EncryptedBalance string `json:"encrypted_balance,omitempty"`
	BalanceVersion   uint64 `json:"balance_version,omitempty"`
}

// BalanceList is the answer of the balances endpoint.
type BalanceList struct {
	Balances []*Balance `json:"balances"`
}

// BalancesParams is the optional body of the balances call.
type BalancesParams struct {
	// DecryptionProof is a base64url proof built with the decrypt package.
	DecryptionProof string `json:"decryption_proof,omitempty"`
}

// Balances reads the account's balances (GET /v1/accounts/me/balances).
// Without a proof (params nil or DecryptionProof empty) each entry carries
// only Nonzero, EncryptedBalance and BalanceVersion. With a proof built by
// the decrypt package, the entries it covers carry Amount; the proof is sent
// in the JSON body of the GET, never in the URL. ReadBalances does the whole
// prove-and-read flow.
func (s *AccountsService) Balances(ctx context.Context, params *BalancesParams, opts ...CallOption) ([]*Balance, error) {
	var body any
	if params != nil && params.DecryptionProof != "" {
		body = params
	}
	var l BalanceList
	if err := s.client.do(ctx, http.MethodGet, "/v1/accounts/me/balances", "", body, &l, opts); err != nil {
		return nil, err
	}
	return l.Balances, nil
}

// String hides the proof: a proof opens the balance it covers.
func (p BalancesParams) String() string {
	if p.DecryptionProof == "" {
		return "confpay.BalancesParams{}"
	}
	return "confpay.BalancesParams{DecryptionProof: REDACTED}"
}

// GoString hides the proof.
func (p BalancesParams) GoString() string { return p.String() }

// Format hides the proof for every verb.
func (p BalancesParams) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }
