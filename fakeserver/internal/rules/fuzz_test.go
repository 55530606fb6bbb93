package rules

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/confpay/confpay-go/fakeserver/internal/names"
)

// render writes p as a creation body, from its accessors.
func render(p *Policy) []byte {
	m := map[string]any{
		FieldDailyLimit:          json.Number(FormatMicro(p.DailyLimit())),
		FieldPerTransactionLimit: json.Number(FormatMicro(p.PerTransactionLimit())),
		FieldAssets:              p.Assets(),
		FieldActiveHours:         p.ActiveHours().String(),
	}
	if r := p.Recipients(); r != nil {
		m[FieldAllowedRecipients] = r
	}
	if th, ok := p.Threshold(); ok {
		m[FieldHITLThreshold] = json.Number(FormatMicro(th))
	}
	b, _ := json.Marshal(m)
	return b
}

// checkInvariants fails when p breaks a rule Parse promises.
func checkInvariants(t *testing.T, p *Policy) {
	t.Helper()
	if p.DailyLimit() <= 0 || p.PerTransactionLimit() <= 0 || p.PerTransactionLimit() > p.DailyLimit() || p.DailyLimit() > MaxLimit {
		t.Fatalf("limits out of range: %d, %d", p.DailyLimit(), p.PerTransactionLimit())
	}
	if th, ok := p.Threshold(); ok && (th < 0 || th > MaxLimit) {
		t.Fatalf("threshold out of range: %d", th)
	}
	if len(p.Assets()) == 0 {
		t.Fatal("no assets")
	}
	if r := p.Recipients(); r != nil && (len(r) == 0 || len(r) > MaxRecipients) {
		t.Fatalf("%d recipients", len(r))
	}
	if h := p.ActiveHours(); h.Start == h.End {
		t.Fatal("empty active hours")
	}
}

// roundTrip checks that a valid policy renders and parses back the same.
func roundTrip(t *testing.T, p *Policy) {
	t.Helper()
	q, err := Parse(render(p))
	if err != nil {
		t.Fatalf("rendered policy does not parse: %v", err)
	}
	if d := p.diff(q); len(d) != 0 {
		t.Fatalf("round trip changed %v", d)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50}`,
		`{"daily_limit_usdg": 1000.5, "per_transaction_limit_usdg": 0.000001, "allowed_recipients": ["@bob", "@alice/bot", "0x52908400098527886E0F7030069857D2E4169EE7", "api.market", "*.example.com"], "assets": ["ETH", "USDG"], "active_hours": "22:00-06:30", "hitl_threshold_usdg": 0}`,
		`{"daily_limit_usdg": -1, "per_transaction_limit_usdg": 1e3}`,
		`{"daily_limit_usdg": 5, "per_transaction_limit_usdg": 5, "allowed_recipients": []}`,
		`{"daily_limit_usdg": 5, "per_transaction_limit_usdg": 5, "allowed_recipients": null, "hitl_threshold_usdg": null}`,
		`{"daily_limit_usdg": 1.0000000}`,
		`[]`, `null`, ``, `{`, `{"a":1}`, `{"assets": ["USDG",]}`,
		`{"daily_limit_usdg": 99999999999999999999999999, "per_transaction_limit_usdg": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := Parse(body)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		checkInvariants(t, p)
		roundTrip(t, p)
	})
}

func FuzzPatch(f *testing.F) {
	for _, s := range []string{
		`{"daily_limit_usdg": 300}`,
		`{"per_transaction_limit_usdg": 501}`,
		`{"allowed_recipients": null, "hitl_threshold_usdg": null}`,
		`{"allowed_recipients": ["*.shop.io"], "active_hours": "23:00-01:00"}`,
		`{"assets": ["ETH"]}`, `{}`, ``, `{"daily_limit_usdg": 10, "per_transaction_limit_usdg": 11}`,
	} {
		f.Add([]byte(s))
	}
	orig, err := Parse([]byte(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "allowed_recipients": ["@bob"], "hitl_threshold_usdg": 20}`))
	if err != nil {
		f.Fatal(err)
	}
	before := render(orig)
	f.Fuzz(func(t *testing.T, body []byte) {
		q, changed, err := orig.Patch(body)
		if string(render(orig)) != string(before) {
			t.Fatal("Patch modified the original")
		}
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		checkInvariants(t, q)
		roundTrip(t, q)
		if !slices.Equal(changed, orig.diff(q)) {
			t.Fatalf("changed = %v, diff = %v", changed, orig.diff(q))
		}
	})
}

func FuzzParseHours(f *testing.F) {
	for _, s := range []string{"00:00-23:59", "22:00-06:00", "09:00-09:00", "24:00-01:00", "9:00-17:00", "", "00:00-23:59x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHours(s)
		if err != nil {
			return
		}
		if h.String() != s {
			t.Fatalf("ParseHours(%q).String() = %q", s, h.String())
		}
		if h.Start == h.End || h.Start < 0 || h.End < 0 || h.Start >= 24*60 || h.End >= 24*60 {
			t.Fatalf("ParseHours(%q) = %+v", s, h)
		}
	})
}

func FuzzRecipient(f *testing.F) {
	for _, s := range []string{"@bob", "@alice/bot", "0x52908400098527886E0F7030069857D2E4169EE7", "api.market", "*.example.com", "*", "*.com", "0x", "@"} {
		f.Add(s, "api.example.com")
	}
	f.Fuzz(func(t *testing.T, entry, domain string) {
		p, err := New(10, 1, []string{entry}, nil, "", -1)
		if err != nil {
			return
		}
		// A valid entry always matches itself when it is a name.
		to := Recipient{Domains: []string{domain}}
		switch {
		case entry[0] == '@':
			to.Handle = entry
		case entry[0] == '*':
			return
		case len(entry) > 1 && entry[:2] == "0x":
			a, _ := names.ParseAddress(entry)
			to.Address = a
		default:
			to.Domains = []string{entry}
		}
		facts := Facts{Active: true, Asset: "USDG", Amount: 1, To: to, Funded: true}
		if got := p.Judge(&facts, Payment); got != Submit {
			t.Fatalf("entry %q does not match itself: %v", entry, got)
		}
	})
}
