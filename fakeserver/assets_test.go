package fakeserver_test

import (
	"context"
	"errors"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestUSDCIsKnown: USDC (6 decimals) moves like USDG by default.
func TestUSDCIsKnown(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDC", "10")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "2.5", withAsset(confpay.AssetUSDC))
	srv.Settle()
	if got := settled(t, srv, "@bob", confpay.NetworkTest, "USDC"); got != "2.5" {
		t.Fatalf("bob holds %s USDC, want 2.5", got)
	}
	a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","asset":"USDC","amount":"0.0000001"}`)
	if e := a.err(); a.status != 400 || e.Param != "amount" {
		t.Fatalf("7 decimals of USDC: %d %s param %q, want 400 param amount", a.status, e.Code, e.Param)
	}
}

// TestAddAndRerateAssets: a test adds an asset over /_fake (and the Go
// API), pays in it, and re-rates one so that policies count it anew.
func TestAddAndRerateAssets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	key := f.owner.TestKey.Reveal()

	// Unknown until added.
	if a := rawCall(t, f.srv, "POST", "/v1/transfers", key, `{"to":"@bob","asset":"EURC","amount":"1"}`); a.status != 400 || a.err().Param != "asset" {
		t.Fatalf("unknown asset: %d %s", a.status, a.body)
	}
	policy := `{"name":"eu","spend_policy":{"daily_limit_usdg":100,"per_transaction_limit_usdg":10,"assets":["USDG","EURC"]}}`
	if a := rawCall(t, f.srv, "POST", "/v1/accounts/me/agents", key, policy); a.status != 400 || a.err().Code != confpay.CodeInvalidPolicy || a.err().Param != "spend_policy.assets[1]" {
		t.Fatalf("policy naming an unknown asset: %d %s", a.status, a.body)
	}

	// Bad definitions change nothing.
	before := f.srv.Snapshot()
	for _, tc := range []struct{ body, param string }{
		{`{"decimals":2,"usdg_rate":1.1}`, "code"},
		{`{"code":"eurc","decimals":2,"usdg_rate":1.1}`, "code"},
		{`{"code":"EURC","usdg_rate":1.1}`, "decimals"},
		{`{"code":"EURC","decimals":-1,"usdg_rate":1.1}`, "decimals"},
		{`{"code":"EURC","decimals":2}`, "usdg_rate"},
		{`{"code":"EURC","decimals":2,"usdg_rate":-1}`, "usdg_rate"},
		{`{"code":"USDG","decimals":6,"usdg_rate":2}`, "usdg_rate"},
		{`{"code":"ETH","decimals":6,"usdg_rate":2}`, "decimals"},
	} {
		if a := rawCall(t, f.srv, "POST", "/_fake/assets", "", tc.body); a.status != 400 || a.err().Param != tc.param {
			t.Errorf("POST /_fake/assets %s: %d %s, want 400 param %s", tc.body, a.status, a.body, tc.param)
		}
	}
	checkUnchanged(t, f.srv, before, "bad asset definitions")
	if got := f.srv.Assets(); len(got) != 3 {
		t.Fatalf("assets after bad definitions: %v", got)
	}

	if a := rawCall(t, f.srv, "POST", "/_fake/assets", "", `{"code":"EURC","decimals":2,"usdg_rate":1.1}`); a.status != 200 {
		t.Fatalf("add EURC: %d %s", a.status, a.body)
	}
	f.srv.AddFunds(t, "@alice", "EURC", "100")
	if a := rawCall(t, f.srv, "POST", "/v1/transfers", key, `{"to":"@bob","asset":"EURC","amount":"1.001"}`); a.status != 400 || a.err().Param != "amount" {
		t.Fatalf("3 decimals of a 2-decimal asset: %d %s", a.status, a.body)
	}
	if a := rawCall(t, f.srv, "POST", "/v1/transfers", key, `{"to":"@bob","asset":"EURC","amount":"1.01"}`); a.status != 201 {
		t.Fatalf("pay EURC: %d %s", a.status, a.body)
	}

	// The agent's per-transaction limit is 10 USDG; 9.5 EURC at 1.1 is
	// 10.45 USDG: refused. Re-rated to 1.0, the same payment passes.
	ag, agent := f.createAgent("eu", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("100"), PerTransactionLimitUSDG: limit("10"), Assets: []string{"USDG", "EURC"},
	})
	f.srv.AddFunds(t, ag.AccountID, "EURC", "50")
	pay := func() error {
		_, err := agent.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: "@bob", Asset: "EURC", Amount: confpay.MustParseAmount("9.5")})
		return err
	}
	var ae *confpay.APIError
	if err := pay(); !errors.As(err, &ae) || ae.Rule != "per_transaction_limit" {
		t.Fatalf("9.5 EURC at 1.1 USDG: %v, want per_transaction_limit", err)
	}
	if err := f.srv.SetAsset(fakeserver.Asset{Code: "EURC", Decimals: 2, USDGRate: confpay.MustParseLimit("1")}); err != nil {
		t.Fatal(err)
	}
	if err := pay(); err != nil {
		t.Fatalf("9.5 EURC at 1 USDG: %v", err)
	}
	if a := rawCall(t, f.srv, "GET", "/_fake/assets", "", ""); a.status != 200 {
		t.Fatalf("GET /_fake/assets: %d", a.status)
	}
}

// TestWithAsset: the option adds an asset from the start.
func TestWithAsset(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithAsset(fakeserver.Asset{Code: "WBTC", Decimals: 8, USDGRate: confpay.MustParseLimit("90000")}))
	newAccount(t, srv, "@alice")
	srv.AddFunds(t, "@alice", "WBTC", "0.00000001")
	if got := srv.Balance(t, "@alice", "WBTC").String(); got != "0.00000001" {
		t.Fatalf("alice holds %s WBTC", got)
	}
}
