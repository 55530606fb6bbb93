package fakeserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// seedJSON is a seed with every kind of member.
const seedJSON = `{
  "accounts": [
    {"handle": "@alice", "generate_encryption_key": true,
     "balances": {"test": {"USDG": "100", "ETH": "0.5"}, "live": {"USDG": "7"}}},
    {"handle": "@shop", "type": "business"}
  ],
  "agents": [
    {"owner": "@alice", "name": "buyer",
     "spend_policy": {"daily_limit_usdg": 500, "per_transaction_limit_usdg": 100, "hitl_threshold_usdg": 20},
     "balances": {"test": {"USDG": "50"}}},
    {"owner": "@ALICE", "name": "idle", "status": "paused",
     "spend_policy": {"daily_limit_usdg": 1, "per_transaction_limit_usdg": 1},
     "keys": [{"network": "test", "name": "ci"}, {"network": "test"}]}
  ]
}`

// TestSeedLoad: a JSON seed creates its accounts, agents (policy, status,
// keys) and balances, and answers them with working keys.
func TestSeedLoad(t *testing.T) {
	t.Parallel()
	seed, err := fakeserver.ParseSeed([]byte(seedJSON))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeserver.New(t)
	w := srv.Seed(t, seed)

	if len(w.Accounts) != 2 || len(w.Agents) != 2 {
		t.Fatalf("seeded %d accounts and %d agents, want 2 and 2", len(w.Accounts), len(w.Agents))
	}
	alice, buyer, idle := w.Account("@alice"), w.Agent("@alice/buyer"), w.Agent("@Alice/IDLE")
	if alice == nil || buyer == nil || idle == nil || w.Account("@nobody") != nil || w.Agent("@alice/nobody") != nil {
		t.Fatalf("lookups: alice %v, buyer %v, idle %v", alice, buyer, idle)
	}
	if alice.PrivateKey() == nil || w.Account("@shop").PrivateKey() != nil {
		t.Error("PrivateKey: want alice's generated key and none for @shop")
	}
	if alice.PrivateKey().PublicKey().Hex() != alice.EncryptionKey {
		t.Error("alice's private key does not match her encryption key")
	}
	if buyer.OwnerID != alice.AccountID || buyer.Name != "buyer" || buyer.Status != confpay.AgentActive {
		t.Errorf("buyer: owner %s name %s status %s", buyer.OwnerID, buyer.Name, buyer.Status)
	}
	if th := buyer.SpendPolicy.HITLThresholdUSDG; th == nil || th.String() != "20" || buyer.SpendPolicy.DailyLimitUSDG.String() != "500" {
		t.Errorf("buyer's policy: %+v", buyer.SpendPolicy)
	}
	if len(buyer.Keys) != 2 || buyer.TestKey == "" || buyer.LiveKey == "" {
		t.Errorf("buyer has %d keys (test %t, live %t), want a test and a live one", len(buyer.Keys), buyer.TestKey != "", buyer.LiveKey != "")
	}
	if len(idle.Keys) != 2 || idle.Keys[0].Name != "ci" || idle.Keys[1].Name != "default" || idle.LiveKey != "" || idle.TestKey != idle.Keys[0].APIKey {
		t.Errorf("idle's keys: %v (live %t)", idle.Keys, idle.LiveKey != "")
	}
	if v, _ := srv.Account("@alice/idle"); v.Status != confpay.AgentPaused {
		t.Errorf("idle's status %s, want paused", v.Status)
	}

	for _, c := range []struct {
		ref, asset string
		n          confpay.Network
		want       string
	}{
		{"@alice", "USDG", confpay.NetworkTest, "100"},
		{"@alice", "ETH", confpay.NetworkTest, "0.5"},
		{"@alice", "USDG", confpay.NetworkLive, "7"},
		{"@alice/buyer", "USDG", confpay.NetworkTest, "50"},
		{"@shop", "USDG", confpay.NetworkTest, "0"},
	} {
		if got := srv.BalanceOn(t, c.n, c.ref, c.asset); got.String() != c.want {
			t.Errorf("%s %s on %s: %s, want %s", c.ref, c.asset, c.n, got, c.want)
		}
	}

	// The keys work: the agent pays, and a payment above the threshold is held.
	ctx := context.Background()
	me, err := srv.Client(buyer.TestKey, noRetry).Accounts.Me(ctx)
	if err != nil || me.Handle != "@alice/buyer" {
		t.Fatalf("the agent's key: %v, %v", me, err)
	}
	if _, err := srv.Client(alice.LiveKey, noRetry).Accounts.Me(ctx); err != nil {
		t.Fatalf("alice's live key: %v", err)
	}
}

