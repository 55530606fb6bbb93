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

// TestAgentsPayRules drives every rule through POST /v1/transfers with the
// agent's own key, at its boundaries, and checks that a refusal moves
// nothing.
func TestAgentsPayRules(t *testing.T) {
	f := newFixture(t, fakeserver.WithETHRate(confpay.MustParseLimit("3000")))
	bob := newAccount(t, f.srv, "@bob").info
	carol := newAccount(t, f.srv, "@carol").info
	newAccount(t, f.srv, "@dave")
	if err := f.srv.RegisterDomain(carol.AccountID, "api.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.RegisterDomain(carol.AccountID, "example.com"); err != nil {
		t.Fatal(err)
	}
	wallet := "0x52908400098527886E0F7030069857D2E4169EE7"
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("100"), PerTransactionLimitUSDG: limit("30"),
		AllowedRecipients: []string{"@bob", "*.example.com", wallet},
		Assets:            []string{"USDG", "ETH"},
		ActiveHours:       confpay.Ptr("09:00-17:00"), // the clock starts at 09:00
	})
	f.srv.AddFunds(t, a.AccountID, "USDG", "1000")
	f.srv.AddFunds(t, a.AccountID, "ETH", "1")

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
		before := f.srv.Balance(t, a.AccountID, "USDG").String()
		tr, err := pay(agent, st.to, st.amount, orderMemo, withAsset(st.asset))
		if st.public {
			tr, err = pay(agent, st.to, st.amount, public())
		}
		if st.want == nil {
			if err != nil || tr.TransferID == "" {
				t.Errorf("%s: %+v, %v; want submitted", st.name, tr, err)
			}
			continue
		}
		e := wantAPIError(t, err, st.want.status, st.want.code, "", st.want.rule)
		if e.Message == "" {
			t.Errorf("%s: no message", st.name)
		}
		if after := f.srv.Balance(t, a.AccountID, "USDG").String(); after != before {
			t.Errorf("%s: a refusal moved money: %s -> %s", st.name, before, after)
		}
	}

	// Outside active hours: a minute past 17:00; then wrap the window.
	f.srv.Set(time.Date(2026, 1, 6, 17, 0, 59, 0, time.UTC))
	if _, err := pay(agent, "@bob", "1", orderMemo); err != nil {
		t.Errorf("17:00:59 is inside 09:00-17:00: %v", err)
	}
	f.srv.Set(time.Date(2026, 1, 6, 17, 1, 0, 0, time.UTC))
	_, err := pay(agent, "@bob", "1", orderMemo)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleOutsideActiveHours)
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{ActiveHours: confpay.Ptr("17:01-08:59")}); err != nil {
		t.Fatal(err)
	}
	if _, err := pay(agent, "@bob", "1", orderMemo); err != nil {
		t.Errorf("17:01 is inside 17:01-08:59: %v", err)
	}
	f.srv.Set(time.Date(2026, 1, 7, 8, 59, 0, 0, time.UTC))
	if _, err := pay(agent, "@bob", "1", orderMemo); err != nil {
		t.Errorf("08:59 next day is inside 17:01-08:59: %v", err)
	}
	f.srv.Set(time.Date(2026, 1, 7, 9, 0, 0, 0, time.UTC))
	_, err = pay(agent, "@bob", "1", orderMemo)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleOutsideActiveHours)

	// Asset not allowed, after the policy drops ETH.
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{Assets: []string{"USDG"}, ActiveHours: confpay.Ptr("00:00-23:59")}); err != nil {
		t.Fatal(err)
	}
	_, err = pay(agent, "@bob", "0.001", orderMemo, withAsset("ETH"))
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleAssetNotAllowed)

	// Status: paused and disabled agents cannot pay; active again, it can.
	for _, st := range []confpay.AgentStatus{confpay.AgentPaused, confpay.AgentDisabled} {
		if err := f.srv.SetAgentStatus(a.AccountID, st); err != nil {
			t.Fatal(err)
		}
		_, err = pay(agent, "@bob", "1", orderMemo)
		wantAPIError(t, err, 403, confpay.CodeAgentNotActive, "", "")
	}
	if err := f.srv.SetAgentStatus(a.AccountID, confpay.AgentActive); err != nil {
		t.Fatal(err)
	}
	send(t, agent, "@bob", "1")

	// The balance: 402 when it does not cover the payment.
	b, poor := f.createAgent("poor", basePolicy)
	f.srv.AddFunds(t, b.AccountID, "USDG", "9.999999")
	_, err = pay(poor, "@bob", "10", orderMemo)
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
}

