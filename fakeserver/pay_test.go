package fakeserver_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// payee creates a confidential-ready account.
func (f *agentsFixture) payee(handle string) *fakeserver.AccountInfo {
	f.t.Helper()
	a, err := f.srv.CreateAccount(fakeserver.AccountParams{Handle: handle, GenerateEncryptionKey: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// fund credits an account on the test network.
func (f *agentsFixture) fund(ref, asset, amount string) {
	f.t.Helper()
	if err := f.srv.Fund(ref, confpay.NetworkTest, asset, amount); err != nil {
		f.t.Fatal(err)
	}
}

// available is an account's available balance of asset on the test
// network, "0" when it never held any.
func (f *agentsFixture) available(ref, asset string) string {
	f.t.Helper()
	books, err := f.srv.Books(ref, confpay.NetworkTest)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, b := range books {
		if b.Asset == asset {
			return b.Available.String()
		}
	}
	return "0"
}

// pay sends amount of asset (USDG when empty) from c to to.
func (f *agentsFixture) pay(c *confpay.Client, to, amount, asset string) (*confpay.Transfer, error) {
	return c.Transfers.Create(f.ctx, &confpay.TransferCreateParams{To: to, Amount: confpay.MustParseAmount(amount), Asset: asset, Memo: "order 7"})
}

// payPublic sends a non-confidential USDG payment (to an external wallet).
func (f *agentsFixture) payPublic(c *confpay.Client, to, amount string) (*confpay.Transfer, error) {
	return c.Transfers.Create(f.ctx, &confpay.TransferCreateParams{To: to, Amount: confpay.MustParseAmount(amount), Confidential: confpay.Ptr(false)})
}

// mustPay fails the test unless the payment is submitted (201).
func (f *agentsFixture) mustPay(c *confpay.Client, to, amount string) *confpay.Transfer {
	f.t.Helper()
	tr, err := f.pay(c, to, amount, "")
	if err != nil {
		f.t.Fatalf("pay %s to %s: %v", amount, to, err)
	}
	if tr.TransferID == "" || tr.Status != confpay.StatusPending {
		f.t.Fatalf("pay %s to %s: %+v, want a pending transfer", amount, to, tr)
	}
	return tr
}

// TestAgentsPayRules drives every rule through POST /v1/transfers with the
// agent's own key, at its boundaries, and checks that a refusal moves
// nothing.
func TestAgentsPayRules(t *testing.T) {
	f := newAgentsFixture(t, fakeserver.WithETHRate(confpay.MustParseLimit("3000")))
	bob := f.payee("@bob")
	carol := f.payee("@carol")
	f.payee("@dave")
	if err := f.srv.RegisterDomain(carol.AccountID, "api.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.RegisterDomain(carol.AccountID, "example.com"); err != nil {
		t.Fatal(err)
	}
	wallet := "0x52908400098527886E0F7030069857D2E4169EE7"
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: agLimit("100"), PerTransactionLimitUSDG: agLimit("30"),
		AllowedRecipients: []string{"@bob", "*.example.com", wallet},
		Assets:            []string{"USDG", "ETH"},
		ActiveHours:       confpay.Ptr("09:00-17:00"), // the clock starts at 09:00
	})
	f.fund(a.AccountID, "USDG", "1000")
	f.fund(a.AccountID, "ETH", "1")

	type refusal struct {
		status int
		code   confpay.ErrorCode
		rule   string
	}
	violation := func(rule string) *refusal { return &refusal{403, confpay.CodePolicyViolation, rule} }
	steps := []struct {
		name, to, amount, asset string
		public                  bool     // not confidential (external wallets)
		want                    *refusal // nil: submitted
	}{
		{"handle allowed", "@bob", "1", "", false, nil},
		{"handle in other case", "@BOB", "1", "", false, nil},
		{"address of an allowed handle", bob.PublicKey, "1", "", false, nil},
		{"handle not allowed", "@dave", "1", "", false, violation(confpay.RuleRecipientNotAllowed)},
		{"subdomain of a wildcard", "api.example.com", "1", "", false, nil},
		{"account named by a wildcard domain, paid by handle", "@carol", "1", "", false, nil},
		{"external wallet allowed", wallet, "1", "", true, nil},
		{"external wallet not allowed", "0x0000000000000000000000000000000000000001", "1", "", true, violation(confpay.RuleRecipientNotAllowed)},
		{"asset allowed at the reference rate", "@bob", "0.01", "ETH", false, nil}, // 30 USDG: equal to per-tx
		{"ETH one wei over per-tx", "@bob", "0.010000000000000001", "ETH", false, violation(confpay.RulePerTransactionLimit)},
		{"per-tx equal", "@bob", "30", "", false, nil},
		{"per-tx one unit above", "@bob", "30.000001", "", false, violation(confpay.RulePerTransactionLimit)},
		// Spent so far: 1+1+1+1+1+1+30+30 = 66. 34 left today.
		{"most of what is left", "@bob", "29", "", false, nil},
		{"daily: 5.000001 left is not enough", "@bob", "5.000001", "", false, violation(confpay.RuleDailyLimit)},
		{"daily reached exactly", "@bob", "5", "", false, nil},
		{"daily full", "@bob", "0.000001", "", false, violation(confpay.RuleDailyLimit)},
	}
	for _, st := range steps {
		before := f.available(a.AccountID, "USDG")
		tr, err := f.pay(agent, st.to, st.amount, st.asset)
		if st.public {
			tr, err = f.payPublic(agent, st.to, st.amount)
		}
		if st.want == nil {
			if err != nil || tr.TransferID == "" {
				t.Errorf("%s: %+v, %v; want submitted", st.name, tr, err)
			}
			continue
		}
		e := agWantError(t, err, st.want.status, st.want.code, "", st.want.rule)
		if e.Message == "" {
			t.Errorf("%s: no message", st.name)
		}
		if after := f.available(a.AccountID, "USDG"); after != before {
			t.Errorf("%s: a refusal moved money: %s -> %s", st.name, before, after)
		}
	}

	// Outside active hours: a minute past 17:00; then wrap the window.
	f.srv.Set(time.Date(2026, 1, 6, 17, 0, 59, 0, time.UTC))
	if _, err := f.pay(agent, "@bob", "1", ""); err != nil {
		t.Errorf("17:00:59 is inside 09:00-17:00: %v", err)
	}
	f.srv.Set(time.Date(2026, 1, 6, 17, 1, 0, 0, time.UTC))
	_, err := f.pay(agent, "@bob", "1", "")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleOutsideActiveHours)
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{ActiveHours: confpay.Ptr("17:01-08:59")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pay(agent, "@bob", "1", ""); err != nil {
		t.Errorf("17:01 is inside 17:01-08:59: %v", err)
	}
	f.srv.Set(time.Date(2026, 1, 7, 8, 59, 0, 0, time.UTC))
	if _, err := f.pay(agent, "@bob", "1", ""); err != nil {
		t.Errorf("08:59 next day is inside 17:01-08:59: %v", err)
	}
	f.srv.Set(time.Date(2026, 1, 7, 9, 0, 0, 0, time.UTC))
	_, err = f.pay(agent, "@bob", "1", "")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleOutsideActiveHours)

	// Asset not allowed, after the policy drops ETH.
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{Assets: []string{"USDG"}, ActiveHours: confpay.Ptr("00:00-23:59")}); err != nil {
		t.Fatal(err)
	}
	_, err = f.pay(agent, "@bob", "0.001", "ETH")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleAssetNotAllowed)

	// Status: paused and disabled agents cannot pay; active again, it can.
	for _, st := range []confpay.AgentStatus{confpay.AgentPaused, confpay.AgentDisabled} {
		if err := f.srv.SetAgentStatus(a.AccountID, st); err != nil {
			t.Fatal(err)
		}
		_, err = f.pay(agent, "@bob", "1", "")
		agWantError(t, err, 403, confpay.CodeAgentNotActive, "", "")
	}
	if err := f.srv.SetAgentStatus(a.AccountID, confpay.AgentActive); err != nil {
		t.Fatal(err)
	}
	f.mustPay(agent, "@bob", "1")

	// The balance: 402 when it does not cover the payment.
	b, poor := f.createAgent("poor", basePolicy)
	f.fund(b.AccountID, "USDG", "9.999999")
	_, err = f.pay(poor, "@bob", "10", "")
	agWantError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
}

