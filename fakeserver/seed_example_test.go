package fakeserver_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// Example_seed loads accounts, an agent with its spend policy and keys,
// and balances in one call, from the same JSON as the binary's -seed file.
// In a test, srv.Seed(t, seed) does the same and fails the test on error.
func Example_seed() {
	srv := fakeserver.NewServer()
	defer srv.Close()

	seed, err := fakeserver.ParseSeed([]byte(`{
	  "accounts": [
	    {"handle": "@alice", "generate_encryption_key": true, "balances": {"test": {"USDG": "100"}}},
	    {"handle": "@bob", "generate_encryption_key": true}
	  ],
	  "agents": [
	    {"owner": "@alice", "name": "buyer", "balances": {"test": {"USDG": "50"}},
	     "spend_policy": {"daily_limit_usdg": 500, "per_transaction_limit_usdg": 100, "hitl_threshold_usdg": 20}}
	  ]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := srv.Load(seed)
	if err != nil {
		fmt.Println(err)
		return
	}
	buyer := w.Agent("@alice/buyer")
	fmt.Println(buyer.Handle, buyer.Status, "threshold", buyer.SpendPolicy.HITLThresholdUSDG)

	bot := srv.Client(buyer.TestKey)
	tr, _ := bot.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("12.5")})
	fmt.Println("12.5 USDG:", tr.Status)

	// A bad seed names the member at fault and changes nothing.
	bad, _ := fakeserver.ParseSeed([]byte(`{"accounts": [{"handle": "@carol"}],
	  "agents": [{"owner": "@carol", "name": "bot", "spend_policy": {"daily_limit_usdg": 5}}]}`))
	_, err = srv.Load(bad)
	var se *fakeserver.SeedError
	if errors.As(err, &se) {
		fmt.Println("bad seed:", se.Field)
	}
	fmt.Println("accounts:", len(srv.Accounts()))
	// Output:
	// @alice/buyer active threshold 20
	// 12.5 USDG: pending
	// bad seed: agents[0].spend_policy.per_transaction_limit_usdg
	// accounts: 3
}

// Example_heldPaymentExpiry follows a held payment whose approval window
// closes: the direct API shows it expired; the service sees it leave the
// pending list, and a late decision answers 409 transaction_expired.
func Example_heldPaymentExpiry() {
	srv := fakeserver.NewServer()
	defer srv.Close()
	ctx := context.Background()

	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	buyer, _ := srv.CreateAgent("@alice", "buyer", confpay.SpendPolicyParams{
		DailyLimitUSDG:          confpay.Ptr(confpay.MustParseLimit("500")),
		PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("100")),
		HITLThresholdUSDG:       confpay.Ptr(confpay.MustParseLimit("20")),
	})
	_ = srv.Fund("@alice/buyer", confpay.NetworkTest, "USDG", "100")
	owner := srv.Client(alice.TestKey)
	bot := srv.Client(buyer.TestKey)

	_, err := bot.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("80")})
	var held *confpay.HeldError
	if !errors.As(err, &held) {
		fmt.Println(err)
		return
	}
	id := held.Payment.TransactionID
	p, _ := srv.HeldPayment(id)
	fmt.Println("held:", p.Status, p.Amount, "USDG")

	srv.Advance(24 * time.Hour) // the approval window closes
	p, _ = srv.HeldPayment(id)
	fmt.Println("after 24h:", p.Status)

	pending, _ := owner.Agents.ListPending(ctx)
	fmt.Println("pending:", len(pending))
	_, err = owner.Agents.Approve(ctx, id)
	fmt.Println("approve:", errors.Is(err, confpay.ErrTransactionExpired))
	// Output:
	// held: pending_approval 80 USDG
	// after 24h: expired
	// pending: 0
	// approve: true
}
