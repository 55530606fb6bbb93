package fakeserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// These tests call the emit functions the way transfers and agents do and
// check what each subscriber receives: the documented payload, the
// headers, a signature the test computes itself, the routing to each side,
// and never an amount.

// receivedHook is one verified delivery, decoded.
type receivedHook struct {
	hookHit
	fields map[string]any
}

// collectHooks checks every request rc got against secret and decodes it.
func collectHooks(t *testing.T, rc *hookReceiver, secret confpay.Secret) []receivedHook {
	t.Helper()
	var out []receivedHook
	for i, h := range rc.all() {
		if got, want := h.header.Get(webhookverify.SignatureHeader), testHMAC(secret.Reveal(), h.body); got != want {
			t.Errorf("request %d: signature does not match the test's own HMAC", i+1)
		}
		if ct := h.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("request %d: Content-Type %q", i+1, ct)
		}
		if a := h.header.Get(webhookverify.AttemptHeader); a != "1" {
			t.Errorf("request %d: attempt header %q, want 1", i+1, a)
		}
		var m map[string]any
		if err := json.Unmarshal(h.body, &m); err != nil {
			t.Fatalf("request %d: body is not JSON: %v", i+1, err)
		}
		if id := h.header.Get(webhookverify.EventIDHeader); id == "" || id != m["event_id"] {
			t.Errorf("request %d: event id header %q, body %v", i+1, id, m["event_id"])
		}
		if _, err := webhookverify.ConstructEvent(h.body, h.header.Get(webhookverify.SignatureHeader), secret.Reveal()); err != nil {
			t.Errorf("request %d: webhookverify refuses it: %v", i+1, err)
		}
		out = append(out, receivedHook{hookHit: h, fields: m})
	}
	return out
}

// sortedKeys returns the sorted field names of a payload.
func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkNoAmount fails if the amount of the hand-built transfers appears in any
// request (body or header), in any of its spellings.
func checkNoAmount(t *testing.T, rcs ...*hookReceiver) {
	t.Helper()
	figures := []string{handUnits.String(), "123.456789", "123456789"}
	for _, rc := range rcs {
		for i, h := range rc.all() {
			var hdr bytes.Buffer
			_ = h.header.Write(&hdr)
			for _, f := range figures {
				if bytes.Contains(h.body, []byte(f)) || strings.Contains(hdr.String(), f) {
					t.Errorf("request %d carries the amount %s", i+1, f)
				}
			}
		}
	}
}

func TestEmitTransferReachesBothSides(t *testing.T) {
	s := New(t)
	alice, bob, carol := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob"), newTestParty(t, s, "@carol")
	ra, rb, rcar := newHookReceiver(t, s, answerAlways(200)), newHookReceiver(t, s, answerAlways(200)), newHookReceiver(t, s, answerAlways(200))
	transferKinds := []string{webhookverify.KindTransferInitiated, webhookverify.KindTransferConfirmed, webhookverify.KindTransferFailed}
	wa := subscribeHooks(t, alice, ra.url(), transferKinds...)
	wb := subscribeHooks(t, bob, rb.url(), transferKinds...)
	subscribeHooks(t, carol, rcar.url(), transferKinds...)

	tr := handTransfer(s, alice.acct, bob.acct)
	for _, k := range transferKinds {
		emitTransfer(s, k, tr)
	}
	s.Sync()

	got := map[string][]receivedHook{"alice": collectHooks(t, ra, wa.Secret), "bob": collectHooks(t, rb, wb.Secret)}
	if n := rcar.count(); n != 0 {
		t.Fatalf("carol, who is not a party, got %d deliveries", n)
	}
	wantKeys := []string{"account", "confidential", "counterparty", "direction", "event", "event_id", "timestamp", "transfer_id", "tx_hash", "asset"}
	slices.Sort(wantKeys)
	ids := map[string]bool{}
	for who, rs := range got {
		if len(rs) != 3 {
			t.Fatalf("%s got %d deliveries, want 3", who, len(rs))
		}
		var kinds []string
		for _, r := range rs {
			m := r.fields
			kinds = append(kinds, m["event"].(string))
			if !slices.Equal(sortedKeys(m), wantKeys) {
				t.Errorf("%s: fields %v, want %v", who, sortedKeys(m), wantKeys)
			}
			account, direction, counterparty := "@alice", "sent", "@bob"
			if who == "bob" {
				account, direction, counterparty = "@bob", "received", "@alice"
			}
			if m["account"] != account || m["direction"] != direction || m["counterparty"] != counterparty ||
				m["asset"] != "USDG" || m["confidential"] != true || m["tx_hash"] != hashHex(tr.txHash) || m["transfer_id"] != tr.id ||
				m["timestamp"] != s.Now().Format("2006-01-02T15:04:05Z07:00") {
				t.Errorf("%s: payload %v", who, m)
			}
			id := m["event_id"].(string)
			if !strings.HasPrefix(id, "evt_") || ids[id] {
				t.Errorf("%s: event id %q is not a fresh evt_ id", who, id)
			}
			ids[id] = true
		}
		slices.Sort(kinds)
		want := slices.Clone(transferKinds)
		slices.Sort(want)
		if !slices.Equal(kinds, want) {
			t.Errorf("%s got kinds %v", who, kinds)
		}
	}
	checkNoAmount(t, ra, rb)
}

