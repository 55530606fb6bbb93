package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
)

func (a *app) agentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Manage agent accounts and their spend policies",
		Example: `  confpay agents list
  confpay agents create buyer --daily-limit 500 --per-payment-limit 200 --approval-threshold 50
  confpay agents policy get buyer
  confpay agents policy set buyer --daily-limit 800 --allow @cloudshop --allow api.market`,
	}
	policy := &cobra.Command{
		Use:     "policy",
		Short:   "Show or change an agent's spend policy",
		Example: "  confpay agents policy get buyer\n  confpay agents policy set buyer --no-approval-threshold",
	}
	policy.AddCommand(a.policyGetCmd(), a.policySetCmd())
	cmd.AddCommand(a.agentsListCmd(), a.agentsCreateCmd(), policy)
	return cmd
}

func (a *app) agentsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List your agents",
		Args:    exactArgs(),
		Example: "  confpay agents list\n  confpay agents list --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			agents, err := listAgents(cmd.Context(), c)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(confpay.AgentList{Agents: agents})
			}
			if len(agents) == 0 {
				fmt.Fprintln(a.stdout, "No agents.")
				return nil
			}
			t := a.newTable("ID", "HANDLE", "STATUS", "ADDRESS", "POLICY", "CREATED")
			for _, ag := range agents {
				t.row(clean(ag.AccountID), clean(ag.Handle), a.status(string(ag.Status)), clean(ag.PublicKey), clean(ag.SpendPolicyID), fmtTime(ag.CreatedAt))
			}
			return t.flush()
		},
	}
}

// policyFlags are the spend-policy flags of agents create and policy set.
type policyFlags struct {
	daily, perPayment, threshold, activeHours string
	allow, assets                             []string
	anyRecipient, noThreshold                 bool
}

func (p *policyFlags) add(cmd *cobra.Command, patch bool) {
	f := cmd.Flags()
	f.StringVar(&p.daily, "daily-limit", "", "USDG the agent may spend in any 24 hours")
	f.StringVar(&p.perPayment, "per-payment-limit", "", "USDG the agent may spend in one payment")
	f.StringVar(&p.threshold, "approval-threshold", "", "hold payments above this many USDG for your approval")
	f.StringVar(&p.activeHours, "active-hours", "", "UTC hours when the agent may pay, such as 09:00-17:00")
	f.StringSliceVar(&p.allow, "allow", nil, "a recipient the agent may pay (repeat, or comma-separated); *.domain allowed")
	f.StringSliceVar(&p.assets, "assets", nil, "assets the agent may pay in (USDG, ETH)")
	if patch {
		f.BoolVar(&p.anyRecipient, "any-recipient", false, "remove the recipient restriction")
		f.BoolVar(&p.noThreshold, "no-approval-threshold", false, "hold nothing for approval any more")
	}
}

// params builds the policy from the flags that were given.
func (p *policyFlags) params(cmd *cobra.Command) (confpay.SpendPolicyParams, error) {
	var sp confpay.SpendPolicyParams
	set := cmd.Flags().Changed
	limits := []struct {
		flag string
		text string
		dst  **confpay.Limit
	}{
		{"daily-limit", p.daily, &sp.DailyLimitUSDG},
		{"per-payment-limit", p.perPayment, &sp.PerTransactionLimitUSDG},
		{"approval-threshold", p.threshold, &sp.HITLThresholdUSDG},
	}
	for _, l := range limits {
		if !set(l.flag) {
			continue
		}
		v, err := confpay.ParseLimit(l.text)
		if err != nil {
			return sp, usagef("--%s %q is not a limit: %s", l.flag, clean(l.text), strings.TrimPrefix(err.Error(), "confpay: "))
		}
		*l.dst = confpay.Ptr(v)
	}
	if set("active-hours") {
		sp.ActiveHours = confpay.Ptr(p.activeHours)
	}
	if set("allow") {
		sp.AllowedRecipients = append([]string{}, p.allow...)
	}
	if set("assets") {
		sp.Assets = make([]string, len(p.assets))
		for i, s := range p.assets {
			sp.Assets[i] = strings.ToUpper(s)
		}
	}
	sp.AnyRecipient, sp.NoHITLThreshold = p.anyRecipient, p.noThreshold
	if sp.AnyRecipient && sp.AllowedRecipients != nil {
		return sp, usagef("--any-recipient and --allow contradict each other")
	}
	if sp.NoHITLThreshold && sp.HITLThresholdUSDG != nil {
		return sp, usagef("--no-approval-threshold and --approval-threshold contradict each other")
	}
	return sp, nil
}

