package fakeserver_test

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
)

// heldPolicy holds every payment above 20 USDG.
var heldPolicy = confpay.SpendPolicyParams{DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("20")}

func TestAgentsHeldApprove(t *testing.T) {
	rec := leakcheck.New(nil)
	f := newFixture(t)
	f.alice = newClient(t, f.srv, f.owner.TestKey.Reveal(), rec, noRetry)
	hooks := subscribeSink(t, f.alice)
	newAccount(t, f.srv, "@bob")
	a, _ := f.createAgent("bot", heldPolicy)
	agentKey := newKey(t, f.srv, a.AccountID)
	agent := newClient(t, f.srv, agentKey, rec, noRetry)
	f.srv.AddFunds(t, a.AccountID, "USDG", "1000")

	// At the threshold: submitted. One micro-USDG above: held.
	send(t, agent, "@bob", "20")
	requested := f.srv.Now()
	tr := hold(t, agent, "@bob", "20.000001", orderMemo)
	if tr.To != "@bob" || tr.Asset != "USDG" || !tr.Confidential || tr.TxHash != "" {
		t.Errorf("held answer = %+v", tr)
	}
	if !tr.RequestedAt.Equal(requested) || !tr.ExpiresAt.Equal(requested.Add(24*time.Hour)) {
		t.Errorf("held answer times = %v, %v", tr.RequestedAt, tr.ExpiresAt)
	}
	// Nothing is reserved while held.
	if got := f.srv.Balance(t, a.AccountID, "USDG").String(); got != "980" {
		t.Errorf("available while held = %s, want 980", got)
	}

	// The owner's pending list: the item, with a note only the owner opens.
	l, err := f.alice.Agents.ListPending(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 {
		t.Fatalf("pending = %+v", l)
	}
	p := l[0]
	if p.TransactionID != tr.TransactionID || p.Agent != a.Handle || p.To != "@bob" || p.Asset != "USDG" ||
		p.Status != confpay.DecisionPending || !p.RequestedAt.Equal(requested) || !p.ExpiresAt.Equal(tr.ExpiresAt) ||
		p.DecidedAt != nil || p.TransferID != "" {
		t.Errorf("pending item = %+v", p)
	}
	if !slices.Equal(p.NoteReaders, []string{f.ownerKey.PublicKey().Hex()}) {
		t.Errorf("note readers = %v", p.NoteReaders)
	}
	raw, err := decrypt.DecodeBase64(p.EncryptedNote)
	if err != nil {
		t.Fatal(err)
	}
	note, err := decrypt.OpenNote(f.ownerKey, decrypt.NoteContext{ChainID: confpay.ChainIDTest, Reference: tr.TransactionID, Asset: tr.Asset, Readers: []*decrypt.PublicKey{f.ownerKey.PublicKey()}}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if note.Amount.Cmp(big.NewInt(20_000_001)) != 0 || note.Memo != "order 7" {
		t.Error("the note does not hold the amount and memo")
	}
	// The same note on the next listing.
	if l2, _ := f.alice.Agents.ListPending(f.ctx); len(l2) != 1 || l2[0].EncryptedNote != p.EncryptedNote {
		t.Error("the note changed between listings")
	}
	// Nobody else lists it: not the agent, not a stranger, not the live network.
	live := newClient(t, f.srv, f.owner.LiveKey.Reveal(), nil, noRetry)
	for _, c := range []*confpay.Client{agent, f.mallory, live} {
		if ids := f.pendingIDs(c); len(ids) != 0 {
			t.Errorf("someone else lists %v", ids)
		}
	}

	// Approve inside the window: submitted at once.
	f.srv.Advance(time.Hour)
	d, err := f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != confpay.DecisionApproved || d.TransactionID != tr.TransactionID || d.Agent != a.Handle ||
		d.DecidedAt == nil || !d.DecidedAt.Equal(f.srv.Now()) || !strings.HasPrefix(d.TransferID, "tr_") ||
		!strings.HasPrefix(d.TxHash, "0x") || d.EncryptedNote != "" {
		t.Errorf("approved = %+v", d)
	}
	got, err := f.alice.Transfers.Get(f.ctx, d.TransferID)
	if err != nil || got.From != a.Handle || got.Status != confpay.StatusPending || got.TxHash != d.TxHash {
		t.Errorf("the approved transfer = %+v, %v", got, err)
	}
	if got := f.srv.Balance(t, a.AccountID, "USDG").String(); got != "959.999999" {
		t.Errorf("available after approval = %s", got)
	}
	if ids := f.pendingIDs(f.alice); len(ids) != 0 {
		t.Errorf("still pending: %v", ids)
	}
	// Decided: a second decision of either kind is 404.
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 404, confpay.CodeTransactionNotFound, "", "")
	_, err = f.alice.Agents.Reject(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 404, confpay.CodeTransactionNotFound, "", "")

	// The approved payment counts against the daily limit and settles.
	f.srv.Advance(time.Minute)
	rec2, err := f.srv.Transfer(d.TransferID)
	if err != nil || rec2.Status != confpay.StatusConfirmed || rec2.Amount.String() != "20.000001" {
		t.Errorf("settled = %+v, %v", rec2, err)
	}

	// Events: pending_approval, then approved with the transfer's ids.
	f.srv.Sync()
	ev := hooks.events()
	ip, ia := slices.Index(ev, "agent.transaction.pending_approval"), slices.Index(ev, "agent.transaction.approved")
	if ip < 0 || ia < ip {
		t.Fatalf("events = %v", ev)
	}
	// The approval is announced before the transfer it submitted.
	if ii := hooks.indexOf("transfer.initiated", d.TransferID); ii < ia {
		t.Errorf("transfer.initiated at %d, approved at %d: want the approval first (%v)", ii, ia, ev)
	}
	ap := hooks.find("agent.transaction.approved")[0].fields
	if ap["transaction_id"] != tr.TransactionID || ap["transfer_id"] != d.TransferID || ap["tx_hash"] != d.TxHash ||
		ap["agent"] != a.Handle || ap["counterparty"] != "@bob" {
		t.Errorf("approved event = %v", ap)
	}
	pe := hooks.find("agent.transaction.pending_approval")[0].fields
	if pe["transaction_id"] != tr.TransactionID || pe["transfer_id"] != nil {
		t.Errorf("pending event = %v", pe)
	}
	// The approved transfer has its own events for the owner (as the
	// agent's owner): initiated and confirmed.
	n := 0
	for _, m := range hooks.find("transfer.confirmed") {
		if m.fields["transfer_id"] == d.TransferID {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d transfer.confirmed events for the approved transfer", n)
	}
	rec.Check(t, "20.000001", "20000001")
}

func TestAgentsHeldReject(t *testing.T) {
	f := newFixture(t)
	hooks := subscribeSink(t, f.alice)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", heldPolicy)
	f.srv.AddFunds(t, a.AccountID, "USDG", "100")
	tr := hold(t, agent, "@bob", "50", orderMemo)
	d, err := f.alice.Agents.Reject(f.ctx, tr.TransactionID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != confpay.DecisionRejected || d.DecidedAt == nil || d.TransferID != "" {
		t.Errorf("rejected = %+v", d)
	}
	f.srv.Advance(time.Hour)
	if got := f.srv.Balance(t, a.AccountID, "USDG").String(); got != "100" {
		t.Errorf("a rejected payment moved money: %s", got)
	}
	if recs, _ := f.srv.Transfers(a.AccountID, confpay.NetworkTest); len(recs) != 0 {
		t.Errorf("transfers after reject: %+v", recs)
	}
	if ids := f.pendingIDs(f.alice); len(ids) != 0 {
		t.Errorf("still pending: %v", ids)
	}
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 404, confpay.CodeTransactionNotFound, "", "")
	f.srv.Sync()
	if r := hooks.find("agent.transaction.rejected"); len(r) != 1 || r[0].fields["transaction_id"] != tr.TransactionID {
		t.Errorf("rejected events = %v", r)
	}
	// A rejected payment never counted: the whole daily limit is left.
	if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &confpay.SpendPolicyParams{NoHITLThreshold: true, DailyLimitUSDG: limit("100")}); err != nil {
		t.Fatal(err)
	}
	send(t, agent, "@bob", "100")
}

func TestAgentsHeldExpiry(t *testing.T) {
	f := newFixture(t, fakeserver.WithApprovalWindow(2*time.Hour))
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", heldPolicy)
	f.srv.AddFunds(t, a.AccountID, "USDG", "1000")
	first := hold(t, agent, "@bob", "30", orderMemo)
	f.srv.Advance(time.Minute)
	second := hold(t, agent, "@bob", "40", orderMemo)
	if !first.ExpiresAt.Equal(first.RequestedAt.Add(2 * time.Hour)) {
		t.Fatalf("expires_at = %v, requested_at = %v", first.ExpiresAt, first.RequestedAt)
	}
	// Listed oldest first.
	if ids := f.pendingIDs(f.alice); !slices.Equal(ids, []string{first.TransactionID, second.TransactionID}) {
		t.Fatalf("pending = %v", ids)
	}
	// A nanosecond before expires_at it is still there.
	f.srv.Set(first.ExpiresAt.Add(-time.Nanosecond))
	if ids := f.pendingIDs(f.alice); len(ids) != 2 {
		t.Fatalf("pending before expiry = %v", ids)
	}
	// At exactly expires_at it leaves the list, and any decision is 409.
	f.srv.Set(first.ExpiresAt)
	if ids := f.pendingIDs(f.alice); !slices.Equal(ids, []string{second.TransactionID}) {
		t.Fatalf("pending at expiry = %v", ids)
	}
	_, err := f.alice.Agents.Approve(f.ctx, first.TransactionID)
	wantAPIError(t, err, 409, confpay.CodeTransactionExpired, "", "")
	_, err = f.alice.Agents.Reject(f.ctx, first.TransactionID)
	wantAPIError(t, err, 409, confpay.CodeTransactionExpired, "", "")
	// Still 409 long after, and the agent and a stranger still get 403.
	f.srv.Advance(72 * time.Hour)
	_, err = f.alice.Agents.Approve(f.ctx, first.TransactionID)
	wantAPIError(t, err, 409, confpay.CodeTransactionExpired, "", "")
	_, err = f.mallory.Agents.Approve(f.ctx, first.TransactionID)
	wantAPIError(t, err, 403, confpay.CodeNotAgentOwner, "", "")
	if ids := f.pendingIDs(f.alice); len(ids) != 0 {
		t.Errorf("pending long after = %v", ids)
	}
	if got := f.srv.Balance(t, a.AccountID, "USDG").String(); got != "1000" {
		t.Errorf("expired payments moved money: %s", got)
	}
}

// TestAgentsHeldExpiryRealClock: expiry on a server that follows the wall
// clock.
func TestAgentsHeldExpiryRealClock(t *testing.T) {
	f := newFixture(t, fakeserver.WithRealClock(), fakeserver.WithApprovalWindow(time.Hour))
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", heldPolicy)
	f.srv.AddFunds(t, a.AccountID, "USDG", "1000")
	tr := hold(t, agent, "@bob", "30", orderMemo)
	f.srv.Set(tr.ExpiresAt.Add(time.Second))
	_, err := f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 409, confpay.CodeTransactionExpired, "", "")
}