// TestAgentsDailyLimitConcurrent: 100 concurrent 10 USDG payments under a
// daily limit of 500: exactly 50 go through, every time; the window
// releases the spend exactly 24 hours later.
func TestAgentsDailyLimitConcurrent(t *testing.T) {
	for round := 0; round < 3; round++ {
		f := newAgentsFixture(t)
		f.payee("@bob")
		a, agent := f.createAgent("bot", basePolicy)
		f.fund(a.AccountID, "USDG", "2000")
		start := f.srv.Now()

		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused, other := 0, 0, 0
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.pay(agent, "@bob", "10", "")
				var e *confpay.APIError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.As(err, &e) && e.Code == confpay.CodePolicyViolation && e.Rule == confpay.RuleDailyLimit:
					refused++
				default:
					other++
					t.Errorf("unexpected: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok != 50 || refused != 50 || other != 0 {
			t.Fatalf("round %d: %d submitted, %d refused, %d other; want 50, 50, 0", round, ok, refused, other)
		}
		if got := f.available(a.AccountID, "USDG"); got != "1500" {
			t.Fatalf("available = %s, want 1500", got)
		}
		if round > 0 {
			continue
		}
		// Confirmed payments still count; the window rolls exactly 24 h
		// after they were made.
		f.srv.Set(start.Add(24*time.Hour - time.Nanosecond))
		_, err := f.pay(agent, "@bob", "0.000001", "")
		agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
		f.srv.Set(start.Add(24 * time.Hour))
		for i := 0; i < 50; i++ {
			f.mustPay(agent, "@bob", "10")
		}
		_, err = f.pay(agent, "@bob", "0.000001", "")
		agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	}
}

