package fakeserver_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// Each audit rule against a deliberately buggy client (raw HTTP, and the
// SDK where the SDK can make the mistake), and the correct version, which
// it must not report: an audit that cries wolf is switched off.

// auditWorld is a server with @alice (funded) and @bob.
func auditWorld(t *testing.T, opts ...fakeserver.Option) (*fakeserver.Server, party) {
	t.Helper()
	srv := fakeserver.New(t, opts...)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	return srv, alice
}

// wantFindings fails the test unless the audit's findings are exactly of
// rules, in order, and each names a request or delivery.
func wantFindings(t *testing.T, srv *fakeserver.Server, rules ...string) []fakeserver.AuditFinding {
	t.Helper()
	fs := srv.Audit()
	var got []string
	for _, f := range fs {
		got = append(got, f.Rule)
		if len(f.RequestIDs)+len(f.DeliveryIDs) == 0 && !strings.HasPrefix(f.Rule, "invariant_") {
			t.Errorf("finding %s names no request or delivery", f)
		}
		if f.Message == "" {
			t.Errorf("finding %s without a message", f.Rule)
		}
	}
	if !slices.Equal(got, rules) {
		t.Fatalf("audit rules %v, want %v:\n%v", got, rules, fs)
	}
	return fs
}

const payBody = `{"to":"@bob","amount":"5","memo":"order 1"}`

func TestAuditMissingIdempotencyKey(t *testing.T) {
	t.Parallel()
	t.Run("raw without a key", func(t *testing.T) {
		srv, alice := auditWorld(t)
		a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody)
		if a.status != http.StatusCreated {
			t.Fatalf("pay: %d %s", a.status, a.body)
		}
		fs := wantFindings(t, srv, "missing_idempotency_key")
		if fs[0].RequestIDs[0] != a.header.Get("X-Request-Id") || fs[0].Account != "@alice" || fs[0].Network != confpay.NetworkTest {
			t.Errorf("finding %v, want request %s of @alice on test", fs[0], a.header.Get("X-Request-Id"))
		}
	})
	t.Run("raw with a key", func(t *testing.T) {
		srv, alice := auditWorld(t)
		rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "order-1")
		srv.CheckAudit(t)
	})
	t.Run("SDK", func(t *testing.T) {
		// The SDK sends a key on every call (a caller cannot remove it):
		// it cannot make this mistake.
		srv, alice := auditWorld(t)
		send(t, srv.Client(confpay.Secret(alice.test())), "@bob", "5")
		srv.CheckAudit(t)
	})
}

