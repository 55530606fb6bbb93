package fakeserver

import (
	"math/big"
	"slices"
	"strconv"
	"sync"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Asset is one asset the server knows: its code, its decimals, and the
// reference rate at which spend policies count it, in USDG per whole unit.
type Asset struct {
	Code     string        `json:"code"`
	Decimals int           `json:"decimals"`
	USDGRate confpay.Limit `json:"usdg_rate"`
}

// DefaultAssets are the assets a new server knows: USDG, USDC (at 1 USDG)
// and ETH (at 3000 USDG).
func DefaultAssets() []Asset {
	return []Asset{
		{Code: confpay.AssetUSDG, Decimals: 6, USDGRate: confpay.MustParseLimit("1")},
		{Code: confpay.AssetUSDC, Decimals: 6, USDGRate: confpay.MustParseLimit("1")},
		{Code: confpay.AssetETH, Decimals: 18, USDGRate: confpay.MustParseLimit("3000")},
	}
}

// newAssetBook returns a table of DefaultAssets, then the ETH rate, then
// extra, each added or re-rated in turn; it panics on an invalid asset (a
// mistake in the options a test passed).
func newAssetBook(ethRate confpay.Limit, extra []Asset) *assetBook {
	b := &assetBook{}
	all := append(DefaultAssets(), Asset{Code: confpay.AssetETH, Decimals: 18, USDGRate: ethRate})
	for _, a := range append(all, extra...) {
		if apiErr := b.set(a); apiErr != nil {
			panic("fakeserver: invalid asset option: " + apiErr.Error())
		}
	}
	return b
}

// maxAssetDecimals bounds an asset's decimals (ETH has 18).
const maxAssetDecimals = 30

// assetBook is the server's table of known assets. It has its own lock (a
// leaf: nothing is called while it is held), so that a request can check
// an asset before it takes Server.mu.
type assetBook struct {
	mu sync.RWMutex
	m  map[string]assetInfo
}

type assetInfo struct {
	decimals     int
	rate         confpay.Limit
	microPerUnit *big.Int // rate in micro-USDG per whole unit
}

// set adds or re-rates an asset after checking it. The USDG rate stays 1.
func (b *assetBook) set(a Asset) *apiError {
	if !rules.ValidAssetCode(a.Code) {
		return errInvalid("code", "code must be 1 to 12 upper-case letters and digits, starting with a letter, such as USDC")
	}
	if a.Decimals < 0 || a.Decimals > maxAssetDecimals {
		return errInvalid("decimals", "decimals must be from 0 to "+strconv.Itoa(maxAssetDecimals))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.m[a.Code]; ok && old.decimals != a.Decimals {
		return errInvalid("decimals", "the decimals of a known asset cannot change (balances are held in its base units)")
	}
	if a.Code == confpay.AssetUSDG && a.USDGRate.String() != "1" {
		return errInvalid("usdg_rate", "USDG counts as itself: its rate is 1")
	}
	if b.m == nil {
		b.m = map[string]assetInfo{}
	}
	b.m[a.Code] = assetInfo{decimals: a.Decimals, rate: a.USDGRate, microPerUnit: a.USDGRate.MicroUSDG()}
	return nil
}

// decimals reports the decimals of a known asset.
func (b *assetBook) decimals(code string) (int, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	a, ok := b.m[code]
	return a.decimals, ok
}

// known answers 400 naming param when code is not a known asset.
func (b *assetBook) known(param, code string) (int, *apiError) {
	dec, ok := b.decimals(code)
	if !ok {
		return 0, errInvalid(param, "unknown asset "+strconv.Quote(code)+": the server knows "+b.codes())
	}
	return dec, nil
}

// codes lists the known asset codes, for messages.
func (b *assetBook) codes() string {
	list := b.list()
	s := ""
	for i, a := range list {
		if i > 0 {
			s += ", "
		}
		s += a.Code
	}
	return s
}

// list returns the known assets, sorted by code.
func (b *assetBook) list() []Asset {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]Asset, 0, len(b.m))
	for code, a := range b.m {
		out = append(out, Asset{Code: code, Decimals: a.decimals, USDGRate: a.rate})
	}
	slices.SortFunc(out, func(x, y Asset) int {
		switch {
		case x.Code < y.Code:
			return -1
		case x.Code > y.Code:
			return 1
		}
		return 0
	})
	return out
}

// equivalent is units of asset in micro-USDG at the asset's reference
// rate, rounded up (see rules.Equivalent).
func (b *assetBook) equivalent(code string, units *big.Int) (int64, error) {
	b.mu.RLock()
	a, ok := b.m[code]
	b.mu.RUnlock()
	if !ok {
		return 0, errInvalid("asset", "unknown asset")
	}
	return rules.Equivalent(units, a.decimals, a.microPerUnit)
}

// policyAssetsKnown refuses a policy naming an asset the server does not
// know, naming the entry (policyError renders it).
func (b *assetBook) policyAssetsKnown(p *rules.Policy) error {
	for i, code := range p.Assets() {
		if _, ok := b.decimals(code); !ok {
			return &rules.FieldError{Field: rules.FieldAssets + "[" + strconv.Itoa(i) + "]", Problem: "is not a known asset (" + b.codes() + ")"}
		}
	}
	return nil
}

// WithAsset adds an asset to those the server knows, or re-rates a known
// one: its decimals and the reference rate, in USDG per whole unit, at which
// spend policies count it. The server knows DefaultAssets to begin with.
func WithAsset(a Asset) Option {
	return func(o *options) { o.assets = append(o.assets, a) }
}

// SetAsset adds an asset to those the server knows, or re-rates a known one
// (its decimals cannot change). The rate applies to payments judged from
// now on. It is the direct twin of POST /_fake/assets.
func (s *Server) SetAsset(a Asset) error {
	if apiErr := s.assets.set(a); apiErr != nil {
		return apiErr
	}
	if s.jr != nil { // the assets are written with the next record
		s.mu.Lock()
		s.dirty.assets, s.dirty.any = true, true
		s.mu.Unlock()
	}
	return nil
}

// Assets lists the assets the server knows, sorted by code.
func (s *Server) Assets() []Asset { return s.assets.list() }