// TestSeedGoLiteral: a Seed written in Go loads as its JSON does.
func TestSeedGoLiteral(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	w := srv.Seed(t, &fakeserver.Seed{
		Accounts: []fakeserver.SeedAccount{
			{Handle: "@alice", GenerateEncryptionKey: true, Balances: fakeserver.Balances{"test": {"USDG": "100"}}},
		},
		Agents: []fakeserver.SeedAgent{
			{Owner: "@alice", Name: "buyer", SpendPolicy: confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("50")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("10"))}},
		},
	})
	if got := srv.Balance(t, "@alice", "USDG"); got.String() != "100" {
		t.Errorf("alice holds %s", got)
	}
	if a := w.Agent("@alice/buyer"); a == nil || a.SpendPolicy.PerTransactionLimitUSDG.String() != "10" {
		t.Errorf("buyer: %v", a)
	}
}

// TestSeedBadInput: a bad seed, whether it fails to parse or to load,
// answers a *SeedError naming the member at fault and changes nothing,
// even when part of it was already created.
func TestSeedBadInput(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@taken", GenerateEncryptionKey: true})
	srv.AddFunds(t, "@taken", "USDG", "5")
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@unverified", KYCStatus: confpay.KYCPending})
	before := srv.Snapshot()

	agent := func(fields string) string {
		return `{"accounts":[{"handle":"@owner","balances":{"test":{"USDG":"1"}}}],"agents":[{"owner":"@owner","name":"bot",` +
			`"spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}` + fields + `}]}`
	}
	huge := strings.Repeat("9", 77)       // above 2^256 base units once in USDG's 6 decimals
	half := "6" + strings.Repeat("0", 70) // 6e76 base units: below 2^256, twice above
	for _, c := range []struct{ seed, field string }{
		// parse
		{``, ""},
		{`[`, ""},
		{`{"accounts":[{"handle":"@alice","color":"red"}]}`, "accounts[0].color"},
		{`{"accounts":[],"accounts":[]}`, "accounts"},
		{`{"accounts":[{"handle":1}]}`, "accounts[0].handle"},
		{`{"agents":[{"owner":"@a","nme":"x"}]}`, "agents[0].nme"},
		{`{} {}`, ""},
		// accounts
		{`{"accounts":[{"handle":"@a"}]}`, "accounts[0].handle"},
		{`{"accounts":[{"handle":"@alice","type":"robot"}]}`, "accounts[0].type"},
		{`{"accounts":[{"handle":"@alice","kyc_status":"maybe"}]}`, "accounts[0].kyc_status"},
		{`{"accounts":[{"handle":"@alice","encryption_key":"02"}]}`, "accounts[0].encryption_key"},
		{`{"accounts":[{"handle":"@alice"},{"handle":"@ALICE"}]}`, "accounts[1].handle"},
		{`{"accounts":[{"handle":"@alice"},{"handle":"@Taken"}]}`, "accounts[1].handle"},
		{`{"accounts":[{"handle":"@alice","balances":{"main":{"USDG":"1"}}}]}`, "accounts[0].balances.main"},
		{`{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"1e3"}}}]}`, "accounts[0].balances.test.USDG"},
		{`{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"-1"}}}]}`, "accounts[0].balances.test.USDG"},
		{`{"accounts":[{"handle":"@alice","balances":{"test":{"DOGE":"1"}}}]}`, "accounts[0].balances.test.DOGE"},
		{`{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"` + huge + `"}}}]}`, "accounts[0].balances.test.USDG"},
		{`{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"` + half + `"}}},{"handle":"@bobby","balances":{"test":{"USDG":"` + half + `"}}}]}`, "accounts[1].balances.test.USDG"},
		// agents
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@taken","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}}]}`, "agents[0].owner"},
		{`{"accounts":[{"handle":"@owner","kyc_status":"pending"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}}]}`, "agents[0].owner"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"Bot!","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}}]}`, "agents[0].name"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot"}]}`, "agents[0].spend_policy.daily_limit_usdg"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":null}]}`, "agents[0].spend_policy"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5}}]}`, "agents[0].spend_policy.per_transaction_limit_usdg"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1,"assets":["DOGE"]}}]}`, "agents[0].spend_policy.assets[0]"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1,"colour":1}}]}`, "agents[0].spend_policy.colour"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":"5","per_transaction_limit_usdg":1}}]}`, "agents[0].spend_policy.daily_limit_usdg"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"daily_limit_usdg":9,"per_transaction_limit_usdg":1}}]}`, "agents[0].spend_policy.daily_limit_usdg"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1,"allowed_recipients":"@bob"}}]}`, "agents[0].spend_policy.allowed_recipients"},
		{agent(`,"status":"asleep"`), "agents[0].status"},
		{agent(`,"keys":[{"network":"test"},{"network":"main"}]`), "agents[0].keys[1].network"},
		{agent(`,"balances":{"test":{"USDG":"0"}}`), "agents[0].balances.test.USDG"},
		{`{"accounts":[{"handle":"@owner"}],"agents":[` +
			`{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}},` +
			`{"owner":"@owner","name":"BOT","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}}]}`, "agents[1].name"},
	} {
		seed, err := fakeserver.ParseSeed([]byte(c.seed))
		if err == nil {
			_, err = srv.Load(seed)
		}
		var se *fakeserver.SeedError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a *SeedError", c.seed, err)
			continue
		}
		if se.Field != c.field || se.Problem == "" {
			t.Errorf("%s: field %q (%v), want %q", c.seed, se.Field, err, c.field)
		}
		if strings.Contains(err.Error(), "99999") || strings.Contains(err.Error(), half) {
			t.Errorf("%s: the error %q echoes the figure", c.seed, err)
		}
		if diff := cmp.Diff(before, srv.Snapshot(), snapshotOptions); diff != "" {
			t.Fatalf("%s changed the server (-before +after):\n%s", c.seed, diff)
		}
	}
	if _, err := srv.Load(nil); err == nil {
		t.Error("Load(nil) succeeded")
	}
	// Nothing was loaded, so there is no seed to reset to.
	if _, err := srv.ResetToSeed(); err == nil {
		t.Error("ResetToSeed without a seed succeeded")
	}
	if diff := cmp.Diff(before, srv.Snapshot(), snapshotOptions); diff != "" {
		t.Fatalf("ResetToSeed without a seed changed the server:\n%s", diff)
	}
}

