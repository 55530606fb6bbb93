package confpay

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Asset codes the service knows.
const (
	AssetUSDG = "USDG" // the main asset, 6 decimals
	AssetUSDC = "USDC" // USD Coin, 6 decimals
	AssetETH  = "ETH"  // ether, 18 decimals
)

// AssetDecimals reports how many decimals an asset has and whether the asset
// is known. Amounts in an asset may not carry more decimals than this.
func AssetDecimals(asset string) (int, bool) {
	switch asset {
	case AssetUSDG, AssetUSDC:
		return 6, true
	case AssetETH:
		return 18, true
	}
	return 0, false
}

// maxAmountLen bounds the text of an amount: 78 integer digits hold any
// uint256, plus a point and 18 decimals, with room to spare.
const maxAmountLen = 100

// errAmountSyntax and friends describe why an amount was refused. They never
// carry the figure itself.
var (
	errAmountEmpty     = errors.New("is empty")
	errAmountSyntax    = errors.New("must be plain decimal digits with an optional fraction (no sign, exponent, spaces or leading zeros)")
	errAmountTooLong   = errors.New("is too long")
	errAmountPrecision = errors.New("has more decimals than the asset allows")
)

// decimal is the canonical text of a non-negative exact decimal: no leading
// zeros (but "0" before a point), no trailing fractional zeros, no point when
// there is no fraction. The empty string means "not set".
type decimal string

// parseDecimal checks s against the grammar of decisions.md ("digits,
// optional point and fraction") and returns its canonical form and the number
// of fractional digits written.
func parseDecimal(s string) (decimal, int, error) {
	if s == "" {
		return "", 0, errAmountEmpty
	}
	if len(s) > maxAmountLen {
		return "", 0, errAmountTooLong
	}
	intPart, frac, hasPoint := strings.Cut(s, ".")
	if intPart == "" || (hasPoint && frac == "") {
		return "", 0, errAmountSyntax
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return "", 0, errAmountSyntax
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return "", 0, errAmountSyntax
			}
		}
	}
	places := len(frac)
	trimmed := strings.TrimRight(frac, "0")
	if trimmed == "" {
		return decimal(intPart), places, nil
	}
	if len(trimmed) == len(frac) {
		return decimal(s), places, nil // already in its canonical form
	}
	return decimal(intPart + "." + trimmed), places, nil
}

// units returns d scaled by 10^decimals as an integer, or an error when d has
// more fractional digits than decimals.
func (d decimal) units(decimals int) (*big.Int, error) {
	if d == "" {
		return new(big.Int), nil
	}
	intPart, frac, _ := strings.Cut(string(d), ".")
	if len(frac) > decimals {
		return nil, errAmountPrecision
	}
	if decimals >= 0 && len(intPart)+decimals <= 19 { // fits a uint64: no digit string, no scan
		var u uint64
		for i := 0; i < len(intPart); i++ {
			u = u*10 + uint64(intPart[i]-'0')
		}
		for i := 0; i < decimals; i++ {
			u *= 10
			if i < len(frac) {
				u += uint64(frac[i] - '0')
			}
		}
		return new(big.Int).SetUint64(u), nil
	}
	digits := intPart + frac + strings.Repeat("0", decimals-len(frac))
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, errAmountSyntax
	}
	return u, nil
}

// decimalFromUnits is the inverse of units.
func decimalFromUnits(u *big.Int, decimals int) decimal {
	if u == nil || u.Sign() <= 0 {
		return "0"
	}
	if decimals < 0 { // a unit worth 10^-decimals: scale up, no fraction
		u = new(big.Int).Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-decimals)), nil))
		decimals = 0
	}
	s := u.String()
	if decimals == 0 {
		return decimal(s)
	}
	if len(s) <= decimals {
		s = strings.Repeat("0", decimals-len(s)+1) + s
	}
	intPart, frac := s[:len(s)-decimals], strings.TrimRight(s[len(s)-decimals:], "0")
	if frac == "" {
		return decimal(intPart)
	}
	return decimal(intPart + "." + frac)
}

