package main

// confpay trigger EVENT: the smallest real flow that makes EVENT reach the
// account's webhook subscriptions, as the Stripe CLI's trigger does.
// Against a fakeserver the flow uses its admin interface (/_fake) for what
// /v1 cannot do (a counterparty, funds, an agent's key, settlement, a
// failure); against another server only /v1 is used, and what it cannot
// do is said.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// envAdminToken is the fakeserver's admin token, read as its binary reads it.
const envAdminToken = "CONFPAY_FAKESERVER_ADMIN_TOKEN"

// triggerAgentName is the agent trigger makes once per owner and reuses.
const triggerAgentName = "confpay-trigger"

func (a *app) triggerCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "trigger EVENT",
		Short: "Make an event happen for real, so that your subscriptions receive it",
		Long: `Run the smallest real flow that makes EVENT reach the account's webhook
subscriptions. EVENT is one of:
  ` + strings.Join(webhookverify.Kinds(), "\n  ") + `

Against a fakeserver (its /_fake admin interface answers; set
` + envAdminToken + ` when it has an admin token) every kind works:
transfer events come from a payment a new counterparty makes to you
(settled or failed through /_fake); agent events come from your agent
"` + triggerAgentName + `" (created once, then reused), which pays a new
counterparty above its approval threshold, and you approve or reject it;
agent.policy.updated amends that agent's daily limit.

Against any other server only /v1 is used, so only what /v1 allows is
done: transfer.initiated with --to pays 0.01 USDG on the test network (never
live). For the other kinds confpay says what /v1 cannot do.

With 'confpay listen --forward-to URL' running, a delivery reaches your
local handler.`,
		Args: exactArgs("EVENT"),
		Example: `  confpay --fake listen --forward-to http://localhost:8080/hooks &
  confpay --fake trigger transfer.confirmed
  confpay trigger transfer.initiated --to @bob   # the real service's test network`,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			if !slices.Contains(webhookverify.Kinds(), kind) {
				return usagef("unknown event %q: one of %s", clean(kind), strings.Join(webhookverify.Kinds(), ", "))
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			adm := &fakeAdmin{base: strings.TrimSuffix(c.BaseURL(), "/"), token: strings.TrimSpace(a.env(envAdminToken)),
				http: &http.Client{Timeout: 30 * time.Second}}
			fake, err := adm.detect(cmd.Context())
			if err != nil {
				return err
			}
			t := &trigger{app: a, c: c, adm: adm}
			if !fake {
				return t.viaV1(cmd.Context(), kind, to)
			}
			if err := t.run(cmd.Context(), kind); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"event": kind, "network": c.Network(), "steps": t.steps})
			}
			fmt.Fprintf(a.stdout, "Triggered %s on %s:\n", kind, networkLine(c))
			for _, s := range t.steps {
				fmt.Fprintf(a.stdout, "  %s\n", clean(s))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "against a server other than a fakeserver: the recipient of transfer.initiated's payment")
	return cmd
}

// trigger is one run: the account's client, the admin interface, and the
// steps taken, for the report.
type trigger struct {
	app   *app
	c     *confpay.Client
	adm   *fakeAdmin
	steps []string
}

func (t *trigger) step(format string, args ...any) {
	t.steps = append(t.steps, fmt.Sprintf(format, args...))
}

