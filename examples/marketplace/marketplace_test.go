package marketplace_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/examples/marketplace"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// world is the marketplace on a fakeserver: its account, two sellers, a
// buyer, a supplier, and its purchasing agent.
func world(t *testing.T, srv *fakeserver.Server, policy confpay.SpendPolicyParams) *fakeserver.Seeded {
	t.Helper()
	usdg := func(v string) fakeserver.Balances { return fakeserver.Balances{"test": {"USDG": v}} }
	return srv.Seed(t, &fakeserver.Seed{
		Accounts: []fakeserver.SeedAccount{
			{Handle: "@market", Type: confpay.AccountBusiness, GenerateEncryptionKey: true, Balances: usdg("1000")},
			{Handle: "@seller1", GenerateEncryptionKey: true},
			{Handle: "@seller2", GenerateEncryptionKey: true},
			{Handle: "@buyer", GenerateEncryptionKey: true, Balances: usdg("500")},
			{Handle: "@supplier", Type: confpay.AccountBusiness, GenerateEncryptionKey: true},
		},
		Agents: []fakeserver.SeedAgent{{Owner: "@market", Name: "purchasing", SpendPolicy: policy, Balances: usdg("400")}},
	})
}

var defaultPolicy = confpay.SpendPolicyParams{
	DailyLimitUSDG:          confpay.Ptr(confpay.MustParseLimit("1000")),
	PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("200")),
	HITLThresholdUSDG:       confpay.Ptr(confpay.MustParseLimit("50")),
}

func amt(s string) confpay.Amount { return confpay.MustParseAmount(s) }

// payoutOnce pays order-1 through the faults already scripted and checks
// that exactly one transfer left the marketplace.
func payoutOnce(t *testing.T, srv *fakeserver.Server, payouts *marketplace.Payouts) {
	t.Helper()
	order := marketplace.Order{ID: "order-1", Seller: "@seller1", Amount: amt("42.5"), Memo: "order 1"}
	po, err := payouts.Pay(t.Context(), order)
	if err != nil {
		t.Fatalf("pay: %v", err)
	}
	again, err := payouts.Pay(t.Context(), order) // the job runs twice
	if err != nil || again.TransferID != po.TransferID {
		t.Fatalf("second pay: %v, %v; want the same transfer %s", again, err, po.TransferID)
	}
	for _, f := range srv.Faults() {
		if f.Used < f.Times {
			t.Errorf("fault %s used %d times of %d", f.Action, f.Used, f.Times)
		}
	}
	transfers, err := srv.Transfers("@market", confpay.NetworkTest)
	if err != nil || len(transfers) != 1 || transfers[0].TransferID != po.TransferID {
		t.Fatalf("transfers %v (%v), want exactly %s", transfers, err, po.TransferID)
	}
	srv.Advance(time.Second) // one block
	srv.CheckBalance(t, "@market", "USDG", "957.5")
	srv.CheckBalance(t, "@seller1", "USDG", "42.5")
}

func TestPayoutThroughFaultsExactlyOnce(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	w := world(t, srv, defaultPolicy)
	noWait := confpay.Ptr(0)
	for _, f := range []fakeserver.Fault{
		{Action: fakeserver.FaultError, Status: http.StatusServiceUnavailable, RetryAfter: noWait},
		{Action: fakeserver.FaultDropAfterCommit},
		{Action: fakeserver.FaultResetAfterCommit},
		{Action: fakeserver.FaultError, Status: http.StatusBadGateway},
	} {
		f.Method, f.Path, f.Times = http.MethodPost, "/v1/transfers", 1
		srv.Inject(t, f)
	}
	payoutOnce(t, srv, marketplace.NewPayouts(srv.Client(w.Account("@market").TestKey)))
	srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
}

// TestPayoutSynctest runs the payout through 503s (each with Retry-After: 1)
// and a connection reset with the SDK's real backoff, in a synctest bubble:
// seconds of retry waits in no wall time.
func TestPayoutSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener())
		w := world(t, srv, defaultPolicy)
		for _, f := range []fakeserver.Fault{
			{Action: fakeserver.FaultError, Times: 2},
			{Action: fakeserver.FaultResetAfterCommit, Times: 1},
			{Action: fakeserver.FaultDropAfterCommit, Times: 1},
		} {
			f.Path = "/v1/transfers"
			srv.Inject(t, f)
		}
		client := srv.Client(w.Account("@market").TestKey, confpay.WithRetryBackoff(500*time.Millisecond, 8*time.Second))
		start := time.Now()
		payoutOnce(t, srv, marketplace.NewPayouts(client))
		if waited := time.Since(start); waited < 2*time.Second {
			t.Errorf("the retries waited %v of bubble time, want at least the two Retry-After: 1", waited)
		}
		srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
	})
}

