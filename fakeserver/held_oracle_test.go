package fakeserver_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// holdAll holds every payment (threshold 0) under limits far above the
// balances the tests probe. The daily limit is ten per-transaction limits,
// so approving what the balance covers never makes the daily limit, rather
// than the balance, refuse the next approval, whatever order the pending
// list gives payments requested in the same instant.
var holdAll = confpay.SpendPolicyParams{DailyLimitUSDG: limit("10000000"), PerTransactionLimitUSDG: limit("1000000"), HITLThresholdUSDG: limit("0")}

// probeShape is what a prober can compare between two answers: the status
// and every member of the body, with the values that differ by nature
// (ids and instants) replaced by their presence.
func probeShape(t *testing.T, w answer) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %s", w.status, w.body)
	}
	for _, k := range []string{"transaction_id", "requested_at", "expires_at", "request_id"} {
		if _, ok := m[k]; ok {
			m[k] = "(set)"
		}
	}
	b, _ := json.Marshal(m)
	return strconv.Itoa(w.status) + " " + string(b)
}

// TestAgentsNoBalanceOracle: an agent key that binary-searches its balance
// over held payments learns nothing. Every probe, above and below the
// balance, answers the same, for a funded and an unfunded agent alike, and
// nothing is reserved (decisions.md, "No balance oracle").
func TestAgentsNoBalanceOracle(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	rich, _ := f.createAgent("rich", holdAll)
	poor, _ := f.createAgent("poor", holdAll)
	f.srv.AddFunds(t, rich.AccountID, "USDG", "123.456789")
	richKey, poorKey := newKey(t, f.srv, rich.AccountID), newKey(t, f.srv, poor.AccountID)

	probe := func(key, amount string) string {
		body := `{"to":"@bob","amount":"` + amount + `"}`
		return probeShape(t, serve(f.srv.Handler(), "POST", "/v1/transfers", key, body))
	}
	want := probe(poorKey, "1")
	if !strings.HasPrefix(want, "202 ") || !strings.Contains(want, `"status":"pending_approval"`) {
		t.Fatalf("first probe = %s, want 202 pending_approval", want)
	}

	// The attack: bisect [0, 1000] USDG on "held or refused", 30 steps.
	lo, hi := int64(0), int64(1000_000000) // micro-USDG
	for range 30 {
		mid := (lo + hi) / 2
		amount := confpay.AmountFromUnits(big.NewInt(mid), 6).String()
		if mid == 0 {
			amount = "0.000001"
		}
		for _, key := range []string{richKey, poorKey} {
			if got := probe(key, amount); got != want {
				t.Fatalf("probe %s answered %s; every probe must answer %s", amount, got, want)
			}
		}
		hi = mid // the answer never changes, so the search learns nothing
	}
	// Fixed probes around the balance.
	for _, amount := range []string{"0.000001", "123.456788", "123.456789", "123.45679", "124", "999999"} {
		for _, key := range []string{richKey, poorKey} {
			if got := probe(key, amount); got != want {
				t.Errorf("probe %s answered %s, want %s", amount, got, want)
			}
		}
	}
	if got := f.srv.Balance(t, rich.AccountID, "USDG").String(); got != "123.456789" {
		t.Errorf("available after probing = %s, want 123.456789 (nothing reserved)", got)
	}

	// Through the SDK: held every time, whatever the amount.
	for _, key := range []string{richKey, poorKey} {
		agent := newClient(t, f.srv, key, nil, noRetry)
		for _, amount := range []string{"0.000001", "123.456789", "123.45679", "5000"} {
			tr, err := pay(agent, "@bob", amount, orderMemo)
			if !errors.As(err, new(*confpay.HeldError)) {
				t.Errorf("SDK probe %s = %+v, %v; want held", amount, tr, err)
			}
		}
	}

	// The balance is checked where money moves: at approval.
	pending, err := f.alice.Agents.ListPending(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		if p.Agent != rich.Handle {
			continue
		}
		rec, _ := f.srv.Transfers(rich.AccountID, confpay.NetworkTest)
		_, err := f.alice.Agents.Approve(f.ctx, p.TransactionID)
		if err == nil {
			continue // one the balance covers
		}
		wantAPIError(t, err, http.StatusPaymentRequired, confpay.CodeInsufficientBalance, "", "")
		if after, _ := f.srv.Transfers(rich.AccountID, confpay.NetworkTest); len(after) != len(rec) {
			t.Error("a refused approval moved money")
		}
		break
	}
}

