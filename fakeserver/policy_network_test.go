package fakeserver_test

// Spend policies are per network (decisions.md, "Agents, spend policies,
// held payments"): a key of one network reads and changes only that
// network's policy, the judge and the approval re-check use the policy of
// the payment's network, and agent.policy.updated goes out on that network
// only. (The first version shared them: a test key raised a live agent's
// limits, and the live agent paid past its owner's limit with no live
// event.)

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// policyOver reads a policy answer of h (the server's Handler) for key.
func policyOver(t *testing.T, h http.Handler, method, agentID, key, body string) (int, *confpay.SpendPolicy, confpay.ErrorBody) {
	t.Helper()
	a := serve(h, method, "/v1/agents/"+agentID+"/spend-policy", key, body)
	if a.status != http.StatusOK {
		return a.status, nil, a.err()
	}
	var p confpay.SpendPolicy
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("%s policy: %v in %s", method, err, a.body)
	}
	return a.status, &p, confpay.ErrorBody{}
}

// TestPolicyTestKeyNeverChangesLive: a test key's PATCH raising every
// limit of an agent created with a live key changes the test network's
// policy only; the live policy, the live payment it refuses and the live
// events are as before.
func TestPolicyTestKeyNeverChangesLive(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	h := srv.Handler()
	liveOwner := newClient(t, srv, alice.live(), nil, noRetry)
	liveHooks := srv.RecordOn(t, confpay.NetworkLive, "@alice", webhookverify.KindAgentPolicyUpdated)
	testHooks := srv.RecordOn(t, confpay.NetworkTest, "@alice", webhookverify.KindAgentPolicyUpdated)

	agent, err := liveOwner.Agents.Create(t.Context(), &confpay.AgentCreateParams{Name: "bot", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("100"), PerTransactionLimitUSDG: limit("50"), HITLThresholdUSDG: limit("40"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	liveKey, err := srv.IssueKey(agent.AccountID, confpay.NetworkLive, "agent")
	if err != nil {
		t.Fatal(err)
	}
	fundOn(t, srv, agent.AccountID, confpay.NetworkLive, "USDG", "1000")
	liveBefore, err := liveOwner.Agents.GetPolicy(t.Context(), agent.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Hour)

	// The test key raises every limit and drops the threshold: the test
	// network's policy, and only it, changes.
	status, p, e := policyOver(t, h, "PATCH", agent.AccountID, alice.test(),
		`{"daily_limit_usdg": 5000, "per_transaction_limit_usdg": 5000, "hitl_threshold_usdg": null}`)
	if status != 200 || p.DailyLimitUSDG.String() != "5000" || p.PerTransactionLimitUSDG.String() != "5000" || p.HITLThresholdUSDG != nil {
		t.Fatalf("test PATCH = %d %+v %+v", status, p, e)
	}
	if p.PolicyID != agent.SpendPolicyID || !p.UpdatedAt.Equal(srv.Now()) {
		t.Errorf("test policy id %q updated %v; want %q, %v", p.PolicyID, p.UpdatedAt, agent.SpendPolicyID, srv.Now())
	}
	status, live, e := policyOver(t, h, "GET", agent.AccountID, alice.live(), "")
	if status != 200 || !policiesEqual(live, liveBefore) {
		t.Errorf("live policy after a test PATCH = %d %+v %+v; want %+v", status, live, e, liveBefore)
	}

	// The live agent is still held to its live limits.
	agentLive := newClient(t, srv, liveKey.APIKey.Reveal(), nil, noRetry)
	_, err = pay(agentLive, "@bob", "400")
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", "per_transaction_limit")
	hold(t, agentLive, "@bob", "45") // above the live threshold
	if b := srv.BalanceOn(t, confpay.NetworkLive, agent.AccountID, "USDG"); b.String() != "1000" {
		t.Errorf("live balance %s, want 1000: the live agent paid past its policy", b)
	}

	// A live change is heard on live, once; the test change on test, once.
	if _, err := liveOwner.Agents.UpdatePolicy(t.Context(), agent.AccountID, &confpay.SpendPolicyParams{ActiveHours: confpay.Ptr("08:00-20:00")}); err != nil {
		t.Fatal(err)
	}
	lev := liveHooks.Wait(t, webhookverify.KindAgentPolicyUpdated).(*webhookverify.PolicyUpdatedEvent)
	tev := testHooks.Wait(t, webhookverify.KindAgentPolicyUpdated).(*webhookverify.PolicyUpdatedEvent)
	if !slices.Equal(lev.ChangedFields, []string{"active_hours"}) {
		t.Errorf("live event changed %v, want the live change only", lev.ChangedFields)
	}
	if !slices.Equal(tev.ChangedFields, []string{"daily_limit_usdg", "per_transaction_limit_usdg"}) {
		t.Errorf("test event changed %v", tev.ChangedFields)
	}
	for n, want := range map[confpay.Network]string{confpay.NetworkLive: "active_hours", confpay.NetworkTest: "daily_limit_usdg"} {
		evs, err := srv.Events("@alice", n)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range evs {
			if r.Kind == webhookverify.KindAgentPolicyUpdated {
				ev, _ := r.Event()
				got = append(got, ev.(*webhookverify.PolicyUpdatedEvent).ChangedFields[0])
			}
		}
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s policy events %v, want one (%s)", n, got, want)
		}
	}
	liveHooks.AssertKinds(t, webhookverify.KindAgentPolicyUpdated)
	testHooks.AssertKinds(t, webhookverify.KindAgentPolicyUpdated)
}

// TestPolicyOtherNetworkAllowsNothing: an agent created with a test key
// has, on live, a policy that allows nothing until a live key sets both
// limits; a live PATCH of one limit is 400 for the merged result and
// changes nothing.
func TestPolicyOtherNetworkAllowsNothing(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	h := srv.Handler()
	created := srv.Now()
	a := serve(h, "POST", "/v1/accounts/me/agents", alice.test(),
		`{"name":"bot","spend_policy":{"daily_limit_usdg":500,"per_transaction_limit_usdg":50,"allowed_recipients":["@bob"]}}`)
	if a.status != 201 {
		t.Fatalf("create = %d %s", a.status, a.body)
	}
	var agent confpay.Agent
	a.decode(t, &agent)
	liveKey, err := srv.IssueKey(agent.AccountID, confpay.NetworkLive, "agent")
	if err != nil {
		t.Fatal(err)
	}
	testKey, err := srv.IssueKey(agent.AccountID, confpay.NetworkTest, "agent")
	if err != nil {
		t.Fatal(err)
	}
	fundOn(t, srv, agent.AccountID, confpay.NetworkLive, "USDG", "100")
	srv.AddFunds(t, agent.AccountID, "USDG", "100")
	srv.Advance(time.Minute)

	// Each network's GET shows its own policy, under the agent's one id.
	_, test, _ := policyOver(t, h, "GET", agent.AccountID, alice.test(), "")
	_, live, _ := policyOver(t, h, "GET", agent.AccountID, alice.live(), "")
	if test == nil || test.DailyLimitUSDG.String() != "500" || !slices.Equal(test.AllowedRecipients, []string{"@bob"}) {
		t.Errorf("test policy = %+v", test)
	}
	if live == nil || live.PolicyID != agent.SpendPolicyID || live.DailyLimitUSDG.String() != "0" || live.PerTransactionLimitUSDG.String() != "0" ||
		live.AllowedRecipients != nil || !slices.Equal(live.Assets, []string{"USDG"}) || live.ActiveHours != "00:00-23:59" ||
		live.HITLThresholdUSDG != nil || !live.UpdatedAt.Equal(created) {
		t.Fatalf("live policy of an agent created with a test key = %+v", live)
	}
	if r := serve(h, "GET", "/v1/agents/"+agent.AccountID+"/spend-policy", alice.live(), ""); !json.Valid(r.body) ||
		strings.TrimSpace(string(r.body)) != `{"policy_id":"`+agent.SpendPolicyID+`","daily_limit_usdg":0,"per_transaction_limit_usdg":0,"assets":["USDG"],"active_hours":"00:00-23:59","updated_at":"`+created.Format(time.RFC3339Nano)+`"}` {
		t.Errorf("live policy on the wire: %s", r.body)
	}

	// On live every payment fails the per-transaction limit; on test the
	// agent pays.
	agentLive := newClient(t, srv, liveKey.APIKey.Reveal(), nil, noRetry)
	_, err = pay(agentLive, "@bob", "0.000001")
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", "per_transaction_limit")
	send(t, newClient(t, srv, testKey.APIKey.Reveal(), nil, noRetry), "@bob", "1")

	// A live PATCH of one limit (or of neither) fails for the merged
	// result and changes nothing.
	before := srv.Snapshot()
	for _, c := range []struct{ body, param string }{
		{`{"daily_limit_usdg": 200}`, "per_transaction_limit_usdg"},
		{`{"per_transaction_limit_usdg": 20}`, "daily_limit_usdg"},
		{`{"allowed_recipients": ["@bob"]}`, "daily_limit_usdg"},
		{`{}`, "daily_limit_usdg"},
	} {
		status, p, e := policyOver(t, h, "PATCH", agent.AccountID, alice.live(), c.body)
		if status != 400 || e.Code != confpay.CodeInvalidPolicy || e.Param != c.param {
			t.Errorf("live PATCH %s = %d %+v %+v; want 400 invalid_policy %s", c.body, status, p, e, c.param)
		}
		checkUnchanged(t, srv, before, "live PATCH "+c.body)
	}
	_, err = pay(agentLive, "@bob", "1")
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", "per_transaction_limit")

	// Both limits set: the live agent pays, under the live policy only.
	status, p, e := policyOver(t, h, "PATCH", agent.AccountID, alice.live(), `{"daily_limit_usdg": 200, "per_transaction_limit_usdg": 20}`)
	if status != 200 || p.DailyLimitUSDG.String() != "200" || p.AllowedRecipients != nil || !p.UpdatedAt.Equal(srv.Now()) {
		t.Fatalf("live PATCH of both limits = %d %+v %+v", status, p, e)
	}
	send(t, agentLive, "@bob", "20")
	_, err = pay(agentLive, "@bob", "20.000001")
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", "per_transaction_limit")
	if _, test2, _ := policyOver(t, h, "GET", agent.AccountID, alice.test(), ""); !policiesEqual(test2, test) {
		t.Errorf("the live PATCH changed the test policy: %+v, was %+v", test2, test)
	}
}

// TestPolicyApprovalUsesItsNetwork: approving a held payment re-checks it
// against the policy of its own network.
func TestPolicyApprovalUsesItsNetwork(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	bot := srv.AddAgent(t, "@alice", "bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("10"),
	})
	fundOn(t, srv, bot.AccountID, confpay.NetworkLive, "USDG", "500")
	srv.AddFunds(t, bot.AccountID, "USDG", "500")
	liveOwner := newClient(t, srv, alice.live(), nil, noRetry)
	testOwner := newClient(t, srv, alice.test(), nil, noRetry)
	agentLive := newClient(t, srv, bot.LiveKey.Reveal(), nil, noRetry)
	agentTest := newClient(t, srv, bot.TestKey.Reveal(), nil, noRetry)

	liveHeld := []*confpay.AgentTransaction{hold(t, agentLive, "@bob", "50"), hold(t, agentLive, "@bob", "60")}
	testHeld := hold(t, agentTest, "@bob", "50")

	// The test owner lowers the test network's per-transaction limit:
	// live approvals do not see it, the test approval does.
	if _, err := testOwner.Agents.UpdatePolicy(t.Context(), bot.AccountID, &confpay.SpendPolicyParams{PerTransactionLimitUSDG: limit("20")}); err != nil {
		t.Fatal(err)
	}
	if _, err := liveOwner.Agents.Approve(t.Context(), liveHeld[0].TransactionID); err != nil {
		t.Fatalf("live approval after a test PATCH: %v", err)
	}
	_, err := testOwner.Agents.Approve(t.Context(), testHeld.TransactionID)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", "per_transaction_limit")

	// The live owner lowers the live limit: the next live approval fails.
	if _, err := liveOwner.Agents.UpdatePolicy(t.Context(), bot.AccountID, &confpay.SpendPolicyParams{PerTransactionLimitUSDG: limit("55")}); err != nil {
		t.Fatal(err)
	}
	_, err = liveOwner.Agents.Approve(t.Context(), liveHeld[1].TransactionID)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", "per_transaction_limit")
	if hp := srv.Held(t, liveHeld[1].TransactionID); hp.Status != confpay.DecisionPending {
		t.Errorf("refused approval left status %s", hp.Status)
	}
}
