package fakeserver_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

var basePolicy = confpay.SpendPolicyParams{DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("50")}

func TestAgentsCreateAndList(t *testing.T) {
	f := newFixture(t)
	me, err := f.alice.Accounts.Me(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, agentClient := f.createAgent("shopper-1", basePolicy)
	if a.Handle != "@alice/shopper-1" || a.Status != confpay.AgentActive {
		t.Errorf("agent = %+v", a)
	}
	if !strings.HasPrefix(a.AccountID, "acct_") || !strings.HasPrefix(a.SpendPolicyID, "policy_") {
		t.Errorf("ids = %q, %q", a.AccountID, a.SpendPolicyID)
	}
	if !common.IsHexAddress(a.PublicKey) || common.HexToAddress(a.PublicKey).Hex() != a.PublicKey {
		t.Errorf("public_key %q is not an EIP-55 address", a.PublicKey)
	}
	if a.PublicKey == me.PublicKey {
		t.Error("the agent shares its owner's address")
	}
	if !a.CreatedAt.Equal(f.srv.Now()) {
		t.Errorf("created_at = %v, want %v", a.CreatedAt, f.srv.Now())
	}

	// A second agent, then the list in creation order.
	f.srv.Advance(time.Minute)
	b, _ := f.createAgent("bot_2", basePolicy)
	list, err := f.alice.Agents.List(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].AccountID != a.AccountID || list[1].AccountID != b.AccountID {
		t.Fatalf("list = %+v", list)
	}
	if *list[0] != *a {
		t.Errorf("listed %+v, created %+v", list[0], a)
	}
	if b.SpendPolicyID == a.SpendPolicyID {
		t.Error("two agents share a policy id")
	}
	// Others see none of them; the agent itself owns none.
	for _, c := range []*confpay.Client{f.mallory, agentClient} {
		if l, err := c.Agents.List(f.ctx); err != nil || len(l) != 0 {
			t.Errorf("foreign list = %v, %v", l, err)
		}
	}

	// The agent authenticates as itself, with its owner's encryption key.
	am, err := agentClient.Accounts.Me(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if am.Type != confpay.AccountAgent || am.Handle != a.Handle || am.PublicKey != a.PublicKey ||
		am.EncryptionKey != me.EncryptionKey || am.KYCStatus != me.KYCStatus {
		t.Errorf("agent me = %+v", am)
	}

	// The agent's identity and policy id are shared by both networks (its
	// policy on live allows nothing: policy_network_test.go).
	live := newClient(t, f.srv, f.owner.LiveKey.Reveal(), nil, noRetry)
	ll, err := live.Agents.List(f.ctx)
	if err != nil || len(ll) != 2 {
		t.Fatalf("live list = %v, %v", ll, err)
	}
	pl, err := live.Agents.GetPolicy(f.ctx, a.AccountID)
	if err != nil || pl.PolicyID != a.SpendPolicyID {
		t.Fatalf("live policy = %+v, %v", pl, err)
	}
}

func TestAgentsPolicyDefaults(t *testing.T) {
	f := newFixture(t)
	a, _ := f.createAgent("bot", basePolicy)
	p, err := f.alice.Agents.GetPolicy(f.ctx, a.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if p.PolicyID != a.SpendPolicyID || p.DailyLimitUSDG.String() != "500" || p.PerTransactionLimitUSDG.String() != "50" ||
		!slices.Equal(p.Assets, []string{"USDG"}) || p.ActiveHours != "00:00-23:59" ||
		p.AllowedRecipients != nil || p.HITLThresholdUSDG != nil || !p.UpdatedAt.Equal(f.srv.Now()) {
		t.Errorf("policy = %+v", p)
	}
	// The wire form: limits are JSON numbers, absent fields absent.
	r := rawCall(t, f.srv, "GET", "/v1/agents/"+a.AccountID+"/spend-policy", f.owner.TestKey.Reveal(), "")
	status, body := r.status, r.body
	if status != 200 || !strings.Contains(string(body), `"daily_limit_usdg":500,`) ||
		strings.Contains(string(body), "allowed_recipients") || strings.Contains(string(body), "hitl_threshold_usdg") {
		t.Errorf("GET policy = %d %s", status, body)
	}
}

func TestAgentsCreateAllFields(t *testing.T) {
	f := newFixture(t)
	a, _ := f.createAgent("full", confpay.SpendPolicyParams{
		DailyLimitUSDG:          limit("1000.123456"),
		PerTransactionLimitUSDG: limit("0.5"),
		AllowedRecipients:       []string{"@bob", "@carol/bot", "0x52908400098527886E0F7030069857D2E4169EE7", "api.market", "*.example.com"},
		Assets:                  []string{"ETH", "USDG"},
		ActiveHours:             confpay.Ptr("22:00-06:00"),
		HITLThresholdUSDG:       limit("0"),
	})
	p, err := f.alice.Agents.GetPolicy(f.ctx, a.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if p.DailyLimitUSDG.String() != "1000.123456" || p.PerTransactionLimitUSDG.String() != "0.5" ||
		len(p.AllowedRecipients) != 5 || p.AllowedRecipients[2] != "0x52908400098527886E0F7030069857D2E4169EE7" ||
		!slices.Equal(p.Assets, []string{"ETH", "USDG"}) || p.ActiveHours != "22:00-06:00" ||
		p.HITLThresholdUSDG == nil || !p.HITLThresholdUSDG.IsZero() {
		t.Errorf("policy = %+v", p)
	}
}

func TestAgentsCreateErrors(t *testing.T) {
	f := newFixture(t)
	_, agentClient := f.createAgent("bot", basePolicy)

	// An agent cannot create agents.
	_, err := agentClient.Agents.Create(f.ctx, &confpay.AgentCreateParams{Name: "sub", SpendPolicy: basePolicy})
	wantAPIError(t, err, 403, confpay.CodeNotAgentOwner, "", "")

	// KYC gate, for unverified and pending owners.
	for _, k := range []confpay.KYCStatus{confpay.KYCUnverified, confpay.KYCPending} {
		acct, err := f.srv.CreateAccount(fakeserver.AccountParams{Handle: "@kyc_" + string(k), KYCStatus: k})
		if err != nil {
			t.Fatal(err)
		}
		_, err = newClient(t, f.srv, acct.TestKey.Reveal(), nil, noRetry).Agents.Create(f.ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: basePolicy})
		wantAPIError(t, err, 403, confpay.CodeKYCRequired, "", "")
	}

	// The name is taken, for this owner only.
	_, err = f.alice.Agents.Create(f.ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: basePolicy})
	wantAPIError(t, err, 409, confpay.CodeAgentNameTaken, "name", "")
	if _, err := f.mallory.Agents.Create(f.ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: basePolicy}); err != nil {
		t.Errorf("another owner's agent of the same name: %v", err)
	}

	// Bad names, over raw HTTP (the SDK refuses an empty one itself).
	key := f.owner.TestKey.Reveal()
	policy := `"spend_policy": {"daily_limit_usdg": 5, "per_transaction_limit_usdg": 1}`
	for _, name := range []string{`""`, `"Bot"`, `"a b"`, `"` + strings.Repeat("x", 33) + `"`, `"bot/x"`, `"bot.x"`, `"é"`, `5`} {
		r := rawCall(t, f.srv, "POST", "/v1/accounts/me/agents", key, `{"name": `+name+`, `+policy+`}`)
		status, eb := r.status, r.err()
		if status != 400 || eb.Code != confpay.CodeInvalidRequest || eb.Param != "name" {
			t.Errorf("name %s: %d %+v", name, status, eb)
		}
	}
	if r := rawCall(t, f.srv, "POST", "/v1/accounts/me/agents", key, `{"name": "x", "color": "red", `+policy+`}`); r.status != 400 || r.err().Param != "color" {
		t.Errorf("unknown field: %d %+v", r.status, r.err())
	}
	// 32 characters is the longest name.
	if r := rawCall(t, f.srv, "POST", "/v1/accounts/me/agents", key, `{"name": "`+strings.Repeat("x", 32)+`", `+policy+`}`); r.status != 201 {
		t.Errorf("32-character name: %d %+v", r.status, r.err())
	}
}

// TestAgentsPolicyValidation sends invalid policies over the wire, on
// creation and in a PATCH: 400 invalid_policy naming the field.
func TestAgentsPolicyValidation(t *testing.T) {
	f := newFixture(t)
	a, _ := f.createAgent("bot", basePolicy)
	key := f.owner.TestKey.Reveal()
	const ok = `"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50`
	before := f.srv.Snapshot()
	tests := []struct{ name, fields, param string }{
		{"negative daily", `"daily_limit_usdg": -5, "per_transaction_limit_usdg": 1`, "daily_limit_usdg"},
		{"zero daily", `"daily_limit_usdg": 0, "per_transaction_limit_usdg": 1`, "daily_limit_usdg"},
		{"zero per-tx", `"daily_limit_usdg": 5, "per_transaction_limit_usdg": 0`, "per_transaction_limit_usdg"},
		{"per-tx above daily", `"daily_limit_usdg": 5, "per_transaction_limit_usdg": 5.000001`, "per_transaction_limit_usdg"},
		{"7 decimals", `"daily_limit_usdg": 5.1234567, "per_transaction_limit_usdg": 1`, "daily_limit_usdg"},
		{"limit as string", `"daily_limit_usdg": "5", "per_transaction_limit_usdg": 1`, "daily_limit_usdg"},
		{"threshold negative", ok + `, "hitl_threshold_usdg": -1`, "hitl_threshold_usdg"},
		{"unknown asset", ok + `, "assets": ["USDG", "DOGE"]`, "assets[1]"},
		{"empty asset", ok + `, "assets": [""]`, "assets[0]"},
		{"no assets", ok + `, "assets": []`, "assets"},
		{"empty recipients", ok + `, "allowed_recipients": []`, "allowed_recipients"},
		{"malformed recipient", ok + `, "allowed_recipients": ["bob"]`, "allowed_recipients[0]"},
		{"malformed address", ok + `, "allowed_recipients": ["0x123"]`, "allowed_recipients[0]"},
		{"malformed wildcard", ok + `, "allowed_recipients": ["@bob", "*.com"]`, "allowed_recipients[1]"},
		{"wildcard inside", ok + `, "allowed_recipients": ["a.*.com"]`, "allowed_recipients[0]"},
		{"malformed hours", ok + `, "active_hours": "9-17"`, "active_hours"},
		{"empty-width hours", ok + `, "active_hours": "09:00-09:00"`, "active_hours"},
		{"hours out of range", ok + `, "active_hours": "09:00-24:00"`, "active_hours"},
		{"unknown field", ok + `, "monthly_limit_usdg": 5`, "monthly_limit_usdg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawCall(t, f.srv, "POST", "/v1/accounts/me/agents", key, `{"name": "x", "spend_policy": {`+tt.fields+`}}`)
			status, eb := r.status, r.err()
			if status != 400 || eb.Code != confpay.CodeInvalidPolicy || eb.Param != "spend_policy."+tt.param || eb.Message == "" {
				t.Errorf("create: %d %+v; want 400 invalid_policy spend_policy.%s", status, eb, tt.param)
			}
			r = rawCall(t, f.srv, "PATCH", "/v1/agents/"+a.AccountID+"/spend-policy", key, `{`+tt.fields+`}`)
			status, eb = r.status, r.err()
			if status != 400 || eb.Code != confpay.CodeInvalidPolicy || eb.Param != tt.param {
				t.Errorf("patch: %d %+v; want 400 invalid_policy %s", status, eb, tt.param)
			}
			checkUnchanged(t, f.srv, before, tt.name)
		})
	}
	// Required limits on creation.
	for body, param := range map[string]string{
		`{"name": "x"}`: "spend_policy.daily_limit_usdg",
		`{"name": "x", "spend_policy": {"daily_limit_usdg": 5}}`:           "spend_policy.per_transaction_limit_usdg",
		`{"name": "x", "spend_policy": "lots"}`:                            "spend_policy",
		`{"name": "x", "spend_policy": {"per_transaction_limit_usdg": 5}}`: "spend_policy.daily_limit_usdg",
	} {
		if r := rawCall(t, f.srv, "POST", "/v1/accounts/me/agents", key, body); r.status != 400 || r.err().Code != confpay.CodeInvalidPolicy || r.err().Param != param {
			t.Errorf("%s: %d %+v; want %s", body, r.status, r.err(), param)
		}
	}
	// A PATCH body that is not an object.
	if r := rawCall(t, f.srv, "PATCH", "/v1/agents/"+a.AccountID+"/spend-policy", key, `[1]`); r.status != 400 || r.err().Code != confpay.CodeInvalidRequest {
		t.Errorf("PATCH [1]: %d %+v", r.status, r.err())
	}
	// Nothing was created or changed by the refusals.
	if l, _ := f.alice.Agents.List(f.ctx); len(l) != 1 {
		t.Errorf("%d agents after refusals", len(l))
	}
	p, _ := f.alice.Agents.GetPolicy(f.ctx, a.AccountID)
	if p.DailyLimitUSDG.String() != "500" || !p.UpdatedAt.Equal(a.CreatedAt) {
		t.Errorf("policy changed by refusals: %+v", p)
	}
}