func TestEmitTransferToExternalWallet(t *testing.T) {
	s := New(t)
	alice := newTestParty(t, s, "@alice")
	ra := newHookReceiver(t, s, answerAlways(200))
	wa := subscribeHooks(t, alice, ra.url(), webhookverify.KindTransferConfirmed)
	tr := handTransfer(s, alice.acct, nil)
	tr.confidential = false
	emitTransfer(s, webhookverify.KindTransferConfirmed, tr)
	s.Sync()
	rs := collectHooks(t, ra, wa.Secret)
	if len(rs) != 1 {
		t.Fatalf("got %d deliveries, want 1", len(rs))
	}
	m := rs[0].fields
	if m["counterparty"] != tr.toAddr.Hex() || m["direction"] != "sent" || m["confidential"] != false {
		t.Fatalf("payload %v", m)
	}
	checkNoAmount(t, ra)
}

func TestEmitFiltersByKindAndNetwork(t *testing.T) {
	s := New(t)
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	rc := newHookReceiver(t, s, answerAlways(200))
	w := subscribeHooks(t, alice, rc.url(), webhookverify.KindTransferConfirmed)
	tr := handTransfer(s, alice.acct, bob.acct)
	emitTransfer(s, webhookverify.KindTransferInitiated, tr) // not subscribed
	s.mu.Lock()
	s.emitTransferLocked(s.nets[confpay.NetworkLive], webhookverify.KindTransferConfirmed, tr) // other network
	s.mu.Unlock()
	s.Sync()
	if n := rc.count(); n != 0 {
		t.Fatalf("got %d deliveries for unsubscribed kinds or the other network", n)
	}
	emitTransfer(s, webhookverify.KindTransferConfirmed, tr)
	s.Sync()
	if rs := collectHooks(t, rc, w.Secret); len(rs) != 1 || rs[0].fields["event"] != webhookverify.KindTransferConfirmed {
		t.Fatalf("got %d deliveries, want the one confirmed event", len(rs))
	}
}

