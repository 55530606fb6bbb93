package fakeserver

import (
	"errors"
	"math/big"
	"slices"
	"strings"
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

// TestAuditPolicyInvariants: a payment over the per-transaction limit it
// was judged under, a day over the daily limit, a held payment over the
// limit or under the threshold are findings of invariant_policy_bounds
// (of the fake); the same payments within bounds are none.
func TestAuditPolicyInvariants(t *testing.T) {
	s := New(t)
	if _, err := s.CreateAccount(AccountParams{Handle: "@acme", Type: confpay.AccountBusiness, GenerateEncryptionKey: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAccount(AccountParams{Handle: "@shop", GenerateEncryptionKey: true}); err != nil {
		t.Fatal(err)
	}
	bot := s.AddAgent(t, "@acme", "bot", confpay.SpendPolicyParams{
		DailyLimitUSDG:          confpay.Ptr(confpay.MustParseLimit("30")),
		PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("10")),
		HITLThresholdUSDG:       confpay.Ptr(confpay.MustParseLimit("8")),
	})
	s.AddFunds(t, bot.Handle, "USDG", "100")
	c := s.Client(bot.TestKey)
	for _, v := range []string{"5", "6", "9"} { // two paid, one held (over 8)
		if _, err := c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@shop", Amount: confpay.MustParseAmount(v)},
			confpay.WithIdempotencyKey("pay-"+v)); err != nil && !errors.As(err, new(*confpay.HeldError)) {
			t.Fatalf("pay %s: %v", v, err)
		}
	}
	if fs := s.Audit(); len(fs) != 0 {
		t.Fatalf("within the policy: %v", fs)
	}
	n := s.nets[confpay.NetworkTest]
	mutate := func(what string, f func(w *spendWindow, h *heldTx), wantMsg string) {
		t.Helper()
		s.mu.Lock()
		w := n.held.spend[s.byHandle["@acme/bot"]]
		var h *heldTx
		for _, x := range n.held.byID {
			h = x
		}
		saved, savedHeld := slices.Clone(w.entries), h.judged
		f(w, h)
		s.mu.Unlock()
		fs := s.Audit()
		if len(fs) != 1 || fs[0].Rule != "invariant_policy_bounds" || !strings.Contains(fs[0].Message, wantMsg) {
			t.Errorf("%s: findings %v, want one invariant_policy_bounds: %s", what, fs, wantMsg)
		}
		s.mu.Lock()
		w.entries, h.judged = saved, savedHeld
		s.mu.Unlock()
	}
	mutate("a payment over the per-transaction limit", func(w *spendWindow, _ *heldTx) { w.entries[1].amount = 10_000001 },
		"over the per-transaction limit it was judged under was made")
	mutate("a day over the daily limit", func(w *spendWindow, _ *heldTx) { w.entries[0].daily, w.entries[1].daily = 11_000000, 10_000000 },
		"over the daily limit")
	mutate("a held payment over the limit", func(_ *spendWindow, h *heldTx) { h.judged.perTx = 8_500000 },
		"over the per-transaction limit it was judged under")
	mutate("a held payment under the threshold", func(_ *spendWindow, h *heldTx) { h.judged.threshold = 9_000000 },
		"not over the approval threshold")
	if fs := s.Audit(); len(fs) != 0 {
		t.Fatalf("restored: %v", fs)
	}
}

// TestAuditRecordsACutCallBeforeTheCut: a call whose answer a fault drops
// or cuts short is in the audit before the client sees the connection
// go, so that a test asking the audit right after the failed call (the
// retry-mints-a-new-key recipe) finds it.
func TestAuditRecordsACutCallBeforeTheCut(t *testing.T) {
	for _, action := range []string{FaultDropAfterCommit, FaultResetAfterCommit} {
		t.Run(action, func(t *testing.T) {
			s := New(t)
			alice, err := s.CreateAccount(AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateAccount(AccountParams{Handle: "@bob", GenerateEncryptionKey: true}); err != nil {
				t.Fatal(err)
			}
			s.AddFunds(t, "@alice", "USDG", "10")
			owner := auditOwner(alice.AccountID, confpay.NetworkTest)
			recorded := make(chan int, 1)
			s.testHook = func(point string) {
				if point == "cut" {
					recorded <- len(s.audits.Requests(owner))
				}
			}
			s.Inject(t, Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: action})
			c := s.Client(alice.TestKey, confpay.WithMaxRetries(0))
			_, err = c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")},
				confpay.WithIdempotencyKey("k1"))
			if err == nil && action == FaultResetAfterCommit {
				t.Fatal("the cut call succeeded")
			}
			if n := <-recorded; n != 1 {
				t.Errorf("when the connection was cut the audit held %d calls, want 1", n)
			}
		})
	}
}
