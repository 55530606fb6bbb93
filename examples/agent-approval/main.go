// Command agent-approval gives software a wallet with a mandate: an owner
// creates an agent under a spend policy, the agent pays within it, a payment
// above the approval threshold is held, the owner opens its sealed figure
// with the owner's own key, and approves it.
//
// It runs on the embedded fakeserver:
//
//	go run ./examples/agent-approval
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agent-approval:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	srv := fakeserver.NewServer(fakeserver.WithRealClock(), fakeserver.WithBlockTime(200*time.Millisecond))
	defer srv.Close()

	owner, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@acme", Type: confpay.AccountBusiness, GenerateEncryptionKey: true})
	if err != nil {
		return err
	}
	if _, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@cloudshop", GenerateEncryptionKey: true}); err != nil {
		return err
	}
	ownerClient := srv.Client(owner.TestKey)
	ownerKey, err := decrypt.ParsePrivateKeyHex(owner.DecryptionKey.Reveal())
	if err != nil {
		return err
	}

	// The owner gives the agent a mandate.
	agent, err := ownerClient.Agents.Create(ctx, &confpay.AgentCreateParams{
		Name: "buyer",
		SpendPolicy: confpay.SpendPolicyParams{
			DailyLimitUSDG:          confpay.Ptr(confpay.MustParseLimit("500")),
			PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("200")),
			HITLThresholdUSDG:       confpay.Ptr(confpay.MustParseLimit("50")),
			AllowedRecipients:       []string{"@cloudshop"},
		},
	})
	if err != nil {
		return err
	}
	policy, err := ownerClient.Agents.GetPolicy(ctx, agent.AccountID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created agent %s: daily %s, per payment %s, held above %s USDG, pays only %v\n",
		agent.Handle, policy.DailyLimitUSDG, policy.PerTransactionLimitUSDG, policy.HITLThresholdUSDG, policy.AllowedRecipients)

	// The dashboard's jobs: an API key for the agent, and test money.
	agentKey, err := srv.IssueKey(agent.AccountID, confpay.NetworkTest, "buyer-bot")
	if err != nil {
		return err
	}
	if err := srv.Fund(agent.AccountID, confpay.NetworkTest, confpay.AssetUSDG, "1000"); err != nil {
		return err
	}
	agentClient := srv.Client(agentKey.APIKey)

	// A small payment goes straight through.
	small, err := agentClient.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@cloudshop", Amount: confpay.MustParseAmount("20"), Memo: "API credits"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "agent paid @cloudshop within its policy: %s %s\n", small.TransferID, small.Status)

	// A payment over the per-payment limit is refused, naming the rule.
	_, err = agentClient.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@cloudshop", Amount: confpay.MustParseAmount("250")})
	var apiErr *confpay.APIError
	if !errors.Is(err, confpay.ErrPolicyViolation) || !errors.As(err, &apiErr) {
		return fmt.Errorf("expected a policy violation, got %v", err)
	}
	fmt.Fprintf(out, "agent tried to pay over its per-payment limit: refused, rule %s\n", apiErr.Rule)

	// A payment above the approval threshold is held for the owner.
	// Create then returns no transfer but a *HeldError carrying the held
	// payment: nothing has moved yet.
	_, err = agentClient.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@cloudshop", Amount: confpay.MustParseAmount("120"), Memo: "annual plan"})
	var held *confpay.HeldError
	if !errors.As(err, &held) {
		return fmt.Errorf("expected the payment to be held, got %v", err)
	}
	fmt.Fprintf(out, "agent's larger payment is held: %s, expires %s\n", held.Payment.TransactionID, held.Payment.ExpiresAt.Format(time.RFC3339))

	// The owner sees the pending payment and opens its figure with the
	// owner's key: the service itself cannot.
	pending, err := ownerClient.Agents.ListPending(ctx)
	if err != nil {
		return err
	}
	for _, p := range pending {
		note, err := confpay.OpenAgentTransactionNote(ownerKey, ownerClient.ChainID(), p)
		if err != nil {
			return err
		}
		amount, err := confpay.NoteAmount(note)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "owner reviews %s from %s to %s: %s %s, memo %q\n", p.TransactionID, p.Agent, p.To, amount, p.Asset, note.Memo)
	}

	decision, err := ownerClient.Agents.Approve(ctx, held.Payment.TransactionID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "owner approved %s: submitted as %s\n", decision.TransactionID, decision.TransferID)

	t, err := waitConfirmed(ctx, agentClient, decision.TransferID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s\n", t.TransferID, t.Status)
	return nil
}

// waitConfirmed polls a transfer until it settles.
func waitConfirmed(ctx context.Context, c *confpay.Client, id string) (*confpay.Transfer, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		t, err := c.Transfers.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if t.Status != confpay.StatusPending {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}
