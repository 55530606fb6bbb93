package confpay

import (
	"encoding/json"
	"errors"
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
		if e.StatusCode != 422 || e.Message == "" || !errors.Is(e, &sentinel{e.Code}) {
			t.Fatalf("APIError %+v", e)
		}
		_ = e.Error()
	})
}
