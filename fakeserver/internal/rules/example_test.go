package rules_test

import (
	"fmt"
	"time"

	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// Example parses a spend policy and judges three payments under it.
func Example() {
	p, err := rules.Parse([]byte(`{"daily_limit_usdg": 100, "per_transaction_limit_usdg": 30,
		"hitl_threshold_usdg": 20, "allowed_recipients": ["*.example.com"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	shop := rules.Recipient{Handle: "@shop", Domains: []string{"api.example.com"}}
	pay := func(usdg string, to rules.Recipient) rules.Outcome {
		amount, _ := rules.ParseMicro(usdg)
		f := rules.Facts{
			Active: true, Asset: "USDG", Amount: amount, To: to,
			Now: time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC), Funded: true,
		}
		return p.Judge(&f, rules.Payment)
	}
	fmt.Println(pay("12.5", shop))
	fmt.Println(pay("25", shop))
	fmt.Println(pay("5", rules.Recipient{Handle: "@mallory"}))
	// Output:
	// submit
	// hold
	// recipient_not_allowed
}

// ExamplePolicy_Patch amends a policy: only the fields sent change, and the
// merged result is validated.
func ExamplePolicy_Patch() {
	p, _ := rules.Parse([]byte(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50}`))
	q, changed, err := p.Patch([]byte(`{"daily_limit_usdg": 200.5}`))
	fmt.Println(rules.FormatMicro(q.DailyLimit()), rules.FormatMicro(q.PerTransactionLimit()), changed, err)
	_, _, err = p.Patch([]byte(`{"daily_limit_usdg": 20}`))
	fmt.Println(err)
	// Output:
	// 200.5 50 [daily_limit_usdg] <nil>
	// policy: daily_limit_usdg must be at least per_transaction_limit_usdg
}