func TestAgentsHeldDeciders(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", heldPolicy)
	f.srv.AddFunds(t, a.AccountID, "USDG", "1000")
	tr := hold(t, agent, "@bob", "30", orderMemo)
	// The agent itself and a stranger: 403, for both decisions.
	for _, c := range []*confpay.Client{agent, f.mallory} {
		_, err := c.Agents.Approve(f.ctx, tr.TransactionID)
		wantAPIError(t, err, 403, confpay.CodeNotAgentOwner, "", "")
		_, err = c.Agents.Reject(f.ctx, tr.TransactionID)
		wantAPIError(t, err, 403, confpay.CodeNotAgentOwner, "", "")
	}
	// The owner with a live key: it is a test-network payment, so 404.
	live := newClient(t, f.srv, f.owner.LiveKey.Reveal(), nil, noRetry)
	_, err := live.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 404, confpay.CodeTransactionNotFound, "", "")
	// Unknown ids.
	_, err = f.alice.Agents.Approve(f.ctx, "atx_doesnotexist")
	wantAPIError(t, err, 404, confpay.CodeTransactionNotFound, "", "")
	// Still held after all that.
	if ids := f.pendingIDs(f.alice); !slices.Equal(ids, []string{tr.TransactionID}) {
		t.Errorf("pending = %v", ids)
	}
}