// run makes kind happen on a fakeserver.
func (t *trigger) run(ctx context.Context, kind string) error {
	me, err := t.c.Accounts.Me(ctx)
	if err != nil {
		return err
	}
	switch kind {
	case webhookverify.KindTransferInitiated, webhookverify.KindTransferConfirmed, webhookverify.KindTransferFailed:
		return t.transfer(ctx, me, kind)
	}
	if me.Type == confpay.AccountAgent {
		return usagef("%s goes to an agent's owner: use the owner's API key, not an agent's", kind)
	}
	agent, err := t.agent(ctx, kind != webhookverify.KindAgentPolicyUpdated)
	if err != nil {
		return err
	}
	if kind == webhookverify.KindAgentPolicyUpdated {
		p, err := t.c.Agents.GetPolicy(ctx, agent.AccountID)
		if err != nil {
			return err
		}
		daily := confpay.MustParseLimit("1000")
		if p.DailyLimitUSDG.String() == daily.String() {
			daily = confpay.MustParseLimit("999")
		}
		if _, err := t.c.Agents.UpdatePolicy(ctx, agent.AccountID, &confpay.SpendPolicyParams{DailyLimitUSDG: &daily}); err != nil {
			return err
		}
		t.step("amended the daily limit of %s to %s USDG (agent.policy.updated)", agent.Handle, daily)
		return nil
	}
	return t.held(ctx, agent, kind)
}

// transfer has a new counterparty pay the account 1 USDG, then settles or
// fails it as kind needs.
func (t *trigger) transfer(ctx context.Context, me *confpay.Account, kind string) error {
	cp, cpKey, err := t.counterparty(ctx)
	if err != nil {
		return err
	}
	if err := t.adm.fund(ctx, cp, t.c.Network(), "1"); err != nil {
		return err
	}
	t.step("funded %s with 1 USDG", cp)
	cc, err := t.clientFor(cpKey)
	if err != nil {
		return err
	}
	tr, err := cc.Transfers.Create(ctx, &confpay.TransferCreateParams{To: me.Handle, Amount: confpay.MustParseAmount("1"), Memo: "confpay trigger " + kind})
	if err != nil {
		return err
	}
	t.step("%s paid you 1 USDG: transfer %s (transfer.initiated)", cp, tr.TransferID)
	switch kind {
	case webhookverify.KindTransferConfirmed:
		if err := t.adm.do(ctx, "POST", "/_fake/settle", nil, nil); err != nil {
			return err
		}
		t.step("settled every pending transfer (transfer.confirmed)")
	case webhookverify.KindTransferFailed:
		if err := t.adm.do(ctx, "POST", "/_fake/transfers/"+tr.TransferID+"/fail", nil, nil); err != nil {
			return err
		}
		t.step("failed transfer %s (transfer.failed)", tr.TransferID)
	}
	return nil
}

// heldPolicy is the trigger agent's policy: a payment above 1 USDG is held.
func heldPolicy() confpay.SpendPolicyParams {
	return confpay.SpendPolicyParams{
		DailyLimitUSDG:          confpay.Ptr(confpay.MustParseLimit("1000")),
		PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("100")),
		HITLThresholdUSDG:       confpay.Ptr(confpay.MustParseLimit("1")),
		AnyRecipient:            true,
	}
}

// holds reports whether p holds a 2 USDG payment to anyone, at any hour.
func holds(p *confpay.SpendPolicy) bool {
	two := confpay.MustParseLimit("2")
	return p.HITLThresholdUSDG != nil && p.HITLThresholdUSDG.Cmp(two) < 0 &&
		p.PerTransactionLimitUSDG.Cmp(two) >= 0 && p.DailyLimitUSDG.Cmp(two) >= 0 &&
		p.AllowedRecipients == nil && (p.ActiveHours == "" || p.ActiveHours == "00:00-23:59") &&
		(len(p.Assets) == 0 || slices.Contains(p.Assets, confpay.AssetUSDG))
}

