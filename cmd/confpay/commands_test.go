package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

func TestMe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	golden(t, "me", f.ok(f.as(f.alice, false), "me"))

	var acct confpay.Account
	decodeStrict(t, f.ok(f.as(f.alice, false), "me", "--json"), &acct)
	if acct.Handle != "@alice" || acct.AccountID != f.alice.AccountID {
		t.Errorf("me --json = %+v", acct)
	}
}

func TestBalances(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	golden(t, "balances_sealed", f.ok(f.as(f.alice, false), "balances"))
	golden(t, "balances_opened", f.ok(f.as(f.alice, true), "balances"))

	var list confpay.BalanceList
	decodeStrict(t, f.ok(f.as(f.alice, true), "balances", "--json"), &list)
	if len(list.Balances) != 1 || list.Balances[0].Amount == nil || list.Balances[0].Amount.String() != "100" {
		t.Errorf("balances --json = %+v", list.Balances)
	}

	// The key from a file works like the environment's.
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(f.alice.DecryptionKey.Reveal()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := f.ok(f.as(f.alice, false), "balances", "--decryption-key-file", file); !strings.Contains(out, "USDG   100") {
		t.Errorf("balances with --decryption-key-file:\n%s", out)
	}
}

func TestPay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	golden(t, "pay", f.ok(f.as(f.alice, false), "pay", "@bob", "12.5", "--memo", "lunch"))

	var tr confpay.Transfer
	decodeStrict(t, f.ok(f.as(f.alice, false), "pay", "@bob", "1", "--json", "--public"), &tr)
	if tr.Status != confpay.StatusPending || tr.Confidential || tr.To != "@bob" {
		t.Errorf("pay --json = %+v", tr)
	}
	books, err := f.srv.Books("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if books[0].Available.String() != "86.5" {
		t.Errorf("alice's available balance = %s, want 86.5", books[0].Available)
	}
}

func TestPayIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.ok(f.as(f.alice, false), "pay", "@bob", "5", "--idempotency-key", "order-1")
	second := f.ok(f.as(f.alice, false), "pay", "@bob", "5", "--idempotency-key", "order-1")
	if !strings.Contains(second, "Already sent") {
		t.Errorf("the second pay with the same key:\n%s", second)
	}
	if got, want := normalize(first[strings.Index(first, "\n"):]), normalize(second[strings.Index(second, "\n"):]); got != want {
		t.Errorf("replayed transfer differs:\n%s\n%s", got, want)
	}
	trs, err := f.srv.Transfers("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 1 {
		t.Errorf("%d transfers made, want 1", len(trs))
	}
}

func TestPayWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	polls := 0
	advance := func(context.Context) error { polls++; f.srv.Advance(time.Second); return nil }
	r := runCLI(t, context.Background(), invocation{env: f.as(f.alice, false), pollWait: advance}, "pay", "@bob", "2", "--wait", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var tr confpay.Transfer
	decodeStrict(t, r.stdout, &tr)
	if tr.Status != confpay.StatusConfirmed || tr.ConfirmedAt == nil || polls != 1 {
		t.Errorf("pay --wait = %+v after %d polls", tr, polls)
	}
	if r.stderr != "" {
		t.Errorf("a progress indicator off a terminal: %q", r.stderr)
	}
}

func TestPayWaitFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultFailAtConfirmation}); err != nil {
		t.Fatal(err)
	}
	advance := func(context.Context) error { f.srv.Advance(time.Second); return nil }
	r := runCLI(t, context.Background(), invocation{env: f.as(f.alice, false), pollWait: advance}, "pay", "@bob", "2", "--wait")
	if r.code != exitFailed || !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stderr, "failed") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestPayWaitVirtualClockHint: against a server whose clock is virtual,
