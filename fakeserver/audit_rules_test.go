package fakeserver_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// More of the audit's rules against a buggy client and its correct
// version (audit_test.go has the first of each), and CheckAudit's report.

// TestAuditMissingKeyOnDecisions: an approval and a rejection move money
// too; sent without an Idempotency-Key, each is a finding, naming its
// request; with one, none.
func TestAuditMissingKeyOnDecisions(t *testing.T) {
	t.Parallel()
	for _, withKey := range []bool{false, true} {
		t.Run(fmt.Sprint("key ", withKey), func(t *testing.T) {
			f := newFixture(t)
			newAccount(t, f.srv, "@payee")
			_, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("1000"), PerTransactionLimitUSDG: limit("500"), HITLThresholdUSDG: limit("10")})
			f.srv.AddFunds(t, "@alice/bot", "USDG", "100")
			h1 := hold(t, agent, "@payee", "20")
			h2 := hold(t, agent, "@payee", "30")
			key := f.owner.TestKey.Reveal()
			var ids []string
			for i, path := range []string{"/v1/agents/transactions/" + h1.TransactionID + "/approve", "/v1/agents/transactions/" + h2.TransactionID + "/reject"} {
				var hdr []string
				if withKey {
					hdr = []string{"Idempotency-Key", fmt.Sprint("decision-", i)}
				}
				a := rawCall(t, f.srv, "POST", path, key, "", hdr...)
				if a.status != http.StatusOK {
					t.Fatalf("POST %s: %d %s", path, a.status, a.body)
				}
				ids = append(ids, a.header.Get("X-Request-Id"))
			}
			if withKey {
				f.srv.CheckAudit(t)
				return
			}
			fs := wantFindings(t, f.srv, "missing_idempotency_key", "missing_idempotency_key")
			for i, f := range fs {
				if !slices.Equal(f.RequestIDs, ids[i:i+1]) || f.Account != "@alice" {
					t.Errorf("finding %d: %v, want request %s of @alice", i, f, ids[i])
				}
			}
			if !strings.Contains(fs[0].Message, "/approve") || !strings.Contains(fs[1].Message, "/reject") {
				t.Errorf("messages %q, %q name not the route", fs[0].Message, fs[1].Message)
			}
		})
	}
}