// agent returns the account's trigger agent, created when it has none;
// when mustHold, its policy is amended if it would not hold a 2 USDG
// payment.
func (t *trigger) agent(ctx context.Context, mustHold bool) (*confpay.Agent, error) {
	agents, err := t.c.Agents.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, ag := range agents {
		if !strings.HasSuffix(ag.Handle, "/"+triggerAgentName) {
			continue
		}
		if ag.Status != confpay.AgentActive {
			return nil, fmt.Errorf("your agent %s is %s: make it active (PATCH /_fake/accounts/%s) or delete it", ag.Handle, ag.Status, ag.AccountID)
		}
		if mustHold {
			p, err := t.c.Agents.GetPolicy(ctx, ag.AccountID)
			if err != nil {
				return nil, err
			}
			if !holds(p) {
				hp := heldPolicy()
				if _, err := t.c.Agents.UpdatePolicy(ctx, ag.AccountID, &hp); err != nil {
					return nil, err
				}
				t.step("amended the policy of %s to hold payments above 1 USDG (agent.policy.updated)", ag.Handle)
			}
		}
		return ag, nil
	}
	hp := heldPolicy()
	hp.AnyRecipient = false // not on creation: absent is any recipient
	ag, err := t.c.Agents.Create(ctx, &confpay.AgentCreateParams{Name: triggerAgentName, SpendPolicy: hp})
	if err != nil {
		return nil, err
	}
	t.step("created your agent %s, holding payments above 1 USDG", ag.Handle)
	return ag, nil
}

// held has the agent pay a new counterparty 2 USDG, held for approval, and
// then approves or rejects it as kind needs.
func (t *trigger) held(ctx context.Context, agent *confpay.Agent, kind string) error {
	n := t.c.Network()
	cp, _, err := t.counterparty(ctx)
	if err != nil {
		return err
	}
	var key struct {
		APIKey string `json:"api_key"`
	}
	if err := t.adm.do(ctx, "POST", "/_fake/accounts/"+agent.AccountID+"/keys", map[string]any{"network": n, "name": "confpay trigger"}, &key); err != nil {
		return err
	}
	ac, err := t.clientFor(key.APIKey)
	if err != nil {
		return err
	}
	if kind == webhookverify.KindAgentTransactionApproved {
		if err := t.adm.fund(ctx, agent.AccountID, n, "2"); err != nil {
			return err
		}
		t.step("funded %s with 2 USDG", agent.Handle)
	}
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: cp, Amount: confpay.MustParseAmount("2"), Memo: "confpay trigger " + kind})
	var he *confpay.HeldError
	if !errors.As(err, &he) {
		if err == nil {
			return fmt.Errorf("the payment of %s was not held for approval", agent.Handle)
		}
		return err
	}
	id := he.Payment.TransactionID
	t.step("%s paid %s 2 USDG, held for your approval: %s (agent.transaction.pending_approval)", agent.Handle, cp, id)
	switch kind {
	case webhookverify.KindAgentTransactionApproved:
		d, err := t.c.Agents.Approve(ctx, id)
		if err != nil {
			return err
		}
		t.step("approved %s: transfer %s (agent.transaction.approved)", id, d.TransferID)
	case webhookverify.KindAgentTransactionRejected:
		if _, err := t.c.Agents.Reject(ctx, id); err != nil {
			return err
		}
		t.step("rejected %s (agent.transaction.rejected)", id)
	}
	return nil
}

// counterparty creates a new verified account with an encryption key and
// returns its handle and its API key on the client's network.
func (t *trigger) counterparty(ctx context.Context) (string, string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	var acct struct {
		Handle  string `json:"handle"`
		TestKey string `json:"test_key"`
		LiveKey string `json:"live_key"`
	}
	if err := t.adm.do(ctx, "POST", "/_fake/accounts", map[string]any{"handle": "@trig_" + hex.EncodeToString(b), "generate_encryption_key": true}, &acct); err != nil {
		return "", "", err
	}
	t.step("created counterparty %s", acct.Handle)
	if t.c.Network() == confpay.NetworkLive {
		return acct.Handle, acct.LiveKey, nil
	}
	return acct.Handle, acct.TestKey, nil
}

// clientFor is a client of the same server for another key.
func (t *trigger) clientFor(key string) (*confpay.Client, error) {
	return confpay.NewClient(key, confpay.WithBaseURL(t.c.BaseURL()), confpay.WithUserAgent("confpay-cli"))
}

