package fakeserver

import (
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sort"

	confpay "github.com/confpay/confpay-go"
)

// The ledger is the simulated chain's state for one network: every
// account's balance of every asset, in exact base units (micro-USDG, wei).
//
// A balance has three figures: units (settled), reserved (sent in pending
// transfers) and available = units - reserved, which is what the account
// can spend and what its balance ciphertext encrypts. A transfer reserves
// at submit, so concurrent payments can never overdraw; at confirmation the
// sender's units and reservation drop together (available does not move)
// and the recipient's units rise; on failure the reservation is released.
//
// Every change of available bumps the balance's version. The ciphertext
// for a version is produced on first read and cached (balances.go): the
// ledger keeps one ciphertext per (account, network, asset), always for
// the current version, which is observably the same as rewriting it on
// every change.
//
// All of it is guarded by Server.mu.
type ledger struct {
	books map[*account]*book
	// supply is everything ever funded per asset; funding refuses to take
	// it to 2^256, so no balance can outgrow a ciphertext's uint256.
	supply map[string]*big.Int
}

// book is one account's balances on one network, in the order the assets
// were first held.
type book struct {
	entries []*balance
}

// balance is one (account, network, asset) balance.
type balance struct {
	asset    string
	units    big.Int // settled
	reserved big.Int // held by the account's pending outgoing transfers
	version  uint64  // bumped on every change of available

	// ct is the ciphertext of available at ctVersion (nil until read).
	ct        []byte
	ctVersion uint64
}

// maxUnits is 2^256: every figure must stay below it.
var maxUnits = new(big.Int).Lsh(big.NewInt(1), 256)

func (l *ledger) init() {
	l.books = map[*account]*book{}
	l.supply = map[string]*big.Int{}
}

// get returns a's balance of asset, or nil when a never held it.
func (l *ledger) get(a *account, asset string) *balance {
	bk := l.books[a]
	if bk == nil {
		return nil
	}
	for _, b := range bk.entries {
		if b.asset == asset {
			return b
		}
	}
	return nil
}

// entry returns a's balance of asset, creating it at zero.
func (l *ledger) entry(a *account, asset string) *balance {
	if b := l.get(a, asset); b != nil {
		return b
	}
	bk := l.books[a]
	if bk == nil {
		bk = &book{}
		l.books[a] = bk
	}
	b := &balance{asset: asset}
	bk.entries = append(bk.entries, b)
	return b
}

// available returns units - reserved as a new value.
func (b *balance) available() *big.Int {
	return new(big.Int).Sub(&b.units, &b.reserved)
}

// availableLocked is what a can spend of asset on n now: its balance less
// its reservations.
func (s *Server) availableLocked(n *network, a *account, asset string) *big.Int {
	b := n.ledger.get(a, asset)
	if b == nil {
		return new(big.Int)
	}
	return b.available()
}

// fundLocked credits units of asset to a out of thin air (the dashboard's
// test funding, and the seed file).
func (s *Server) fundLocked(n *network, a *account, asset string, units *big.Int) *apiError {
	sup := n.ledger.supply[asset]
	if sup == nil {
		sup = new(big.Int)
		n.ledger.supply[asset] = sup
	}
	if new(big.Int).Add(sup, units).Cmp(maxUnits) >= 0 {
		return errInvalid("amount", "funding would take the asset's supply on this network to 2^256 base units")
	}
	sup.Add(sup, units)
	b := n.ledger.entry(a, asset)
	b.units.Add(&b.units, units)
	b.version++
	return nil
}

// reserveLocked holds units of a's asset for a pending transfer; it
// answers 402 when a does not have them available.
func (s *Server) reserveLocked(n *network, a *account, asset string, units *big.Int) *apiError {
	b := n.ledger.get(a, asset)
	if b == nil || b.available().Cmp(units) < 0 {
		return newError(http.StatusPaymentRequired, confpay.CodeInsufficientBalance,
			"the account does not hold enough "+asset+" for this payment")
	}
	b.reserved.Add(&b.reserved, units)
	b.version++
	return nil
}

// releaseLocked gives a failed transfer's reservation back to its sender.
func (s *Server) releaseLocked(n *network, t *transfer) {
	b := n.ledger.get(t.from, t.asset)
	b.reserved.Sub(&b.reserved, t.units)
	b.version++
}

// settleLocked moves a confirmed transfer's money: the sender's units and
// reservation drop together and the recipient (if it is an account of this
// server, not an external wallet) is credited.
func (s *Server) settleLocked(n *network, t *transfer) {
	b := n.ledger.get(t.from, t.asset)
	b.reserved.Sub(&b.reserved, t.units)
	b.units.Sub(&b.units, t.units)
	// available is unchanged: no new version for the sender.
	if t.to != nil {
		r := n.ledger.entry(t.to, t.asset)
		r.units.Add(&r.units, t.units)
		r.version++
	} else {
		// Money paid to an external wallet leaves the simulated chain.
		sup := n.ledger.supply[t.asset]
		sup.Sub(sup, t.units)
	}
}

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

// Books returns an account's plaintext balances on a network, one entry per
// asset it has ever held, sorted by asset. They are for test assertions;
// compare them with what a decryption proof reveals.
func (s *Server) Books(accountRef string, n confpay.Network) ([]BookEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	if err != nil {
		return nil, err
	}
	return s.booksLocked(nw, a), nil
}

func (s *Server) booksLocked(n *network, a *account) []BookEntry {
	out := []BookEntry{}
	if bk := n.ledger.books[a]; bk != nil {
		for _, b := range bk.entries {
			dec, _ := s.assets.decimals(b.asset)
			out = append(out, BookEntry{
				Asset:     b.asset,
				Balance:   confpay.AmountFromUnits(&b.units, dec),
				Reserved:  confpay.AmountFromUnits(&b.reserved, dec),
				Available: confpay.AmountFromUnits(b.available(), dec),
				Version:   b.version,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Asset < out[j].Asset })
	return out
}

// Fund credits an account (an agent included) with amount of asset on a
// network, as the dashboard's test funding does. amount is a decimal string
// such as "100" or "0.25", at most the asset's decimals.
func (s *Server) Fund(accountRef string, n confpay.Network, asset, amount string) error {
	units, apiErr := s.assets.parseUnits("amount", asset, amount)
	if apiErr != nil {
		return apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, nw, err := s.accountOnLocked(accountRef, n)
	if err != nil {
		return err
	}
	if apiErr := s.fundLocked(nw, a, asset, units); apiErr != nil {
		return apiErr
	}
	return nil
}

// networkOf returns the state of network n, or 400 param network.
func (s *Server) networkOf(n confpay.Network) (*network, *apiError) {
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
	nw, apiErr := s.networkOf(n)
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
	if units.Cmp(maxUnits) >= 0 {
		return nil, errInvalid(param, param+" is too large")
	}
	return units, nil
}
