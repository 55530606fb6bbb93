package fakeserver

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
)

// goldenBatch holds one item of each kind, every optional field set
// once and unset once.
func goldenBatch() *batch {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	later := at.Add(time.Hour)
	rate, err := confpay.ParseLimit("3000.5")
	if err != nil {
		panic(err)
	}
	return &batch{
		Reset: true, Now: at, Seq: [3]uint64{7, 8, 9}, HeldSeq: map[string]int{"test": 3, "live": 1},
		Assets:   []Asset{{Code: "USDG", Decimals: 6, USDGRate: rate}},
		Accounts: []accountRec{{ID: "acct_a", Handle: "@a", Type: "business", Address: "0x00000000000000000000000000000000000000a0", KYC: "verified", CreatedAt: at, Seq: 1, EncKey: "0xk", Domains: []string{"a.example", "b.example"}, Owner: "acct_o", AgentName: "bot", Status: "active", PolicyID: "pol_1"}},
		Keys: []keyRec{{ID: "key_1", Name: "ci", Network: confpay.NetworkTest, Acct: "acct_a", Hash: [32]byte{1, 2, 3}, CreatedAt: at, LastUsed: &later, Requests: 42, USDGMoved: "123456789012345678901234567890", Seq: 2},
			{ID: "key_2", Network: confpay.NetworkLive, Acct: "acct_a", CreatedAt: at, Revoked: &later, USDGMoved: "0", Seq: 3}},
		Policies: []policyRec{{Network: confpay.NetworkTest, Agent: "acct_g", ID: "pol_1", UpdatedAt: at, Daily: 100, PerTx: 10, Recipients: []string{"@b"}, Hours: "09:00-17:00", Threshold: -1}},
		Books: []bookRec{{Network: confpay.NetworkTest, Acct: "acct_a", Rows: []ledger.Row{
			{Asset: "USDG", Units: "18446744073709551616000", Reserved: "5", Version: 4, CT: []byte{9, 9, 9}, CTVersion: 3},
			{Asset: "ETH", Units: "0", Version: 1}}}},
		Transfers: []transferRec{{Network: confpay.NetworkTest, ID: "tr_1", From: "acct_a", To: "acct_b", ToAddr: "0x00000000000000000000000000000000000000b0", ToText: "@b", Asset: "USDG", Units: "10000", Confidential: true, Memo: "m", Status: "confirmed", TxHash: "0xabc", CreatedAt: at, ConfirmedAt: &later, Key: "key_1", FailAtConfirm: true, Note: "n", Spend: &spendRec{At: at, Amount: 77}},
			{Network: confpay.NetworkLive, ID: "tr_2", From: "acct_a", ToAddr: "0x00000000000000000000000000000000000000c0", ToText: "0xc0", Asset: "ETH", Units: "1", Status: "failed", TxHash: "0xdef", CreatedAt: at, FailedAt: &later}},
		Held: []heldRec{{Network: confpay.NetworkTest, ID: "held_1", Seq: 3, Agent: "acct_g", To: "acct_b", ToAddr: "0x00000000000000000000000000000000000000b0", ToText: "@b", Asset: "USDG", Units: "5", Memo: "x", Confidential: true, Payable: true, Transfer: "tr_1", Key: "key_1", Status: "approved", RequestedAt: at, ExpiresAt: later, DecidedAt: &later, Note: "ok", NoteReader: "acct_o"}},
		Hooks: &hooks.Changes{
			Subs:       []hooks.SubRecord{{Network: confpay.NetworkTest, ID: "sub_1", Acct: "acct_a", URL: "https://h.example/x", Events: []string{"transfer.sent"}, Secret: "whsec_x", CreatedAt: at, Seq: 5, Deleted: &later}},
			Events:     []hooks.EventRecordP{{Network: confpay.NetworkTest, ID: "evt_1", Kind: "transfer.sent", At: at, Audience: [2]string{"acct_a", ""}, Seq: 6, Forgotten: [2]bool{true, false}, Gone: true, Payload: []byte{1, 0, 0, 1, 'x'}}},
			Deliveries: []hooks.DeliveryRecordP{{Network: confpay.NetworkTest, ID: "dlv_1", Sub: "sub_1", Event: "evt_1", Seq: 7, Trigger: "event", CreatedAt: at, Status: "failed", Attempts: 2, ResponseStatus: 500, FirstAttemptAt: at, LastAttemptAt: later, NextAttemptAt: &later, Dropped: true, Log: []hooks.Attempt{{At: at, Status: 500, Duration: 1500, Fault: "drop"}}}},
		},
		Idem: []idempotency.Record{{Owner: "acct_a", Key: "k-1", FP: [32]byte{4}, Created: at, Status: 201, Body: []byte(`{"id":"tr_1"}`)}},
	}
}

