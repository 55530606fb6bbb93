package fakeserver

import (
	"encoding/json"
	"errors"
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

// balances is a's balances on n as GET /v1/accounts/me/balances answers
// them: without a proof (proof nil), each asset's nonzero flag, current
// ciphertext and version; with one, the proof is verified against the
// current ciphertexts and each asset it covers is shown with the figure
// the proof opens, never a figure from the books. A refused proof is 422
// decryption_proof_invalid with its reason.
func (s *Server) balances(n *network, a *account, proof []byte) (*confpay.BalanceList, error) {
	acct, snaps, err := s.balanceSnapshot(n, a)
	if err != nil {
		return nil, err
	}
	out := &confpay.BalanceList{Balances: make([]*confpay.Balance, 0, len(snaps))}
	figures := map[string]*big.Int{}
	if proof != nil {
		if acct.Key == nil {
			return nil, errProof(confpay.ReasonVerificationFailed, "the account has no encryption key, so no proof can match its balances")
		}
		current := make([]decrypt.Balance, 0, len(snaps))
		for _, sn := range snaps {
			current = append(current, decrypt.Balance{Asset: sn.asset, Version: sn.version, Ciphertext: sn.ct})
		}
		figs, err := decrypt.Verify(acct, proof, current)
		switch {
		case err == nil:
		case errors.Is(err, decrypt.ErrStale):
			return nil, errProof(confpay.ReasonStale, "the balance changed since its ciphertext was read: fetch the balances and prove again")
		case errors.Is(err, decrypt.ErrMalformed):
			return nil, errProof(confpay.ReasonMalformed, "decryption_proof does not parse")
		case errors.Is(err, decrypt.ErrVerification):
			return nil, errProof(confpay.ReasonVerificationFailed, "decryption_proof does not match the account's current balance ciphertexts")
		default:
			return nil, err // ErrCorruptCiphertext: the ledger's own fault, a 500
		}
		for _, f := range figs {
			figures[f.Asset] = f.Amount
		}
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
	return out, nil
}

// balancesRequest is the optional body of the balances call. The proof is
// kept raw so that a member present but null tells apart from none.
type balancesRequest struct {
	DecryptionProof json.RawMessage `json:"decryption_proof"`
}

func errProof(reason, msg string) *apiError {
	return newError(http.StatusUnprocessableEntity, confpay.CodeDecryptionProofInvalid, msg).withReason(reason).withParam("decryption_proof")
}