// TestAgentsDailyLimitConcurrent: 100 concurrent 10 USDG payments under a
// daily limit of 500: exactly 50 go through, every time; the window
// releases the spend exactly 24 hours later.
func TestAgentsDailyLimitConcurrent(t *testing.T) {
	for round := 0; round < 3; round++ {
		f := newFixture(t)
		newAccount(t, f.srv, "@bob")
		a, agent := f.createAgent("bot", basePolicy)
		f.srv.AddFunds(t, a.AccountID, "USDG", "2000")
		start := f.srv.Now()

		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused, other := 0, 0, 0
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := pay(agent, "@bob", "10", orderMemo)
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
		if got := f.srv.Balance(t, a.AccountID, "USDG").String(); got != "1500" {
			t.Fatalf("available = %s, want 1500", got)
		}
		if round > 0 {
			continue
		}
		// Confirmed payments still count; the window rolls exactly 24 h
		// after they were made.
		f.srv.Set(start.Add(24*time.Hour - time.Nanosecond))
		_, err := pay(agent, "@bob", "0.000001", orderMemo)
		wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
		f.srv.Set(start.Add(24 * time.Hour))
		for i := 0; i < 50; i++ {
			send(t, agent, "@bob", "10")
		}
		_, err = pay(agent, "@bob", "0.000001", orderMemo)
		wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	}
}

// TestAgentsFailedTransferLeavesWindow: a failed payment stops counting
// against the daily limit at once.
func TestAgentsFailedTransferLeavesWindow(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("50"), PerTransactionLimitUSDG: limit("50")})
	f.srv.AddFunds(t, a.AccountID, "USDG", "200")
	tr := send(t, agent, "@bob", "50")
	_, err := pay(agent, "@bob", "1", orderMemo)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	if err := f.srv.FailTransfer(tr.TransferID); err != nil {
		t.Fatal(err)
	}
	send(t, agent, "@bob", "50")
}

// TestAgentsPolicyAmendedMidStream: a change binds the next payment, never
// one already made, and the agent keeps working while it happens.
func TestAgentsPolicyAmendedMidStream(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", basePolicy)
	f.srv.AddFunds(t, a.AccountID, "USDG", "1000")
	first := send(t, agent, "@bob", "40")
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{PerTransactionLimitUSDG: limit("20")}); err != nil {
		t.Fatal(err)
	}
	_, err := pay(agent, "@bob", "40", orderMemo)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RulePerTransactionLimit)
	send(t, agent, "@bob", "20")
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
			if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{PerTransactionLimitUSDG: limit(l)}); err != nil {
				t.Error(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			_, err := pay(agent, "@bob", "5", orderMemo)
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
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("50"), PerTransactionLimitUSDG: limit("50")})
	f.srv.AddFunds(t, a.AccountID, "USDG", "200")
	t0 := f.srv.Now()
	send(t, agent, "@bob", "50")
	f.srv.Advance(25 * time.Hour)
	// Refused for its asset, but the window is read.
	_, err := pay(agent, "@bob", "1", orderMemo, withAsset("ETH"))
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleAssetNotAllowed)
	f.srv.Set(t0.Add(time.Hour))
	_, err = pay(agent, "@bob", "1", orderMemo)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	f.srv.Set(t0.Add(24 * time.Hour))
	send(t, agent, "@bob", "1")
}
