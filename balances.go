package confpay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"

	"github.com/confpay/confpay-go/decrypt"
	"github.com/ethereum/go-ethereum/common"
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

// LogValue hides the proof from log/slog, whose JSON handler would
// otherwise encode the field. (JSON encoding proper writes the proof: it is
// the request body.)
func (p BalancesParams) LogValue() slog.Value { return slog.StringValue(p.String()) }

// maxProofAssets is how many balances one decryption proof can cover.
const maxProofAssets = 16

// ReadBalances returns the account's balances with their figures, proved
// with key, the account's private encryption key. It reads the account's
// address and encryption key (Accounts.Me) and its current ciphertexts
// (Balances without proof), opens them locally, builds a decryption proof
// over every entry and sends it; the service answers the figures, which must
// match the local ones, and cover every asset proved. When a balance
// changes in between (422, reason stale) it starts over once.
// WithCallTimeout bounds the whole flow, all its requests together.
//
// The key never leaves the process; the proof goes in the body of the
// request, never in its URL, and never into a log or an error. The result
// holds only the figures the proof covered, each checked against the local
// decryption: a figure the answer carries for any other asset is dropped,
// and entries without a figure are kept as the service reports them.
func (s *AccountsService) ReadBalances(ctx context.Context, key *decrypt.PrivateKey, opts ...CallOption) ([]*Balance, error) {
	if key == nil {
		return nil, &ParamError{Param: "key", Problem: "is nil"}
	}
	if ctx == nil {
		return nil, &ParamError{Param: "ctx", Problem: "is nil"}
	}
	// WithCallTimeout bounds the whole flow, not each of its requests.
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	me, err := s.Me(ctx, opts...)
	if err != nil {
		return nil, err
	}
	acct, err := decryptAccount(s.client.ChainID(), me)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey().Equal(acct.Key) {
		return nil, fmt.Errorf("confpay: reading balances: the key is not this account's encryption key: %w", decrypt.ErrNotForThisKey)
	}
	for try := 0; ; try++ {
		bals, err := s.readBalancesOnce(ctx, key, acct, opts)
		var ae *APIError
		if try == 0 && errors.As(err, &ae) && ae.Code == CodeDecryptionProofInvalid && ae.Reason == ReasonStale {
			continue // a balance changed since it was read: fetch and prove again
		}
		return bals, err
	}
}

func (s *AccountsService) readBalancesOnce(ctx context.Context, key *decrypt.PrivateKey, acct decrypt.Account, opts []CallOption) ([]*Balance, error) {
	current, err := s.Balances(ctx, nil, opts...)
	if err != nil {
		return nil, err
	}
	params, cts, amounts, err := proveBalances(key, acct, current)
	if err != nil || params == nil {
		return current, err // no proof: nothing held, nothing to prove
	}
	bals, err := s.Balances(ctx, params, opts...)
	if err != nil {
		return nil, err
	}
	return provedFigures(bals, cts, amounts)
}

// ProveBalances builds a decryption proof over the account's current
// balances with key, its private encryption key, and returns it ready for
// Balances: it reads the account (Me) and its current ciphertexts
// (Balances without proof) and proves every one of them locally, as
// ReadBalances does. The key never leaves the process. The result is nil
// when the account holds nothing to prove. A proof goes stale on the
// account's next balance change (422 decryption_proof_invalid, reason
// stale). For clients in other languages, confpay proof prints one.
func (s *AccountsService) ProveBalances(ctx context.Context, key *decrypt.PrivateKey, opts ...CallOption) (*BalancesParams, error) {
	if key == nil {
		return nil, &ParamError{Param: "key", Problem: "is nil"}
	}
	me, err := s.Me(ctx, opts...)
	if err != nil {
		return nil, err
	}
	current, err := s.Balances(ctx, nil, opts...)
	if err != nil {
		return nil, err
	}
	return BuildDecryptionProof(key, s.client.ChainID(), me, current)
}

// BuildDecryptionProof is ProveBalances without the requests: it proves
// current, the no-proof answer of Balances for the account me (the answer
// of Me) on chain chainID (Client.ChainID), with key, the account's
// private encryption key. A key that is not the account's gives an error
// wrapping decrypt.ErrNotForThisKey. The result is nil when current holds
// no ciphertext.
func BuildDecryptionProof(key *decrypt.PrivateKey, chainID uint64, me *Account, current []*Balance) (*BalancesParams, error) {
	switch {
	case key == nil:
		return nil, &ParamError{Param: "key", Problem: "is nil"}
	case me == nil:
		return nil, &ParamError{Param: "me", Problem: "is nil"}
	}
	acct, err := decryptAccount(chainID, me)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey().Equal(acct.Key) {
		return nil, fmt.Errorf("confpay: proving balances: the key is not this account's encryption key: %w", decrypt.ErrNotForThisKey)
	}
	params, _, _, err := proveBalances(key, acct, current)
	return params, err
}