// TestResetToSeed: Reseed (and POST /_fake/reset?to=seed) empties the
// server and loads the seed Load loaded, with new keys; the caller's
// Seed can change after Load without changing the server's seed.
func TestResetToSeed(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	seed, err := fakeserver.ParseSeed([]byte(seedJSON))
	if err != nil {
		t.Fatal(err)
	}
	first := srv.Seed(t, seed)
	seed.Accounts[0].Handle = "@changed" // the server kept its own copy
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@extra"})
	srv.AddFunds(t, "@alice", "USDG", "1")

	again := srv.Reseed(t)
	if len(srv.Accounts()) != 4 || again.Account("@alice") == nil || again.Account("@changed") != nil {
		t.Fatalf("after Reseed: %d accounts", len(srv.Accounts()))
	}
	if got := srv.Balance(t, "@alice", "USDG"); got.String() != "100" {
		t.Errorf("alice holds %s after Reseed, want the seed's 100", got)
	}
	if again.Agent("@alice/buyer").TestKey == first.Agent("@alice/buyer").TestKey {
		t.Error("Reseed reused a key")
	}
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", first.Agent("@alice/buyer").TestKey.Reveal(), ""); a.status != 401 {
		t.Errorf("an old key after Reseed: %d, want 401", a.status)
	}

	a := rawCall(t, srv, "POST", "/_fake/reset?to=seed", "", "")
	var answer fakeserver.Seeded
	if err := json.Unmarshal(a.body, &answer); a.status != 200 || err != nil {
		t.Fatalf("POST /_fake/reset?to=seed: %d %s", a.status, a.body)
	}
	if len(answer.Accounts) != 2 || len(answer.Agents) != 2 || answer.Agent("@alice/idle").Keys[0].Name != "ci" {
		t.Fatalf("POST /_fake/reset?to=seed answered %d accounts, %d agents", len(answer.Accounts), len(answer.Agents))
	}
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", answer.Agent("@alice/buyer").TestKey.Reveal(), ""); a.status != 200 {
		t.Errorf("the answer's agent key: %d", a.status)
	}
}

