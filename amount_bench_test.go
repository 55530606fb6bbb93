package confpay

import "testing"

// BenchmarkAmountUnits is the create path's amount: ParseAmount, then
// Units with the asset's decimals.
func BenchmarkAmountUnits(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		a, err := ParseAmount("0.000001")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Units(6); err != nil {
			b.Fatal(err)
		}
	}
}
