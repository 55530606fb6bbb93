package rules

import (
	"math"
	"math/big"
	"testing"
	"time"
)

const usdg = MicroPerUSDG

var (
	bobAddr  = [20]byte{0xb0, 0xb}
	shopAddr = [20]byte{18: 0x05, 19: 0x40}
	noon     = time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
)

func at(hh, mm, ss int) time.Time { return time.Date(2026, 1, 5, hh, mm, ss, 0, time.UTC) }

// pol builds a policy from a creation body.
func pol(t *testing.T, body string) *Policy {
	t.Helper()
	p, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse(%s): %v", body, err)
	}
	return p
}

// TestJudgeTable runs every rule at its boundaries: equal to and one base
// unit past each limit, the edges of the active hours, each recipient
// form, each asset, and the order in which the checks run.
func TestJudgeTable(t *testing.T) {
	limits := `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30, "hitl_threshold_usdg": 20}`
	recipients := `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30,
		"allowed_recipients": ["@Bob", "@alice/Bot", "0x0000000000000000000000000000000000000540", "api.market", "*.example.com"]}`
	office := `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30, "active_hours": "09:00-17:30"}`
	night := `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30, "active_hours": "22:00-06:00"}`
	assets := `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30, "assets": ["ETH"]}`
	strict := `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30, "hitl_threshold_usdg": 5,
		"allowed_recipients": ["@bob"], "assets": ["USDG"], "active_hours": "09:00-10:00"}`

	bob := Recipient{Handle: "@bob", Address: bobAddr}
	// f returns facts for a 10 USDG payment to @bob at noon, modified by fn.
	f := func(fn func(*Facts)) Facts {
		x := Facts{Active: true, Asset: "USDG", Amount: 10 * usdg, To: bob, Now: noon, Funded: true}
		if fn != nil {
			fn(&x)
		}
		return x
	}
	amount := func(v int64) func(*Facts) { return func(x *Facts) { x.Amount = v } }
	to := func(r Recipient) func(*Facts) { return func(x *Facts) { x.To = r } }
	now := func(tm time.Time) func(*Facts) { return func(x *Facts) { x.Now = tm } }
	domain := func(d string) func(*Facts) {
		return func(x *Facts) { x.To = Recipient{Handle: "@shop", Address: [20]byte{4}, Domains: []string{d}} }
	}

	tests := []struct {
		name   string
		policy string
		facts  Facts
		mode   Mode
		want   Outcome
	}{
		// Per-transaction limit: equal passes, one micro-USDG above fails.
		{"per-tx equal", limits, f(amount(30 * usdg)), Payment, Hold},
		{"per-tx one unit above", limits, f(amount(30*usdg + 1)), Payment, PerTransactionLimit},
		// Threshold: equal submits, one unit above holds.
		{"threshold equal", limits, f(amount(20 * usdg)), Payment, Submit},
		{"threshold one unit above", limits, f(amount(20*usdg + 1)), Payment, Hold},
		{"below threshold", limits, f(amount(1)), Payment, Submit},
		{"zero threshold holds everything", `{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30, "hitl_threshold_usdg": 0}`, f(amount(1)), Payment, Hold},
		{"no threshold never holds", office, f(amount(30 * usdg)), Payment, Submit},
		// Daily limit: reaching it exactly passes, one unit more fails.
		{"daily reached exactly", limits, f(func(x *Facts) { x.Spent = 90 * usdg }), Payment, Submit},
		{"daily one unit above", limits, f(func(x *Facts) { x.Spent = 90*usdg + 1 }), Payment, DailyLimit},
		{"daily already full", limits, f(func(x *Facts) { x.Spent = 100 * usdg; x.Amount = 1 }), Payment, DailyLimit},
		{"daily spent saturated", limits, f(func(x *Facts) { x.Spent = math.MaxInt64 }), Payment, DailyLimit},
		// Balance.
		{"unfunded", limits, f(func(x *Facts) { x.Funded = false }), Payment, InsufficientBalance},
		{"unfunded and above threshold: held, balance not looked at", limits, f(func(x *Facts) { x.Funded = false; x.Amount = 25 * usdg }), Payment, Hold},
		{"unfunded approval", limits, f(func(x *Facts) { x.Funded = false; x.Amount = 25 * usdg }), Approval, InsufficientBalance},
		// Status.
		{"paused", limits, f(func(x *Facts) { x.Active = false }), Payment, NotActive},
		// Assets.
		{"asset allowed", assets, f(func(x *Facts) { x.Asset = "ETH" }), Payment, Submit},
		{"asset not allowed", assets, f(nil), Payment, AssetNotAllowed},
		{"asset default USDG only", limits, f(func(x *Facts) { x.Asset = "ETH" }), Payment, AssetNotAllowed},
		{"asset unknown", limits, f(func(x *Facts) { x.Asset = "usdg" }), Payment, AssetNotAllowed},
		// Recipients: handles, agent handles, addresses, domains, wildcards.
		{"handle match ignoring case", recipients, f(nil), Payment, Submit},
		{"handle upper case recipient", recipients, f(to(Recipient{Handle: "@BOB", Address: [20]byte{1}})), Payment, Submit},
		{"agent handle", recipients, f(to(Recipient{Handle: "@Alice/bot", Address: [20]byte{2}})), Payment, Submit},
		{"other agent of owner", recipients, f(to(Recipient{Handle: "@alice/bot2", Address: [20]byte{2}})), Payment, RecipientNotAllowed},
		{"owner of allowed agent", recipients, f(to(Recipient{Handle: "@alice", Address: [20]byte{2}})), Payment, RecipientNotAllowed},
		{"other handle", recipients, f(to(Recipient{Handle: "@carol", Address: [20]byte{3}})), Payment, RecipientNotAllowed},
		{"address of account", recipients, f(to(Recipient{Handle: "@zed", Address: shopAddr})), Payment, Submit},
		{"external wallet address", recipients, f(to(Recipient{Address: shopAddr})), Payment, Submit},
		{"external wallet other", recipients, f(to(Recipient{Address: [20]byte{9}})), Payment, RecipientNotAllowed},
		{"domain exact", recipients, f(domain("api.market")), Payment, Submit},
		{"domain sub of exact entry", recipients, f(domain("x.api.market")), Payment, RecipientNotAllowed},
		{"wildcard apex", recipients, f(domain("example.com")), Payment, RecipientNotAllowed},
		{"wildcard subdomain", recipients, f(domain("api.example.com")), Payment, Submit},
		{"wildcard deeper subdomain", recipients, f(domain("a.b.example.com")), Payment, Submit},
		{"wildcard mixed case", recipients, f(domain("API.Example.COM")), Payment, Submit},
		{"wildcard other domain", recipients, f(domain("example.org")), Payment, RecipientNotAllowed},
		{"wildcard lookalike", recipients, f(domain("badexample.com")), Payment, RecipientNotAllowed},
		{"wildcard suffix lookalike", recipients, f(domain("api.example.com.evil.io")), Payment, RecipientNotAllowed},
		{"any of several domains", recipients, f(to(Recipient{Handle: "@shop", Address: shopAddr, Domains: []string{"shop.io", "pay.example.com"}})), Payment, Submit},
		{"any recipient when unrestricted", limits, f(to(Recipient{Address: [20]byte{7}})), Payment, Submit},
		// Active hours: start, end, seconds into the end minute, one minute
		// outside on each side; wrapping windows.
		{"hours at start", office, f(now(at(9, 0, 0))), Payment, Submit},
		{"hours a minute before start", office, f(now(at(8, 59, 59))), Payment, OutsideActiveHours},
		{"hours at end", office, f(now(at(17, 30, 0))), Payment, Submit},
		{"hours end minute inclusive", office, f(now(at(17, 30, 59))), Payment, Submit},
		{"hours a minute after end", office, f(now(at(17, 31, 0))), Payment, OutsideActiveHours},
		{"wrap at start", night, f(now(at(22, 0, 0))), Payment, Submit},
		{"wrap before midnight", night, f(now(at(23, 59, 59))), Payment, Submit},
		{"wrap at midnight", night, f(now(at(0, 0, 0))), Payment, Submit},
		{"wrap at end", night, f(now(at(6, 0, 59))), Payment, Submit},
		{"wrap a minute after end", night, f(now(at(6, 1, 0))), Payment, OutsideActiveHours},
		{"wrap a minute before start", night, f(now(at(21, 59, 0))), Payment, OutsideActiveHours},
		{"wrap at noon", night, f(now(noon)), Payment, OutsideActiveHours},
		{"hours in another zone", office, f(now(time.Date(2026, 1, 5, 20, 0, 0, 0, time.FixedZone("X", 3*3600)))), Payment, Submit},
		{"all day at 23:59:59", limits, f(now(at(23, 59, 59))), Payment, Submit},
		// Order: each check wins over every later one.
		{"order: status first", strict, Facts{Active: false, Asset: "ETH", Amount: 200 * usdg, To: Recipient{Address: [20]byte{9}}, Now: noon, Spent: 100 * usdg}, Payment, NotActive},
		{"order: asset before recipient", strict, Facts{Active: true, Asset: "ETH", Amount: 200 * usdg, To: Recipient{Address: [20]byte{9}}, Now: noon, Spent: 100 * usdg}, Payment, AssetNotAllowed},
		{"order: recipient before hours", strict, Facts{Active: true, Asset: "USDG", Amount: 200 * usdg, To: Recipient{Address: [20]byte{9}}, Now: noon, Spent: 100 * usdg}, Payment, RecipientNotAllowed},
		{"order: hours before per-tx", strict, Facts{Active: true, Asset: "USDG", Amount: 200 * usdg, To: bob, Now: noon, Spent: 100 * usdg}, Payment, OutsideActiveHours},
		{"order: per-tx before daily", strict, Facts{Active: true, Asset: "USDG", Amount: 200 * usdg, To: bob, Now: at(9, 30, 0), Spent: 100 * usdg}, Payment, PerTransactionLimit},
		{"order: daily before threshold", strict, Facts{Active: true, Asset: "USDG", Amount: 20 * usdg, To: bob, Now: at(9, 30, 0), Spent: 100 * usdg}, Payment, DailyLimit},
		{"order: threshold before balance", strict, Facts{Active: true, Asset: "USDG", Amount: 20 * usdg, To: bob, Now: at(9, 30, 0)}, Payment, Hold},
		{"order: balance last", strict, Facts{Active: true, Asset: "USDG", Amount: 5 * usdg, To: bob, Now: at(9, 30, 0)}, Payment, InsufficientBalance},
		{"order: funded at threshold submits", strict, Facts{Active: true, Asset: "USDG", Amount: 5 * usdg, To: bob, Now: at(9, 30, 0), Funded: true}, Payment, Submit},
		// Approval re-check: status, hours and threshold are not checked;
		// asset, recipient, limits and balance are.
		{"approval ignores status", strict, Facts{Active: false, Asset: "USDG", Amount: 20 * usdg, To: bob, Now: noon, Funded: true}, Approval, Submit},
		{"approval ignores threshold and hours", strict, Facts{Active: true, Asset: "USDG", Amount: 30 * usdg, To: bob, Now: at(23, 0, 0), Funded: true}, Approval, Submit},
		{"approval checks asset", strict, Facts{Active: true, Asset: "ETH", Amount: usdg, To: bob, Now: noon, Funded: true}, Approval, AssetNotAllowed},
		{"approval checks recipient", strict, Facts{Active: true, Asset: "USDG", Amount: usdg, To: Recipient{Address: [20]byte{9}}, Now: noon, Funded: true}, Approval, RecipientNotAllowed},
		{"approval checks per-tx", strict, Facts{Active: true, Asset: "USDG", Amount: 30*usdg + 1, To: bob, Now: noon, Funded: true}, Approval, PerTransactionLimit},
		{"approval checks daily", strict, Facts{Active: true, Asset: "USDG", Amount: 30 * usdg, To: bob, Now: noon, Spent: 70*usdg + 1, Funded: true}, Approval, DailyLimit},
		{"approval checks balance", strict, Facts{Active: true, Asset: "USDG", Amount: 30 * usdg, To: bob, Now: noon}, Approval, InsufficientBalance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pol(t, tt.policy)
			facts := tt.facts
			if got := p.Judge(&facts, tt.mode); got != tt.want {
				t.Errorf("Judge = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOutcomeRules(t *testing.T) {
	want := map[Outcome]string{
		AssetNotAllowed: "asset_not_allowed", RecipientNotAllowed: "recipient_not_allowed",
		OutsideActiveHours: "outside_active_hours", PerTransactionLimit: "per_transaction_limit",
		DailyLimit: "daily_limit", Submit: "", Hold: "", NotActive: "", InsufficientBalance: "",
	}
	for o, rule := range want {
		if o.Rule() != rule {
			t.Errorf("%v.Rule() = %q, want %q", o, o.Rule(), rule)
		}
		if o.Refused() == (o == Submit || o == Hold) {
			t.Errorf("%v.Refused() = %v", o, o.Refused())
		}
	}
}

func TestHoursParse(t *testing.T) {
	for s, want := range map[string]Hours{
		"00:00-23:59": AllDay,
		"09:05-17:30": {9*60 + 5, 17*60 + 30},
		"23:59-00:00": {23*60 + 59, 0},
	} {
		h, err := ParseHours(s)
		if err != nil || h != want {
			t.Errorf("ParseHours(%q) = %+v, %v; want %+v", s, h, err, want)
		}
		if h.String() != s {
			t.Errorf("String() = %q, want %q", h.String(), s)
		}
	}
	for _, s := range []string{"", "00:00-00:00", "0:00-23:59", "00:00-24:00", "00:60-01:00", "ab:cd-ef:gh",
		"00:00–23:59", "00.00-23.59", "00:00-23:5", "00:00-23:590", " 00:00-23:59", "+0:00-23:59"} {
		if h, err := ParseHours(s); err == nil {
			t.Errorf("ParseHours(%q) = %+v, want an error", s, h)
		}
	}
}

// TestHoursEveryMinute checks Contains over a whole day for a plain and a
// wrapping window against a direct count.
func TestHoursEveryMinute(t *testing.T) {
	for _, h := range []Hours{{9 * 60, 17 * 60}, {22 * 60, 6 * 60}, {0, 1}, {23*60 + 59, 0}, AllDay} {
		in := 0
		for m := 0; m < 24*60; m++ {
			if h.Contains(at(m/60, m%60, 30)) {
				in++
			}
		}
		want := h.End - h.Start + 1
		if h.Start > h.End {
			want = 24*60 - h.Start + h.End + 1
		}
		if in != want {
			t.Errorf("%v contains %d minutes, want %d", h, in, want)
		}
	}
}

func TestEquivalent(t *testing.T) {
	rate := big.NewInt(3000 * usdg) // 3000 USDG per ETH
	wei := func(s string) *big.Int { v, _ := new(big.Int).SetString(s, 10); return v }
	tests := []struct {
		asset string
		units *big.Int
		want  int64
	}{
		{"USDG", big.NewInt(10 * usdg), 10 * usdg},
		{"USDG", big.NewInt(1), 1},
		{"ETH", wei("1000000000000000000"), 3000 * usdg}, // 1 ETH
		{"ETH", wei("1"), 1},                             // 3e-9 micro rounds up to 1
		{"ETH", wei("333333333"), 1},                     // 0.999999999 micro: up to 1
		{"ETH", wei("333333334"), 2},                     // 1.000000002 micro: up to 2
		{"ETH", wei("1000000000"), 3},                    // exactly 3 micro
		{"ETH", wei("1000000001"), 4},                    // a hair above 3: up to 4
		{"USDG", wei("100000000000000000000000000000"), math.MaxInt64},
		{"ETH", wei("100000000000000000000000000000000000000000"), math.MaxInt64},
	}
	at := func(asset string, units, rate *big.Int) (int64, error) {
		if asset == "ETH" {
			return Equivalent(units, 18, rate)
		}
		return Equivalent(units, 6, big.NewInt(usdg))
	}
	for _, tt := range tests {
		got, err := at(tt.asset, tt.units, rate)
		if err != nil || got != tt.want {
			t.Errorf("Equivalent(%s, %s) = %d, %v; want %d", tt.asset, tt.units, got, err, tt.want)
		}
	}
	// A fractional rate is exact too: 1 ETH at 2999.999999 USDG.
	if got, _ := at("ETH", wei("1000000000000000000"), big.NewInt(2999_999999)); got != 2999_999999 {
		t.Errorf("fractional rate: %d", got)
	}
	// Two decimals at 1.1 USDG: 1.01 units is 1.111 USDG, exactly.
	if got, _ := Equivalent(big.NewInt(101), 2, big.NewInt(1_100000)); got != 1_111000 {
		t.Errorf("two decimals: %d", got)
	}
	if _, err := Equivalent(big.NewInt(1), 6, nil); err == nil {
		t.Error("an asset without a rate accepted")
	}
	if _, err := at("USDG", big.NewInt(-1), rate); err == nil {
		t.Error("negative amount accepted")
	}
}

func TestAddSpend(t *testing.T) {
	if AddSpend(2, 3) != 5 || AddSpend(math.MaxInt64-1, 5) != math.MaxInt64 {
		t.Error("AddSpend does not saturate")
	}
}