// TestCreateAgent: the direct API creates an agent with the checks and
// errors of POST /v1/accounts/me/agents, and keys it.
func TestCreateAgent(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@pending", KYCStatus: confpay.KYCPending})
	policy := confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("50")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("10"))}

	bot := srv.AddAgent(t, alice.AccountID, "bot", policy)
	if bot.Handle != "@alice/bot" || bot.OwnerID != alice.AccountID || bot.TestKey == "" || bot.LiveKey == "" {
		t.Fatalf("bot: %s owner %s", bot.Handle, bot.OwnerID)
	}
	list, err := srv.Client(alice.TestKey, noRetry).Agents.List(context.Background())
	if err != nil || len(list) != 1 || list[0].AccountID != bot.AccountID || list[0].SpendPolicyID != bot.SpendPolicy.PolicyID {
		t.Fatalf("the owner lists %v, %v", list, err)
	}
	before := srv.Snapshot()
	for _, c := range []struct {
		owner, name string
		policy      confpay.SpendPolicyParams
		param       string
	}{
		{"@nobody", "bot", policy, "owner"},
		{"@alice/bot", "sub", policy, ""},
		{"@pending", "bot", policy, ""},
		{"@alice", "Bot!", policy, "name"},
		{"@alice", "BOT", policy, "name"},
		{"@alice", "other", confpay.SpendPolicyParams{DailyLimitUSDG: policy.DailyLimitUSDG}, "spend_policy.per_transaction_limit_usdg"},
		{"@alice", "other", confpay.SpendPolicyParams{DailyLimitUSDG: policy.DailyLimitUSDG, PerTransactionLimitUSDG: policy.PerTransactionLimitUSDG, Assets: []string{"DOGE"}}, "spend_policy.assets[0]"},
	} {
		_, err := srv.CreateAgent(c.owner, c.name, c.policy)
		if err == nil {
			t.Errorf("CreateAgent(%s, %s) succeeded", c.owner, c.name)
			continue
		}
		if diff := cmp.Diff(before, srv.Snapshot(), snapshotOptions); diff != "" {
			t.Fatalf("CreateAgent(%s, %s) changed the server:\n%s", c.owner, c.name, diff)
		}
		if msg := err.Error(); c.param != "" && !strings.Contains(msg, strings.TrimPrefix(c.param, "spend_policy.")) {
			t.Errorf("CreateAgent(%s, %s): %q does not name %s", c.owner, c.name, msg, c.param)
		}
	}
}

