package fakeserver_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
	"github.com/confpay/confpay-go/webhookverify"
)

// verifyHooks checks every request's signature with the test's own HMAC
// and its headers, and that none carries a figure.
func verifyHooks(t *testing.T, k *hookSink, secret confpay.Secret, figures ...string) []hookRequest {
	t.Helper()
	reqs := k.all()
	for i, r := range reqs {
		m := hmac.New(sha256.New, []byte(secret.Reveal()))
		m.Write(r.body)
		if got := r.header.Get("X-Service-Signature"); got != hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("request %d: the signature is not the HMAC-SHA256 of the body", i+1)
		}
		if r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Service-Event-Id") != r.fields["event_id"] ||
			r.header.Get("X-Service-Delivery-Attempt") == "" {
			t.Errorf("request %d: headers %v", i+1, r.header)
		}
		var hdr bytes.Buffer
		_ = r.header.Write(&hdr)
		for _, f := range figures {
			if leakcheck.Contains(r.body, f) || leakcheck.Contains(hdr.Bytes(), f) {
				t.Errorf("request %d carries the figure %s", i+1, f)
			}
		}
	}
	return reqs
}

func TestWebhooksEndToEndTransfers(t *testing.T) {
	srv := fakeserver.New(t)
	ctx := context.Background()
	rec := leakcheck.New(nil)
	mk := func(handle string) (*fakeserver.AccountInfo, *confpay.Client) {
		info, err := srv.CreateAccount(fakeserver.AccountParams{Handle: handle, GenerateEncryptionKey: true})
		if err != nil {
			t.Fatal(err)
		}
		c := srv.Client(info.TestKey, confpay.WithHTTPClient(rec.Client()), confpay.WithMaxRetries(0))
		return info, c
	}
	aliceInfo, alice := mk("@alice")
	_, bob := mk("@bob")
	_, carol := mk("@carol")
	if err := srv.Fund(aliceInfo.AccountID, confpay.NetworkTest, "USDG", "1000"); err != nil {
		t.Fatal(err)
	}
	ka, kb, kc := newHookSink(t, 200), newHookSink(t, 204), newHookSink(t, 200)
	sub := func(c *confpay.Client, k *hookSink) *confpay.Webhook {
		w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: k.hs.URL + "/hook", Events: confpay.EventKinds()})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	wa, wb, _ := sub(alice, ka), sub(bob, kb), sub(carol, kc)

	t0 := srv.Now()
	tr1, err := alice.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("123.456789"), Memo: "rent"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Sync() // the first attempts need no clock move
	if n, m := len(ka.all()), len(kb.all()); n != 1 || m != 1 {
		t.Fatalf("after the transfer was created: alice got %d, bob %d; want 1 each", n, m)
	}
	srv.Advance(time.Second) // confirmation
	t1 := srv.Now()
	tr2, err := alice.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("7.5")})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.FailTransfer(tr2.TransferID); err != nil {
		t.Fatal(err)
	}
	srv.Sync()

	figures := []string{"123.456789", "123456789", "7.5", "7500000", "1000", "1000000000"}
	type want struct {
		kind string
		tr   *confpay.Transfer
		at   time.Time
	}
	wants := []want{
		{webhookverify.KindTransferInitiated, tr1, t0},
		{webhookverify.KindTransferConfirmed, tr1, t1},
		{webhookverify.KindTransferInitiated, tr2, t1},
		{webhookverify.KindTransferFailed, tr2, t1},
	}
	wantKeys := []string{"account", "asset", "confidential", "counterparty", "direction", "event", "event_id", "timestamp", "transfer_id", "tx_hash"}
	// Events emitted at one instant may arrive in any order: find each.
	check := func(who string, reqs []hookRequest, account, direction, counterparty string) map[string]string {
		t.Helper()
		if len(reqs) != len(wants) {
			t.Fatalf("%s got %d deliveries, want %d", who, len(reqs), len(wants))
		}
		ids := map[string]string{} // kind and transfer id -> event id
		for _, w := range wants {
			var m map[string]any
			for _, r := range reqs {
				if r.fields["event"] == w.kind && r.fields["transfer_id"] == w.tr.TransferID {
					m = r.fields
				}
			}
			if m == nil {
				t.Fatalf("%s never got %s for %s", who, w.kind, w.tr.TransferID)
			}
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("%s %s: fields %v", who, w.kind, keys)
			}
			if m["account"] != account || m["direction"] != direction || m["counterparty"] != counterparty ||
				m["asset"] != "USDG" || m["confidential"] != true || m["tx_hash"] != w.tr.TxHash ||
				m["timestamp"] != w.at.Format(time.RFC3339Nano) {
				t.Errorf("%s %s: payload %v", who, w.kind, m)
			}
			ids[w.kind+" "+w.tr.TransferID] = m["event_id"].(string)
		}
		return ids
	}
	aliceIDs := check("alice", verifyHooks(t, ka, wa.Secret, figures...), "@alice", "sent", "@bob")
	check("bob", verifyHooks(t, kb, wb.Secret, figures...), "@bob", "received", "@alice")
	if n := len(kc.all()); n != 0 {
		t.Fatalf("carol, no party to the transfers, got %d deliveries", n)
	}

	// The history: newest first (creation order reversed), each delivered once.
	ds, err := allDeliveries(ctx, alice, wa.WebhookID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 4 {
		t.Fatalf("%d deliveries listed, want 4", len(ds))
	}
	for i, d := range ds {
		w := wants[len(wants)-1-i]
		if string(d.Event) != w.kind || d.EventID != aliceIDs[w.kind+" "+w.tr.TransferID] || d.Status != confpay.DeliverySucceeded ||
			d.Attempts != 1 || d.RetryCount != 0 || d.ResponseStatus != 200 || d.Trigger != confpay.TriggerEvent ||
			d.LastAttemptAt == nil || !d.LastAttemptAt.Equal(w.at) || d.NextAttemptAt != nil {
			t.Errorf("delivery %d: %+v", i, d)
		}
	}

	// Replay alice's first event: same id and bytes, a fresh attempt.
	first := ka.all()[0]
	evID := first.fields["event_id"].(string)
	r, err := alice.Webhooks.Replay(ctx, wa.WebhookID, evID)
	if err != nil {
		t.Fatal(err)
	}
	if r.EventID != evID || r.WebhookID != wa.WebhookID || r.Status != confpay.DeliveryPending || r.DeliveryID == "" {
		t.Fatalf("replay answer %+v", r)
	}
	srv.Sync()
	reqs := verifyHooks(t, ka, wa.Secret, figures...)
	if len(reqs) != 5 || !bytes.Equal(reqs[4].body, first.body) || reqs[4].header.Get("X-Service-Delivery-Attempt") != "1" {
		t.Fatalf("the replay did not re-send the same body (%d requests)", len(reqs))
	}
	ds, _ = allDeliveries(ctx, alice, wa.WebhookID)
	if len(ds) != 5 || ds[0].DeliveryID != r.DeliveryID || ds[0].Trigger != confpay.TriggerReplay || ds[0].Status != confpay.DeliverySucceeded || ds[0].EventID != evID {
		t.Fatalf("after the replay: %+v", ds[0])
	}
	// Bob's side of the same transfer is not alice's event.
	_, err = alice.Webhooks.Replay(ctx, wa.WebhookID, kb.all()[0].fields["event_id"].(string))
	wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
	rec.Check(t, figures...)
}