// TestAuditDoublePaymentIsTheSamePayment: two payments under different
// keys are a double payment only when recipient, asset, amount and memo
// are all the same.
func TestAuditDoublePaymentIsTheSamePayment(t *testing.T) {
	t.Parallel()
	for name, second := range map[string]string{
		"another memo":      `{"to":"@bob","amount":"5","memo":"order 2"}`,
		"another amount":    `{"to":"@bob","amount":"6","memo":"order 1"}`,
		"another recipient": `{"to":"@carol","amount":"5","memo":"order 1"}`,
		"another asset":     `{"to":"@bob","amount":"5","memo":"order 1","asset":"ETH"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv, alice := auditWorld(t)
			newAccount(t, srv, "@carol")
			srv.AddFunds(t, "@alice", "ETH", "100")
			for i, body := range []string{payBody, second} {
				if a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), body, "Idempotency-Key", fmt.Sprint("k", i)); a.status != http.StatusCreated {
					t.Fatalf("pay %s: %d %s", body, a.status, a.body)
				}
			}
			srv.CheckAudit(t)
		})
	}
}

// TestAuditRetriesSDKTooOften: an SDK client told to retry more than the
// audit's bound, each time after a failure, is reported even with a
// backoff; the SDK's default bound is not.
func TestAuditRetriesSDKTooOften(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, retries int) *fakeserver.Server {
		srv, alice := auditWorld(t, fakeserver.WithoutListener())
		srv.Inject(t, fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: retries, Action: fakeserver.FaultError, Status: 503})
		c := srv.Client(confpay.Secret(alice.test()), confpay.WithMaxRetries(retries), confpay.WithRetryBackoff(100*time.Millisecond, time.Second))
		if _, err := pay(c, "@bob", "5"); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	t.Run("bad", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := wantFindings(t, run(t, fakeserver.DefaultAuditMaxSends), "retry_too_often")
			if len(fs[0].RequestIDs) != fakeserver.DefaultAuditMaxSends+1 || !strings.Contains(fs[0].Message, "bound the retries") {
				t.Errorf("finding %v, want %d requests and the fix", fs[0], fakeserver.DefaultAuditMaxSends+1)
			}
		})
	})
	t.Run("good", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run(t, 2).CheckAudit(t)
		})
	})
}

// TestAuditUnacknowledgedFailedAndTimedOut: a delivery that ran out of
// retries (failed), and one whose receiver never answers in time, are
// findings naming the delivery and the state; a receiver that answers in
// time is none.
func TestAuditUnacknowledgedFailedAndTimedOut(t *testing.T) {
	t.Parallel()
	t.Run("failed", func(t *testing.T) {
		srv, alice := auditWorld(t)
		srv.AddWebhook(t, "@bob", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }),
			hookSecret, confpay.EventTransferInitiated)
		send(t, srv.Client(confpay.Secret(alice.test())), "@bob", "5")
		for range 30 { // past the 24 h retry window
			srv.Advance(time.Hour)
		}
		ds, err := srv.Deliveries("@bob", confpay.NetworkTest)
		if err != nil || len(ds) != 1 || ds[0].Status != confpay.DeliveryFailed {
			t.Fatalf("deliveries %+v, %v; want one, failed", ds, err)
		}
		fs := wantFindings(t, srv, "delivery_not_acknowledged")
		if !slices.Equal(fs[0].DeliveryIDs, []string{ds[0].DeliveryID}) || !strings.Contains(fs[0].Message, "is failed") || !strings.Contains(fs[0].Message, "HTTP 500") {
			t.Errorf("finding %v, want delivery %s, failed, HTTP 500", fs[0], ds[0].DeliveryID)
		}
	})
	for _, answers := range []bool{false, true} {
		t.Run(fmt.Sprint("answers in time ", answers), func(t *testing.T) {
			// A handler that hangs meets a short timeout; one that answers
			// a long one, so that a loaded machine (-race) cannot make it
			// miss the timeout.
			timeout := 20 * time.Millisecond
			if answers {
				timeout = 10 * time.Second
			}
			srv, alice := auditWorld(t, fakeserver.WithDeliveryTimeout(timeout))
			srv.AddWebhook(t, "@bob", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !answers {
					<-r.Context().Done() // the handler hangs until the sender gives up
				}
			}), hookSecret, confpay.EventTransferInitiated)
			send(t, srv.Client(confpay.Secret(alice.test())), "@bob", "5")
			srv.Sync()
			if answers {
				srv.CheckAudit(t)
				return
			}
			fs := wantFindings(t, srv, "delivery_not_acknowledged")
			if !strings.Contains(fs[0].Message, "still being retried") || !strings.Contains(fs[0].Message, "timed out") {
				t.Errorf("finding %v, want a delivery still retried after no answer", fs[0])
			}
		})
	}
}

// reportT is a Tester whose Fatalf is recorded, not fatal.
type reportT struct {
	testing.TB
	failed bool
	report string
}

func (r *reportT) Helper() {}
func (r *reportT) Fatalf(format string, a ...any) {
	r.failed = true
	r.report = fmt.Sprintf(format, a...)
}

// TestCheckAuditReport: CheckAudit fails the test with every finding on
// a line of its own, each naming its rule, account, request ids and the
// fix; with no finding it passes.
func TestCheckAuditReport(t *testing.T) {
	t.Parallel()
	srv, alice := auditWorld(t)
	ok := &reportT{TB: t}
	srv.CheckAudit(ok)
	if ok.failed {
		t.Fatalf("a clean server failed the test: %s", ok.report)
	}
	a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody)
	b := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"bob","amount":"5"}`, "Idempotency-Key", "k")
	bad := &reportT{TB: t}
	srv.CheckAudit(bad)
	if !bad.failed {
		t.Fatal("CheckAudit passed with two findings")
	}
	lines := strings.Split(bad.report, "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "found 2 problem(s)") {
		t.Fatalf("report:\n%s\nwant a heading and two findings", bad.report)
	}
	for i, want := range [][]string{
		{"missing_idempotency_key @alice (test) " + a.header.Get("X-Request-Id") + ":", "send it on every attempt"},
		{"malformed_request @alice (test) " + b.header.Get("X-Request-Id") + ":", `fix "to"`},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %q lacks %q", lines[i+1], w)
			}
		}
	}
}