// pay --wait would wait forever; after a while it says so and how to move
// the clock, once, and goes on waiting. Time is the test's: no sleep.
func TestPayWaitVirtualClockHint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	polls := 0
	wait := func(context.Context) error {
		polls++
		now = now.Add(time.Second) // the CLI's clock moves, the server's does not
		if polls == 20 {
			f.srv.Advance(time.Second) // what the user does on reading the hint
		}
		return nil
	}
	r := runCLI(t, context.Background(), invocation{env: f.as(f.alice, false), pollWait: wait, now: func() time.Time { return now }}, "pay", "@bob", "2", "--wait")
	if r.code != 0 || !strings.Contains(r.stdout, "confirmed") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := "the server's clock is virtual"
	if strings.Count(r.stderr, want) != 1 || !strings.Contains(r.stderr, "curl -s -X POST "+f.srv.URL()+"/_fake/clock -d '{\"advance\":\"5s\"}'") {
		t.Errorf("stderr does not say once that the clock is virtual and how to move it:\n%s", r.stderr)
	}
}

// TestPayWaitNoHintOnARealClock: a server whose clock is real, or one that
// is not a fakeserver, gets no hint.
func TestPayWaitNoHintOnARealClock(t *testing.T) {
	t.Parallel()
	a := &app{}
	realClock := fakeserver.New(t, fakeserver.WithRealClock())
	notFake := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFake.Close)
	for _, base := range []string{realClock.URL(), notFake.URL, "http://127.0.0.1:1", confpay.DefaultBaseURL} {
		if a.serverClockVirtual(context.Background(), base) {
			t.Errorf("%s: said virtual", base)
		}
	}
	if virtual := fakeserver.New(t); !a.serverClockVirtual(context.Background(), virtual.URL()+"/") {
		t.Errorf("a virtual clock not seen")
	}
}

func TestPayWaitInterrupted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	interrupt := func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() }
	r := runCLI(t, ctx, invocation{env: f.as(f.alice, false), pollWait: interrupt}, "pay", "@bob", "2", "--wait")
	if r.code != exitInterrupted || r.stderr != "confpay: interrupted\n" {
		t.Errorf("Ctrl-C during --wait: exit %d, %s", r.code, r.stderr)
	}
}

func TestTransfers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.pay("12.5", "lunch")
	f.srv.Advance(time.Second)
	f.pay("7", "tab\tand \x1b[31mred")

	golden(t, "transfers_list_sealed", f.ok(f.as(f.alice, false), "transfers", "list"))
	golden(t, "transfers_list_opened", f.ok(f.as(f.alice, true), "transfers", "list"))
	golden(t, "transfers_get_opened", f.ok(f.as(f.bob, true), "transfers", "get", id))
	golden(t, "transfers_get_sealed", f.ok(f.as(f.bob, false), "transfers", "get", id))

	var one struct {
		confpay.Transfer
		Amount *confpay.Amount `json:"amount"`
		Memo   *string         `json:"memo"`
	}
	decodeStrict(t, f.ok(f.as(f.bob, true), "transfers", "get", id, "--json"), &one)
	if one.TransferID != id || one.Amount == nil || one.Amount.String() != "12.5" || one.Memo == nil || *one.Memo != "lunch" {
		t.Errorf("transfers get --json: %+v", one)
	}

	var page struct {
		Transfers []*struct {
			confpay.Transfer
			Amount *confpay.Amount `json:"amount"`
			Memo   *string         `json:"memo"`
		} `json:"transfers"`
		HasMore bool `json:"has_more"`
	}
	decodeStrict(t, f.ok(f.as(f.alice, false), "transfers", "list", "--limit", "1", "--json"), &page)
	if len(page.Transfers) != 1 || !page.HasMore || page.Transfers[0].Amount != nil {
		t.Errorf("transfers list --limit 1 --json: %d items, has_more %v", len(page.Transfers), page.HasMore)
	}
	decodeStrict(t, f.ok(f.as(f.alice, false), "transfers", "list", "--limit", "1", "--all", "--json"), &page)
	if len(page.Transfers) != 2 || page.HasMore {
		t.Errorf("transfers list --all --json: %d items, has_more %v", len(page.Transfers), page.HasMore)
	}
	if out := f.ok(f.as(f.alice, false), "transfers", "list", "--status", "confirmed"); strings.Count(out, "confirmed") != 1 || strings.Contains(out, "pending") {
		t.Errorf("transfers list --status confirmed:\n%s", out)
	}
}

