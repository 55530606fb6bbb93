package fakeserver

import (
	"fmt"
	"io"
	"math/big"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
)

// BookEntry is one asset of an account's plaintext books on the simulated
// chain. It exists for test assertions: the /v1 interface never shows a
// figure except from a client's decryption proof.
type BookEntry struct {
	Asset string `json:"asset"`
	// Balance is the settled balance.
	Balance confpay.Amount `json:"balance"`
	// Reserved is what the account's pending outgoing transfers hold.
	Reserved confpay.Amount `json:"reserved"`
	// Available is Balance less Reserved: what the account can spend, and
	// the figure its balance ciphertext encrypts.
	Available confpay.Amount `json:"available"`
	// Version is the balance ciphertext's version.
	Version uint64 `json:"version"`
}

// String describes the entry without its figures, so that an entry
// printed by accident does not leak them; read the fields instead.
func (e BookEntry) String() string {
	return fmt.Sprintf("fakeserver.BookEntry{%s version %d, figures REDACTED}", e.Asset, e.Version)
}

// GoString is String.
func (e BookEntry) GoString() string { return e.String() }

// Format prints String for every verb.
func (e BookEntry) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, e.String()) }

func (s *Server) booksLocked(n *network, a *account) []BookEntry {
	out := []BookEntry{}
	for _, e := range n.ledger.Entries(a.id) {
		dec, _ := s.assets.decimals(e.Asset)
		out = append(out, BookEntry{
			Asset:     e.Asset,
			Balance:   confpay.AmountFromUnits(e.Units, dec),
			Reserved:  confpay.AmountFromUnits(e.Reserved, dec),
			Available: confpay.AmountFromUnits(e.Available, dec),
			Version:   e.Version,
		})
	}
	return out
}

// fundLocked credits units of asset to a out of thin air (the dashboard's
// test funding, and the seed file).
func (s *Server) fundLocked(n *network, a *account, asset string, units *big.Int) *apiError {
	if n.ledger.Fund(a.id, asset, units) != nil {
		return errInvalid("amount", "funding would take the asset's supply on this network to 2^256 base units")
	}
	return nil
}

// networkLocked returns the state of network n, or 400 param network.
func (s *Server) networkLocked(n confpay.Network) (*network, *apiError) {
	nw := s.nets[n]
	if nw == nil {
		return nil, errInvalid("network", "network must be test or live")
	}
	return nw, nil
}

// accountOnLocked finds an account by id or handle, and a network by name:
// the two arguments of every per-network part of the direct state API.
func (s *Server) accountOnLocked(accountRef string, n confpay.Network) (*account, *network, error) {
	a, err := s.lookupAccountLocked(accountRef)
	if err != nil {
		return nil, nil, err
	}
	nw, apiErr := s.networkLocked(n)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	return a, nw, nil
}

// parseUnits parses a positive decimal amount of a known asset into base
// units: digits with an optional fraction, no sign, exponent or spaces,
// greater than zero, at most the asset's decimals, below 2^256 base units.
// Errors name param and never echo the figure.
func (b *assetBook) parseUnits(param, asset, text string) (*big.Int, *apiError) {
	dec, apiErr := b.known("asset", asset)
	if apiErr != nil {
		return nil, apiErr
	}
	a, err := confpay.ParseAmount(text)
	if err != nil {
		return nil, errInvalid(param, param+" must be a decimal string such as \"12.5\": digits with an optional fraction, no sign, exponent, spaces or leading zeros")
	}
	units, err := a.Units(dec)
	if err != nil {
		return nil, errInvalid(param, param+" has more decimals than "+asset+" allows")
	}
	if units.Sign() <= 0 {
		return nil, errInvalid(param, param+" must be greater than zero")
	}
	if units.Cmp(ledger.MaxUnits) >= 0 {
		return nil, errInvalid(param, param+" is too large")
	}
	return units, nil
}