func TestAgentsPolicyPatch(t *testing.T) {
	f := newFixture(t)
	hooks := subscribeSink(t, f.alice)
	a, _ := f.createAgent("bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("50"),
		AllowedRecipients: []string{"@bob"}, HITLThresholdUSDG: limit("20"),
	})
	f.srv.Advance(time.Hour)

	// Only the fields sent change; the answer is the whole policy.
	p, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{DailyLimitUSDG: limit("300.5"), ActiveHours: confpay.Ptr("08:00-20:00")})
	if err != nil {
		t.Fatal(err)
	}
	if p.PolicyID != a.SpendPolicyID || p.DailyLimitUSDG.String() != "300.5" || p.PerTransactionLimitUSDG.String() != "50" ||
		!slices.Equal(p.AllowedRecipients, []string{"@bob"}) || p.HITLThresholdUSDG == nil || p.HITLThresholdUSDG.String() != "20" ||
		p.ActiveHours != "08:00-20:00" || !p.UpdatedAt.Equal(f.srv.Now()) {
		t.Errorf("patched = %+v", p)
	}
	got, err := f.alice.Agents.GetPolicy(f.ctx, a.AccountID)
	if err != nil || !policiesEqual(got, p) {
		t.Errorf("GET after PATCH = %+v, %v; want %+v", got, err, p)
	}

	// null removes the recipient restriction and the threshold.
	f.srv.Advance(time.Minute)
	p, err = f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{AnyRecipient: true, NoHITLThreshold: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.AllowedRecipients != nil || p.HITLThresholdUSDG != nil || p.DailyLimitUSDG.String() != "300.5" {
		t.Errorf("after nulls = %+v", p)
	}

	// A PATCH that changes nothing keeps updated_at and emits nothing.
	before := p.UpdatedAt
	f.srv.Advance(time.Minute)
	p, err = f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{DailyLimitUSDG: limit("300.500")})
	if err != nil || !p.UpdatedAt.Equal(before) {
		t.Errorf("no-op PATCH: %+v, %v", p, err)
	}

	// One agent.policy.updated per change, naming the changed fields.
	f.srv.Sync()
	ev := hooks.find("agent.policy.updated")
	if len(ev) != 2 {
		t.Fatalf("%d policy events, want 2 (%v)", len(ev), hooks.events())
	}
	for i, want := range [][]any{{"daily_limit_usdg", "active_hours"}, {"allowed_recipients", "hitl_threshold_usdg"}} {
		if !slices.Equal(ev[i].fields["changed_fields"].([]any), want) || ev[i].fields["agent"] != a.Handle ||
			ev[i].fields["account"] != "@alice" || ev[i].fields["policy_id"] != a.SpendPolicyID {
			t.Errorf("event %d = %v", i, ev[i])
		}
	}
}

