package confpay

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

// amountGrammar is the accepted syntax, written independently of the parser.
var amountGrammar = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?$`)

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"0", "0"},
		{"10", "10"},
		{"0.25", "0.25"},
		{"12.50", "12.5"},
		{"1500.000001", "1500.000001"},
		{"1.000", "1"},
		{"0.000000000000000001", "0.000000000000000001"},
		{"115792089237316195423570985008687907853269984665640564039457584007913129639935", "115792089237316195423570985008687907853269984665640564039457584007913129639935"},
	} {
		a, err := ParseAmount(tc.in)
		if err != nil {
			t.Errorf("ParseAmount(%q): %v", tc.in, err)
			continue
		}
		if a.String() != tc.want || !a.IsSet() {
			t.Errorf("ParseAmount(%q) = %q, want %q", tc.in, a, tc.want)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1e3", "1E3", " 1", "1 ", "01", "00.5", ".5", "5.", "1.2.3", "0x10", "1_000", "١", "NaN", "Inf", "1,5", strings.Repeat("9", 101)} {
		if a, err := ParseAmount(in); err == nil {
			t.Errorf("ParseAmount(%q) = %q, want an error", in, a)
		} else if in != "" && strings.Contains(err.Error(), in) {
			t.Errorf("error %q echoes the input", err)
		}
	}
}

func TestAmountMethods(t *testing.T) {
	var zero Amount
	if zero.IsSet() || !zero.IsZero() || zero.String() != "0" {
		t.Errorf("zero value: set %v zero %v %q", zero.IsSet(), zero.IsZero(), zero)
	}
	if a := MustParseAmount("0.00"); !a.IsSet() || !a.IsZero() {
		t.Error("0.00 must be set and zero")
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1", "1.0", 0}, {"2", "10", -1}, {"10", "9.99", 1}, {"0.1", "0.09", 1}, {"0.5", "0.50001", -1}, {"0", "0.000001", -1},
	} {
		if got := MustParseAmount(tc.a).Cmp(MustParseAmount(tc.b)); got != tc.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if zero.Cmp(MustParseAmount("0")) != 0 {
		t.Error("unset must compare equal to 0")
	}
	u, err := MustParseAmount("12.5").UnitsOf(AssetUSDG)
	if err != nil || u.String() != "12500000" {
		t.Errorf("UnitsOf USDG = %v, %v", u, err)
	}
	u, err = MustParseAmount("1.5").UnitsOf(AssetETH)
	if err != nil || u.String() != "1500000000000000000" {
		t.Errorf("UnitsOf ETH = %v, %v", u, err)
	}
	if _, err := MustParseAmount("0.0000001").UnitsOf(AssetUSDG); err == nil {
		t.Error("7 decimals accepted for USDG")
	}
	if _, err := MustParseAmount("1").UnitsOf("DOGE"); err == nil {
		t.Error("unknown asset accepted")
	}
	if got := AmountFromUnits(big.NewInt(1_000_001), 6); got.String() != "1.000001" {
		t.Errorf("AmountFromUnits = %q", got)
	}
	if got := AmountFromUnits(big.NewInt(-5), 6); got.String() != "0" {
		t.Errorf("AmountFromUnits(-5) = %q", got)
	}
	if got := AmountFromUnits(big.NewInt(7), 0); got.String() != "7" {
		t.Errorf("AmountFromUnits(7, 0) = %q", got)
	}
	// Negative decimals used to panic (slice out of range).
	units := big.NewInt(7)
	if got := AmountFromUnits(units, -2); got.String() != "700" || units.Int64() != 7 {
		t.Errorf("AmountFromUnits(7, -2) = %q (units now %v), want 700 and units untouched", got, units)
	}
}

func TestAmountJSON(t *testing.T) {
	b, err := json.Marshal(TransferCreateParams{To: "@bob", Amount: MustParseAmount("12.500")})
	if err != nil || string(b) != `{"to":"@bob","amount":"12.5"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	var p struct{ A Amount }
	for _, bad := range []string{`{"A": 12.5}`, `{"A": "-1"}`, `{"A": "1e2"}`, `{"A": ""}`, `{"A": true}`} {
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
	if err := json.Unmarshal([]byte(`{"A": "0.10"}`), &p); err != nil || p.A.String() != "0.1" {
		t.Errorf("Unmarshal = %q, %v", p.A, err)
	}
}

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"}, {"500", "500"}, {"50.25", "50.25"}, {"0.000001", "0.000001"}, {"1.500000", "1.5"},
	} {
		l, err := ParseLimit(tc.in)
		if err != nil || l.String() != tc.want {
			t.Errorf("ParseLimit(%q) = %q, %v; want %q", tc.in, l, err, tc.want)
		}
	}
	for _, in := range []string{"", "-1", "-0", "0.0000001", "1.0000000", "1e3", "01", " 1", "1.", "+1"} {
		if l, err := ParseLimit(in); err == nil {
			t.Errorf("ParseLimit(%q) = %q, want an error", in, l)
		}
	}
	l := MustParseLimit("50.25")
	if l.MicroUSDG().String() != "50250000" || l.Amount().String() != "50.25" || l.IsZero() || l.Cmp(MustParseLimit("50.250")) != 0 {
		t.Errorf("Limit methods on %q", l)
	}
	var p struct{ L Limit }
	if err := json.Unmarshal([]byte(`{"L": 50.250000}`), &p); err != nil || p.L.String() != "50.25" {
		t.Errorf("Unmarshal number = %q, %v", p.L, err)
	}
	for _, bad := range []string{`{"L": "50"}`, `{"L": -1}`, `{"L": 1e3}`, `{"L": 0.0000001}`} {
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
	b, err := json.Marshal(p)
	if err != nil || string(b) != `{"L":50.25}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

func TestMustParsePanicsWithoutEcho(t *testing.T) {
	for _, f := range []func(){
		func() { MustParseAmount("-123.45") },
		func() { MustParseLimit("-123.45") },
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Error("no panic")
				} else if s, _ := r.(string); strings.Contains(s, "123.45") {
					t.Errorf("panic %q echoes the figure", s)
				}
			}()
			f()
		}()
	}
}

// checkAmountErr asserts an error is one of the fixed messages, which name
// the problem and never carry the input.
func checkAmountErr(t *testing.T, s string, err error) {
	t.Helper()
	fixed := []string{"confpay: limit must be at least 0", "confpay: limit has more than 6 decimals"}
	for _, e := range []error{errAmountEmpty, errAmountSyntax, errAmountTooLong, errAmountPrecision} {
		fixed = append(fixed, "confpay: amount "+e.Error(), "confpay: limit "+e.Error())
	}
	for _, m := range fixed {
		if err.Error() == m {
			return
		}
	}
	t.Fatalf("input %q: unexpected error text %q", s, err)
}

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"0", "1", "12.5", "12.50", "0.000001", "0.0000000000000000001", "1e3", "-1", "01", ".5", "5.", "", " 1",
		"115792089237316195423570985008687907853269984665640564039457584007913129639935.123456789012345678"} {
		f.Add(s)
	}
	ten18 := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAmount(s)
		want := len(s) <= maxAmountLen && amountGrammar.MatchString(s)
		if (err == nil) != want {
			t.Fatalf("ParseAmount(%q) error %v, grammar says %v", s, err, want)
		}
		if err != nil {
			checkAmountErr(t, s, err)
			return
		}
		// String reparses to the same value.
		b, err := ParseAmount(a.String())
		if err != nil || b != a || b.Cmp(a) != 0 {
			t.Fatalf("%q: String %q reparses to %q, %v", s, a, b, err)
		}
		// JSON round trip.
		j, _ := a.MarshalJSON()
		var c Amount
		if err := c.UnmarshalJSON(j); err != nil || c != a {
			t.Fatalf("%q: JSON %s gives %q, %v", s, j, c, err)
		}
		// Units and back, checked against big.Rat.
		u, err := a.Units(18)
		_, frac, _ := strings.Cut(a.String(), ".")
		if (err == nil) != (len(frac) <= 18) {
			t.Fatalf("%q: Units(18) error %v with %d decimals", s, err, len(frac))
		}
		if err != nil {
			return
		}
		if back := AmountFromUnits(u, 18); back != a {
			t.Fatalf("%q: units %v come back as %q", s, u, back)
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok || r.Cmp(new(big.Rat).SetFrac(u, ten18)) != 0 {
			t.Fatalf("%q: units %v differ from the exact value", s, u)
		}
	})
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"0", "500", "50.25", "1.500000", "0.0000001", "-1", "-0", "1e3", "01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLimit(s)
		_, frac, _ := strings.Cut(s, ".")
		want := len(s) <= maxAmountLen && amountGrammar.MatchString(s) && len(frac) <= 6
		if (err == nil) != want {
			t.Fatalf("ParseLimit(%q) error %v, want accepted %v", s, err, want)
		}
		if err != nil {
			checkAmountErr(t, s, err)
			return
		}
		m, err := ParseLimit(l.String())
		if err != nil || m != l {
			t.Fatalf("%q: String %q reparses to %q, %v", s, l, m, err)
		}
		j, _ := l.MarshalJSON()
		var n Limit
		if err := json.Unmarshal(j, &n); err != nil || n != l {
			t.Fatalf("%q: JSON %s gives %q, %v", s, j, n, err)
		}
		if back := AmountFromUnits(l.MicroUSDG(), 6); back != l.Amount() {
			t.Fatalf("%q: micro-USDG %v come back as %q", s, l.MicroUSDG(), back)
		}
	})
}

// FuzzDecodeAnswer feeds arbitrary bodies to the answer decoders: they may
// refuse them but never panic, and an error body never leaks into Error()
// beyond its own fields.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`{}`, `{"code":"not_found","message":"no"}`, `{"transfers":[{"transfer_id":"tr_1"}],"has_more":true}`,
		`{"balances":[{"asset":"USDG","amount":"1.5"}]}`, `{"daily_limit_usdg":1e400}`, `null`, `[`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{new(Transfer), new(TransferList), new(BalanceList), new(SpendPolicy), new(PendingList), new(DeliveryList), new(WebhookList), new(Account)} {
			_ = json.Unmarshal(body, v)
		}
		e := newAPIError(&httpResponse422, body)
		if e.StatusCode != 422 || e.Message == "" || !errors.Is(e, e.Code) {
			t.Fatalf("APIError %+v", e)
		}
		_ = e.Error()
	})
}

func TestAmountArithmetic(t *testing.T) {
	for _, tc := range []struct{ a, b, sum, diff string }{
		{"1", "2", "3", ""},
		{"12.5", "0.000001", "12.500001", "12.499999"},
		{"0.1", "0.2", "0.3", ""},
		{"1.000000000000000001", "1", "2.000000000000000001", "0.000000000000000001"},
		{"100", "100", "200", "0"},
		{"0", "0.5", "0.5", ""},
	} {
		a, b := MustParseAmount(tc.a), MustParseAmount(tc.b)
		if got := a.Add(b).String(); got != tc.sum {
			t.Errorf("%s + %s = %s, want %s", tc.a, tc.b, got, tc.sum)
		}
		d, err := a.Sub(b)
		switch {
		case tc.diff == "" && err == nil:
			t.Errorf("%s - %s = %s, want an error (negative)", tc.a, tc.b, d)
		case tc.diff != "" && (err != nil || d.String() != tc.diff):
			t.Errorf("%s - %s = %s, %v; want %s", tc.a, tc.b, d, err, tc.diff)
		}
		if a.Add(b).Cmp(a) < 0 {
			t.Errorf("%s + %s compares below %s", tc.a, tc.b, tc.a)
		}
	}
	l := MustParseLimit("500").Add(MustParseLimit("0.000001"))
	if l.String() != "500.000001" {
		t.Errorf("limit sum %s", l)
	}
	if _, err := MustParseLimit("1").Sub(MustParseLimit("1.5")); err == nil {
		t.Error("negative limit difference accepted")
	}
	if d, err := MustParseLimit("1.5").Sub(MustParseLimit("0.5")); err != nil || d.String() != "1" || d.Cmp(MustParseLimit("1")) != 0 {
		t.Errorf("limit difference %s, %v", d, err)
	}
}

func TestAmountAndLimitAsText(t *testing.T) {
	// Map keys in JSON use MarshalText / UnmarshalText.
	in := map[Amount]string{MustParseAmount("12.50"): "a", MustParseAmount("0.000001"): "b"}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `{"0.000001":"b","12.5":"a"}` {
		t.Fatalf("marshal map: %s, %v", b, err)
	}
	var out map[Amount]string
	if err := json.Unmarshal(b, &out); err != nil || out[MustParseAmount("12.5")] != "a" {
		t.Fatalf("unmarshal map: %v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"1e3":"x"}`), &out); err == nil {
		t.Error("a map key in exponent notation accepted")
	}
	// Flags.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var amt Amount
	var lim Limit
	fs.TextVar(&amt, "amount", MustParseAmount("1"), "")
	fs.TextVar(&lim, "limit", MustParseLimit("0"), "")
	if err := fs.Parse([]string{"-amount", "7.25", "-limit", "100.5"}); err != nil || amt.String() != "7.25" || lim.String() != "100.5" {
		t.Fatalf("flags: %s %s %v", amt, lim, err)
	}
	if err := fs.Parse([]string{"-limit", "1.0000001"}); err == nil {
		t.Error("a limit with 7 decimals accepted by the flag")
	}
	if err := fs.Parse([]string{"-amount", "-1"}); err == nil {
		t.Error("a negative amount accepted by the flag")
	}
}

