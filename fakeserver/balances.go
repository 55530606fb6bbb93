package fakeserver

import (
	"encoding/json"
	"math/big"
	"net/http"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// GET /v1/accounts/me/balances
//
// Without a proof each asset the account has ever held is reported as
// nonzero, its current ciphertext and its version. With a decryption proof
// (JSON body of the GET, or the query parameter decryption_proof) the
// proof is verified against the current ciphertexts and every asset it
// covers is reported with the figure the proof opens: the server's books
// are never the source of a figure.

// balanceSnap is one asset's balance as read at one instant.
type balanceSnap struct {
	asset   string
	version uint64
	nonzero bool
	ct      []byte // nil when the account has no encryption key
}

// ctJob is a ciphertext to produce outside the lock.
type ctJob struct {
	i       int // index in the snapshot
	version uint64
	amount  *big.Int
}

// balanceSnapshot reads a's balances on n, sorted by asset, with the
// ciphertext of each current version. A version's ciphertext is produced
// once, on first read, outside s.mu, and cached in the ledger: every
// reader of a version gets the same bytes, which is what a later proof is
// checked against.
func (s *Server) balanceSnapshot(n *network, a *account) (decrypt.Account, []balanceSnap, error) {
	s.mu.Lock()
	key := a.encryptionKey()
	acct := decrypt.Account{ChainID: n.chainID, Address: a.address, Key: key}
	var snaps []balanceSnap
	var jobs []ctJob
	for _, e := range n.ledger.Entries(a.id) {
		snap := balanceSnap{asset: e.Asset, version: e.Version, nonzero: e.Available.Sign() > 0}
		if key != nil {
			if e.Ciphertext != nil {
				snap.ct = e.Ciphertext
			} else {
				jobs = append(jobs, ctJob{i: len(snaps), version: e.Version, amount: e.Available})
			}
		}
		snaps = append(snaps, snap)
	}
	s.mu.Unlock()
	if len(jobs) == 0 {
		return acct, snaps, nil
	}
	cts := make([][]byte, len(jobs))
	for i, j := range jobs {
		ct, err := decrypt.EncryptBalance(nil, acct, snaps[j.i].asset, j.version, j.amount)
		if err != nil {
			return acct, nil, err
		}
		cts[i] = ct
	}
	s.mu.Lock()
	for i, j := range jobs {
		snaps[j.i].ct = n.ledger.CacheCiphertext(a.id, snaps[j.i].asset, j.version, cts[i])
	}
	s.mu.Unlock()
	return acct, snaps, nil
}

// balancesRequest is the optional body of the balances call. The proof is
// kept raw so that a member present but null tells apart from none.
type balancesRequest struct {
	DecryptionProof json.RawMessage `json:"decryption_proof"`
}

func errProof(reason, msg string) *apiError {
	return newError(http.StatusUnprocessableEntity, confpay.CodeDecryptionProofInvalid, msg).withReason(reason).withParam("decryption_proof")
}