// TestAgentsStatusFirst: a paused agent hears agent_not_active before
// anything about the recipient (not found, not confidential-ready) is
// looked at.
func TestAgentsStatusFirst(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("100"), PerTransactionLimitUSDG: limit("10")})
	f.srv.AddFunds(t, a.AccountID, "USDG", "100")
	if err := f.srv.SetAgentStatus(a.AccountID, confpay.AgentPaused); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{
		"@bob",
		"@nobody", // 404 recipient_not_found otherwise
		"0x00000000000000000000000000000000000000aa", // external wallet: 422 not confidential-ready otherwise
		"@alice/bot", // itself: 400 otherwise
	} {
		_, err := pay(agent, to, "1", orderMemo)
		wantAPIError(t, err, http.StatusForbidden, confpay.CodeAgentNotActive, "", "")
	}
}

// TestAgentsHeldCap: at most the cap of payments wait per agent; one more
// answers 429 rate_limited with Retry-After and is not held. Other agents
// are not affected, and a decision makes room.
func TestAgentsHeldCap(t *testing.T) {
	f := newFixture(t, fakeserver.WithMaxHeldPerAgent(3))
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", holdAll)
	_, other := f.createAgent("other", holdAll)
	agentKey := newKey(t, f.srv, a.AccountID)
	var first *confpay.AgentTransaction
	for i := range 3 {
		tr := hold(t, agent, "@bob", "1", orderMemo)
		if i == 0 {
			first = tr
		}
	}
	w := rawCall(t, f.srv, "POST", "/v1/transfers", agentKey, `{"to":"@bob","amount":"1"}`, "Idempotency-Key", "over")
	if w.status != http.StatusTooManyRequests || w.err().Code != confpay.CodeRateLimited || w.header.Get("Retry-After") == "" {
		t.Fatalf("payment over the cap = %d %s (Retry-After %q), want 429 rate_limited with Retry-After", w.status, w.body, w.header.Get("Retry-After"))
	}
	if ids := f.pendingIDs(f.alice); len(ids) != 3 {
		t.Fatalf("pending = %d, want 3 (the refused one is not held)", len(ids))
	}
	hold(t, other, "@bob", "1", orderMemo) // the cap is per agent
	if _, err := f.alice.Agents.Reject(f.ctx, first.TransactionID); err != nil {
		t.Fatal(err)
	}
	// A decision made room, and the 429 was not kept: the same key runs
	// again.
	if w := rawCall(t, f.srv, "POST", "/v1/transfers", agentKey, `{"to":"@bob","amount":"1"}`, "Idempotency-Key", "over"); w.status != http.StatusAccepted || w.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry with the same key after room was made = %d %s, want a fresh 202", w.status, w.body)
	}
	_, err := pay(agent, "@bob", "1", orderMemo)
	wantAPIError(t, err, http.StatusTooManyRequests, confpay.CodeRateLimited, "", "")

	f.srv.SetMaxHeldPerAgent(4)
	hold(t, agent, "@bob", "1", orderMemo)
	if ids := f.pendingIDs(f.alice); len(ids) != 5 {
		t.Errorf("pending = %d, want 5", len(ids))
	}
}

// TestAgentsHeldCapDefault: the default cap is 1,000 per agent.
func TestAgentsHeldCapDefault(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, _ := f.createAgent("bot", holdAll)
	key := newKey(t, f.srv, a.AccountID)
	for i := range fakeserver.DefaultMaxHeldPerAgent {
		if w := serve(f.srv.Handler(), "POST", "/v1/transfers", key, `{"to":"@bob","amount":"1"}`); w.status != http.StatusAccepted {
			t.Fatalf("payment %d = %d %s, want 202", i+1, w.status, w.body)
		}
	}
	w := serve(f.srv.Handler(), "POST", "/v1/transfers", key, `{"to":"@bob","amount":"1"}`)
	if w.status != http.StatusTooManyRequests {
		t.Fatalf("payment 1001 = %d %s, want 429", w.status, w.body)
	}
	if got := len(f.pendingIDs(f.alice)); got != 1000 {
		t.Errorf("pending = %d, want 1000", got)
	}
}