// agentFixture adds an agent of alice's with a key of its own, funded,
// and a payment of 120 held for approval.
func agentFixture(t *testing.T) (*fixture, map[string]string, string) {
	f := newFixture(t)
	out := f.ok(f.as(f.alice, false), "agents", "create", "buyer", "--daily-limit", "500", "--per-payment-limit", "200",
		"--approval-threshold", "50", "--allow", "@bob", "--json")
	var ag confpay.Agent
	decodeStrict(t, out, &ag)
	key, err := f.srv.IssueKey(ag.AccountID, confpay.NetworkTest, "bot")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Fund(ag.AccountID, confpay.NetworkTest, "USDG", "1000"); err != nil {
		t.Fatal(err)
	}
	agentEnv := map[string]string{envAPIKey: key.APIKey.Reveal(), envBaseURL: f.srv.URL()}
	var held confpay.AgentTransaction
	decodeStrict(t, f.ok(agentEnv, "pay", "@bob", "120", "--memo", "annual plan", "--json"), &held)
	if held.Status != confpay.DecisionPending || held.TransactionID == "" {
		t.Fatalf("pay above the threshold: %+v", held)
	}
	return f, agentEnv, held.TransactionID
}

func TestAgents(t *testing.T) {
	t.Parallel()
	f, agentEnv, _ := agentFixture(t)
	golden(t, "pay_held", f.ok(agentEnv, "pay", "@bob", "60"))
	golden(t, "agents_list", f.ok(f.as(f.alice, false), "agents", "list"))
	golden(t, "policy_get", f.ok(f.as(f.alice, false), "agents", "policy", "get", "buyer"))
	golden(t, "policy_set", f.ok(f.as(f.alice, false), "agents", "policy", "set", "@alice/buyer", "--daily-limit", "800", "--any-recipient", "--no-approval-threshold"))

	var p confpay.SpendPolicy
	decodeStrict(t, f.ok(f.as(f.alice, false), "agents", "policy", "get", "buyer", "--json"), &p)
	if p.DailyLimitUSDG.String() != "800" || p.HITLThresholdUSDG != nil || p.AllowedRecipients != nil {
		t.Errorf("policy after set: %+v", p)
	}
	var list confpay.AgentList
	decodeStrict(t, f.ok(f.as(f.alice, false), "agents", "list", "--json"), &list)
	if len(list.Agents) != 1 || list.Agents[0].Handle != "@alice/buyer" {
		t.Errorf("agents list --json: %+v", list.Agents)
	}
}

