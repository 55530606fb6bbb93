package fakeserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// outsider is an external wallet: no account holds it.
const outsider = "0x00000000000000000000000000000000000000C0"

// transferEvent is e as a transfer event, or fails the test.
func transferEvent(t *testing.T, e webhookverify.Event) *webhookverify.TransferEvent {
	t.Helper()
	if v, ok := e.(*webhookverify.TransferEvent); ok {
		return v
	}
	t.Fatalf("event %s is a %T, not a transfer event", e.Kind(), e)
	return nil
}

// TestInboundFromExternalWallet is a payment from outside, end to end
// through the SDK: pending then confirmed at the block time, listed for
// the recipient, announced to it with direction received, its note sealed
// to it, and its amount in the balance a proof reveals.
func TestInboundFromExternalWallet(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	rec := srv.Record(t, "@alice")
	c := newClient(t, srv, alice.test(), nil)

	r := srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@alice", Amount: "12.5", Memo: "invoice 7"})
	if r.Status != confpay.StatusPending || r.From != outsider || r.FromAccountID != "" || r.ToAccountID != alice.info.AccountID {
		t.Fatalf("record = %v (from %q, from_account_id %q), want pending from the outsider to alice", r, r.From, r.FromAccountID)
	}
	ini := transferEvent(t, rec.Wait(t, confpay.EventTransferInitiated))
	if ini.TransferID != r.TransferID || ini.Direction != webhookverify.DirectionReceived || ini.Counterparty != outsider || ini.Account != "@alice" {
		t.Fatalf("transfer.initiated = %+v, want alice receiving %s from the outsider", ini, r.TransferID)
	}

	list, err := c.Transfers.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Transfers) != 1 || list.Transfers[0].TransferID != r.TransferID || list.Transfers[0].From != outsider || list.Transfers[0].To != "@alice" {
		t.Fatalf("alice's list = %+v, want the inbound transfer", list.Transfers)
	}
	note := openNote(t, alice.dk, list.Transfers[0])
	if note.Amount.String() != "12500000" || note.Memo != "invoice 7" { // base units: USDG has 6 decimals
		t.Errorf("the note does not hold 12.5 USDG and the memo")
	}
	srv.CheckBalance(t, "@alice", "USDG", "0") // pending: not yet hers

	srv.Advance(time.Second) // the default block time
	conf := transferEvent(t, rec.Wait(t, confpay.EventTransferConfirmed))
	if conf.TransferID != r.TransferID || conf.Direction != webhookverify.DirectionReceived {
		t.Fatalf("transfer.confirmed = %+v, want alice receiving %s", conf, r.TransferID)
	}
	got, err := c.Transfers.Get(context.Background(), r.TransferID)
	if err != nil || got.Status != confpay.StatusConfirmed {
		t.Fatalf("Get = %+v, %v; want confirmed", got, err)
	}
	bals, err := c.Accounts.ReadBalances(context.Background(), alice.dk)
	if err != nil {
		t.Fatalf("ReadBalances: %v", err)
	}
	if len(bals) != 1 || bals[0].Amount == nil || bals[0].Amount.String() != "12.5" {
		t.Fatalf("balances = %+v, want USDG 12.5 through the proof", bals)
	}
	if fs := srv.Audit(); len(fs) != 0 {
		t.Errorf("audit after an inbound payment: %v", fs)
	}
	_ = srv.Snapshot() // the outside world holds no account's books
}

// TestInboundFromAccount is a payment from an account's wallet: from its
// books, as a transfer it sent, and refused when they fall short.
func TestInboundFromAccount(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@bob", "USDG", "10")

	before := srv.Snapshot()
	_, err := srv.Inbound(fakeserver.InboundParams{From: "@bob", To: "@alice", Amount: "10.01"})
	if err == nil || !strings.HasPrefix(err.Error(), string(confpay.CodeInsufficientBalance)+":") {
		t.Fatalf("overdraft: %v, want insufficient_balance", err)
	}
	checkUnchanged(t, srv, before, "an inbound payment bob cannot cover")

	r := srv.AddInbound(t, fakeserver.InboundParams{From: "@bob", To: "@alice", Amount: "4", Confidential: confpay.Ptr(false)})
	if r.From != "@bob" || r.Confidential {
		t.Fatalf("record = %v, want a public payment from @bob", r)
	}
	srv.CheckBalance(t, "@bob", "USDG", "6")
	srv.Settle()
	srv.CheckBalance(t, "@alice", "USDG", "4")
	sent, err := srv.Transfers("@bob", confpay.NetworkTest)
	if err != nil || len(sent) != 1 || sent[0].TransferID != r.TransferID {
		t.Fatalf("bob's transfers = %v, %v; want the payment", sent, err)
	}
}

// TestInboundOverHTTP is POST /_fake/inbound: 201 with the record.
func TestInboundOverHTTP(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	newAccount(t, srv, "@alice")
	a := rawCall(t, srv, "POST", "/_fake/inbound", "", `{"from":"`+outsider+`","to":"@alice","amount":"3","memo":"hi"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("POST /_fake/inbound: %d %s", a.status, a.body)
	}
	var r fakeserver.TransferRecord
	a.decode(t, &r)
	if r.From != outsider || r.To != "@alice" || r.Amount.String() != "3" || r.Memo != "hi" || r.Status != confpay.StatusPending {
		t.Fatalf("record = %+v", r)
	}
	srv.Settle()
	srv.CheckBalance(t, "@alice", "USDG", "3")
}

// TestInboundIsNotAudited: payments from outside are not the code under
// test's requests, so two alike (a shop is paid the same price twice)
// are no double payment, and the books stay conserved while they are
// pending, after they fail and after they confirm.
func TestInboundIsNotAudited(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@bob", "USDG", "10")
	var ids []string
	for range 2 {
		ids = append(ids, srv.AddInbound(t, fakeserver.InboundParams{From: outsider, To: "@alice", Amount: "5", Memo: "price"}).TransferID)
		ids = append(ids, srv.AddInbound(t, fakeserver.InboundParams{From: "@bob", To: "@alice", Amount: "5", Memo: "price"}).TransferID)
	}
	srv.CheckAudit(t)
	if err := srv.FailTransfer(ids[0]); err != nil {
		t.Fatal(err)
	}
	srv.CheckAudit(t)
	srv.Settle()
	srv.CheckAudit(t)
	srv.CheckBalance(t, "@alice", "USDG", "15")
	srv.CheckBalance(t, "@bob", "USDG", "0")
}