// TestHeldPaymentStatuses: the direct API (and /_fake/held) reads each held
// payment with its status, expired included, which /v1 never shows; the
// /v1 way to learn of an expiry is the pending list and a decision's 409.
func TestHeldPaymentStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := fakeserver.New(t)
	w := srv.Seed(t, &fakeserver.Seed{
		Accounts: []fakeserver.SeedAccount{{Handle: "@alice", GenerateEncryptionKey: true}, {Handle: "@bob", GenerateEncryptionKey: true}},
		Agents: []fakeserver.SeedAgent{{Owner: "@alice", Name: "buyer", Balances: fakeserver.Balances{"test": {"USDG": "500"}},
			SpendPolicy: confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("500")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("100")), HITLThresholdUSDG: confpay.Ptr(confpay.MustParseLimit("20"))}}},
	})
	owner := srv.Client(w.Account("@alice").TestKey, noRetry)
	bot := srv.Client(w.Agent("@alice/buyer").TestKey, noRetry)
	hold := func(amount, memo string) string {
		t.Helper()
		_, err := bot.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount(amount), Memo: memo})
		var held *confpay.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("pay %s: %v, want held", amount, err)
		}
		return held.Payment.TransactionID
	}
	approved, rejected := hold("30", "approve me"), hold("40", "")
	srv.Advance(time.Hour)
	expired := hold("50.25", "")

	if p := srv.Held(t, expired); p.Status != confpay.DecisionPending || p.Amount.String() != "50.25" || p.Agent != "@alice/buyer" || p.Network != confpay.NetworkTest {
		t.Errorf("waiting: %+v amount %s", p, p.Amount)
	}
	if _, err := owner.Agents.Approve(ctx, approved); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Agents.Reject(ctx, rejected); err != nil {
		t.Fatal(err)
	}
	srv.Advance(24 * time.Hour) // expired's window closes 24 h after it was held

	p := srv.Held(t, approved)
	tr, err := srv.Transfer(p.TransferID)
	if p.Status != confpay.DecisionApproved || p.DecidedAt == nil || err != nil || tr.Amount.String() != "30" || p.Memo != "approve me" {
		t.Errorf("approved: status %s, transfer %v (%v)", p.Status, tr, err)
	}
	if p := srv.Held(t, rejected); p.Status != confpay.DecisionRejected || p.TransferID != "" || p.Amount.String() != "40" {
		t.Errorf("rejected: %v", p)
	}
	if p := srv.Held(t, expired); p.Status != confpay.DecisionExpired || p.DecidedAt != nil || p.Amount.String() != "50.25" {
		t.Errorf("expired: %v", p)
	}

	// What the service sees on /v1: the payment left the pending list,
	// and a decision answers 409 transaction_expired.
	if pending, err := owner.Agents.ListPending(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending list after expiry: %v, %v", pending, err)
	}
	if _, err := owner.Agents.Approve(ctx, expired); !errors.Is(err, confpay.ErrTransactionExpired) {
		t.Errorf("approving an expired payment: %v, want ErrTransactionExpired", err)
	}

	for _, ref := range []string{"@alice", "@alice/buyer"} {
		list, err := srv.HeldPayments(ref, confpay.NetworkTest)
		if err != nil || len(list) != 3 || list[0].TransactionID != approved || list[1].TransactionID != rejected || list[2].TransactionID != expired {
			t.Errorf("HeldPayments(%s): %v, %v", ref, list, err)
		}
	}
	if list, err := srv.HeldPayments("@alice", confpay.NetworkLive); err != nil || len(list) != 0 {
		t.Errorf("live network: %v, %v", list, err)
	}
	if _, err := srv.HeldPayment("atx_nope"); err == nil {
		t.Error("HeldPayment of an unknown id succeeded")
	}

	a := rawCall(t, srv, "GET", "/_fake/held/"+expired, "", "")
	var one fakeserver.HeldPayment
	if err := json.Unmarshal(a.body, &one); a.status != 200 || err != nil || one.Status != confpay.DecisionExpired || one.Amount.String() != "50.25" {
		t.Errorf("GET /_fake/held/{id}: %d %s", a.status, a.body)
	}
	a = rawCall(t, srv, "GET", "/_fake/held?account=%40alice&network=test", "", "")
	var all struct{ Held []fakeserver.HeldPayment }
	if err := json.Unmarshal(a.body, &all); a.status != 200 || err != nil || len(all.Held) != 3 || all.Held[1].Status != confpay.DecisionRejected {
		t.Errorf("GET /_fake/held: %d %s", a.status, a.body)
	}
	for path, param := range map[string]string{"/_fake/held": "account", "/_fake/held?account=%40alice&network=main": "network"} {
		if a := rawCall(t, srv, "GET", path, "", ""); a.status != 400 || a.err().Param != param {
			t.Errorf("GET %s: %d %s, want 400 naming %s", path, a.status, a.body, param)
		}
	}
	if a := rawCall(t, srv, "GET", "/_fake/held/atx_nope", "", ""); a.status != 404 {
		t.Errorf("GET /_fake/held/atx_nope: %d", a.status)
	}
	// Printing never shows the amount or the memo (the id is random and
	// may hold the digits "30": it is taken out first).
	if s := fmt.Sprint(srv.Held(t, approved)); strings.Contains(strings.ReplaceAll(s, approved, ""), "30") || strings.Contains(s, "approve me") {
		t.Errorf("a printed HeldPayment leaks: %s", s)
	}
}