func TestEmitAgentTransferReachesAgentAndOwner(t *testing.T) {
	s := New(t)
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	bot := newTestAgent(t, s, alice, "bot")
	ra, rbot, rb := newHookReceiver(t, s, answerAlways(200)), newHookReceiver(t, s, answerAlways(200)), newHookReceiver(t, s, answerAlways(200))
	wa := subscribeHooks(t, alice, ra.url(), webhookverify.Kinds()...)
	wbot := subscribeHooks(t, bot, rbot.url(), webhookverify.Kinds()...)
	wb := subscribeHooks(t, bob, rb.url(), webhookverify.Kinds()...)

	// The agent pays bob; then bob pays the agent.
	emitTransfer(s, webhookverify.KindTransferConfirmed, handTransfer(s, bot.acct, bob.acct))
	s.Sync()
	emitTransfer(s, webhookverify.KindTransferConfirmed, handTransfer(s, bob.acct, bot.acct))
	s.Sync()

	owner, agent, payee := collectHooks(t, ra, wa.Secret), collectHooks(t, rbot, wbot.Secret), collectHooks(t, rb, wb.Secret)
	if len(owner) != 2 || len(agent) != 2 || len(payee) != 2 {
		t.Fatalf("deliveries: owner %d, agent %d, bob %d; want 2 each", len(owner), len(agent), len(payee))
	}
	for i, dir := range []string{"sent", "received"} {
		o, a := owner[i], agent[i]
		if !bytes.Equal(o.body, a.body) {
			t.Errorf("%s: the owner and the agent got different bodies", dir)
		}
		if a.fields["account"] != "@alice/bot" || a.fields["direction"] != dir || a.fields["counterparty"] != "@bob" {
			t.Errorf("%s: agent side payload %v", dir, a.fields)
		}
		if payee[i].fields["account"] != "@bob" || payee[i].fields["counterparty"] != "@alice/bot" {
			t.Errorf("%s: bob's payload %v", dir, payee[i].fields)
		}
		if payee[i].fields["event_id"] == a.fields["event_id"] {
			t.Errorf("%s: both sides share one event id", dir)
		}
	}
	checkNoAmount(t, ra, rbot, rb)
}

func TestEmitAgentTransactionEventsGoToOwner(t *testing.T) {
	s := New(t)
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	bot := newTestAgent(t, s, alice, "bot")
	ra, rbot := newHookReceiver(t, s, answerAlways(200)), newHookReceiver(t, s, answerAlways(200))
	wa := subscribeHooks(t, alice, ra.url(), webhookverify.Kinds()...)
	subscribeHooks(t, bot, rbot.url(), webhookverify.Kinds()...)

	p := &payment{from: bot.acct, to: bob.acct, toAddr: bob.acct.address, toText: "@bob", asset: "USDG", units: handUnits, confidential: true}
	held := &heldTx{id: names.NewID("atx_"), agent: bot.acct, p: p, toText: "@bob", asset: "USDG", confidential: true}
	rejected := &heldTx{id: names.NewID("atx_"), agent: bot.acct, p: p, toText: "@bob", asset: "USDG", confidential: true}
	s.mu.Lock()
	n := s.nets[confpay.NetworkTest]
	s.emitAgentTransactionLocked(n, webhookverify.KindAgentTransactionPendingApproval, held)
	held.transfer = handTransfer(s, bot.acct, bob.acct)
	s.emitAgentTransactionLocked(n, webhookverify.KindAgentTransactionApproved, held)
	s.emitAgentTransactionLocked(n, webhookverify.KindAgentTransactionRejected, rejected)
	s.emitPolicyUpdatedLocked(n, bot.acct, []string{"daily_limit_usdg", "assets"})
	s.emitPolicyUpdatedLocked(n, alice.acct, []string{"assets"}) // not an agent: nothing
	s.mu.Unlock()
	s.Sync()

	if n := rbot.count(); n != 0 {
		t.Fatalf("the agent's own subscription got %d agent events; they go to the owner", n)
	}
	rs := collectHooks(t, ra, wa.Secret)
	if len(rs) != 4 {
		t.Fatalf("owner got %d deliveries, want 4", len(rs))
	}
	byKind := map[string]map[string]any{}
	for _, r := range rs {
		byKind[r.fields["event"].(string)] = r.fields
	}
	pend := byKind[webhookverify.KindAgentTransactionPendingApproval]
	if pend == nil || pend["account"] != "@alice/bot" || pend["agent"] != "@alice/bot" || pend["direction"] != "sent" ||
		pend["counterparty"] != "@bob" || pend["transaction_id"] != held.id || pend["asset"] != "USDG" || pend["confidential"] != true {
		t.Errorf("pending_approval payload %v", pend)
	}
	if _, ok := pend["transfer_id"]; ok {
		t.Errorf("pending_approval carries a transfer_id: %v", pend)
	}
	if _, ok := pend["tx_hash"]; ok {
		t.Errorf("pending_approval carries a tx_hash: %v", pend)
	}
	appr := byKind[webhookverify.KindAgentTransactionApproved]
	if appr == nil || appr["transfer_id"] != held.transfer.id || appr["tx_hash"] != hashHex(held.transfer.txHash) || appr["transaction_id"] != held.id {
		t.Errorf("approved payload %v", appr)
	}
	rej := byKind[webhookverify.KindAgentTransactionRejected]
	if rej == nil || rej["transaction_id"] != rejected.id {
		t.Errorf("rejected payload %v", rej)
	}
	pol := byKind[webhookverify.KindAgentPolicyUpdated]
	wantPolicyKeys := []string{"account", "agent", "changed_fields", "event", "event_id", "policy_id", "timestamp"}
	if pol == nil || !slices.Equal(sortedKeys(pol), wantPolicyKeys) || pol["account"] != "@alice" || pol["agent"] != "@alice/bot" {
		t.Errorf("policy payload %v", pol)
	} else if cf := pol["changed_fields"].([]any); len(cf) != 2 || cf[0] != "daily_limit_usdg" || cf[1] != "assets" {
		t.Errorf("changed_fields %v", cf)
	}
	checkNoAmount(t, ra, rbot)
}

