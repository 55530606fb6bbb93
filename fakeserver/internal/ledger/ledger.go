// Package ledger is the simulated chain's books for one network: every
// account's balance of every asset, in exact base units (micro-USDG, wei).
//
// A balance has three figures: units (settled), reserved (sent in pending
// transfers) and available = units - reserved, which is what the account
// can spend and what its balance ciphertext encrypts. A transfer reserves
// at submit, so concurrent payments can never overdraw; at confirmation the
// sender's units and reservation drop together (available does not move)
// and the recipient's units rise; on failure the reservation is released.
//
// Every change of available bumps the balance's version. The ciphertext of
// a version is produced by the caller on first read and cached here
// (CacheCiphertext): one ciphertext per (account, asset), always for the
// current version, which is observably the same as rewriting it on every
// change.
//
// A Ledger is not safe for concurrent use: its owner's lock guards it.
package ledger

import (
	"errors"
	"math/big"
	"sort"
	"strconv"
)

// MaxUnits is 2^256: every figure must stay below it, so that it fits a
// ciphertext's uint256.
var MaxUnits = new(big.Int).Lsh(big.NewInt(1), 256)

// ErrInsufficient is Reserve's answer when the account does not have the
// units available.
var ErrInsufficient = errors.New("ledger: not enough available")

// ErrSupply is Fund's answer when funding would take the asset's supply on
// the network to MaxUnits.
var ErrSupply = errors.New("ledger: supply would reach 2^256 base units")

// Ledger is one network's books.
type Ledger struct {
	books map[string][]*balance // by account id, in the order first held
	// supply is everything ever funded per asset, less what left for
	// external wallets.
	supply map[string]*big.Int
	// touched is the accounts whose balances changed since Touched was
	// last called (the data directory writes them).
	touched map[string]struct{}
}

// balance is one (account, asset) balance.
type balance struct {
	asset    string
	units    big.Int // settled
	reserved big.Int // held by the account's pending outgoing transfers
	version  uint64  // bumped on every change of available

	// ct is the ciphertext of available at ctVersion (nil until read).
	ct        []byte
	ctVersion uint64
}

// Entry is a copy of one balance.
type Entry struct {
	Asset                      string
	Units, Reserved, Available *big.Int
	Version                    uint64
	// Ciphertext is the cached ciphertext of Version, or nil.
	Ciphertext []byte
}

// New returns empty books.
func New() *Ledger {
	return &Ledger{books: map[string][]*balance{}, supply: map[string]*big.Int{}}
}

func (l *Ledger) get(acct, asset string) *balance {
	for _, b := range l.books[acct] {
		if b.asset == asset {
			return b
		}
	}
	return nil
}

func (l *Ledger) entry(acct, asset string) *balance {
	if b := l.get(acct, asset); b != nil {
		return b
	}
	b := &balance{asset: asset}
	l.books[acct] = append(l.books[acct], b)
	l.touch(acct)
	return b
}

func (b *balance) available() *big.Int { return new(big.Int).Sub(&b.units, &b.reserved) }

// Available is what acct can spend of asset now: its balance less its
// reservations (zero for an asset it never held).
func (l *Ledger) Available(acct, asset string) *big.Int {
	if b := l.get(acct, asset); b != nil {
		return b.available()
	}
	return new(big.Int)
}

// Fund credits units of asset to acct out of thin air (the dashboard's
// test funding, and the seed file).
func (l *Ledger) Fund(acct, asset string, units *big.Int) error {
	sup := l.supply[asset]
	if sup == nil {
		sup = new(big.Int)
		l.supply[asset] = sup
	}
	if new(big.Int).Add(sup, units).Cmp(MaxUnits) >= 0 {
		return ErrSupply
	}
	sup.Add(sup, units)
	b := l.entry(acct, asset)
	b.units.Add(&b.units, units)
	b.version++
	l.touch(acct)
	return nil
}

// Reserve holds units of acct's asset for a pending transfer, or answers
// ErrInsufficient and changes nothing.
func (l *Ledger) Reserve(acct, asset string, units *big.Int) error {
	b := l.get(acct, asset)
	if b == nil || b.available().Cmp(units) < 0 {
		return ErrInsufficient
	}
	b.reserved.Add(&b.reserved, units)
	b.version++
	l.touch(acct)
	return nil
}

// Release gives a failed transfer's reservation back to its sender.
func (l *Ledger) Release(from, asset string, units *big.Int) {
	b := l.get(from, asset)
	b.reserved.Sub(&b.reserved, units)
	b.version++
	l.touch(from)
}

// Settle moves a confirmed transfer's money: the sender's units and
// reservation drop together (its available, and so its version, does not
// move) and the recipient is credited; to == "" is an external wallet, and
// the money leaves the simulated chain.
func (l *Ledger) Settle(from, to, asset string, units *big.Int) {
	b := l.get(from, asset)
	b.reserved.Sub(&b.reserved, units)
	b.units.Sub(&b.units, units)
	l.touch(from)
	if to != "" {
		r := l.entry(to, asset)
		r.units.Add(&r.units, units)
		r.version++
		l.touch(to)
		return
	}
	sup := l.supply[asset]
	sup.Sub(sup, units)
}