// failTester records a helper's failure instead of ending the test.
type failTester struct {
	failed string
}

func (f *failTester) Helper()                           {}
func (f *failTester) Cleanup(func())                    {}
func (f *failTester) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

// TestHelpersFail: each test helper fails the test on error, with a
// message that names the call and never a key or figure.
func TestHelpersFail(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	policy := confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("5")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("1"))}
	for name, call := range map[string]func(t fakeserver.Tester){
		"Seed": func(t fakeserver.Tester) {
			srv.Seed(t, &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@x"}}})
		},
		"Reseed":     func(t fakeserver.Tester) { srv.Reseed(t) },
		"AddAccount": func(t fakeserver.Tester) { srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"}) },
		"AddAgent":   func(t fakeserver.Tester) { srv.AddAgent(t, "@nobody", "bot", policy) },
		"AddFunds":   func(t fakeserver.Tester) { srv.AddFunds(t, "@alice", "USDG", "12345.1234567") },
		"Balance":    func(t fakeserver.Tester) { srv.Balance(t, "@alice", "DOGE") },
		"BalanceOn":  func(t fakeserver.Tester) { srv.BalanceOn(t, "main", "@alice", "USDG") },
		"Held":       func(t fakeserver.Tester) { srv.Held(t, "atx_nope") },
		"Inject":     func(t fakeserver.Tester) { srv.Inject(t, fakeserver.Fault{Action: "explode"}) },
		"CheckBalance": func(t fakeserver.Tester) {
			srv.CheckBalance(t, "@alice", "USDG", "12345.5") // alice holds 0
		},
		"CheckBalance(bad want)": func(t fakeserver.Tester) {
			srv.CheckBalance(t, "@alice", "USDG", "12345.1234567") // past USDG's 6 decimals
		},
	} {
		name, _, _ = strings.Cut(name, "(")
		ft := &failTester{}
		call(ft)
		if !strings.HasPrefix(ft.failed, "fakeserver: "+name) {
			t.Errorf("%s failed with %q", name, ft.failed)
		}
		if strings.Contains(ft.failed, "12345") {
			t.Errorf("%s: %q echoes the figure", name, ft.failed)
		}
	}
}

// TestBalanceIsAvailable: Balance is what the account can spend: a
// pending payment's reservation counts at once, and the recipient is
// credited at confirmation.
func TestBalanceIsAvailable(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bobby", GenerateEncryptionKey: true})
	srv.AddFunds(t, "@alice", "USDG", "100")
	_, err := srv.Client(alice.TestKey, noRetry).Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bobby", Amount: confpay.MustParseAmount("12.5")})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := srv.Balance(t, "@alice", "USDG"), srv.Balance(t, "@bobby", "USDG"); a.String() != "87.5" || !b.IsZero() {
		t.Errorf("pending: alice %s, bobby %s; want 87.5 and 0", a, b)
	}
	srv.Advance(time.Second)
	if a, b := srv.Balance(t, "@alice", "USDG"), srv.Balance(t, "@bobby", "USDG"); a.String() != "87.5" || b.Cmp(confpay.MustParseAmount("12.5")) != 0 {
		t.Errorf("confirmed: alice %s, bobby %s; want 87.5 and 12.5", a, b)
	}
	if got := srv.BalanceOn(t, confpay.NetworkLive, "@alice", "USDG"); !got.IsZero() {
		t.Errorf("live: %s", got)
	}
}