// TestAgentPolicyPerNetwork: policy get and set act on the key's network
// and say which; an agent made with a test key may pay nothing on live
// until a live key sets both limits.
func TestAgentPolicyPerNetwork(t *testing.T) {
	t.Parallel()
	f, _, _ := agentFixture(t)
	live := map[string]string{envAPIKey: f.alice.LiveKey.Reveal(), envBaseURL: f.srv.URL()}
	golden(t, "policy_get_unset", f.ok(live, "agents", "policy", "get", "buyer"))

	r := f.run(live, "agents", "policy", "set", "buyer", "--daily-limit", "50")
	if r.code != exitError || !strings.Contains(r.stderr, "invalid_policy") || !strings.Contains(r.stderr, "per_transaction_limit_usdg") || r.stdout != "" {
		t.Errorf("live set of one limit: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	out := f.ok(live, "agents", "policy", "set", "buyer", "--daily-limit", "50", "--per-payment-limit", "20")
	if !strings.Contains(out, "Network         live (chain 4663)") || !strings.Contains(out, "Daily limit     50 USDG") || strings.Contains(out, "Not set") {
		t.Errorf("live set of both limits:\n%s", out)
	}
	var p confpay.SpendPolicy
	decodeStrict(t, f.ok(f.as(f.alice, false), "agents", "policy", "get", "buyer", "--json"), &p)
	if p.DailyLimitUSDG.String() != "500" || p.PerTransactionLimitUSDG.String() != "200" {
		t.Errorf("the live set changed the test policy: %+v", p)
	}

	out = f.ok(f.as(f.alice, false), "agents", "create", "seller", "--daily-limit", "5", "--per-payment-limit", "1")
	if !strings.Contains(out, "Network  test (chain 46630): the policy is set here") || !strings.Contains(out, "On live  no policy yet") {
		t.Errorf("agents create:\n%s", out)
	}
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	f, _, atx := agentFixture(t)
	golden(t, "approvals_list_sealed", f.ok(f.as(f.alice, false), "approvals", "list"))
	golden(t, "approvals_list_opened", f.ok(f.as(f.alice, true), "approvals", "list"))

	var pending struct {
		Pending []*struct {
			confpay.AgentTransaction
			Amount *confpay.Amount `json:"amount"`
			Memo   *string         `json:"memo"`
		} `json:"pending"`
	}
	decodeStrict(t, f.ok(f.as(f.alice, true), "approvals", "list", "--json"), &pending)
	if len(pending.Pending) != 1 || pending.Pending[0].Amount.String() != "120" || *pending.Pending[0].Memo != "annual plan" {
		t.Errorf("approvals list --json: %+v", pending.Pending)
	}

	out := f.ok(f.as(f.alice, true), "approve", atx)
	golden(t, "approve", out)
	if !strings.Contains(out, "120 USDG") || !strings.Contains(out, "annual plan") {
		t.Errorf("approve does not show the decrypted amount and memo:\n%s", out)
	}
	trs, err := f.srv.Transfers("@bob", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 1 || trs[0].Amount.String() != "120" {
		t.Errorf("after approve, bob's transfers: %+v", trs)
	}
	// Deciding twice is the service's refusal, with its code.
	r := f.run(f.as(f.alice, true), "reject", atx)
	if r.code != exitError && r.code != exitNotFound || !strings.Contains(r.stderr, "request req_") {
		t.Errorf("reject after approve: exit %d, %s", r.code, r.stderr)
	}
}

func TestApproveAsksOnATerminal(t *testing.T) {
	t.Parallel()
	f, _, atx := agentFixture(t)
	ask := func(answer string, args ...string) result {
		var stdout, stderr strings.Builder
		a := &app{stdin: strings.NewReader(answer), stdout: &stdout, stderr: &stderr, terminal: true,
			env: func(k string) string { return f.as(f.alice, true)[k] }}
		code := a.execute(context.Background(), args)
		return result{stdout.String(), stderr.String(), code}
	}
	r := ask("n\n", "approve", atx)
	if r.code != exitError || !strings.Contains(r.stderr, `Approve 120 USDG (memo "annual plan") from @alice/buyer to @bob? [y/N]`) || !strings.Contains(r.stderr, "nothing was approved") {
		t.Errorf("approve answered n: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := f.ok(f.as(f.alice, false), "approvals", "list"); !strings.Contains(out, atx) {
		t.Fatalf("declined approval changed the payment:\n%s", out)
	}
	if r = ask("y\n", "approve", atx); r.code != 0 || !strings.Contains(r.stdout, "approved") {
		t.Errorf("approve answered y: exit %d, %s", r.code, r.stderr)
	}
}

func TestReject(t *testing.T) {
	t.Parallel()
	f, _, atx := agentFixture(t)
	var d struct {
		confpay.AgentTransaction
		Amount *confpay.Amount `json:"amount"`
		Memo   *string         `json:"memo"`
	}
	decodeStrict(t, f.ok(f.as(f.alice, true), "reject", atx, "--json"), &d)
	if d.Status != confpay.DecisionRejected || d.Amount == nil || d.Amount.String() != "120" {
		t.Errorf("reject --json: %+v", d)
	}
	if out := f.ok(f.as(f.alice, false), "approvals", "list"); !strings.Contains(out, "Nothing waits") {
		t.Errorf("approvals after reject:\n%s", out)
	}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakeserver.WithoutDeliveryJitter())
	env := f.as(f.alice, false)
	secretFile := filepath.Join(t.TempDir(), "hook.secret")
	out := f.ok(env, "webhooks", "create", "--url", "http://127.0.0.1:9/hook", "--events", "transfer.initiated", "--secret-file", secretFile)
	golden(t, "webhooks_create", strings.ReplaceAll(out, secretFile, "SECRET_FILE"))
	secret, err := os.ReadFile(secretFile)
	if err != nil || !strings.HasPrefix(string(secret), "whsec_") {
		t.Fatalf("secret file: %q, %v", secret, err)
	}
	if strings.Contains(out, strings.TrimSpace(string(secret))) {
		t.Error("the secret was printed although --secret-file was given")
	}
	if fi, _ := os.Stat(secretFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %v", fi.Mode())
	}
	// Created twice to the same file: refused before anything is created.
	if r := f.run(env, "webhooks", "create", "--url", "http://127.0.0.1:9/x", "--events", "transfer.initiated", "--secret-file", secretFile); r.code != exitUsage {
		t.Errorf("create over an existing secret file: exit %d", r.code)
	}
	golden(t, "webhooks_list", f.ok(env, "webhooks", "list"))
	var hooks confpay.WebhookList
	decodeStrict(t, f.ok(env, "webhooks", "list", "--json"), &hooks)
	if len(hooks.Webhooks) != 1 {
		t.Fatalf("webhooks list --json: %+v", hooks.Webhooks)
	}
	id := hooks.Webhooks[0].WebhookID

	f.pay("1", "")
	f.srv.Sync() // the first attempt has been made
	var ds confpay.DeliveryList
	decodeStrict(t, f.ok(env, "webhooks", "deliveries", id, "--json"), &ds)
	if len(ds.Deliveries) != 1 || ds.Deliveries[0].Event != webhookverify.KindTransferInitiated {
		t.Fatalf("deliveries --json: %+v", ds.Deliveries)
	}
	golden(t, "webhooks_deliveries", f.ok(env, "webhooks", "deliveries", id))
	var rp confpay.Replay
	decodeStrict(t, f.ok(env, "webhooks", "replay", id, ds.Deliveries[0].EventID, "--json"), &rp)
	if rp.EventID != ds.Deliveries[0].EventID || rp.WebhookID != id {
		t.Errorf("replay --json: %+v", rp)
	}
	golden(t, "webhooks_delete", f.ok(env, "webhooks", "delete", id))
	if out := f.ok(env, "webhooks", "list"); !strings.Contains(out, "No webhooks.") {
		t.Errorf("after delete:\n%s", out)
	}
}

func TestWebhooksCreatePrintsSecretOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var w confpay.Webhook
	decodeStrict(t, f.ok(f.as(f.alice, false), "webhooks", "create", "--url", "http://127.0.0.1:9/hook", "--events", "transfer.initiated", "--json"), &w)
	if !strings.HasPrefix(w.Secret.Reveal(), "whsec_") {
		t.Errorf("webhooks create --json without --secret-file has no secret")
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("whsec_test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `{"event":"transfer.confirmed","event_id":"evt_0123456789abcdefghij","account":"@bob","direction":"received","counterparty":"@alice","asset":"USDG","confidential":true,"tx_hash":"0x00","transfer_id":"tr_0123456789abcdefghij","timestamp":"2026-01-05T09:00:01Z"}`
	sig := webhookverify.Sign("whsec_test", []byte(body))
	run := func(stdin string, args ...string) result {
		return runCLI(t, context.Background(), invocation{stdin: stdin}, args...)
	}

	r := run(body, "webhooks", "verify", "--secret-file", secretFile, sig)
	if r.code != 0 {
		t.Fatalf("verify: exit %d, %s", r.code, r.stderr)
	}
	golden(t, "verify", r.stdout)

	tampered := strings.Replace(body, "@alice", "@mallory", 1)
	r = run(tampered, "webhooks", "verify", "--secret-file", secretFile, sig)
	if r.code != exitVerify || !strings.Contains(r.stderr, "signature does not match") || r.stdout != "" {
		t.Errorf("verify of a tampered body: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(body, "webhooks", "verify", "--secret-file", secretFile, "sha256="+sig)
	if r.code != exitVerify || !strings.Contains(r.stderr, "malformed") {
		t.Errorf("verify of a malformed signature: exit %d, %s", r.code, r.stderr)
	}
	if r = run(body, "webhooks", "verify", sig); r.code != exitUsage {
		t.Errorf("verify without --secret-file: exit %d", r.code)
	}
	if strings.Contains(r.stderr+r.stdout, "whsec_test") {
		t.Error("the secret was printed")
	}
	// A secret file group or others can read is refused, as a decryption
	// key file is, with the chmod that fixes it.
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604} {
		open := writeFile(t, "hook.secret", "whsec_test\n", perm)
		r = run(body, "webhooks", "verify", "--secret-file", open, sig)
		if r.code != exitUsage || !strings.Contains(r.stderr, "chmod 600 "+open) || strings.Contains(r.stderr+r.stdout, "whsec_test") {
			t.Errorf("secret file mode %04o: exit %d, stdout %q, stderr %q", perm, r.code, r.stdout, r.stderr)
		}
	}
}

func TestListen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	// The forward target verifies what it receives with the secret listen
	// printed.
	fwdSecret := make(chan string, 1)
	received := make(chan error, 4)
	target := newForwardTarget(t, fwdSecret, received)

	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := newSyncBuffer(), newSyncBuffer()
	a := &app{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, env: func(k string) string { return f.as(f.alice, false)[k] }}
	done := make(chan int, 1)
	go func() {
		done <- a.execute(ctx, []string{"listen", "--events", "transfer.initiated,transfer.confirmed", "--forward-to", target})
	}()
	errText := stderr.waitFor(t, "Ready:", 1)
	fwdSecret <- secretIn(t, errText)

	f.pay("3", "")
	stdout.waitFor(t, "transfer.initiated", 1)
	if err := <-received; err != nil {
		t.Fatal(err)
	}
	f.srv.Advance(time.Second) // confirms: the delivery is made before Advance returns
	out := stdout.waitFor(t, "transfer.confirmed", 1)
	if err := <-received; err != nil {
		t.Fatal(err)
	}

	// A delivery that is not signed with the subscription's secret is
	// refused and reported.
	url := strings.Fields(errText[strings.Index(errText, "Ready: ")+len("Ready: "):])[0]
	forged := `{"event":"transfer.confirmed","event_id":"evt_0123456789abcdefghij","account":"@alice","direction":"sent","counterparty":"@bob","asset":"USDG","confidential":true,"tx_hash":"0x00","transfer_id":"tr_0123456789abcdefghij","timestamp":"2026-01-05T09:00:01Z"}`
	resp, err := postJSON(url, forged, webhookverify.Sign("whsec_not_the_secret", []byte(forged)))
	if err != nil {
		t.Fatal(err)
	}
	if resp != 400 {
		t.Errorf("an unsigned delivery was answered %d", resp)
	}
	stderr.waitFor(t, "Rejected a delivery", 1)

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("listen exit %d:\n%s", code, stderr.String())
	}
	golden(t, "listen", out)
	if !strings.Contains(stderr.String(), "Deleted webhook") {
		t.Errorf("listen did not delete its subscription:\n%s", stderr.String())
	}
	c := f.srv.Client(f.alice.TestKey)
	if hooks, err := c.Webhooks.List(context.Background()); err != nil || len(hooks) != 0 {
		t.Errorf("subscriptions after listen: %v, %v", hooks, err)
	}
}

func TestListenJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := newSyncBuffer(), newSyncBuffer()
	a := &app{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, env: func(k string) string { return f.as(f.alice, false)[k] }}
	done := make(chan int, 1)
	go func() { done <- a.execute(ctx, []string{"listen", "--json"}) }()
	if text := stderr.waitFor(t, "Ready:", 1); !strings.Contains(text, "receives all events") {
		t.Errorf("listen without --events:\n%s", text)
	}
	f.pay("3", "")
	out := stdout.waitFor(t, "\n", 1)
	var ev webhookverify.TransferEvent
	decodeStrict(t, out, &ev)
	if ev.Event != webhookverify.KindTransferInitiated || ev.Direction != webhookverify.DirectionSent {
		t.Errorf("listen --json: %+v", ev)
	}
	cancel()
	<-done
}

func TestErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	carol, err := f.srv.CreateAccount(fakeserver.AccountParams{Handle: "@carol", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	id := f.pay("1", "secret memo")
	missingFile := filepath.Join(t.TempDir(), "nope")
	revoked := f.as(f.alice, false)
	revoked[envAPIKey] = "hc_test_" + strings.Repeat("A", 32)
	bobWithAliceKey := f.as(f.bob, false)
	bobWithAliceKey[envDecryptionKey] = f.alice.DecryptionKey.Reveal()
	badHex := f.as(f.alice, false)
	badHex[envDecryptionKey] = "zz" + f.alice.DecryptionKey.Reveal()[2:]

	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"no API key", map[string]string{}, []string{"me"}, exitAuth, "CONFPAY_API_KEY is not set"},
		{"not an API key", map[string]string{envAPIKey: "sk_nope"}, []string{"me"}, exitAuth, "must start with hc_test_"},
		{"refused API key", revoked, []string{"me"}, exitAuth, "unauthorized: "},
		{"unknown transfer", f.as(f.alice, false), []string{"transfers", "get", "tr_00000000000000000000"}, exitNotFound, "not_found"},
		{"someone else's transfer", f.as(carol, true), []string{"transfers", "get", id}, exitNotFound, "request req_"},
		{"unknown transaction", f.as(f.alice, false), []string{"approve", "atx_00000000000000000000"}, exitNotFound, "transaction_not_found"},
		{"unknown agent", f.as(f.alice, false), []string{"agents", "policy", "get", "ghost"}, exitNotFound, `no agent of yours is called "ghost"`},
		{"unknown webhook", f.as(f.alice, false), []string{"webhooks", "delete", "wh_00000000000000000000"}, exitNotFound, "not_found"},
		{"unknown recipient", f.as(f.alice, false), []string{"pay", "@nobody", "1"}, exitNotFound, "recipient_not_found"},
		{"insufficient balance", f.as(f.alice, false), []string{"pay", "@bob", "1000"}, exitError, "insufficient_balance"},
		{"bad amount", f.as(f.alice, false), []string{"pay", "@bob", "12,5"}, exitUsage, `invalid amount "12,5": must be`},
		{"negative amount", f.as(f.alice, false), []string{"pay", "@bob", "-1"}, exitUsage, "unknown shorthand flag"},
		{"too many decimals", f.as(f.alice, false), []string{"pay", "@bob", "0.0000001"}, exitUsage, "amount"},
		{"missing decryption key file", f.as(f.alice, false), []string{"balances", "--decryption-key-file", missingFile}, exitUsage, "--decryption-key-file"},
		{"malformed decryption key", badHex, []string{"balances"}, exitUsage, "is not a key"},
		{"someone else's decryption key", bobWithAliceKey, []string{"balances"}, exitUsage, "not this account's key"},
		{"bad limit", f.as(f.alice, false), []string{"agents", "create", "x", "--daily-limit", "1e3", "--per-payment-limit", "1"}, exitUsage, "--daily-limit"},
		{"missing limits", f.as(f.alice, false), []string{"agents", "create", "x"}, exitUsage, "needs --daily-limit"},
		{"bad status", f.as(f.alice, false), []string{"transfers", "list", "--status", "done"}, exitUsage, "--status"},
		{"bad time", f.as(f.alice, false), []string{"transfers", "list", "--from", "yesterday"}, exitUsage, "--from"},
		{"unknown command", f.as(f.alice, false), []string{"refund"}, exitUsage, `unknown command "refund"`},
		{"unknown flag", f.as(f.alice, false), []string{"me", "--verbose"}, exitUsage, "unknown flag: --verbose"},
		{"missing argument", f.as(f.alice, false), []string{"pay", "@bob"}, exitUsage, "takes 2 argument(s)"},
		{"bad idempotency key", f.as(f.alice, false), []string{"pay", "@bob", "1", "--idempotency-key", ""}, exitUsage, "--idempotency-key"},
		{"bad forward URL", f.as(f.alice, false), []string{"listen", "--forward-to", "ftp://x"}, exitUsage, "--forward-to"},
	} {
		r := f.run(tc.env, tc.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != tc.code || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[0], "confpay: ") || r.stdout != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr:\n%s", tc.name, r.code, tc.code, r.stdout, r.stderr)
		}
		for _, secret := range []string{f.alice.TestKey.Reveal(), f.alice.DecryptionKey.Reveal(), "secret memo"} {
			if strings.Contains(r.stderr, secret) {
				t.Errorf("%s: a secret in the error output", tc.name)
			}
		}
	}
	// Nothing was paid by the refused payments.
	trs, _ := f.srv.Transfers("@alice", confpay.NetworkTest)
	if len(trs) != 1 {
		t.Errorf("%d transfers after refused payments, want 1", len(trs))
	}
}

func TestDebugRedactsSecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.pay("12.345678", "secret memo")
	r := f.run(f.as(f.alice, true), "--debug", "transfers", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "debug: base URL") || !strings.Contains(r.stderr, "hc_test_REDACTED") || !strings.Contains(r.stderr, "/v1/transfers") {
		t.Fatalf("--debug: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r2 := f.run(f.as(f.alice, true), "--debug", "balances")
	for _, secret := range []string{f.alice.TestKey.Reveal(), f.alice.DecryptionKey.Reveal(), "secret memo", "12.345678", "87.654322"} {
		if strings.Contains(r.stderr+r2.stderr, secret) {
			t.Errorf("--debug output holds a secret (%d bytes)", len(secret))
		}
	}
}

func TestHelpEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	a := &app{env: func(string) string { return "" }}
	root := a.rootCmd()
	var visit func(args []string, cmd *cobra.Command)
	visit = func(args []string, cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" {
			return
		}
		r := runCLI(t, context.Background(), invocation{}, append(append([]string{}, args...), "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "confpay") {
			t.Errorf("confpay %s --help: exit %d, no example:\n%s", strings.Join(args, " "), r.code, r.stdout)
		}
		for _, sub := range cmd.Commands() {
			visit(append(args, sub.Name()), sub)
		}
	}
	visit(nil, root)
}