func TestAuditKeyReused(t *testing.T) {
	t.Parallel()
	t.Run("raw", func(t *testing.T) {
		srv, alice := auditWorld(t)
		first := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "k1")
		again := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"6"}`, "Idempotency-Key", "k1")
		if again.status != http.StatusUnprocessableEntity {
			t.Fatalf("reused key: %d", again.status)
		}
		fs := wantFindings(t, srv, "idempotency_key_reused")
		if want := []string{first.header.Get("X-Request-Id"), again.header.Get("X-Request-Id")}; !slices.Equal(fs[0].RequestIDs, want) {
			t.Errorf("request ids %v, want %v", fs[0].RequestIDs, want)
		}
	})
	t.Run("SDK, one key for two payments", func(t *testing.T) {
		srv, alice := auditWorld(t)
		c := srv.Client(confpay.Secret(alice.test()))
		ctx := t.Context()
		_, _ = c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")}, confpay.WithIdempotencyKey("daily-job"))
		_, err := c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("7")}, confpay.WithIdempotencyKey("daily-job"))
		wantAPIError(t, err, 422, confpay.CodeIdempotencyKeyReused, "Idempotency-Key", "")
		wantFindings(t, srv, "idempotency_key_reused")
	})
	t.Run("SDK, a key per payment", func(t *testing.T) {
		srv, alice := auditWorld(t)
		c := srv.Client(confpay.Secret(alice.test()))
		for _, o := range []struct{ id, amount string }{{"order-1", "5"}, {"order-2", "7"}} {
			if _, err := c.Transfers.Create(t.Context(), &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount(o.amount)},
				confpay.WithIdempotencyKey(o.id)); err != nil {
				t.Fatal(err)
			}
		}
		srv.CheckAudit(t)
	})
}

func TestAuditDoublePayment(t *testing.T) {
	t.Parallel()
	t.Run("raw, a new key per attempt", func(t *testing.T) {
		srv, alice := auditWorld(t)
		a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "attempt-1")
		b := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "attempt-2")
		fs := wantFindings(t, srv, "double_payment")
		var ta, tb struct {
			TransferID string `json:"transfer_id"`
		}
		a.decode(t, &ta)
		b.decode(t, &tb)
		if !slices.Equal(fs[0].TransferIDs, []string{ta.TransferID, tb.TransferID}) {
			t.Errorf("transfers %v, want %s and %s", fs[0].TransferIDs, ta.TransferID, tb.TransferID)
		}
		for _, secret := range []string{"order 1", `"5"`, "5 USDG"} { // neither memo nor amount
			if s := fs[0].String(); strings.Contains(s, secret) {
				t.Errorf("finding %q shows %q", s, secret)
			}
		}
	})
	t.Run("raw, the same key", func(t *testing.T) {
		srv, alice := auditWorld(t)
		for range 2 {
			rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "order-1")
		}
		srv.CheckAudit(t)
	})
	// The SDK as a service misuses it: the answer of the first call is
	// lost (the connection drops after the payment is made), and the
	// service calls Create again without the key of the first call, so
	// the SDK mints a new one.
	sdk := func(t *testing.T, keyOf func(attempt int) []confpay.CallOption) *fakeserver.Server {
		srv, alice := auditWorld(t)
		srv.Inject(t, fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultDropAfterCommit})
		c := srv.Client(confpay.Secret(alice.test()), noRetry, confpay.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
		params := &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5"), Memo: "order 1"}
		var err error
		for attempt := range 3 {
			if _, err = c.Transfers.Create(t.Context(), params, keyOf(attempt)...); err == nil {
				break
			}
			var te *confpay.TransportError
			if !errors.As(err, &te) {
				t.Fatal(err)
			}
			srv.Advance(time.Second) // the service waits before trying again
		}
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	t.Run("SDK, a new key per attempt", func(t *testing.T) {
		srv := sdk(t, func(int) []confpay.CallOption { return nil })
		wantFindings(t, srv, "double_payment")
	})
	t.Run("SDK, the order's key on every attempt", func(t *testing.T) {
		srv := sdk(t, func(int) []confpay.CallOption { return []confpay.CallOption{confpay.WithIdempotencyKey("order-1")} })
		srv.CheckAudit(t)
	})
	t.Run("the same payment outside the window", func(t *testing.T) {
		// Rent paid monthly: the same payment, rightly twice.
		srv, alice := auditWorld(t)
		rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "rent-january")
		srv.Advance(fakeserver.DefaultAuditDoublePaymentWindow + time.Millisecond)
		rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", "rent-february")
		srv.CheckAudit(t)
	})
}

// TestAuditRetries runs in a synctest bubble over the in-memory transport:
// time passes only when a client waits, so a retry without a wait is 0 s
// after the answer and a retry after a backoff is exactly that late.
func TestAuditRetries(t *testing.T) {
	t.Parallel()
	world := func(t *testing.T) (*fakeserver.Server, party) {
		srv, alice := auditWorld(t, fakeserver.WithoutListener())
		return srv, alice
	}
	resend := func(t *testing.T, srv *fakeserver.Server, key string, n int, wait time.Duration) {
		srv.Inject(t, fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: n - 1, Action: fakeserver.FaultError, Status: 500})
		hc := srv.HTTPClient()
		for i := range n {
			if i > 0 {
				time.Sleep(wait) // the client's own backoff, in bubble time
			}
			req := newRequest("POST", srv.URL()+"/v1/transfers", key, payBody, "Idempotency-Key", "order-1")
			req.RequestURI = ""
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	t.Run("raw, at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, alice := world(t)
			resend(t, srv, alice.test(), 3, 0)
			wantFindings(t, srv, "retry_without_backoff")
		})
	})
	t.Run("raw, with backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, alice := world(t)
			resend(t, srv, alice.test(), 3, 100*time.Millisecond)
			srv.CheckAudit(t)
		})
	})
	t.Run("raw, too often", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, alice := world(t)
			resend(t, srv, alice.test(), fakeserver.DefaultAuditMaxSends+1, 100*time.Millisecond)
			fs := wantFindings(t, srv, "retry_too_often")
			if len(fs[0].RequestIDs) != fakeserver.DefaultAuditMaxSends+1 {
				t.Errorf("request ids %v, want %d", fs[0].RequestIDs, fakeserver.DefaultAuditMaxSends+1)
			}
		})
	})
	sdk := func(t *testing.T, opts ...confpay.Option) *fakeserver.Server {
		srv, alice := world(t)
		srv.Inject(t, fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 2, Action: fakeserver.FaultError, Status: 500})
		c := srv.Client(confpay.Secret(alice.test()), opts...)
		if _, err := pay(c, "@bob", "5"); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	t.Run("SDK without backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			wantFindings(t, sdk(t, confpay.WithRetryBackoff(0, 0)), "retry_without_backoff")
		})
	})
	t.Run("SDK as documented", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sdk(t).CheckAudit(t) // fakeserver.Client's test backoff, 1 ms
		})
	})
	t.Run("SDK with its default backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sdk(t, confpay.WithRetryBackoff(confpay.DefaultRetryBackoffBase, confpay.DefaultRetryBackoffMax)).CheckAudit(t)
		})
	})
	t.Run("a job that runs twice is no retry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, alice := world(t)
			c := srv.Client(confpay.Secret(alice.test()))
			for range 2 * fakeserver.DefaultAuditMaxSends {
				if _, err := pay(c, "@bob", "5", func(p *confpay.TransferCreateParams) {}); err != nil {
					t.Fatal(err)
				}
			}
			// Each call minted its own key: the double payment is the
			// finding, not the pace.
			fs := srv.Audit()
			for _, f := range fs {
				if f.Rule != "double_payment" {
					t.Errorf("finding %s", f)
				}
			}
		})
	})
}

func TestAuditUnacknowledgedDeliveries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		rules  []string
	}{
		{"handler answers 500", http.StatusInternalServerError, []string{"delivery_not_acknowledged"}},
		{"handler answers 200", http.StatusOK, nil},
	} {
		t.Run("recorder, "+tc.name, func(t *testing.T) {
			srv, alice := auditWorld(t)
			rec := srv.Record(t, "@bob", "transfer.initiated")
			rec.Answer(tc.status)
			send(t, srv.Client(confpay.Secret(alice.test())), "@bob", "5")
			rec.Wait(t, "transfer.initiated")
			fs := wantFindings(t, srv, tc.rules...)
			if len(fs) == 1 && (fs[0].Account != "@bob" || len(fs[0].DeliveryIDs) != 1) {
				t.Errorf("finding %v, want one delivery of @bob", fs[0])
			}
		})
		t.Run("HTTP receiver, "+tc.name, func(t *testing.T) {
			srv, alice := auditWorld(t)
			sink := newHookSink(t, tc.status)
			bob := srv.Client(confpay.Secret(newKey(t, srv, "@bob")))
			if _, err := bob.Webhooks.Create(t.Context(), &confpay.WebhookCreateParams{URL: sink.hs.URL, Events: []confpay.EventKind{"transfer.initiated"}}); err != nil {
				t.Fatal(err)
			}
			send(t, srv.Client(confpay.Secret(alice.test())), "@bob", "5")
			srv.Sync()
			wantFindings(t, srv, tc.rules...)
		})
	}
}

func TestAuditMalformed(t *testing.T) {
	t.Parallel()
	t.Run("raw", func(t *testing.T) {
		srv, alice := auditWorld(t)
		rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"bob","amount":"5"}`, "Idempotency-Key", "order-1")
		rawCall(t, srv, "GET", "/v1/transfers?limit=1000", alice.test(), "")
		fs := wantFindings(t, srv, "malformed_request", "malformed_request")
		if fs[0].Param != "to" || fs[1].Param != "limit" {
			t.Errorf("params %q, %q, want to, limit", fs[0].Param, fs[1].Param)
		}
	})
	t.Run("SDK", func(t *testing.T) {
		srv, alice := auditWorld(t)
		_, err := pay(srv.Client(confpay.Secret(alice.test())), "bob", "5") // the handle without its @
		wantAPIError(t, err, 400, confpay.CodeInvalidRequest, "to", "")
		fs := wantFindings(t, srv, "malformed_request")
		if fs[0].Param != "to" {
			t.Errorf("param %q, want to", fs[0].Param)
		}
	})
	t.Run("correct", func(t *testing.T) {
		srv, alice := auditWorld(t)
		send(t, srv.Client(confpay.Secret(alice.test())), "@bob", "5")
		srv.CheckAudit(t)
	})
}

