package confpay

import (
	"context"
	"net/http"
	"time"
)

// Network is the chain a key acts on, chosen by the key's prefix.
type Network string

// The two networks.
const (
	NetworkTest Network = "test" // keys prefixed hc_test_, chain 46630
	NetworkLive Network = "live" // keys prefixed hc_live_, chain 4663
)

// Chain IDs of the two networks.
const (
	ChainIDLive uint64 = 4663
	ChainIDTest uint64 = 46630
)

// API key prefixes, which select the network.
const (
	KeyPrefixTest = "hc_test_"
	KeyPrefixLive = "hc_live_"
)

// ChainID returns the network's chain id, or 0 for an unknown network.
func (n Network) ChainID() uint64 {
	switch n {
	case NetworkTest:
		return ChainIDTest
	case NetworkLive:
		return ChainIDLive
	}
	return 0
}

// NetworkOfKey returns the network an API key acts on, from its prefix.
func NetworkOfKey(apiKey string) (Network, bool) {
	switch {
	case len(apiKey) > len(KeyPrefixTest) && apiKey[:len(KeyPrefixTest)] == KeyPrefixTest:
		return NetworkTest, true
	case len(apiKey) > len(KeyPrefixLive) && apiKey[:len(KeyPrefixLive)] == KeyPrefixLive:
		return NetworkLive, true
	}
	return "", false
}

// AccountType is the kind of an account.
type AccountType string

// Account types.
const (
	AccountPersonal AccountType = "personal"
	AccountBusiness AccountType = "business"
	AccountAgent    AccountType = "agent"
)

// KYCStatus is an account's identity-verification status. Transfers and
// agent creation need verified or enhanced.
type KYCStatus string

// KYC statuses.
const (
	KYCUnverified KYCStatus = "unverified"
	KYCPending    KYCStatus = "pending"
	KYCVerified   KYCStatus = "verified"
	KYCEnhanced   KYCStatus = "enhanced"
)

// Account is the authenticated account (GET /v1/accounts/me).
type Account struct {
	AccountID string      `json:"account_id"`
	Handle    string      `json:"handle"`
	Type      AccountType `json:"type"`
	// PublicKey is the account's EIP-55 checksummed chain address.
	PublicKey string    `json:"public_key"`
	KYCStatus KYCStatus `json:"kyc_status"`
	CreatedAt time.Time `json:"created_at"`
	// EncryptionKey is the hex of the account's 33-byte public encryption
	// key; empty when the account has none and so is not confidential-ready.
	EncryptionKey string `json:"encryption_key,omitempty"`
}

// Me returns the authenticated account (GET /v1/accounts/me).
func (s *AccountsService) Me(ctx context.Context, opts ...CallOption) (*Account, error) {
	var a Account
	if err := s.client.do(ctx, http.MethodGet, "/v1/accounts/me", "", nil, &a, opts); err != nil {
		return nil, err
	}
	return &a, nil
}
