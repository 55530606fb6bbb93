package fakeserver

import (
	"math/big"
	"testing"

	confpay "github.com/confpay/confpay-go"
)

// TestAuditInvariants: a reservation with no pending transfer behind it,
// money made from nothing, are findings (of the fake, not of the caller).
func TestAuditInvariants(t *testing.T) {
	s := New(t)
	if _, err := s.CreateAccount(AccountParams{Handle: "@alice"}); err != nil {
		t.Fatal(err)
	}
	s.AddFunds(t, "@alice", "USDG", "10")
	if fs := s.Audit(); len(fs) != 0 {
		t.Fatalf("a clean server: %v", fs)
	}
	s.mu.Lock()
	id := s.byHandle["@alice"].id
	if err := s.nets[confpay.NetworkTest].ledger.Reserve(id, "USDG", big.NewInt(1)); err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	fs := s.Audit()
	if len(fs) != 1 || fs[0].Rule != "invariant_money_conserved" || fs[0].Network != confpay.NetworkTest {
		t.Fatalf("findings %v, want one invariant_money_conserved on test", fs)
	}
}
