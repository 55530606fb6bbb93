package fakeserver_test

import (
	"encoding/json"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestPolicySeedAndDirectAPI: a seed (and CreateAgent) sets the policy on
// both networks; the direct API reads and sets one network's.
func TestPolicySeedAndDirectAPI(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	seeded := srv.Seed(t, &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@alice"}}, Agents: []fakeserver.SeedAgent{{
		Owner: "@alice", Name: "buyer", SpendPolicy: json.RawMessage(`{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 100}`),
	}}})
	buyer, alice := seeded.Agent("@alice/buyer"), seeded.Account("@alice")
	for _, key := range []string{alice.TestKey.Reveal(), alice.LiveKey.Reveal()} {
		if _, p, e := policyOver(t, srv.Handler(), "GET", buyer.AccountID, key, ""); p == nil || !policiesEqual(p, buyer.SpendPolicy) {
			t.Errorf("seeded policy on %s = %+v %+v; want %+v", key[:8], p, e, buyer.SpendPolicy)
		}
	}

	srv.Advance(time.Minute)
	set, err := srv.SetPolicy(buyer.AccountID, confpay.NetworkLive, confpay.SpendPolicyParams{DailyLimitUSDG: limit("300")})
	if err != nil || set.DailyLimitUSDG.String() != "300" || set.PerTransactionLimitUSDG.String() != "100" || !set.UpdatedAt.Equal(srv.Now()) {
		t.Fatalf("SetPolicy(live) = %+v, %v", set, err)
	}
	test, err := srv.Policy("@alice/buyer", confpay.NetworkTest)
	if err != nil || !policiesEqual(test, buyer.SpendPolicy) {
		t.Errorf("Policy(test) = %+v, %v; want the seeded one", test, err)
	}
	snap := srv.Snapshot()
	if got := snap.Networks[confpay.NetworkLive].Policies[buyer.AccountID]; !policiesEqual(&got, set) {
		t.Errorf("live snapshot policy = %+v", got)
	}
	if got := snap.Networks[confpay.NetworkTest].Policies[buyer.AccountID]; !policiesEqual(&got, buyer.SpendPolicy) {
		t.Errorf("test snapshot policy = %+v", got)
	}
	evs, _ := srv.Events("@alice", confpay.NetworkLive)
	if len(evs) != 1 || evs[0].Kind != webhookverify.KindAgentPolicyUpdated {
		t.Errorf("live events after SetPolicy: %v", evs)
	}
	if evs, _ := srv.Events("@alice", confpay.NetworkTest); len(evs) != 0 {
		t.Errorf("test events after a live SetPolicy: %v", evs)
	}

	// Errors: bad input names the field; an account that is no agent and
	// a bad network are refused.
	if _, err := srv.SetPolicy(buyer.AccountID, confpay.NetworkTest, confpay.SpendPolicyParams{DailyLimitUSDG: limit("1")}); err == nil {
		t.Error("SetPolicy below the per-transaction limit succeeded")
	}
	if _, err := srv.Policy("@alice", confpay.NetworkTest); err == nil {
		t.Error("Policy of an account that is no agent succeeded")
	}
	if _, err := srv.Policy(buyer.AccountID, "main"); err == nil {
		t.Error("Policy on an unknown network succeeded")
	}
}