// TestAuditSDKAsDocumented is the whole documented flow (pay, list, read
// balances, subscribe, an agent's held payment approved and another
// rejected) through the SDK, over HTTP: no finding.
func TestAuditSDKAsDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	newAccount(t, f.srv, "@payee")
	f.srv.AddFunds(t, "@alice", "USDG", "100")
	rec := f.srv.Record(t, "@alice")
	_, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("1000"), PerTransactionLimitUSDG: limit("500"), HITLThresholdUSDG: limit("10")})
	f.srv.AddFunds(t, "@alice/bot", "USDG", "100")
	send(t, f.alice, "@payee", "5", withMemo("invoice 1"))
	send(t, f.alice, "@payee", "6", withMemo("invoice 2"))
	if _, err := f.alice.Transfers.List(ctx, &confpay.TransferListParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.alice.Accounts.ReadBalances(ctx, f.ownerKey); err != nil {
		t.Fatal(err)
	}
	h1 := hold(t, agent, "@payee", "20")
	h2 := hold(t, agent, "@payee", "30")
	if _, err := f.alice.Agents.Approve(ctx, h1.TransactionID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.alice.Agents.Reject(ctx, h2.TransactionID); err != nil {
		t.Fatal(err)
	}
	f.srv.Advance(time.Second)
	rec.Wait(t, "transfer.confirmed")
	f.srv.CheckAudit(t)
}

// TestAuditOverHTTP: GET /_fake/audit answers what Audit does, for
// every account or one, and refuses a bad filter naming it.
func TestAuditOverHTTP(t *testing.T) {
	t.Parallel()
	srv, alice := auditWorld(t)
	rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody) // no key
	var all struct {
		Findings []fakeserver.AuditFinding `json:"findings"`
	}
	rawCall(t, srv, "GET", "/_fake/audit", "", "").decode(t, &all)
	if len(all.Findings) != 1 || all.Findings[0].Rule != "missing_idempotency_key" || all.Findings[0].Account != "@alice" {
		t.Fatalf("findings %v", all.Findings)
	}
	var bob struct {
		Findings []fakeserver.AuditFinding `json:"findings"`
	}
	a := rawCall(t, srv, "GET", "/_fake/audit?account=%40bob&network=test", "", "")
	a.decode(t, &bob)
	if a.status != http.StatusOK || bob.Findings == nil || len(bob.Findings) != 0 {
		t.Fatalf("@bob's findings: %d %s", a.status, a.body)
	}
	if a := rawCall(t, srv, "GET", "/_fake/audit?network=main", "", ""); a.status != 400 || a.err().Param != "network" {
		t.Errorf("bad network: %d %s", a.status, a.body)
	}
	if a := rawCall(t, srv, "GET", "/_fake/audit?account=%40nobody", "", ""); a.status != 404 {
		t.Errorf("unknown account: %d %s", a.status, a.body)
	}
}

// TestAuditBounded: the audit keeps a bounded number of requests per
// account and network; past it the oldest, and their findings, go.
func TestAuditBounded(t *testing.T) {
	t.Parallel()
	srv, alice := auditWorld(t, fakeserver.WithAuditConfig(fakeserver.AuditConfig{MaxRequests: 3}))
	rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody) // no key: a finding
	wantFindings(t, srv, "missing_idempotency_key")
	for range 3 {
		rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), "")
	}
	wantFindings(t, srv)
}