// FuzzAmountArithmetic: Add and Sub agree with exact rational arithmetic.
func FuzzAmountArithmetic(f *testing.F) {
	f.Add("12.5", "0.000001")
	f.Add("0", "0")
	f.Add("1.000000000000000001", "999999999999.9")
	f.Fuzz(func(t *testing.T, x, y string) {
		a, err1 := ParseAmount(x)
		b, err2 := ParseAmount(y)
		if err1 != nil || err2 != nil {
			return
		}
		ra, _ := new(big.Rat).SetString(a.String())
		rb, _ := new(big.Rat).SetString(b.String())
		sum, _ := new(big.Rat).SetString(a.Add(b).String())
		if sum.Cmp(new(big.Rat).Add(ra, rb)) != 0 {
			t.Fatalf("%s + %s = %s", a, b, a.Add(b))
		}
		d, err := a.Sub(b)
		want := new(big.Rat).Sub(ra, rb)
		if want.Sign() < 0 {
			if err == nil {
				t.Fatalf("%s - %s = %s, want an error", a, b, d)
			}
			return
		}
		got, _ := new(big.Rat).SetString(d.String())
		if err != nil || got.Cmp(want) != 0 {
			t.Fatalf("%s - %s = %s, %v", a, b, d, err)
		}
	})
}