func policiesEqual(a, b *confpay.SpendPolicy) bool {
	th := func(l *confpay.Limit) string {
		if l == nil {
			return "none"
		}
		return l.String()
	}
	return a.PolicyID == b.PolicyID && a.DailyLimitUSDG.Cmp(b.DailyLimitUSDG) == 0 &&
		a.PerTransactionLimitUSDG.Cmp(b.PerTransactionLimitUSDG) == 0 &&
		slices.Equal(a.AllowedRecipients, b.AllowedRecipients) && slices.Equal(a.Assets, b.Assets) &&
		a.ActiveHours == b.ActiveHours && th(a.HITLThresholdUSDG) == th(b.HITLThresholdUSDG) && a.UpdatedAt.Equal(b.UpdatedAt)
}

// TestAgentsPolicyOwnership: only the owner reads or changes a policy.
func TestAgentsPolicyOwnership(t *testing.T) {
	f := newFixture(t)
	a, agentClient := f.createAgent("bot", basePolicy)
	patch := &confpay.SpendPolicyParams{DailyLimitUSDG: limit("1")}
	for name, c := range map[string]*confpay.Client{"stranger": f.mallory, "the agent itself": agentClient} {
		_, err := c.Agents.GetPolicy(f.ctx, a.AccountID)
		wantAPIError(t, err, 403, confpay.CodeNotAgentOwner, "", "")
		_, err = c.Agents.UpdatePolicy(f.ctx, a.AccountID, patch)
		wantAPIError(t, err, 403, confpay.CodeNotAgentOwner, "", "")
		_ = name
	}
	me, _ := f.alice.Accounts.Me(f.ctx)
	for _, id := range []string{"acct_doesnotexist", me.AccountID} {
		_, err := f.alice.Agents.GetPolicy(f.ctx, id)
		wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
		_, err = f.alice.Agents.UpdatePolicy(f.ctx, id, patch)
		wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
	}
	if p, _ := f.alice.Agents.GetPolicy(f.ctx, a.AccountID); p.DailyLimitUSDG.String() != "500" {
		t.Errorf("a refused PATCH changed the policy: %+v", p)
	}
}