// viaV1 is trigger against a server that is not a fakeserver: only what
// /v1 allows, and never live money.
func (t *trigger) viaV1(ctx context.Context, kind, to string) error {
	a := t.app
	switch kind {
	case webhookverify.KindTransferInitiated:
		if to == "" {
			return usagef("%s does not answer /_fake, so it is not a fakeserver: /v1 cannot create a counterparty or fund one. Give --to RECIPIENT and confpay pays it 0.01 USDG from your account (test network only)", clean(t.c.BaseURL()))
		}
		if t.c.Network() != confpay.NetworkTest {
			return usagef("trigger never moves live money: use a test key (hc_test_)")
		}
		tr, err := t.c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: to, Amount: confpay.MustParseAmount("0.01"), Memo: "confpay trigger " + kind})
		if err != nil {
			return err
		}
		if a.jsonOut {
			return a.printJSON(tr)
		}
		fmt.Fprintf(a.stdout, "Not a fakeserver: only /v1 was used. Paid %s 0.01 USDG on %s: transfer %s (transfer.initiated); the service confirms or fails it on its own.\n",
			clean(to), networkLine(t.c), clean(tr.TransferID))
		return nil
	case webhookverify.KindTransferConfirmed, webhookverify.KindTransferFailed:
		return usagef("%s is not a fakeserver, and /v1 cannot settle or fail a transfer: pay someone (confpay pay, or confpay trigger transfer.initiated --to RECIPIENT) and the service sends %s when the chain decides", clean(t.c.BaseURL()), kind)
	case webhookverify.KindAgentPolicyUpdated:
		return usagef("%s is not a fakeserver: amend one of your agents' policies with /v1 (confpay agents policy set AGENT ...) to receive %s", clean(t.c.BaseURL()), kind)
	}
	return usagef("%s is not a fakeserver, and /v1 cannot issue an agent's API key (the dashboard does): with an agent key whose policy holds a payment, confpay pay makes %s, and confpay approve or reject decides it", clean(t.c.BaseURL()), kind)
}

// fakeAdmin calls a fakeserver's admin interface.
type fakeAdmin struct {
	base, token string
	http        *http.Client
}

// detect reports whether the server is a fakeserver: GET /_fake/clock
// answers. A fakeserver with an admin token answers 401 without it, saying
// so; another server's 401 means it is not a fakeserver.
func (f *fakeAdmin) detect(ctx context.Context) (bool, error) {
	err := f.do(ctx, "GET", "/_fake/clock", nil, nil)
	var ae *adminError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ae) && ae.status == http.StatusUnauthorized && (f.token != "" || strings.Contains(ae.msg, "admin token")):
		return false, &codedError{exitAuth, "the fakeserver's admin interface refused the admin token: set " + envAdminToken + " to the token it was started with"}
	case errors.As(err, &ae):
		return false, nil
	}
	return false, err
}

// fund credits account on n with amount USDG.
func (f *fakeAdmin) fund(ctx context.Context, account string, n confpay.Network, amount string) error {
	return f.do(ctx, "POST", "/_fake/fund", map[string]any{"account": account, "network": n, "asset": "USDG", "amount": amount}, nil)
}

// adminError is an error answer of /_fake.
type adminError struct {
	status int
	msg    string
}

func (e *adminError) Error() string { return e.msg }

// do sends one request to the admin interface and decodes a 2xx answer
// into out (when not nil).
func (f *fakeAdmin) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	req.Header.Set("User-Agent", "confpay-cli")
	resp, err := f.http.Do(req)
	if err != nil {
		return &confpay.TransportError{Method: method, Path: path, Attempts: 1, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e confpay.ErrorBody
		_ = json.Unmarshal(b, &e)
		msg := fmt.Sprintf("%s %s: HTTP %d", method, path, resp.StatusCode)
		if e.Code != "" {
			msg += ": " + string(e.Code) + ": " + e.Message
		}
		return &adminError{status: resp.StatusCode, msg: msg}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