func TestWebhookAppliedOnce(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	w := world(t, srv, defaultPolicy)
	client := srv.Client(w.Account("@market").TestKey)
	payouts := marketplace.NewPayouts(client)
	outbox := &marketplace.Outbox{}
	relayDown := true
	outbox.Fail = func(marketplace.Notice) error { // the mail relay is down for the first delivery
		if relayDown {
			relayDown = false
			return errors.New("relay down")
		}
		return nil
	}
	const secret = "whsec_marketplace_test"
	rc := marketplace.NewReceiver(payouts, outbox.Send)
	hook := srv.AddWebhook(t, "@market", rc.Handler(secret, webhookverify.NewMemoryStore(0)), secret, confpay.EventTransferConfirmed)
	rec := srv.Record(t, "@market", confpay.EventTransferConfirmed)

	po, err := payouts.Pay(t.Context(), marketplace.Order{ID: "order-7", Seller: "@seller2", Amount: amt("10")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second) // confirmed; the first delivery fails on the relay
	ev := rec.Wait(t, confpay.EventTransferConfirmed).(*webhookverify.TransferEvent)
	if ev.TransferID != po.TransferID {
		t.Fatalf("confirmed %s, want %s", ev.TransferID, po.TransferID)
	}
	if n := len(outbox.Notices()); n != 0 {
		t.Fatalf("%d notices before the retry, want 0", n)
	}
	srv.Advance(6 * time.Second) // the retry: 5 s ± 10 % of jitter
	if _, err := client.Webhooks.Replay(t.Context(), hook.WebhookID, ev.EventID); err != nil {
		t.Fatal(err)
	}
	srv.Sync() // the replay is delivered

	want := []marketplace.Notice{{EventID: ev.EventID, OrderID: "order-7", Status: marketplace.PayoutPaid}}
	if got := outbox.Notices(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("notices %v, want %v", got, want)
	}
	if got := payouts.Get("order-7").Status; got != marketplace.PayoutPaid {
		t.Errorf("payout %s, want paid", got)
	}
	deliveries, err := srv.Deliveries("@market", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, d := range deliveries {
		if d.WebhookID == hook.WebhookID {
			mine = append(mine, fmt.Sprintf("%s %s %d attempts %d", d.Trigger, d.Status, d.Attempts, d.ResponseStatus))
		}
	}
	if want := "[event succeeded 2 attempts 200 replay succeeded 1 attempts 200]"; fmt.Sprint(mine) != want {
		t.Errorf("deliveries %v, want %s", mine, want)
	}
	srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
}

func TestApprovalWithDecryptedAmount(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := fakeserver.New(t)
	w := world(t, srv, defaultPolicy)
	buyer := marketplace.NewPurchasing(w.Agent("@market/purchasing").Client)
	owner := w.Account("@market")
	desk := marketplace.NewApprovals(owner.Client, owner.PrivateKey())
	rec := srv.Record(t, "@market", confpay.EventAgentTransactionPendingApproval, confpay.EventAgentTransactionApproved)

	small, err := buyer.Buy(ctx, marketplace.PurchaseOrder{ID: "1", Supplier: "@supplier", Amount: amt("30")})
	if err != nil || small.Transfer == nil {
		t.Fatalf("30 USDG: %+v, %v; want paid at once", small, err)
	}
	var held []string
	for i, v := range []string{"80", "150"} {
		p, err := buyer.Buy(ctx, marketplace.PurchaseOrder{ID: fmt.Sprint(i + 2), Supplier: "@supplier", Amount: amt(v), Memo: "crate " + v})
		if err != nil || p.Held == nil {
			t.Fatalf("%s USDG: %+v, %v; want held", v, p, err)
		}
		held = append(held, p.Held.TransactionID)
	}

	approved, err := desk.ApproveUpTo(ctx, amt("100"))
	if err != nil || fmt.Sprint(approved) != fmt.Sprint(held[:1]) {
		t.Fatalf("approved %v (%v), want %v", approved, err, held[:1])
	}
	pending, err := desk.Pending(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != held[1] || pending[0].Amount.String() != "150" || pending[0].Memo != "crate 150" {
		t.Fatalf("pending %+v (%v), want %s of 150", pending, err, held[1])
	}
	if p := srv.Held(t, held[0]); p.Status != confpay.DecisionApproved || p.TransferID == "" {
		t.Errorf("%s: %s, transfer %q", held[0], p.Status, p.TransferID)
	}
	if p := srv.Held(t, held[1]); p.Status != confpay.DecisionPending {
		t.Errorf("%s: %s, want pending", held[1], p.Status)
	}
	ev := rec.Wait(t, confpay.EventAgentTransactionApproved).(*webhookverify.AgentTransactionEvent)
	if ev.TransactionID != held[0] || ev.TransferID != srv.Held(t, held[0]).TransferID {
		t.Errorf("approved event %+v", ev)
	}
	rec.AssertKinds(t, confpay.EventAgentTransactionPendingApproval, confpay.EventAgentTransactionPendingApproval, confpay.EventAgentTransactionApproved)

	srv.Advance(time.Second) // one block
	srv.CheckBalance(t, "@supplier", "USDG", "110")
	srv.CheckBalance(t, "@market/purchasing", "USDG", "290")
	srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
}

func TestApprovalExpiry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := fakeserver.New(t)
	w := world(t, srv, defaultPolicy)
	buyer := marketplace.NewPurchasing(w.Agent("@market/purchasing").Client)
	owner := w.Account("@market")
	desk := marketplace.NewApprovals(owner.Client, owner.PrivateKey())

	p, err := buyer.Buy(ctx, marketplace.PurchaseOrder{ID: "9", Supplier: "@supplier", Amount: amt("80")})
	if err != nil || p.Held == nil {
		t.Fatalf("%+v, %v; want held", p, err)
	}
	id := p.Held.TransactionID
	srv.Advance(24 * time.Hour) // the approval window

	if pending, err := desk.Pending(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending %+v (%v), want none", pending, err)
	}
	_, err = desk.Approve(ctx, id)
	var apiErr *confpay.APIError
	if !errors.Is(err, confpay.ErrTransactionExpired) || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict {
		t.Fatalf("approve after the window: %v, want 409 transaction_expired", err)
	}
	if got := srv.Held(t, id).Status; got != confpay.DecisionExpired {
		t.Errorf("status %s, want expired", got)
	}
	srv.Advance(time.Second)
	srv.CheckBalance(t, "@supplier", "USDG", "0")
	srv.CheckBalance(t, "@market/purchasing", "USDG", "400")
	srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
}

func TestDailyWindow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := fakeserver.New(t)
	w := world(t, srv, confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("100")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("100"))})
	buyer := marketplace.NewPurchasing(w.Agent("@market/purchasing").Client)
	buy := func(id, v string) error {
		_, err := buyer.Buy(ctx, marketplace.PurchaseOrder{ID: id, Supplier: "@supplier", Amount: amt(v)})
		return err
	}

	if err := buy("1", "60"); err != nil {
		t.Fatal(err)
	}
	err := buy("2", "50")
	var apiErr *confpay.APIError
	if !errors.Is(err, confpay.ErrPolicyViolation) || !errors.As(err, &apiErr) || apiErr.Rule != confpay.RuleDailyLimit {
		t.Fatalf("second purchase: %v, want the daily limit", err)
	}
	if err := buy("3", "40"); err != nil { // exactly the limit
		t.Fatalf("up to the limit: %v", err)
	}
	srv.Advance(23 * time.Hour)
	if err := buy("4", "50"); !errors.Is(err, confpay.ErrPolicyViolation) {
		t.Fatalf("23 hours later: %v, want the daily limit still", err)
	}
	srv.Advance(time.Hour) // the first purchase leaves the rolling window
	if err := buy("5", "50"); err != nil {
		t.Fatalf("a day later: %v", err)
	}
	srv.Advance(time.Second)
	srv.CheckBalance(t, "@supplier", "USDG", "150")
	srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
}

