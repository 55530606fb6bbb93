package rules_test

import (
	"math/big"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// FuzzLimitGrammarAgreesWithSDK holds the server's limit parser and the
// SDK's confpay.ParseLimit to one grammar: they accept the same texts (up
// to the server's cap, MaxLimit) and read the same value, so the SDK never
// sends a limit the server refuses, nor refuses one the server takes.
func FuzzLimitGrammarAgreesWithSDK(f *testing.F) {
	for _, s := range []string{
		"0", "500", "12.75", "0.000001", "0.0000001", "1.500000", "1.5000000",
		"-1", "-0", "01", "00.5", ".5", "5.", "1e3", "1E3", "+1", "", " 1", "1 ",
		"0x10", "1_000", "1000000000000", "1000000000000.000001", "99999999999999999999",
	} {
		f.Add(s)
	}
	cap := big.NewInt(rules.MaxLimit)
	f.Fuzz(func(t *testing.T, s string) {
		micro, err := rules.ParseMicro(s)
		l, sdkErr := confpay.ParseLimit(s)
		if sdkErr != nil {
			if err == nil {
				t.Fatalf("the server accepts %q as %d, the SDK refuses it: %v", s, micro, sdkErr)
			}
			return
		}
		want := l.MicroUSDG()
		if want.Cmp(cap) > 0 {
			if err == nil {
				t.Fatalf("the server accepts %q above its cap", s)
			}
			return
		}
		if err != nil {
			t.Fatalf("the SDK accepts %q, the server refuses it: %v", s, err)
		}
		if micro != want.Int64() {
			t.Fatalf("%q: the server reads %d micro-USDG, the SDK %s", s, micro, want)
		}
	})
}
