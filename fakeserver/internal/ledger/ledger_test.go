package ledger

import (
	"errors"
	"math/big"
	"testing"
)

func units(n int64) *big.Int { return big.NewInt(n) }

func TestReserveSettleRelease(t *testing.T) {
	l := New()
	if err := l.Fund("alice", "USDG", units(100)); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve("alice", "USDG", units(101)); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("reserve over the balance: %v", err)
	}
	if err := l.Reserve("bob", "USDG", units(1)); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("reserve with no balance: %v", err)
	}
	v0 := l.Entries("alice")[0].Version
	if err := l.Reserve("alice", "USDG", units(60)); err != nil {
		t.Fatal(err)
	}
	if got := l.Available("alice", "USDG"); got.Cmp(units(40)) != 0 {
		t.Fatalf("available %v after reserving 60 of 100", got)
	}
	if err := l.Reserve("alice", "USDG", units(41)); !errors.Is(err, ErrInsufficient) {
		t.Fatal("a second reservation overdrew the balance")
	}
	e := l.Entries("alice")[0]
	if e.Version != v0+1 || e.Units.Cmp(units(100)) != 0 || e.Reserved.Cmp(units(60)) != 0 {
		t.Fatalf("after reserve: %+v", e)
	}
	l.Settle("alice", "bob", "USDG", units(50))
	e = l.Entries("alice")[0]
	if e.Version != v0+1 || e.Units.Cmp(units(50)) != 0 || e.Available.Cmp(units(40)) != 0 {
		t.Fatalf("settling changed the sender's available or version: %+v", e)
	}
	if got := l.Available("bob", "USDG"); got.Cmp(units(50)) != 0 {
		t.Fatalf("bob has %v", got)
	}
	l.Release("alice", "USDG", units(10))
	if got := l.Available("alice", "USDG"); got.Cmp(units(50)) != 0 {
		t.Fatalf("alice has %v after the release", got)
	}
	// Paying an external wallet takes the money off the chain.
	if err := l.Reserve("bob", "USDG", units(20)); err != nil {
		t.Fatal(err)
	}
	l.Settle("bob", "", "USDG", units(20))
	if got := l.Supply()["USDG"]; got != "80" {
		t.Fatalf("supply %s, want 80", got)
	}
}

func TestFundRefusesSupplyAt2To256(t *testing.T) {
	l := New()
	almost := new(big.Int).Sub(MaxUnits, units(1))
	if err := l.Fund("a", "ETH", almost); err != nil {
		t.Fatal(err)
	}
	if err := l.Fund("b", "ETH", units(1)); !errors.Is(err, ErrSupply) {
		t.Fatalf("funding to 2^256: %v", err)
	}
	if got := l.Available("b", "ETH"); got.Sign() != 0 {
		t.Fatal("a refused funding changed a balance")
	}
}

func TestCacheCiphertextKeepsTheFirstOfAVersion(t *testing.T) {
	l := New()
	_ = l.Fund("a", "USDG", units(5))
	v := l.Entries("a")[0].Version
	first := l.CacheCiphertext("a", "USDG", v, []byte("one"))
	second := l.CacheCiphertext("a", "USDG", v, []byte("two"))
	if string(first) != "one" || string(second) != "one" {
		t.Fatalf("readers of one version got %q and %q", first, second)
	}
	if got := l.Entries("a")[0].Ciphertext; string(got) != "one" {
		t.Fatalf("entry ciphertext %q", got)
	}
	_ = l.Fund("a", "USDG", units(1))
	if got := l.Entries("a")[0].Ciphertext; got != nil {
		t.Fatal("a new version kept the old ciphertext")
	}
	if got := l.CacheCiphertext("a", "USDG", v, []byte("late")); string(got) != "late" {
		t.Fatal("a stale version's ciphertext was not handed back as is")
	}
	if got := l.Entries("a")[0].Ciphertext; got != nil {
		t.Fatal("a stale version's ciphertext was cached")
	}
}