// goldenRecord is goldenBatch encoded by the format's first binary
// encoder (journal format version 2): a faster encoder must write the
// same bytes.
const goldenRecord = "01000044010000000069a7bdbf0000037a000000000000000700000000000000080000000000000009020000047465737400000000000000030000046c69766500000000000000010800001c00000001000004555344470000000000000006000006333030302e35020000a7000006616363745f610000024061000008627573696e65737300002a30783030303030303030303030303030303030303030303030303030303030303030303030303030613000000876657269666965640000000069a7bdbf0000037a000000000000000100000330786b00000002000009612e6578616d706c65000009622e6578616d706c65000006616363745f6f000003626f74000006616374697665000005706f6c5f31030000880000056b65795f31000002636900000474657374000006616363745f6101020300000000000000000000000000000000000000000000000000000000000000000069a7bdbf0000037a010000000069a7cbcf0000037a00000000000000002a00001e3132333435363738393031323334353637383930313233343536373839300000000000000002030000690000056b65795f320000000000046c697665000006616363745f6100000000000000000000000000000000000000000000000000000000000000000000000069a7bdbf0000037a00010000000069a7cbcf0000037a00000000000000000000013000000000000000030700005700000474657374000006616363745f67000005706f6c5f310000000069a7bdbf0000037a0000000000000064000000000000000a0000000100000240620000000000000b30393a30302d31373a3030ffffffffffffffff0400006f00000474657374000006616363745f610000000200000455534447000017313834343637343430373337303935353136313630303000000135000000000000000400000309090900000000000000030000034554480000013000000000000000000000010000000000000000000000050000b60000047465737400000474725f31000006616363745f61000006616363745f6200002a3078303030303030303030303030303030303030303030303030303030303030303030303030303062300000024062000004555344470000053130303030010000016d000009636f6e6669726d656400000530786162630000000069a7bdbf0000037a010000000069a7cbcf0000037a000000056b65795f31010000016e010000000069a7bdbf0000037a000000000000004d0500008f0000046c69766500000474725f32000006616363745f6100000000002a3078303030303030303030303030303030303030303030303030303030303030303030303030303063300000043078633000000345544800000131000000000000066661696c656400000530786465660000000069a7bdbf0000037a00010000000069a7cbcf0000037a0000000000000000060000ba0000047465737400000668656c645f310000000000000003000006616363745f67000006616363745f6200002a3078303030303030303030303030303030303030303030303030303030303030303030303030303062300000024062000004555344470000013500000178010100000474725f310000056b65795f31000008617070726f7665640000000069a7bdbf0000037a0000000069a7cbcf0000037a010000000069a7cbcf0000037a0000026f6b000006616363745f6f0900006d000004746573740000057375625f31000006616363745f6100001368747470733a2f2f682e6578616d706c652f780000000100000d7472616e736665722e73656e7400000777687365635f780000000069a7bdbf0000037a0000000000000005010000000069a7cbcf0000037a0a00004a000004746573740000056576745f3100000d7472616e736665722e73656e740000000069a7bdbf0000037a000006616363745f61000000000000000000000601000100000501000001780b0000a100000474657374000005646c765f310000057375625f310000056576745f3100000000000000070000056576656e740000000069a7bdbf0000037a0000066661696c6564000000000000000200000000000001f40000000069a7bdbf0000037a0000000069a7cbcf0000037a010000000069a7cbcf0000037a01000000010000000069a7bdbf0000037a00000000000001f400000000000005dc00000464726f700c000053000006616363745f610000036b2d3104000000000000000000000000000000000000000000000000000000000000000000000069a7bdbf0000037a00000000000000c900000d7b226964223a2274725f31227d"

// TestRecordEncodingUnchanged: the journal record encoding writes the
// bytes of format version 2, and they decode to what was encoded.
func TestRecordEncodingUnchanged(t *testing.T) {
	p := goldenBatch().encode()
	if got := hex.EncodeToString(p); got != goldenRecord {
		t.Fatalf("the encoding changed:\n got %s\nwant %s", got, goldenRecord)
	}
	l := newLoaded()
	if err := decodeRecord(p, l); err != nil {
		t.Fatal(err)
	}
	if len(l.keys) != 2 || len(l.idem) != 1 || !bytes.Equal(l.idem[0].Body, []byte(`{"id":"tr_1"}`)) {
		t.Fatalf("decoded %+v", l)
	}
}