// TestAgentLimitPerOwner (issue 22 item 4): an owner has at most the
// bound of agents (WithMaxAgentsPerOwner; 1,000 by default); one more is
// 409 agent_limit_reached without Retry-After (time frees nothing),
// nothing is created, and another owner is not affected.
func TestAgentLimitPerOwner(t *testing.T) {
	if fakeserver.DefaultMaxAgentsPerOwner != 1000 {
		t.Errorf("DefaultMaxAgentsPerOwner = %d, want 1000 (decisions.md)", fakeserver.DefaultMaxAgentsPerOwner)
	}
	srv := fakeserver.New(t, fakeserver.WithMaxAgentsPerOwner(3))
	owner := newAccount(t, srv, "@owner")
	other := newAccount(t, srv, "@other")
	policy := `"spend_policy": {"daily_limit_usdg": 5, "per_transaction_limit_usdg": 1}`
	create := func(p party, name string) answer {
		return rawCall(t, srv, "POST", "/v1/accounts/me/agents", p.test(), `{"name": "`+name+`", `+policy+`}`)
	}
	for i := range 3 {
		if a := create(owner, "bot"+strconv.Itoa(i)); a.status != 201 {
			t.Fatalf("agent %d: %d %s", i, a.status, a.body)
		}
	}
	before := len(srv.Accounts())
	a := create(owner, "bot3")
	if eb := a.err(); a.status != 409 || eb.Code != confpay.CodeAgentLimitReached {
		t.Fatalf("agent past the bound: %d %s, want 409 agent_limit_reached", a.status, a.body)
	}
	if ra := a.header.Get("Retry-After"); ra != "" {
		t.Errorf("Retry-After %q on agent_limit_reached, want none", ra)
	}
	if n := len(srv.Accounts()); n != before {
		t.Errorf("%d accounts after the refusal, want %d", n, before)
	}
	// The SDK's typed code.
	_, err := newClient(t, srv, owner.test(), nil, noRetry).Agents.Create(context.Background(), &confpay.AgentCreateParams{Name: "bot4", SpendPolicy: basePolicy})
	if !errors.Is(err, confpay.ErrAgentLimitReached) {
		t.Errorf("SDK error %v, want ErrAgentLimitReached", err)
	}
	if a := create(other, "bot0"); a.status != 201 {
		t.Errorf("another owner's agent: %d %s", a.status, a.body)
	}
}