func TestWebhooksDeleteStopsDeliveries(t *testing.T) {
	srv := fakeserver.New(t)
	ctx := context.Background()
	alice, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Fund(alice.AccountID, confpay.NetworkTest, "USDG", "10"); err != nil {
		t.Fatal(err)
	}
	c := srv.Client(alice.TestKey, confpay.WithMaxRetries(0))
	k := newHookSink(t, http.StatusInternalServerError)
	w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: k.hs.URL, Events: confpay.EventKinds()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1"), Confidential: confpay.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	srv.Sync()
	if n := len(k.all()); n != 1 {
		t.Fatalf("%d attempts before the delete, want 1", n)
	}
	if err := c.Webhooks.Delete(ctx, w.WebhookID); err != nil {
		t.Fatal(err)
	}
	srv.Advance(48 * time.Hour) // the confirmation and every retry would fall in here
	if n := len(k.all()); n != 1 {
		t.Fatalf("%d attempts after the delete, want still 1", n)
	}
	if n := fakeserver.PendingTimers(srv); n != 0 {
		t.Fatalf("%d timers left after the delete", n)
	}
}

func TestWebhooksEndToEndAgents(t *testing.T) {
	srv := fakeserver.New(t)
	ctx := context.Background()
	rec := leakcheck.New(nil)
	client := func(key confpay.Secret) *confpay.Client {
		c := srv.Client(key, confpay.WithHTTPClient(rec.Client()), confpay.WithMaxRetries(0))
		return c
	}
	aliceInfo, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	bobInfo, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := client(aliceInfo.TestKey), client(bobInfo.TestKey)
	limit := func(s string) *confpay.Limit { l := confpay.MustParseLimit(s); return &l }
	agent, err := alice.Agents.Create(ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG: limit("1000"), PerTransactionLimitUSDG: limit("500"), HITLThresholdUSDG: limit("50"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	agentKey, err := srv.IssueKey(agent.AccountID, confpay.NetworkTest, "bot")
	if err != nil {
		t.Fatal(err)
	}
	bot := client(agentKey.APIKey)
	if err := srv.Fund(agent.AccountID, confpay.NetworkTest, "USDG", "900"); err != nil {
		t.Fatal(err)
	}
	ka, kbot, kb := newHookSink(t, 200), newHookSink(t, 200), newHookSink(t, 200)
	sub := func(c *confpay.Client, k *hookSink) *confpay.Webhook {
		w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: k.hs.URL, Events: confpay.EventKinds()})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	wa, wbot, wb := sub(alice, ka), sub(bot, kbot), sub(bob, kb)
	pay := func(amount string) *confpay.Transfer {
		t.Helper()
		tr, err := bot.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount(amount)})
		if err != nil {
			t.Fatal(err)
		}
		srv.Sync()
		return tr
	}

	direct := pay("20")      // under the threshold: submitted
	srv.Advance(time.Second) // confirmed
	failed := pay("5.5")
	if err := srv.FailTransfer(failed.TransferID); err != nil {
		t.Fatal(err)
	}
	held := hold(t, bot, "@bob", "75.25") // held for alice
	srv.Sync()
	approved, err := alice.Agents.Approve(ctx, held.TransactionID)
	if err != nil {
		t.Fatal(err)
	}
	srv.Sync()
	rejectedTx := hold(t, bot, "@bob", "60")
	srv.Sync()
	if _, err := alice.Agents.Reject(ctx, rejectedTx.TransactionID); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Agents.UpdatePolicy(ctx, agent.AccountID, &confpay.SpendPolicyParams{DailyLimitUSDG: limit("800")}); err != nil {
		t.Fatal(err)
	}
	srv.Sync()

	figures := []string{"20", "20000000", "5.5", "5500000", "75.25", "75250000", "60", "60000000", "900", "900000000"}
	owner := verifyHooks(t, ka, wa.Secret, figures...)
	verifyHooks(t, kbot, wbot.Secret, figures...)
	verifyHooks(t, kb, wb.Secret, figures...)

	// The owner saw every one of the seven kinds.
	kinds := map[string]bool{}
	for _, r := range owner {
		kinds[r.fields["event"].(string)] = true
	}
	for _, k := range webhookverify.Kinds() {
		if !kinds[k] {
			t.Errorf("the owner never got %s (got %v)", k, kinds)
		}
	}
	// The agent's own subscription gets its transfers, never agent.* events.
	for _, r := range kbot.all() {
		if r.fields["account"] != agent.Handle || r.fields["direction"] != "sent" {
			t.Errorf("agent subscription got %v", r.fields)
		}
		if _, ok := r.fields["agent"]; ok {
			t.Errorf("agent subscription got an agent event %v", r.fields["event"])
		}
	}
	// The direct payment: the same event to the agent and its owner; bob
	// gets his own side.
	var botSide, ownerSide, bobSide []byte
	for _, r := range kbot.find(webhookverify.KindTransferConfirmed) {
		if r.fields["transfer_id"] == direct.TransferID {
			botSide = r.body
		}
	}
	for _, r := range ka.find(webhookverify.KindTransferConfirmed) {
		if r.fields["transfer_id"] == direct.TransferID {
			ownerSide = r.body
		}
	}
	for _, r := range kb.find(webhookverify.KindTransferConfirmed) {
		if r.fields["transfer_id"] == direct.TransferID && r.fields["direction"] == "received" && r.fields["counterparty"] == agent.Handle {
			bobSide = r.body
		}
	}
	if botSide == nil || !bytes.Equal(botSide, ownerSide) || bobSide == nil {
		t.Fatalf("transfer.confirmed: agent %s, owner %s, bob %s", botSide, ownerSide, bobSide)
	}

	pending := ka.find(webhookverify.KindAgentTransactionPendingApproval)
	if len(pending) != 2 {
		t.Fatalf("%d pending_approval events, want 2", len(pending))
	}
	if m := pending[0].fields; m["account"] != agent.Handle || m["agent"] != agent.Handle || m["direction"] != "sent" ||
		m["counterparty"] != "@bob" || m["transaction_id"] != held.TransactionID || m["asset"] != "USDG" || m["confidential"] != true {
		t.Errorf("pending_approval payload %v", m)
	}
	if ap := ka.find(webhookverify.KindAgentTransactionApproved); len(ap) != 1 || ap[0].fields["transaction_id"] != held.TransactionID ||
		ap[0].fields["transfer_id"] != approved.TransferID || ap[0].fields["tx_hash"] != approved.TxHash || approved.TransferID == "" {
		t.Errorf("approved events %v", ap)
	}
	if rj := ka.find(webhookverify.KindAgentTransactionRejected); len(rj) != 1 || rj[0].fields["transaction_id"] != rejectedTx.TransactionID {
		t.Errorf("rejected events %v", rj)
	}
	pol := ka.find(webhookverify.KindAgentPolicyUpdated)
	if len(pol) != 1 || pol[0].fields["account"] != "@alice" || pol[0].fields["agent"] != agent.Handle ||
		pol[0].fields["policy_id"] != agent.SpendPolicyID || agent.SpendPolicyID == "" {
		t.Fatalf("policy events %v", pol)
	}
	if cf, _ := pol[0].fields["changed_fields"].([]any); len(cf) != 1 || cf[0] != "daily_limit_usdg" {
		t.Errorf("changed_fields %v", pol[0].fields["changed_fields"])
	}
	// bob is told about payments, never about alice's agent business.
	for _, r := range kb.all() {
		if _, ok := r.fields["agent"]; ok {
			t.Errorf("bob got %v", r.fields["event"])
		}
	}
	rec.Check(t, figures...)
}