func (a *app) agentsCreateCmd() *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an agent account under a spend policy",
		Long: `Create an agent: a wallet of its own, paying under a spend policy you set.
--daily-limit and --per-payment-limit are required; payments above
--approval-threshold wait for your approval (confpay approvals list).
The agent's handle is @you/NAME; give it an API key from the dashboard.
Spend policies are per network: the policy is set on your key's network;
on the other network the agent may pay nothing until a key of that network
sets its policy (confpay agents policy set NAME --daily-limit N
--per-payment-limit N).`,
		Args:    exactArgs("NAME"),
		Example: "  confpay agents create buyer --daily-limit 500 --per-payment-limit 200 \\\n      --approval-threshold 50 --allow @cloudshop --active-hours 08:00-20:00",
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("daily-limit") || !cmd.Flags().Changed("per-payment-limit") {
				return usagef("agents create needs --daily-limit and --per-payment-limit")
			}
			sp, err := pf.params(cmd)
			if err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			ag, err := c.Agents.Create(cmd.Context(), &confpay.AgentCreateParams{Name: args[0], SpendPolicy: sp})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(ag)
			}
			other := otherNetwork(c)
			return a.fields(
				[2]string{"Agent", clean(ag.AccountID)},
				[2]string{"Handle", clean(ag.Handle)},
				[2]string{"Status", a.status(string(ag.Status))},
				[2]string{"Address", clean(ag.PublicKey)},
				[2]string{"Policy", clean(ag.SpendPolicyID)},
				[2]string{"Network", networkLine(c) + ": the policy is set here"},
				[2]string{"On " + string(other), "no policy yet: the agent may pay nothing there until a " + string(other) + " key sets both limits"},
			)
		},
	}
	pf.add(cmd, false)
	return cmd
}

// resolveAgent turns an account id, an agent handle (@owner/name) or a bare
// name into the agent's account id.
func (a *app) resolveAgent(ctx context.Context, c *confpay.Client, ref string) (string, error) {
	if strings.HasPrefix(ref, "acct_") {
		return ref, nil
	}
	agents, err := listAgents(ctx, c)
	if err != nil {
		return "", err
	}
	for _, ag := range agents {
		name := ag.Handle[strings.LastIndexByte(ag.Handle, '/')+1:]
		if strings.EqualFold(ag.Handle, ref) || name == ref {
			return ag.AccountID, nil
		}
	}
	return "", &codedError{exitNotFound, fmt.Sprintf("no agent of yours is called %q (confpay agents list shows them)", clean(ref))}
}

func (a *app) policyGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get AGENT",
		Short:   "Show an agent's spend policy on your key's network (AGENT: id, @owner/name or name)",
		Args:    exactArgs("AGENT"),
		Example: "  confpay agents policy get buyer\n  confpay agents policy get acct_0123456789abcdefghij --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			id, err := a.resolveAgent(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			p, err := c.Agents.GetPolicy(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.printPolicy(c, p)
		},
	}
}

