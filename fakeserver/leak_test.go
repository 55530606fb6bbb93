package fakeserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
)

// TestNoFigureInAnyAnswer walks every kind of answer a client can get
// about money (creates, reads, lists, balances without a proof, errors,
// replays, held agent payments, approvals) and searches all of them for
// the figures involved.
func TestNoFigureInAnyAnswer(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	owner := newAccount(t, srv, "@owner")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@owner", "USDG", "9876.54321")
	rec := leakcheck.New(nil)
	oc := newClient(t, srv, owner.test(), rec)
	ctx := context.Background()

	// Direct payments, read back every way.
	tr := send(t, oc, "@bob", "271.828182", withMemo("figure 271.828182 inside"))
	_, _ = oc.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("271.828182")}, confpay.WithIdempotencyKey("k"))
	_, _ = oc.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("271.828182")}, confpay.WithIdempotencyKey("k"))
	_, err := oc.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("55555.123456")})
	wantAPIError(t, err, 402, confpay.CodeInsufficientBalance, "", "")
	_, err = oc.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@nobody", Amount: confpay.MustParseAmount("271.828182")})
	wantAPIError(t, err, 404, confpay.CodeRecipientNotFound, "to", "")
	if _, err := oc.Transfers.Get(ctx, tr.TransferID); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	if _, err := oc.Transfers.List(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(t, srv, newKey(t, srv, "@bob"), rec).Transfers.List(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Accounts.Balances(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Accounts.Me(ctx); err != nil {
		t.Fatal(err)
	}

	// An agent: a payment under its threshold, one held and approved,
	// one held and rejected.
	agent, err := oc.Agents.Create(ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG:          confpay.Ptr(confpay.MustParseLimit("5000")),
		PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("4000")),
		HITLThresholdUSDG:       confpay.Ptr(confpay.MustParseLimit("100")),
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddFunds(t, agent.AccountID, "USDG", "3333.333333")
	ac := newClient(t, srv, newKey(t, srv, agent.AccountID), rec)
	send(t, ac, "@bob", "99.999999")
	held := hold(t, ac, "@bob", "1234.567891")
	held2 := hold(t, ac, "@bob", "1111.111111")
	if _, err := oc.Agents.ListPending(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Agents.Approve(ctx, held.TransactionID); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Agents.Reject(ctx, held2.TransactionID); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	if _, err := ac.Transfers.List(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Accounts.Balances(ctx, nil); err != nil {
		t.Fatal(err)
	}

	figures := []string{
		"9876.54321", "9876543210", "271.828182", "271828182", "55555.123456", "3333.333333",
		"99.999999", "1234.567891", "1234567891", "1111.111111", "figure 271.828182 inside",
		"9604.715028", "3061.505454", // what remains after the direct payments
	}
	rec.Check(t, figures...)
	if rec.Len() < 15 {
		t.Fatalf("only %d answers recorded", rec.Len())
	}
}

func TestRecordsDoNotPrintFigures(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "4242.4242")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "31.337", withMemo("secret memo"))
	recs, _ := srv.Transfers("@alice", confpay.NetworkTest)
	books, _ := srv.Books("@alice", confpay.NetworkTest)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, recs[0]) + fmt.Sprintf(verb, books[0]) + fmt.Sprintf(verb, recs) + fmt.Sprintf(verb, books)
		for _, fig := range []string{"4242.4242", "31.337", "4211.0872", "secret memo"} {
			if strings.Contains(out, fig) {
				t.Errorf("%s prints %q: %s", verb, fig, out)
			}
		}
	}
	if recs[0].Amount.String() != "31.337" || recs[0].Memo != "secret memo" || books[0].Available.String() != "4211.0872" {
		t.Fatal("the fields lost their values")
	}
}
