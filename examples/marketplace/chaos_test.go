package marketplace_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/examples/marketplace"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// chaosSeed is the seed of the chaos run in CI. A failing run logs the
// seed it ran with; CONFPAY_CHAOS_SEED=N replays another.
const chaosSeed = 2

// chaosRates shake every call and delivery: 5 % errors (429, 500, 502,
// 503), 3 % drops and 3 % resets after the commit, 3 % delays, and 10 %
// of delivery attempts with a lost answer or sent twice.
var chaosRates = fakeserver.ChaosRates{
	Error: 500, DropAfterCommit: 300, ResetAfterCommit: 300, Delay: 300, DelayFor: 2 * time.Second,
	LoseAnswer: 1000, Duplicate: 1000,
}

// TestPayoutsUnderChaos pays 30 orders, each twice (the job runs twice),
// with chaos on every call and every webhook delivery: each order is paid
// exactly once, each seller notified exactly once, and the audit finds
// nothing. It runs in a synctest bubble on the server's real clock, so the
// retries' waits, the delays and the deliveries' retry schedule take no
// wall time.
func TestPayoutsUnderChaos(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A block time of a minute: a payout's transfer.confirmed must not
		// overtake Pay, which records the transfer only once Create has
		// answered (with the SDK's retries and Pay's own, that can take
		// seconds).
		srv := fakeserver.New(t, fakeserver.WithoutListener(), fakeserver.WithRealClock(), fakeserver.WithBlockTime(time.Minute),
			fakeserver.WithChaos(chaosSeed, chaosRates))
		w := world(t, srv, defaultPolicy)
		client := srv.Client(w.Account("@market").TestKey, confpay.WithRetryBackoff(500*time.Millisecond, 8*time.Second))
		payouts := marketplace.NewPayouts(client)
		outbox := &marketplace.Outbox{}
		const secret = "whsec_marketplace_chaos"
		rc := marketplace.NewReceiver(payouts, outbox.Send)
		srv.AddWebhook(t, "@market", rc.Handler(secret, webhookverify.NewMemoryStore(0)), secret, confpay.EventTransferConfirmed)

		const n = 30
		for i := range n {
			o := marketplace.Order{ID: fmt.Sprintf("order-%d", i), Seller: []string{"@seller1", "@seller2"}[i%2],
				Amount: amt(fmt.Sprintf("%d.25", i+1)), Memo: fmt.Sprintf("order %d", i)}
			first, err := payouts.Pay(t.Context(), o)
			if err != nil {
				t.Fatalf("pay %s: %v", o.ID, err)
			}
			again, err := payouts.Pay(t.Context(), o)
			if err != nil || again.TransferID != first.TransferID {
				t.Fatalf("pay %s again: %v, %v; want the same transfer %s", o.ID, again, err, first.TransferID)
			}
		}
		// Every transfer confirms; every lost answer is retried on the
		// schedule (5 s, 25 s, 2 min, ...): an hour of bubble time is
		// past all of them.
		time.Sleep(time.Hour)
		synctest.Wait()

		transfers, err := srv.Transfers("@market", confpay.NetworkTest)
		if err != nil || len(transfers) != n {
			t.Fatalf("%d transfers (%v), want %d: an order was paid twice or never", len(transfers), err, n)
		}
		notified := map[string]int{}
		for _, nt := range outbox.Notices() {
			notified[nt.OrderID]++
		}
		for i := range n {
			id := fmt.Sprintf("order-%d", i)
			if po := payouts.Get(id); po == nil || po.Status != marketplace.PayoutPaid {
				t.Errorf("%s: %+v, want paid", id, po)
			}
			if notified[id] != 1 {
				t.Errorf("%s: %d notices, want exactly 1", id, notified[id])
			}
		}
		// The run met chaos: it is no test of exactly-once otherwise.
		kinds := map[string]int{}
		for _, f := range srv.ChaosFaults() {
			kinds[f.Action]++
		}
		for _, k := range []string{fakeserver.FaultError, fakeserver.FaultDropAfterCommit, fakeserver.FaultResetAfterCommit,
			fakeserver.FaultDelay, fakeserver.DeliveryLoseAnswer, fakeserver.DeliveryDuplicate} {
			if kinds[k] == 0 {
				t.Errorf("seed %d drew no %s (drew %v): pick a seed that does", srv.ChaosSeed(), k, kinds)
			}
		}
		srv.CheckAudit(t) // no finding: chaos or not, the marketplace uses the API as documented
	})
}