// TestAgentsHeldApproveRecheck: approval re-runs the checks against the
// policy in force now and the balance now; a failure answers that error and
// leaves the payment held.
func TestAgentsHeldApproveRecheck(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	newAccount(t, f.srv, "@carol")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("20"),
		AllowedRecipients: []string{"@bob", "@carol"}, ActiveHours: confpay.Ptr("09:00-10:00"),
	})
	f.srv.AddFunds(t, a.AccountID, "USDG", "100")
	tr := hold(t, agent, "@bob", "60", orderMemo)
	stillHeld := func(step string) {
		t.Helper()
		if ids := f.pendingIDs(f.alice); !slices.Equal(ids, []string{tr.TransactionID}) {
			t.Fatalf("%s: pending = %v", step, ids)
		}
	}
	patch := func(p confpay.SpendPolicyParams) {
		t.Helper()
		if _, err := f.alice.Agents.UpdatePolicy(f.ctx, a.AccountID, &p); err != nil {
			t.Fatal(err)
		}
	}

	// Tightened per-transaction limit.
	patch(confpay.SpendPolicyParams{PerTransactionLimitUSDG: limit("59.999999")})
	_, err := f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RulePerTransactionLimit)
	stillHeld("per-tx")
	// Recipient dropped.
	patch(confpay.SpendPolicyParams{PerTransactionLimitUSDG: limit("100"), AllowedRecipients: []string{"@carol"}})
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleRecipientNotAllowed)
	stillHeld("recipient")
	// Asset dropped.
	patch(confpay.SpendPolicyParams{AnyRecipient: true, Assets: []string{"ETH"}})
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleAssetNotAllowed)
	stillHeld("asset")
	// Daily limit used up meanwhile by smaller payments.
	patch(confpay.SpendPolicyParams{Assets: []string{"USDG"}, DailyLimitUSDG: limit("100")})
	send(t, agent, "@bob", "20")
	send(t, agent, "@bob", "20")
	send(t, agent, "@bob", "0.5")
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID) // 40.5 + 60 > 100
	wantAPIError(t, err, 403, confpay.CodePolicyViolation, "", confpay.RuleDailyLimit)
	stillHeld("daily")
	// Balance spent meanwhile: 59.5 left, 60 needed.
	patch(confpay.SpendPolicyParams{DailyLimitUSDG: limit("500")})
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	stillHeld("balance")
	// The owner's verification lapsed: no money moves, even by approval.
	if err := f.srv.SetKYC(f.owner.AccountID, confpay.KYCPending); err != nil {
		t.Fatal(err)
	}
	_, err = f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	wantAPIError(t, err, 403, confpay.CodeKYCRequired, "", "")
	stillHeld("kyc")
	if err := f.srv.SetKYC(f.owner.AccountID, confpay.KYCVerified); err != nil {
		t.Fatal(err)
	}

	// Outside active hours, paused, and over a threshold now lowered: none
	// of these is re-checked; the owner's approval stands for them.
	f.srv.AddFunds(t, a.AccountID, "USDG", "0.5")
	f.srv.Set(time.Date(2026, 1, 5, 15, 0, 0, 0, time.UTC))
	if err := f.srv.SetAgentStatus(a.AccountID, confpay.AgentPaused); err != nil {
		t.Fatal(err)
	}
	patch(confpay.SpendPolicyParams{HITLThresholdUSDG: limit("1")})
	d, err := f.alice.Agents.Approve(f.ctx, tr.TransactionID)
	if err != nil || d.Status != confpay.DecisionApproved || d.TransferID == "" {
		t.Fatalf("approve = %+v, %v", d, err)
	}
	if got := f.srv.Balance(t, a.AccountID, "USDG").String(); got != "0" {
		t.Errorf("available = %s, want 0", got)
	}
}

