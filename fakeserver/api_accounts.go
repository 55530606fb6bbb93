package fakeserver

// The /v1/accounts handlers: parse, one domain call, render. Handlers never
// lock (TestLayout checks it).

import (
	"encoding/json"
	"net/http"

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
	var proof []byte
	if present {
		if proofText == "" {
			return 0, nil, errProof(confpay.ReasonMalformed, "decryption_proof is empty or null: omit it to read without figures")
		}
		var err error
		if proof, err = decrypt.DecodeBase64(proofText); err != nil {
			return 0, nil, errProof(confpay.ReasonMalformed, "decryption_proof is not base64url without padding")
		}
	}
	list, err := s.balances(c.net, c.acct, proof)
	if err != nil {
		return 0, nil, err
	}
	if proof != nil {
		c.setHeader("Cache-Control", "no-store") // figures
	}
	return http.StatusOK, list, nil
}

// balancesProof returns the proof text from the body or the query, and
// whether one was given at all (present but empty or null is a malformed
// proof, never "no proof"); both at once is a 400.
func balancesProof(c *call) (proof string, present bool, apiErr *apiError) {
	var req balancesRequest
	if apiErr := decodeStrict(c.body, &req); apiErr != nil {
		return "", false, apiErr
	}
	q := c.r.URL.Query() // checkQuery: it parses, decryption_proof at most once, nothing else
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
