package fakeserver_test

import (
	"context"
	"errors"
	"fmt"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// Example_agentApproval is the agent flow end to end: an owner creates an
// agent with a spend policy, the agent pays with its own key, a payment
// above the approval threshold is held, the owner approves it, and a
// payment over the per-transaction limit is refused with its rule.
func Example_agentApproval() {
	srv := fakeserver.NewServer()
	defer srv.Close()
	ctx := context.Background()

	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	owner := srv.Client(alice.TestKey)

	daily, perTx, threshold := confpay.MustParseLimit("500"), confpay.MustParseLimit("100"), confpay.MustParseLimit("20")
	agent, err := owner.Agents.Create(ctx, &confpay.AgentCreateParams{
		Name: "shopper",
		SpendPolicy: confpay.SpendPolicyParams{
			DailyLimitUSDG: &daily, PerTransactionLimitUSDG: &perTx, HITLThresholdUSDG: &threshold,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(agent.Handle, agent.Status)

	// The dashboard's job: fund the agent and give it a key.
	_ = srv.Fund(agent.AccountID, confpay.NetworkTest, "USDG", "200")
	key, _ := srv.IssueKey(agent.AccountID, confpay.NetworkTest, "shopper")
	bot := srv.Client(key.APIKey)

	pay := func(amount string) (*confpay.Transfer, error) {
		return bot.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount(amount)})
	}
	small, _ := pay("15")
	fmt.Println("15 USDG:", small.Status)
	_, err = pay("80")
	var held *confpay.HeldError
	if errors.As(err, &held) {
		fmt.Println("80 USDG:", held.Payment.Status)
	}

	pending, _ := owner.Agents.ListPending(ctx)
	fmt.Println("pending:", len(pending), pending[0].Agent)
	decided, _ := owner.Agents.Approve(ctx, held.Payment.TransactionID)
	fmt.Println("decision:", decided.Status, decided.TransferID != "")

	_, err = pay("150")
	var apiErr *confpay.APIError
	if errors.As(err, &apiErr) && errors.Is(err, confpay.ErrPolicyViolation) {
		fmt.Println("150 USDG:", apiErr.StatusCode, apiErr.Code, apiErr.Rule)
	}
	// Output:
	// @alice/shopper active
	// 15 USDG: pending
	// 80 USDG: pending_approval
	// pending: 1 @alice/shopper
	// decision: approved true
	// 150 USDG: 403 policy_violation per_transaction_limit
}