func TestEmitWithoutSubscribersRecordsTheEvent(t *testing.T) {
	s := New(t)
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	tr := handTransfer(s, alice.acct, bob.acct)
	emitTransfer(s, webhookverify.KindTransferConfirmed, tr)
	evs := s.hooks.Events(confpay.NetworkTest, "")
	if len(evs) != 2 {
		t.Fatalf("%d events recorded, want 2 (one per side)", len(evs))
	}
	for _, e := range evs {
		if e.Built {
			t.Errorf("event %s was rendered with nobody subscribed", e.ID)
		}
		var m map[string]any
		if err := json.Unmarshal(e.Payload, &m); err != nil || m["event_id"] != e.ID {
			t.Fatalf("event %s body %s", e.ID, e.Payload)
		}
	}
	for i, e := range s.hooks.Events(confpay.NetworkTest, "") {
		if !e.Built || &e.Payload[0] != &evs[i].Payload[0] {
			t.Errorf("event %s rendered twice", e.ID)
		}
	}
}

// The receiver answers non-2xx statuses in other tests; here a subscriber
// whose receiver fails does not hold up another's delivery.
func TestOneFailingReceiverDoesNotBlockAnother(t *testing.T) {
	s := New(t)
	alice, bob := newTestParty(t, s, "@alice"), newTestParty(t, s, "@bob")
	bad, good := newHookReceiver(t, s, answerAlways(http.StatusInternalServerError)), newHookReceiver(t, s, answerAlways(200))
	subscribeHooks(t, alice, bad.url(), webhookverify.KindTransferConfirmed)
	wg := subscribeHooks(t, bob, good.url(), webhookverify.KindTransferConfirmed)
	emitTransfer(s, webhookverify.KindTransferConfirmed, handTransfer(s, alice.acct, bob.acct))
	s.Sync()
	if bad.count() != 1 || good.count() != 1 {
		t.Fatalf("bad %d, good %d; want one attempt each", bad.count(), good.count())
	}
	if d := listDeliveries(t, bob, wg.WebhookID); len(d) != 1 || d[0].Status != confpay.DeliverySucceeded {
		t.Fatalf("good receiver's record: %+v", d)
	}
}