func (a *app) policySetCmd() *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "set AGENT",
		Short: "Change an agent's spend policy on your key's network: only the flags given change",
		Long: `Change an agent's spend policy on your key's network; the other network's
policy is untouched (spend policies are per network). Only the flags given
change. Where the policy was never set on this network (it allows nothing),
give both --daily-limit and --per-payment-limit.`,
		Args: exactArgs("AGENT"),
		Example: `  confpay agents policy set buyer --daily-limit 800
  confpay agents policy set buyer --allow @cloudshop,api.market --assets USDG,ETH
  confpay agents policy set buyer --any-recipient --no-approval-threshold`,
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := pf.params(cmd)
			if err != nil {
				return err
			}
			if cmd.Flags().NFlag() == 0 {
				return usagef("policy set needs at least one policy flag (see --help)")
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			id, err := a.resolveAgent(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			p, err := c.Agents.UpdatePolicy(cmd.Context(), id, &sp)
			if err != nil {
				return err
			}
			return a.printPolicy(c, p)
		},
	}
	pf.add(cmd, true)
	return cmd
}

// printPolicy shows a policy, which is the one on c's network.
func (a *app) printPolicy(c *confpay.Client, p *confpay.SpendPolicy) error {
	if a.jsonOut {
		return a.printJSON(p)
	}
	recipients := "any"
	if p.AllowedRecipients != nil {
		recipients = clean(strings.Join(p.AllowedRecipients, ", "))
	}
	threshold := "none (nothing is held)"
	if p.HITLThresholdUSDG != nil {
		threshold = p.HITLThresholdUSDG.String() + " USDG"
	}
	rows := [][2]string{
		{"Policy", clean(p.PolicyID)},
		{"Network", networkLine(c)},
	}
	if p.DailyLimitUSDG.IsZero() && p.PerTransactionLimitUSDG.IsZero() {
		rows = append(rows, [2]string{"Not set", "the agent may pay nothing on " + string(c.Network()) +
			" until policy set gives --daily-limit and --per-payment-limit with a " + string(c.Network()) + " key"})
	}
	return a.fields(append(rows,
		[2]string{"Daily limit", p.DailyLimitUSDG.String() + " USDG"},
		[2]string{"Per payment", p.PerTransactionLimitUSDG.String() + " USDG"},
		[2]string{"Approval above", threshold},
		[2]string{"Recipients", recipients},
		[2]string{"Assets", clean(strings.Join(p.Assets, ", "))},
		[2]string{"Active hours", clean(p.ActiveHours) + " UTC"},
		[2]string{"Updated", fmtTime(p.UpdatedAt)},
	)...)
}

// otherNetwork is the network c's key does not select.
func otherNetwork(c *confpay.Client) confpay.Network {
	if c.Network() == confpay.NetworkLive {
		return confpay.NetworkTest
	}
	return confpay.NetworkLive
}

func (a *app) approvalsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "approvals",
		Short:   "Agent payments waiting for your approval",
		Example: "  confpay approvals list",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List held agent payments, with amounts and memos opened by your key",
		Long: `List your agents' payments held for your approval. With your decryption key
the amount and memo of each are opened locally; approve or reject with
confpay approve ID / confpay reject ID.`,
		Args:    exactArgs(),
		Example: "  confpay approvals list\n  confpay approvals list --json | jq '.pending[] | {transaction_id, amount}'",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			key, err := a.decryptionKey()
			if err != nil {
				return err
			}
			pending, err := c.Agents.ListPending(cmd.Context())
			if err != nil {
				return err
			}
			rows := make([]openedTransaction, len(pending))
			for i, p := range pending {
				o, err := openTransaction(c, key, p)
				if err != nil && !wrongKey(err) {
					return err
				}
				rows[i] = openedTransaction{p, o}
			}
			if a.jsonOut {
				return a.printJSON(struct {
					Pending []openedTransaction `json:"pending"`
				}{rows})
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.stdout, "Nothing waits for your approval.")
				return nil
			}
			t := a.newTable("ID", "AGENT", "TO", "AMOUNT", "ASSET", "MEMO", "REQUESTED", "EXPIRES")
			for _, r := range rows {
				amt, memo := "sealed", "-"
				if r.Amount != nil {
					amt, memo = r.Amount.String(), orDash(short(clean(*r.Memo), 32))
				}
				t.row(clean(r.TransactionID), clean(r.Agent), clean(r.To), amt, assetOrDefault(r.Asset), memo, fmtTime(r.RequestedAt), fmtTime(r.ExpiresAt))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if key == nil {
				fmt.Fprintf(a.stdout, "Amounts are sealed to you: set %s or pass --decryption-key-file to read them.\n", envDecryptionKey)
			}
			return nil
		},
	})
	return cmd
}