// TestAgentsFailedTransferLeavesWindow: a failed payment stops counting
// against the daily limit at once.
func TestAgentsFailedTransferLeavesWindow(t *testing.T) {
	f := newAgentsFixture(t)
	f.payee("@bob")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: agLimit("50"), PerTransactionLimitUSDG: agLimit("50")})
	f.fund(a.AccountID, "USDG", "200")
	tr := f.mustPay(agent, "@bob", "50")
	_, err := f.pay(agent, "@bob", "1", "")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	if err := f.srv.FailTransfer(tr.TransferID); err != nil {
		t.Fatal(err)
	}
	f.mustPay(agent, "@bob", "50")
}

// TestAgentsPolicyAmendedMidStream: a change binds the next payment, never
// one already made, and the agent keeps working while it happens.
func TestAgentsPolicyAmendedMidStream(t *testing.T) {
	f := newAgentsFixture(t)
	f.payee("@bob")
	a, agent := f.createAgent("bot", basePolicy)
	f.fund(a.AccountID, "USDG", "1000")
	first := f.mustPay(agent, "@bob", "40")
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{PerTransactionLimitUSDG: agLimit("20")}); err != nil {
		t.Fatal(err)
	}
	_, err := f.pay(agent, "@bob", "40", "")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RulePerTransactionLimit)
	f.mustPay(agent, "@bob", "20")
	f.srv.Advance(time.Minute)
	rec, err := f.srv.Transfer(first.TransferID)
	if err != nil || rec.Status != confpay.StatusConfirmed || rec.Amount.String() != "40" {
		t.Errorf("the earlier payment = %+v, %v; want confirmed 40", rec, err)
	}

	// Payments and amendments at the same time: every payment is either
	// submitted or refused by the per-transaction rule, never anything else.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			l := "10"
			if i%2 == 0 {
				l = "1"
			}
			if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{PerTransactionLimitUSDG: agLimit(l)}); err != nil {
				t.Error(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			_, err := f.pay(agent, "@bob", "5", "")
			var e *confpay.APIError
			if err != nil && !(errors.As(err, &e) && e.StatusCode == http.StatusForbidden && e.Rule == confpay.RulePerTransactionLimit) {
				t.Errorf("payment during amendments: %v", err)
			}
		}
	}()
	wg.Wait()
}

// TestAgentsDailyWindowAfterClockSetBack: a payment that has left the
// rolling window counts again when the clock is set back to within 24
// hours of it (reading the window in between must not forget it).
func TestAgentsDailyWindowAfterClockSetBack(t *testing.T) {
	f := newAgentsFixture(t)
	f.payee("@bob")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: agLimit("50"), PerTransactionLimitUSDG: agLimit("50")})
	f.fund(a.AccountID, "USDG", "200")
	t0 := f.srv.Now()
	f.mustPay(agent, "@bob", "50")
	f.srv.Advance(25 * time.Hour)
	// Refused for its asset, but the window is read.
	_, err := f.pay(agent, "@bob", "1", "ETH")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleAssetNotAllowed)
	f.srv.Set(t0.Add(time.Hour))
	_, err = f.pay(agent, "@bob", "1", "")
	agWantError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	f.srv.Set(t0.Add(24 * time.Hour))
	f.mustPay(agent, "@bob", "1")
}