func TestColour(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Output to a pipe or a buffer is never coloured.
	if out := f.ok(f.as(f.alice, false), "transfers", "list"); strings.Contains(out, "\x1b[") {
		t.Errorf("colour off a terminal: %q", out)
	}
	// On a terminal the status column is painted and the table keeps its
	// alignment; NO_COLOR turns colour off.
	f.pay("1", "")
	term := func(env map[string]string) string {
		var out strings.Builder
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard, env: func(k string) string { return env[k] }, terminal: true}
		if code := a.execute(context.Background(), []string{"transfers", "list"}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		return out.String()
	}
	colored := term(f.as(f.alice, false))
	if !strings.Contains(colored, green+"confirmed"+reset) && !strings.Contains(colored, yellow+"pending"+reset) {
		t.Errorf("no colour on a terminal: %q", colored)
	}
	if got, want := ansi.ReplaceAllString(colored, ""), f.ok(f.as(f.alice, false), "transfers", "list"); got != want {
		t.Errorf("coloured table misaligned:\n%s\nwant:\n%s", got, want)
	}
	noColor := f.as(f.alice, false)
	noColor["NO_COLOR"] = "1"
	if out := term(noColor); strings.Contains(out, "\x1b[") {
		t.Errorf("colour with NO_COLOR set: %q", out)
	}
	if got := clean("a\tb\x1b[31mc\u202e\n"); got != `a\tb\x1b[31mc\u202e\n` {
		t.Errorf("clean = %q", got)
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// secretIn finds the forward secret in listen's start-up text.
func secretIn(t *testing.T, text string) string {
	t.Helper()
	const marker = "(shown once): "
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no forward secret printed:\n%s", text)
	}
	return strings.Fields(text[i+len(marker):])[0]
}

// newForwardTarget starts a receiver for listen --forward-to: it waits for
// the forward secret, then reports on received whether each request's
// signature verifies.
func newForwardTarget(t *testing.T, secret <-chan string, received chan<- error) string {
	var once sync.Once
	var key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { key = <-secret })
		body, err := io.ReadAll(r.Body)
		if err == nil {
			_, err = webhookverify.ConstructEvent(body, r.Header.Get(webhookverify.SignatureHeader), key)
		}
		if err == nil && r.Header.Get(webhookverify.EventIDHeader) == "" {
			err = errors.New("no event id header forwarded")
		}
		received <- err
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// postJSON posts body with a signature header and returns the status.
func postJSON(url, body, sig string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set(webhookverify.SignatureHeader, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