// proveBalances proves the ciphertexts of current, the no-proof answer of
// the balances call, with key: the proof as the balances call takes it,
// the ciphertexts it covers and their figures decrypted locally. params is
// nil when current holds no ciphertext.
func proveBalances(key *decrypt.PrivateKey, acct decrypt.Account, current []*Balance) (params *BalancesParams, cts []decrypt.Balance, amounts []*big.Int, err error) {
	for _, b := range current {
		if b == nil || b.EncryptedBalance == "" {
			continue
		}
		ct, err := decrypt.DecodeBase64(b.EncryptedBalance)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("confpay: reading balances: encrypted_balance of %s: %w", b.Asset, err)
		}
		cts = append(cts, decrypt.Balance{Asset: b.Asset, Version: b.BalanceVersion, Ciphertext: ct})
	}
	if len(cts) == 0 {
		return nil, nil, nil, nil
	}
	if len(cts) > maxProofAssets {
		return nil, nil, nil, fmt.Errorf("confpay: reading balances: %d assets, more than one proof covers (%d)", len(cts), maxProofAssets)
	}
	proof, amounts, err := decrypt.Prove(nil, key, acct, cts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("confpay: reading balances: %w", err)
	}
	return &BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)}, cts, amounts, nil
}

// provedFigures keeps from the service's answer only what the proof
// covered: one entry per proved asset, whose figure must equal the local
// decryption, and the entries of other assets without a figure. A figure
// for an asset the proof did not cover is dropped, whatever the answer
// holds; a proved asset missing from the answer is an error, since it
// would read as "nothing held".
func provedFigures(bals []*Balance, cts []decrypt.Balance, amounts []*big.Int) ([]*Balance, error) {
	local := make(map[string]*big.Int, len(cts))
	for i, c := range cts {
		local[c.Asset] = amounts[i]
	}
	out := make([]*Balance, 0, len(bals))
	answered := make(map[string]bool, len(cts))
	for _, b := range bals {
		if b == nil {
			continue
		}
		want, proved := local[b.Asset]
		if !proved {
			if b.Amount == nil {
				out = append(out, b)
			}
			continue
		}
		if b.Amount == nil {
			return nil, fmt.Errorf("confpay: reading balances: the service gave no figure for %s", b.Asset)
		}
		dec, ok := AssetDecimals(b.Asset)
		if !ok {
			return nil, fmt.Errorf("confpay: reading balances: the figure for %s cannot be checked: the SDK does not know the asset's decimals", b.Asset)
		}
		if got, err := b.Amount.Units(dec); err != nil || got.Cmp(want) != 0 {
			return nil, fmt.Errorf("confpay: reading balances: the service's figure for %s differs from the local decryption", b.Asset)
		}
		if !answered[b.Asset] {
			answered[b.Asset] = true
			out = append(out, &Balance{Asset: b.Asset, Amount: b.Amount})
		}
	}
	for _, c := range cts {
		if !answered[c.Asset] {
			return nil, fmt.Errorf("confpay: reading balances: the service gave no figure for %s", c.Asset)
		}
	}
	return out, nil
}

// decryptAccount builds the decrypt package's view of an account: chain,
// address and encryption key.
func decryptAccount(chainID uint64, me *Account) (decrypt.Account, error) {
	if !common.IsHexAddress(me.PublicKey) || !strings.HasPrefix(me.PublicKey, "0x") {
		return decrypt.Account{}, errors.New("confpay: the account's public_key is not a 0x address")
	}
	if me.EncryptionKey == "" {
		return decrypt.Account{}, errors.New("confpay: the account has no encryption key, so it holds no confidential balance")
	}
	ek, err := decrypt.ParsePublicKeyHex(me.EncryptionKey)
	if err != nil {
		return decrypt.Account{}, fmt.Errorf("confpay: the account's encryption_key: %w", err)
	}
	return decrypt.Account{ChainID: chainID, Address: common.HexToAddress(me.PublicKey), Key: ek}, nil
}