func TestMonthlyStatement(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := fakeserver.New(t)
	w := world(t, srv, defaultPolicy)
	market := w.Account("@market")
	client := market.Client
	payouts := marketplace.NewPayouts(client)
	buyerClient := srv.Client(w.Account("@buyer").TestKey)

	pay := func(id, seller, v string) {
		t.Helper()
		if _, err := payouts.Pay(ctx, marketplace.Order{ID: id, Seller: seller, Amount: amt(v), Memo: "order " + id}); err != nil {
			t.Fatal(err)
		}
		srv.Advance(time.Minute)
	}
	receive := func(v string) {
		t.Helper()
		if _, err := buyerClient.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@market", Amount: amt(v), Memo: "top-up"}); err != nil {
			t.Fatal(err)
		}
		srv.Advance(time.Minute)
	}
	pay("1", "@seller1", "10")
	receive("200")
	pay("2", "@seller2", "20.25")
	pay("3", "@seller1", "30")
	receive("5.5")
	srv.Set(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) // midnight: February's first
	pay("4", "@seller2", "7")

	jan, err := marketplace.MonthlyStatement(ctx, client, market.PrivateKey(), time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC), 2)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range jan.Lines {
		lines = append(lines, fmt.Sprintf("%t %s %s %s %s", l.Incoming, l.Counterparty, l.Amount, l.Memo, l.Status))
	}
	want := []string{
		"false @seller1 10 order 1 confirmed",
		"true @buyer 200 top-up confirmed",
		"false @seller2 20.25 order 2 confirmed",
		"false @seller1 30 order 3 confirmed",
		"true @buyer 5.5 top-up confirmed",
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("January:\n%v\nwant\n%v", lines, want)
	}
	if in, out := jan.In["USDG"].String(), jan.Out["USDG"].String(); in != "205.5" || out != "60.25" {
		t.Errorf("January in %s out %s, want 205.5 and 60.25", in, out)
	}
	feb, err := marketplace.MonthlyStatement(ctx, client, market.PrivateKey(), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 2)
	if err != nil || len(feb.Lines) != 1 || feb.Lines[0].Memo != "order 4" {
		t.Fatalf("February %+v (%v), want order 4 only", feb, err)
	}

	balances, err := marketplace.Balances(ctx, client, market.PrivateKey())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := balances["USDG"], srv.Balance(t, "@market", "USDG"); got.Cmp(want) != 0 || got.String() != "1138.25" {
		t.Errorf("proved balance %s, books %s, want 1138.25", got, want)
	}
	srv.CheckAudit(t) // no finding: the marketplace uses the API as documented
}
