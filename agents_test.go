package confpay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSpendPolicyParamsJSON: the typed policy reads back what it writes,
// nulls included, and refuses what the API's strict decoding refuses,
// naming the member.
func TestSpendPolicyParamsJSON(t *testing.T) {
	in := SpendPolicyParams{
		DailyLimitUSDG:          Ptr(MustParseLimit("500.25")),
		PerTransactionLimitUSDG: Ptr(MustParseLimit("100")),
		Assets:                  []string{"USDG", "ETH"},
		ActiveHours:             Ptr("09:00-17:00"),
		AnyRecipient:            true,
		NoHITLThreshold:         true,
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out SpendPolicyParams
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if diff := cmp.Diff(in, out, cmp.Comparer(func(a, b Limit) bool { return a.String() == b.String() })); diff != "" {
		t.Errorf("round trip of %s (-in +out):\n%s", b, diff)
	}
	for body, param := range map[string]string{
		`{"daily_limit_usdg":1,"colour":2}`:           "colour",
		`{"daily_limit_usdg":"1"}`:                    "daily_limit_usdg",
		`{"daily_limit_usdg":1,"daily_limit_usdg":2}`: "daily_limit_usdg",
		`{"Daily_Limit_USDG":1}`:                      "daily_limit_usdg",
		`{"hitl_threshold_usdg":"5"}`:                 "hitl_threshold_usdg",
	} {
		var p SpendPolicyParams
		err := json.Unmarshal([]byte(body), &p)
		if err == nil || !strings.Contains(err.Error(), param) {
			t.Errorf("%s: %v, want an error naming %s", body, err, param)
		}
	}
}