func (a *app) approveCmd() *cobra.Command {
	return a.decisionCmd("approve", "Approve a held agent payment: it is submitted at once",
		"  confpay approve atx_0123456789abcdefghij")
}

func (a *app) rejectCmd() *cobra.Command {
	return a.decisionCmd("reject", "Reject a held agent payment: nothing moves",
		"  confpay reject atx_0123456789abcdefghij")
}

// decisionCmd is approve or reject. It reads the held payment first, so
// that what is decided is shown with its amount and memo when the key can
// open them.
func (a *app) decisionCmd(verb, short, example string) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   verb + " TRANSACTION_ID",
		Short: short,
		Long: short + `.

On a terminal, confpay first shows the payment (with its amount and memo
when your decryption key opens them) and asks for confirmation; --yes skips
the question. Scripts (no terminal) are not asked.`,
		Args:    exactArgs("TRANSACTION_ID"),
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			key, err := a.decryptionKey()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var o opened
			pending, err := c.Agents.ListPending(ctx)
			if err != nil {
				return err
			}
			var held *confpay.AgentTransaction
			for _, p := range pending {
				if p.TransactionID == args[0] {
					held = p
					if o, err = openTransaction(c, key, p); err != nil && !wrongKey(err) {
						return err
					}
				}
			}
			if held != nil && !yes && (a.terminal || isTerminal(a.stdin)) {
				if !a.confirm(verb, held, o) {
					return &codedError{exitError, "nothing was " + strings.TrimSuffix(verb, "e") + "ed"}
				}
			}
			decide := c.Agents.Approve
			if verb == "reject" {
				decide = c.Agents.Reject
			}
			d, err := decide(ctx, args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(openedTransaction{d, o})
			}
			pairs := [][2]string{
				{"Transaction", clean(d.TransactionID)},
				{"Status", a.status(string(d.Status))},
				{"Agent", clean(d.Agent)},
				{"To", clean(d.To)},
			}
			if o.Amount != nil {
				pairs = append(pairs, [2]string{"Amount", o.Amount.String() + " " + assetOrDefault(d.Asset)}, [2]string{"Memo", orDash(clean(*o.Memo))})
			} else {
				pairs = append(pairs, [2]string{"Asset", assetOrDefault(d.Asset)})
			}
			if d.TransferID != "" {
				pairs = append(pairs, [2]string{"Transfer", clean(d.TransferID)}, [2]string{"Tx hash", orDash(clean(d.TxHash))})
			}
			return a.fields(append(pairs, [2]string{"Decided", fmtTimePtr(d.DecidedAt)})...)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// confirm asks on stderr whether to approve or reject a held payment and
// reads the answer from stdin: only "y" or "yes" agrees.
func (a *app) confirm(verb string, p *confpay.AgentTransaction, o opened) bool {
	what := "a payment in " + assetOrDefault(p.Asset) + " (sealed)"
	if o.Amount != nil {
		what = o.Amount.String() + " " + assetOrDefault(p.Asset)
		if *o.Memo != "" {
			what += fmt.Sprintf(" (memo %q)", clean(*o.Memo))
		}
	}
	fmt.Fprintf(a.stderr, "%s %s from %s to %s? [y/N] ", strings.ToUpper(verb[:1])+verb[1:], what, clean(p.Agent), clean(p.To))
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
