package fakeserver

// The /v1/accounts handlers: parse, one domain call, render. Handlers never
// lock (TestLayout checks it).

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strconv"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// handleMe answers GET /v1/accounts/me.
func (s *Server) handleMe(c *call) (int, any, error) {
	return http.StatusOK, s.accountView(c.acct), nil
}

// handleBalances answers GET /v1/accounts/me/balances, with figures only
// for a verified decryption proof.
func (s *Server) handleBalances(c *call) (int, any, error) {
	proofText, present, apiErr := balancesProof(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if present && proofText == "" {
		return 0, nil, errProof(confpay.ReasonMalformed, "decryption_proof is empty or null: omit it to read without figures")
	}
	acct, snaps, err := s.balanceSnapshot(c.net, c.acct)
	if err != nil {
		return 0, nil, err
	}
	out := &confpay.BalanceList{Balances: make([]*confpay.Balance, 0, len(snaps))}
	figures := map[string]*big.Int{}
	if proofText != "" {
		proof, err := decrypt.DecodeBase64(proofText)
		if err != nil {
			return 0, nil, errProof(confpay.ReasonMalformed, "decryption_proof is not base64url without padding")
		}
		if acct.Key == nil {
			return 0, nil, errProof(confpay.ReasonVerificationFailed, "the account has no encryption key, so no proof can match its balances")
		}
		current := make([]decrypt.Balance, 0, len(snaps))
		for _, sn := range snaps {
			current = append(current, decrypt.Balance{Asset: sn.asset, Version: sn.version, Ciphertext: sn.ct})
		}
		figs, err := decrypt.Verify(acct, proof, current)
		switch {
		case err == nil:
		case errors.Is(err, decrypt.ErrStale):
			return 0, nil, errProof(confpay.ReasonStale, "the balance changed since its ciphertext was read: fetch the balances and prove again")
		case errors.Is(err, decrypt.ErrMalformed):
			return 0, nil, errProof(confpay.ReasonMalformed, "decryption_proof does not parse")
		case errors.Is(err, decrypt.ErrVerification):
			return 0, nil, errProof(confpay.ReasonVerificationFailed, "decryption_proof does not match the account's current balance ciphertexts")
		default:
			return 0, nil, err // ErrCorruptCiphertext: the ledger's own fault, a 500
		}
		for _, f := range figs {
			figures[f.Asset] = f.Amount
		}
		c.header.Set("Cache-Control", "no-store")
	}
	for _, sn := range snaps {
		if fig, ok := figures[sn.asset]; ok {
			dec, _ := s.assets.decimals(sn.asset)
			amt := confpay.AmountFromUnits(fig, dec)
			out.Balances = append(out.Balances, &confpay.Balance{Asset: sn.asset, Amount: &amt})
			continue
		}
		nonzero := sn.nonzero
		v := &confpay.Balance{Asset: sn.asset, Nonzero: &nonzero, BalanceVersion: sn.version}
		if sn.ct != nil {
			v.EncryptedBalance = decrypt.EncodeBase64(sn.ct)
		}
		out.Balances = append(out.Balances, v)
	}
	return http.StatusOK, out, nil
}

// balancesProof returns the proof text from the body or the query, and
// whether one was given at all (present but empty or null is a malformed
// proof, never "no proof"); both at once is a 400.
func balancesProof(c *call) (proof string, present bool, apiErr *apiError) {
	var req balancesRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return "", false, apiErr
	}
	q := c.r.URL.Query() // the pipeline refused a query that does not parse
	for k, vs := range q {
		if k != "decryption_proof" {
			if k == "" {
				return "", false, errInvalid("query", "a query parameter without a name")
			}
			return "", false, errInvalid(k, "unknown query parameter "+strconv.Quote(k))
		}
		if len(vs) != 1 {
			return "", false, errInvalid(k, k+" may be given once")
		}
	}
	if raw := req.DecryptionProof; raw != nil {
		present = true
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &proof); err != nil {
				return "", false, errInvalid("decryption_proof", "decryption_proof must be a string")
			}
		}
	}
	if vs, ok := q["decryption_proof"]; ok {
		if present {
			return "", false, errInvalid("decryption_proof", "give decryption_proof in the body or in the query, not both")
		}
		present, proof = true, vs[0]
	}
	return proof, present, nil
}
