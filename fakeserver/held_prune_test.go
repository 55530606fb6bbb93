package fakeserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestExpiredHeldPaymentsArePruned (issue 16 item 2's growth): an expired
// held payment answers 409 to a decision for the 30-day history window,
// then is forgotten like an unknown id (404), in the direct API too, so
// an agent held at its cap for months keeps memory flat.
func TestExpiredHeldPaymentsArePruned(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	limit := func(s string) *confpay.Limit { l := confpay.MustParseLimit(s); return &l }
	bot := srv.AddAgent(t, "@alice", "bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("1"),
	})
	srv.AddFunds(t, bot.Handle, "USDG", "100")
	owner := srv.Client(alice.TestKey)
	hold := func() string {
		t.Helper()
		_, err := bot.Client.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")})
		var held *confpay.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("payment above the threshold: %v, want held", err)
		}
		return held.Payment.TransactionID
	}
	old := hold()
	srv.Advance(25 * time.Hour) // the approval window (24 h) passes
	if _, err := owner.Agents.Approve(context.Background(), old); !errors.Is(err, confpay.ErrTransactionExpired) {
		t.Fatalf("decision a day after expiry: %v, want 409 transaction_expired", err)
	}
	if p := srv.Held(t, old); p.Status != confpay.DecisionExpired {
		t.Fatalf("status %s", p.Status)
	}
	srv.Advance(29 * 24 * time.Hour) // expired 29 days ago: still remembered
	hold()
	if _, err := owner.Agents.Approve(context.Background(), old); !errors.Is(err, confpay.ErrTransactionExpired) {
		t.Fatalf("decision 29 days after expiry: %v, want 409", err)
	}
	srv.Advance(2 * 24 * time.Hour) // now past the 30-day window
	recent := hold()
	if _, err := owner.Agents.Approve(context.Background(), old); !errors.Is(err, confpay.ErrTransactionNotFound) {
		t.Fatalf("decision 31 days after expiry: %v, want 404 transaction_not_found", err)
	}
	if _, err := srv.HeldPayment(old); err == nil {
		t.Fatal("the direct API still holds the pruned payment")
	}
	if p := srv.Held(t, recent); p.Status != confpay.DecisionPending {
		t.Fatalf("the payment just held: %s", p.Status)
	}
}