// TestCheckBalance: CheckBalance compares exactly (any spelling of the
// figure) and passes or fails the test.
func TestCheckBalance(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	srv.AddFunds(t, "@alice", "USDG", "87.5")
	for want, ok := range map[string]bool{"87.5": true, "87.500000": true, "87.50": true, "87.4": false, "87.500001": false, "0": false} {
		ft := &failTester{}
		srv.CheckBalance(ft, "@ALICE", "USDG", want)
		if (ft.failed == "") != ok {
			t.Errorf("CheckBalance(%s): failed %q, want pass %v", want, ft.failed, ok)
		}
		if strings.Contains(ft.failed, "87") {
			t.Errorf("CheckBalance(%s): %q shows a figure", want, ft.failed)
		}
	}
	srv.CheckBalance(t, "@alice", "ETH", "0")
}

// TestInjectAndAccountClient: Inject scripts a fault in one call, and an
// AccountInfo carries a client with its test key, as an AgentInfo does.
func TestInjectAndAccountClient(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice"})
	seeded := srv.Seed(t, &fakeserver.Seed{Accounts: []fakeserver.SeedAccount{{Handle: "@bobby"}}})
	id := srv.Inject(t, fakeserver.Fault{Method: "GET", Path: "/v1/accounts/me", Times: 1, Action: fakeserver.FaultError, Status: 503})
	if f := srv.Faults(); len(f) != 1 || f[0].ID != id {
		t.Fatalf("faults %+v, want the one injected (%s)", f, id)
	}
	me, err := alice.Client.Accounts.Me(t.Context())
	if err != nil || me.Handle != "@alice" {
		t.Fatalf("alice's client: %v, %v", me, err)
	}
	if f := srv.Faults(); f[0].Used != 1 {
		t.Errorf("the fault was used %d times, want 1 (the client retried the 503)", f[0].Used)
	}
	if me, err := seeded.Account("@bobby").Client.Accounts.Me(t.Context()); err != nil || me.Handle != "@bobby" {
		t.Errorf("a seeded account's client: %v, %v", me, err)
	}
}

func FuzzParseSeed(f *testing.F) {
	for _, s := range []string{
		seedJSON,
		`{"accounts":[{"handle":"@alice","generate_encryption_key":true,"balances":{"test":{"USDG":"100"}}}]}`,
		`{"accounts":[{"handle":"@shop","type":"business","kyc_status":"pending","balances":{"live":{"ETH":"0.5"}}}]}`,
		`{"accounts":[]}`, `{}`, `{"accounts":[{"handle":"@a"}]}`, `{"accounts":[{"handle":"@bob","balances":{"test":{"USDG":"-1"}}}]}`,
		`{"accounts":[{"handle":"@bob","encryption_key":"02"}]}`, `{"x":1}`, `{} {}`, `[`,
		`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"bot","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1},"keys":[]}]}`,
		`{"accounts":[{"handle":"@owner"}],"agents":[{"owner":"@owner","name":"a","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}},{"owner":"@owner","name":"a","spend_policy":{}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seed, err := fakeserver.ParseSeed(b)
		if err != nil {
			var se *fakeserver.SeedError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSeed: %T %v, want a *SeedError", err, err)
			}
			return
		}
		srv := fakeserver.NewUnstartedServer()
		defer srv.Close()
		w, err := srv.Load(seed)
		if err != nil {
			var se *fakeserver.SeedError
			if !errors.As(err, &se) {
				t.Fatalf("Load: %T %v, want a *SeedError", err, err)
			}
			if n := len(srv.Accounts()); n != 0 {
				t.Fatalf("a failed Load left %d accounts", n)
			}
			return
		}
		if len(w.Accounts) != len(seed.Accounts) || len(w.Agents) != len(seed.Agents) || len(srv.Accounts()) != len(w.Accounts)+len(w.Agents) {
			t.Fatalf("%d accounts and %d agents seeded, %d made", len(seed.Accounts), len(seed.Agents), len(srv.Accounts()))
		}
	})
}