// cmp compares two canonical decimals numerically.
func (d decimal) cmp(e decimal) int {
	di, df, _ := strings.Cut(string(d.orZero()), ".")
	ei, ef, _ := strings.Cut(string(e.orZero()), ".")
	if len(di) != len(ei) {
		if len(di) < len(ei) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(di, ei); c != 0 {
		return c
	}
	return strings.Compare(df, ef) // canonical fractions compare as text
}

// scaled returns d as an integer count of 10^-places and places, the
// number of its fractional digits.
func (d decimal) scaled() (*big.Int, int) {
	_, frac, _ := strings.Cut(string(d.orZero()), ".")
	u, _ := d.orZero().units(len(frac)) // a canonical decimal always fits its own places
	return u, len(frac)
}

// addDecimals returns d + sign·e exactly, and false when the result would
// be negative.
func addDecimals(d, e decimal, sign int) (decimal, bool) {
	x, px := d.scaled()
	y, py := e.scaled()
	places := max(px, py)
	ten := big.NewInt(10)
	x.Mul(x, new(big.Int).Exp(ten, big.NewInt(int64(places-px)), nil))
	y.Mul(y, new(big.Int).Exp(ten, big.NewInt(int64(places-py)), nil))
	if sign < 0 {
		y.Neg(y)
	}
	x.Add(x, y)
	if x.Sign() < 0 {
		return "", false
	}
	return decimalFromUnits(x, places), true
}

func (d decimal) orZero() decimal {
	if d == "" {
		return "0"
	}
	return d
}

// Amount is an exact, non-negative decimal quantity of an asset, such as
// "12.5" USDG. It never passes through a float. On the wire it is a JSON
// string. The zero value means "not set" and prints as "0".
type Amount struct{ d decimal }

// ParseAmount parses a decimal string such as "10", "0.25" or "1500.000001".
// It accepts what the service accepts: digits with an optional point and
// fraction, and nothing else (no sign, exponent, spaces or leading zeros).
// Zero parses; a transfer additionally requires an amount above zero, and
// [Amount.Units] checks the asset's decimals.
func ParseAmount(s string) (Amount, error) {
	d, _, err := parseDecimal(s)
	if err != nil {
		return Amount{}, fmt.Errorf("confpay: amount %w", err)
	}
	return Amount{d}, nil
}

// MustParseAmount is like [ParseAmount] but panics on bad input. It is meant
// for literals in programs and tests. The panic message never includes the
// text that was refused.
func MustParseAmount(s string) Amount {
	a, err := ParseAmount(s)
	if err != nil {
		panic("confpay: MustParseAmount: invalid amount literal")
	}
	return a
}

// AmountFromUnits converts an integer count of an asset's smallest unit (for
// example micro-USDG with decimals 6) to an Amount. Negative counts give zero;
// negative decimals scale the count up (units of 10^-decimals).
func AmountFromUnits(units *big.Int, decimals int) Amount {
	return Amount{decimalFromUnits(units, decimals)}
}

// String returns the canonical decimal text, "0" for the zero value.
func (a Amount) String() string { return string(a.d.orZero()) }

// IsSet reports whether the amount was set (the zero value is not).
func (a Amount) IsSet() bool { return a.d != "" }

// IsZero reports whether the amount is numerically zero (or not set).
func (a Amount) IsZero() bool { return a.d.orZero() == "0" }

// Cmp compares a and b numerically: -1, 0 or +1.
func (a Amount) Cmp(b Amount) int { return a.d.cmp(b.d) }

// Add returns a + b, exactly.
func (a Amount) Add(b Amount) Amount {
	d, _ := addDecimals(a.d, b.d, 1)
	return Amount{d}
}

// Sub returns a − b, exactly, or an error when b is greater than a
// (amounts are never negative).
func (a Amount) Sub(b Amount) (Amount, error) {
	d, ok := addDecimals(a.d, b.d, -1)
	if !ok {
		return Amount{}, errors.New("confpay: amount subtraction would be negative")
	}
	return Amount{d}, nil
}

// MarshalText returns the canonical decimal text, so that an Amount works
// as a map key, in flag.TextVar and in YAML or TOML.
func (a Amount) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses text as ParseAmount does.
func (a *Amount) UnmarshalText(text []byte) error {
	v, err := ParseAmount(string(text))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Units returns the amount as an integer count of the asset's smallest unit,
// or an error when it carries more than decimals fractional digits.
func (a Amount) Units(decimals int) (*big.Int, error) {
	u, err := a.d.units(decimals)
	if err != nil {
		return nil, fmt.Errorf("confpay: amount %w", err)
	}
	return u, nil
}

// UnitsOf is Units with the decimals of a known asset.
func (a Amount) UnitsOf(asset string) (*big.Int, error) {
	dec, ok := AssetDecimals(asset)
	if !ok {
		return nil, fmt.Errorf("confpay: unknown asset %q", asset)
	}
	return a.Units(dec)
}

// MarshalJSON encodes the amount as a JSON string.
func (a Amount) MarshalJSON() ([]byte, error) {
	return []byte(`"` + a.String() + `"`), nil
}

// UnmarshalJSON accepts only a JSON string holding a valid amount.
func (a *Amount) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("confpay: amount must be a JSON string")
	}
	d, _, err := parseDecimal(string(b[1 : len(b)-1]))
	if err != nil {
		return fmt.Errorf("confpay: amount %w", err)
	}
	a.d = d
	return nil
}

