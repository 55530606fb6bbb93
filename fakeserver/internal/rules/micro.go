package rules

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// MicroPerUSDG is the number of micro-USDG in one USDG.
const MicroPerUSDG = 1_000_000

// MaxLimit is the largest limit a policy accepts, in micro-USDG:
// 10^12 USDG. It keeps every sum of limits and window spend far from the
// int64 range; amounts beyond it saturate (see Equivalent).
const MaxLimit int64 = 1_000_000_000_000 * MicroPerUSDG

// limitDecimals is the most fractional digits a limit may carry.
const limitDecimals = 6

var (
	errLimitNegative  = errors.New("must be at least 0")
	errLimitSyntax    = errors.New("must be a JSON number in plain decimal notation (digits, optional point and fraction)")
	errLimitPrecision = errors.New("has more than 6 decimals")
	errLimitTooLarge  = errors.New("is above the largest limit (1000000000000)")
)

// parseMicro reads the text of a JSON number as micro-USDG: plain decimal
// notation, at least 0, at most 6 fractional digits written, at most
// MaxLimit. It never goes through a float.
func parseMicro(s string) (int64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, errLimitNegative
	}
	intPart, frac, hasPoint := strings.Cut(s, ".")
	if intPart == "" || (hasPoint && frac == "") {
		return 0, errLimitSyntax
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return 0, errLimitSyntax
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, errLimitSyntax
			}
		}
	}
	if len(frac) > limitDecimals {
		return 0, errLimitPrecision
	}
	intPart = strings.TrimLeft(intPart, "0")
	if len(intPart) > 13 { // more than 10^13 USDG: certainly above MaxLimit
		return 0, errLimitTooLarge
	}
	digits := intPart + frac + strings.Repeat("0", limitDecimals-len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v > MaxLimit {
		return 0, errLimitTooLarge
	}
	return v, nil
}

// FormatMicro writes micro-USDG as a canonical decimal: no leading zeros,
// no trailing fractional zeros, no point for a whole number ("12.5", "500",
// "0.000001"). Negative values are written as "0".
func FormatMicro(v int64) string {
	if v <= 0 {
		return "0"
	}
	whole, frac := v/MicroPerUSDG, v%MicroPerUSDG
	s := strconv.FormatInt(whole, 10)
	if frac == 0 {
		return s
	}
	f := strconv.FormatInt(frac+MicroPerUSDG, 10)[1:] // six digits, zero padded
	return s + "." + strings.TrimRight(f, "0")
}

// ParseMicro parses a decimal such as "12.5" as micro-USDG with the rules
// of a policy limit. It is for tests and for the server's own figures.
func ParseMicro(s string) (int64, error) { return parseMicro(s) }

// addSat adds two non-negative values, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// AddSpend adds two non-negative micro-USDG figures without wrapping: the
// sum saturates at the largest int64, which is above any limit.
func AddSpend(a, b int64) int64 { return addSat(a, b) }

var maxInt64 = big.NewInt(math.MaxInt64)

// ValidAssetCode reports whether code is shaped like an asset code: 1 to 12
// upper-case letters and digits, starting with a letter. Whether the
// service knows the asset is the server's question (its asset table).
func ValidAssetCode(code string) bool {
	if len(code) < 1 || len(code) > 12 || code[0] < 'A' || code[0] > 'Z' {
		return false
	}
	for i := 1; i < len(code); i++ {
		if c := code[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Equivalent converts units (base units of an asset with decimals
// decimals, >= 0) to the micro-USDG a policy counts, at microPerUnit
// micro-USDG per whole unit of the asset, with exact integer arithmetic:
// units × rate / 10^decimals, rounded UP to the next micro-USDG, so that a
// payment is never counted below its value and a limit is never passed by
// rounding. USDG itself has 6 decimals and a rate of 10^6. A figure beyond
// int64 saturates at math.MaxInt64, above any limit.
func Equivalent(units *big.Int, decimals int, microPerUnit *big.Int) (int64, error) {
	if units == nil || units.Sign() < 0 {
		return 0, errors.New("policy: amount must be at least 0")
	}
	if microPerUnit == nil || microPerUnit.Sign() < 0 || decimals < 0 {
		return 0, errors.New("policy: no reference rate for the asset")
	}
	num := new(big.Int).Mul(units, microPerUnit)
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)
	v, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Sign() > 0 {
		v.Add(v, big.NewInt(1))
	}
	if v.Cmp(maxInt64) > 0 {
		return math.MaxInt64, nil
	}
	return v.Int64(), nil
}