// TestAmountUnitsAcrossUint64 checks Units on both sides of its uint64
// path (an integer part and decimals of 19 digits or fewer) against the
// digits scaled by math/big.
func TestAmountUnitsAcrossUint64(t *testing.T) {
	for _, s := range []string{"0", "1", "0.000001", "9", "12.5", "1.000001", "999999999999.999999", "9999999999999.999999",
		"18446744073709551615", "18446744073709551616", "9999999999999999999", "99999999999999999999", "0.9999999999999999999",
		"1234567890123456789", "123456789.0123456789", "5.00", "100"} {
		a, err := ParseAmount(s)
		if err != nil {
			t.Fatal(s, err)
		}
		for dec := 0; dec <= 21; dec++ {
			intPart, frac, _ := strings.Cut(a.String(), ".")
			u, err := a.Units(dec)
			if len(frac) > dec {
				if err == nil {
					t.Errorf("%s.Units(%d) = %v, want an error", s, dec, u)
				}
				continue
			}
			want, _ := new(big.Int).SetString(intPart+frac+strings.Repeat("0", dec-len(frac)), 10)
			if err != nil || u.Cmp(want) != 0 {
				t.Errorf("%s.Units(%d) = %v, %v; want %v", s, dec, u, err, want)
			}
		}
	}
}