// Limit is an exact, non-negative decimal in USDG used by spend policies, at
// most 6 decimals. On the wire it is a JSON number, written and read from its
// text, never through a float.
type Limit struct{ d decimal }

// limitDecimals is the precision of every spend-policy figure.
const limitDecimals = 6

// ParseLimit parses a limit such as "500" or "12.75": plain decimal notation,
// at least 0, at most 6 decimals.
func ParseLimit(s string) (Limit, error) {
	if strings.HasPrefix(s, "-") {
		return Limit{}, errors.New("confpay: limit must be at least 0")
	}
	d, places, err := parseDecimal(s)
	if err != nil {
		return Limit{}, fmt.Errorf("confpay: limit %w", err)
	}
	if places > limitDecimals {
		return Limit{}, errors.New("confpay: limit has more than 6 decimals")
	}
	return Limit{d}, nil
}

// MustParseLimit is like [ParseLimit] but panics on bad input; for literals.
func MustParseLimit(s string) Limit {
	l, err := ParseLimit(s)
	if err != nil {
		panic("confpay: MustParseLimit: invalid limit literal")
	}
	return l
}

// String returns the canonical decimal text, "0" for the zero value.
func (l Limit) String() string { return string(l.d.orZero()) }

// Cmp compares l and m numerically.
func (l Limit) Cmp(m Limit) int { return l.d.cmp(m.d) }

// Add returns l + m, exactly.
func (l Limit) Add(m Limit) Limit {
	d, _ := addDecimals(l.d, m.d, 1)
	return Limit{d}
}

// Sub returns l − m, exactly, or an error when m is greater than l (limits
// are never negative).
func (l Limit) Sub(m Limit) (Limit, error) {
	d, ok := addDecimals(l.d, m.d, -1)
	if !ok {
		return Limit{}, errors.New("confpay: limit subtraction would be negative")
	}
	return Limit{d}, nil
}

// MarshalText returns the canonical decimal text, so that a Limit works as
// a map key, in flag.TextVar and in YAML or TOML.
func (l Limit) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses text as ParseLimit does.
func (l *Limit) UnmarshalText(text []byte) error {
	v, err := ParseLimit(string(text))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// IsZero reports whether the limit is numerically zero.
func (l Limit) IsZero() bool { return l.d.orZero() == "0" }

// Amount returns the limit as an Amount of USDG.
func (l Limit) Amount() Amount { return Amount(l) }

// MicroUSDG returns the limit in millionths of a USDG.
func (l Limit) MicroUSDG() *big.Int {
	u, _ := l.d.units(limitDecimals) // ParseLimit guarantees the precision
	return u
}

// MarshalJSON encodes the limit as a JSON number.
func (l Limit) MarshalJSON() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalJSON accepts a JSON number in plain decimal notation.
func (l *Limit) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return errors.New("confpay: limit must be a JSON number")
	}
	v, err := ParseLimit(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
