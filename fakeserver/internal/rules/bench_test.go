package rules

import (
	"testing"
)

// BenchmarkJudge is the policy check of a typical restricted policy: ten
// recipients of every form, a wildcard match on a domain, active hours and
// a threshold; every check runs.
func BenchmarkJudge(b *testing.B) {
	p, err := Parse([]byte(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 40,
		"allowed_recipients": ["@bob", "@carol", "@dave/bot", "0x52908400098527886E0F7030069857D2E4169EE7",
			"api.market", "pay.shop.io", "*.example.com", "*.openai.test", "*.cloud.test", "@erin"],
		"assets": ["USDG", "ETH"], "active_hours": "08:00-20:00"}`))
	if err != nil {
		b.Fatal(err)
	}
	f := Facts{
		Active: true, Asset: "USDG", Amount: 12_500_000, Now: noon, Spent: 120_000_000, Funded: true,
		To: Recipient{Handle: "@Shop", Address: [20]byte{4}, Domains: []string{"shop.io", "API.cloud.test"}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if p.Judge(&f, Payment) != Submit {
			b.Fatal("not submitted")
		}
	}
}

// BenchmarkJudgeAnyRecipient is the policy check of the default policy.
func BenchmarkJudgeAnyRecipient(b *testing.B) {
	p, err := Parse([]byte(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50}`))
	if err != nil {
		b.Fatal(err)
	}
	f := Facts{Active: true, Asset: "USDG", Amount: 12_500_000, Now: noon, Funded: true, To: Recipient{Handle: "@bob"}}
	b.ReportAllocs()
	for b.Loop() {
		if p.Judge(&f, Payment) != Submit {
			b.Fatal("not submitted")
		}
	}
}

// BenchmarkParse is parsing and validating a full creation body.
func BenchmarkParse(b *testing.B) {
	body := []byte(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 40,
		"allowed_recipients": ["@bob", "0x52908400098527886E0F7030069857D2E4169EE7", "api.market", "*.example.com"],
		"assets": ["USDG", "ETH"], "active_hours": "08:00-20:00"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}