// TestAgentsHeldNotReserved: held payments reserve nothing and do not count
// against the daily limit until approved.
func TestAgentsHeldNotReserved(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	a, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("200"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("50")})
	f.srv.AddFunds(t, a.AccountID, "USDG", "100")
	for i := 0; i < 3; i++ {
		hold(t, agent, "@bob", "60", orderMemo)
	}
	send(t, agent, "@bob", "40")
	// A payment above the threshold is held whatever the balance: the
	// balance is looked at only on approval.
	held := hold(t, agent, "@bob", "61", orderMemo)
	if ids := f.pendingIDs(f.alice); len(ids) != 4 {
		t.Errorf("pending = %v", ids)
	}
	_, err := f.alice.Agents.Approve(f.ctx, held.TransactionID)
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
}

// TestExpiredHeldPaymentsArePruned (issue 16 item 2's growth): an expired
// held payment answers 409 to a decision for the 30-day history window,
// then is forgotten like an unknown id (404), in the direct API too, so
// an agent held at its cap for months keeps memory flat.
func TestExpiredHeldPaymentsArePruned(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	bot := srv.AddAgent(t, "@alice", "bot", confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("1"),
	})
	srv.AddFunds(t, bot.Handle, "USDG", "100")
	owner := srv.Client(alice.TestKey)
	old := hold(t, bot.Client, "@bob", "5").TransactionID
	srv.Advance(25 * time.Hour) // the approval window (24 h) passes
	if _, err := owner.Agents.Approve(context.Background(), old); !errors.Is(err, confpay.ErrTransactionExpired) {
		t.Fatalf("decision a day after expiry: %v, want 409 transaction_expired", err)
	}
	if p := srv.Held(t, old); p.Status != confpay.DecisionExpired {
		t.Fatalf("status %s", p.Status)
	}
	srv.Advance(29 * 24 * time.Hour) // expired 29 days ago: still remembered
	hold(t, bot.Client, "@bob", "5")
	if _, err := owner.Agents.Approve(context.Background(), old); !errors.Is(err, confpay.ErrTransactionExpired) {
		t.Fatalf("decision 29 days after expiry: %v, want 409", err)
	}
	srv.Advance(2 * 24 * time.Hour) // now past the 30-day window
	recent := hold(t, bot.Client, "@bob", "5").TransactionID
	if _, err := owner.Agents.Approve(context.Background(), old); !errors.Is(err, confpay.ErrTransactionNotFound) {
		t.Fatalf("decision 31 days after expiry: %v, want 404 transaction_not_found", err)
	}
	if _, err := srv.HeldPayment(old); err == nil {
		t.Fatal("the direct API still holds the pruned payment")
	}
	if p := srv.Held(t, recent); p.Status != confpay.DecisionPending {
		t.Fatalf("the payment just held: %s", p.Status)
	}
}

// TestPendingListKeepsTheOrderPaymentsWereHeld: the pending list is oldest
// first, and payments held in the same instant (every payment of a test
// that does not move the virtual clock) keep the order they were held in,
// not the order of their random ids.
func TestPendingListKeepsTheOrderPaymentsWereHeld(t *testing.T) {
	f := newFixture(t)
	newAccount(t, f.srv, "@bob")
	_, agent := f.createAgent("bot", holdAll)
	var want []string
	for i := range 30 {
		want = append(want, hold(t, agent, "@bob", strconv.Itoa(i+1)).TransactionID)
	}
	if got := f.pendingIDs(f.alice); !slices.Equal(got, want) {
		t.Errorf("pending list = %v\nwant the order held: %v", got, want)
	}
}