// TestRecordNewItems: a deleted subscription's place in the order of
// deletions (itemSubOrder) and a key forgotten past its TTL
// (itemIdemGone) decode to what was encoded; a record without them (the
// golden one) leaves the place 0.
func TestRecordNewItems(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	l := newLoaded()
	kept := &batch{Now: at, Idem: []idempotency.Record{{Owner: "o", Key: "k1", Created: at, Status: 201}, {Owner: "o", Key: "k2", Created: at, Status: 201}}}
	gone := &batch{Now: at, IdemGone: []idempotency.Gone{{Owner: "o", Key: "k1"}},
		Hooks: &hooks.Changes{Subs: []hooks.SubRecord{{Network: confpay.NetworkTest, ID: "wh_1", Acct: "acct_a", CreatedAt: at, Seq: 2, Deleted: &at, DeletedSeq: 7}}}}
	for _, b := range []*batch{kept, gone} {
		if err := decodeRecord(b.encode(), l); err != nil {
			t.Fatal(err)
		}
	}
	var live []string
	for _, r := range l.idem {
		if r.Owner != "" {
			live = append(live, r.Key)
		}
	}
	if len(live) != 1 || live[0] != "k2" {
		t.Errorf("kept keys after k1 went: %v, want [k2]", live)
	}
	if r := l.hooks[confpay.NetworkTest].subs["wh_1"]; r.DeletedSeq != 7 {
		t.Errorf("the deletion's place: %d, want 7", r.DeletedSeq)
	}
	l = newLoaded()
	if err := decodeRecord(goldenBatch().encode(), l); err != nil {
		t.Fatal(err)
	}
	if r := l.hooks[confpay.NetworkTest].subs["sub_1"]; r.Deleted == nil || r.DeletedSeq != 0 {
		t.Errorf("an older deleted subscription: %+v, want its place 0", r)
	}
}

// TestRecordForgottenAndPrunedItems: a deleted subscription forgotten
// (itemSubGone) drops its record, a live one of another id stays; when
// the webhooks and the held payments last pruned (itemHooksPruned,
// itemHeldPruned) decode to what was encoded, the latest winning, and
// mark the directory as one that holds them (passTimes); a reset record
// forgets them (never pruned) but not the mark, and a record without
// them (the golden one, an older build's) leaves them zero and the
// directory unmarked.
func TestRecordForgottenAndPrunedItems(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	later := at.Add(2 * time.Hour)
	l := newLoaded()
	subs := &batch{Now: at, HeldPruned: []heldPrunedRec{{Network: confpay.NetworkLive, At: at}},
		Hooks: &hooks.Changes{Subs: []hooks.SubRecord{
			{Network: confpay.NetworkTest, ID: "wh_1", Acct: "acct_a", CreatedAt: at, Seq: 2, Deleted: &at, DeletedSeq: 7},
			{Network: confpay.NetworkTest, ID: "wh_2", Acct: "acct_a", URL: "https://x.example", CreatedAt: at, Seq: 3},
		}, Pruned: []hooks.Pruned{{Network: confpay.NetworkTest, At: at}}}}
	gone := &batch{Now: later, HeldPruned: []heldPrunedRec{{Network: confpay.NetworkLive, At: later}},
		Hooks: &hooks.Changes{SubsGone: []hooks.SubGone{{Network: confpay.NetworkTest, ID: "wh_1"}, {Network: confpay.NetworkTest, ID: "wh_2"}},
			Pruned: []hooks.Pruned{{Network: confpay.NetworkTest, At: later}}}}
	for _, b := range []*batch{subs, gone} {
		if err := decodeRecord(b.encode(), l); err != nil {
			t.Fatal(err)
		}
	}
	lh := l.hooks[confpay.NetworkTest]
	if _, ok := lh.subs["wh_1"]; ok {
		t.Error("the forgotten deleted subscription is still loaded")
	}
	if _, ok := lh.subs["wh_2"]; !ok {
		t.Error("a live subscription went with a gone item of its id")
	}
	if !lh.pruned.Equal(later) || !l.heldPruned[confpay.NetworkLive].Equal(later) || !l.heldPruned[confpay.NetworkTest].IsZero() {
		t.Errorf("pruned: webhooks %v, held %v, want %v on live only", lh.pruned, l.heldPruned, later)
	}
	if err := decodeRecord((&batch{Reset: true, Now: later}).encode(), l); err != nil {
		t.Fatal(err)
	}
	if !l.hooks[confpay.NetworkTest].pruned.IsZero() || len(l.heldPruned) != 0 || !l.passTimes {
		t.Errorf("after a reset record: webhooks pruned %v, held %v, pass times kept %v, want never, kept", l.hooks[confpay.NetworkTest].pruned, l.heldPruned, l.passTimes)
	}
	l = newLoaded()
	if err := decodeRecord(goldenBatch().encode(), l); err != nil {
		t.Fatal(err)
	}
	if !l.hooks[confpay.NetworkTest].pruned.IsZero() || len(l.heldPruned) != 0 || l.passTimes {
		t.Errorf("an older record: webhooks pruned %v, held %v, pass times kept %v, want never, not kept", l.hooks[confpay.NetworkTest].pruned, l.heldPruned, l.passTimes)
	}
}