// Entries returns copies of acct's balances, sorted by asset.
func (l *Ledger) Entries(acct string) []Entry {
	var out []Entry
	for _, b := range l.books[acct] {
		e := Entry{Asset: b.asset, Units: new(big.Int).Set(&b.units), Reserved: new(big.Int).Set(&b.reserved),
			Available: b.available(), Version: b.version}
		if b.ct != nil && b.ctVersion == b.version {
			e.Ciphertext = b.ct
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Asset < out[j].Asset })
	return out
}

// CacheCiphertext stores ct as the ciphertext of version of acct's asset,
// unless that version already has one or is no longer current, and returns
// the ciphertext every reader of the version gets (a concurrent reader may
// have stored its own first).
func (l *Ledger) CacheCiphertext(acct, asset string, version uint64, ct []byte) []byte {
	b := l.get(acct, asset)
	if b == nil || b.version != version {
		return ct
	}
	if b.ct == nil || b.ctVersion != b.version {
		b.ct, b.ctVersion = ct, version
		l.touch(acct)
	}
	return b.ct
}

// Accounts returns the ids of the accounts that hold a balance.
func (l *Ledger) Accounts() []string {
	out := make([]string, 0, len(l.books))
	for id := range l.books {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Supply returns each asset's supply as a decimal string of base units.
func (l *Ledger) Supply() map[string]string {
	out := make(map[string]string, len(l.supply))
	for asset, s := range l.supply {
		out[asset] = s.String()
	}
	return out
}

// Row is one balance as the data directory keeps it (internal/journal):
// every field, the cached ciphertext included.
type Row struct {
	Asset     string `json:"a"`
	Units     string `json:"u"`
	Reserved  string `json:"r,omitempty"`
	Version   uint64 `json:"v"`
	CT        []byte `json:"c,omitempty"`
	CTVersion uint64 `json:"cv,omitempty"`
}

// Touched returns the accounts whose balances changed since the last call,
// and forgets them.
func (l *Ledger) Touched() []string {
	if len(l.touched) == 0 {
		return nil
	}
	out := make([]string, 0, len(l.touched))
	for id := range l.touched {
		out = append(out, id)
	}
	clear(l.touched)
	sort.Strings(out)
	return out
}

func (l *Ledger) touch(acct string) {
	if l.touched == nil {
		l.touched = map[string]struct{}{}
	}
	l.touched[acct] = struct{}{}
}

// Rows is account acct's book, in the order its balances were first held.
func (l *Ledger) Rows(acct string) []Row {
	return l.AppendRows(make([]Row, 0, len(l.books[acct])), acct)
}

// AppendRows appends Rows(acct) to dst (the journal reuses one slice).
func (l *Ledger) AppendRows(dst []Row, acct string) []Row {
	for _, b := range l.books[acct] {
		r := Row{Asset: b.asset, Units: decimal(&b.units), Version: b.version, CT: b.ct, CTVersion: b.ctVersion}
		if b.reserved.Sign() != 0 {
			r.Reserved = decimal(&b.reserved)
		}
		dst = append(dst, r)
	}
	return dst
}

// decimal is u.String(), in one allocation when u fits 64 bits.
func decimal(u *big.Int) string {
	if u.IsUint64() {
		return strconv.FormatUint(u.Uint64(), 10)
	}
	return u.String()
}

// Restore replaces account acct's book with rows and counts them into the
// supply. It refuses a row whose figures are not non-negative integers
// with reserved within units.
func (l *Ledger) Restore(acct string, rows []Row) error {
	for _, b := range l.books[acct] {
		sup := l.supply[b.asset]
		sup.Sub(sup, &b.units)
	}
	books := make([]*balance, 0, len(rows))
	for _, r := range rows {
		b := &balance{asset: r.Asset, version: r.Version, ct: r.CT, ctVersion: r.CTVersion}
		if _, ok := b.units.SetString(r.Units, 10); !ok || b.units.Sign() < 0 || b.units.Cmp(MaxUnits) >= 0 {
			return errors.New("ledger: bad units for " + acct + " " + r.Asset)
		}
		if r.Reserved != "" {
			if _, ok := b.reserved.SetString(r.Reserved, 10); !ok || b.reserved.Sign() < 0 || b.reserved.Cmp(&b.units) > 0 {
				return errors.New("ledger: bad reserved for " + acct + " " + r.Asset)
			}
		}
		books = append(books, b)
	}
	l.books[acct] = books
	for _, b := range books {
		sup := l.supply[b.asset]
		if sup == nil {
			sup = new(big.Int)
			l.supply[b.asset] = sup
		}
		sup.Add(sup, &b.units)
	}
	return nil
}
