package fakeserver_test

// Growth benchmarks (issue 16 "How it is checked", issue 12's soak): the
// same load run for a time and for twice that time, with the heap measured
// after a GC at both points. A bounded store keeps the second figure within
// 1.2× of the first. They drive the server only through its exported API
// and its HTTP handler (in process, without a network, so that the load is
// cheap), so that they measure the server as its callers see it whatever
// its inside looks like.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// soakWireEvents is how many events BenchmarkHookSoakOverHTTP emits.
var soakWireEvents = flag.Int("soak.wire-events", 20_000, "events in BenchmarkHookSoakOverHTTP (the issue's figure: 1000000)")

// liveHeap is the live heap after a full collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// reportGrowth reports the heap after the first and the second half of a load
// and their ratio.
func reportGrowth(b *testing.B, first, second uint64, unit1, unit2 string) {
	b.ReportMetric(float64(first)/(1<<20), "heap-MB@"+unit1)
	b.ReportMetric(float64(second)/(1<<20), "heap-MB@"+unit2)
	b.ReportMetric(float64(second)/float64(first), "ratio")
}

// fundedAgent creates an agent of owner with the policy, funds it with USDG on
// the test network and returns it with a test key of its own.
func fundedAgent(b *testing.B, srv *fakeserver.Server, owner *fakeserver.AccountInfo, p confpay.SpendPolicyParams) (*confpay.Agent, string) {
	b.Helper()
	c := srv.Client(owner.TestKey, confpay.WithMaxRetries(0))
	a, err := c.Agents.Create(context.Background(), &confpay.AgentCreateParams{Name: "bot", SpendPolicy: p})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Fund(a.AccountID, confpay.NetworkTest, "USDG", "1000000"); err != nil {
		b.Fatal(err)
	}
	k, err := srv.IssueKey(a.AccountID, confpay.NetworkTest, "agent")
	if err != nil {
		b.Fatal(err)
	}
	return a, k.APIKey.Reveal()
}

// BenchmarkIdempotencyGrowth (issue 16 item 1): an authenticated caller
// sends POST /v1/transfers, each with a new Idempotency-Key and a 1 KiB
// memo, evenly over virtual time. The account has no funds, so each
// request is refused 402 on the state: an answer the store keeps, and
// nothing else is kept. The heap is measured after 2 virtual days and
// after 4. Two rates:
//
//   - cap: 20,000 requests a day, so the per-account bound (set to 10,000
//     keys here; 100,000 by default) answers 429 while all kept keys are younger than 24 h;
//   - expiry: 5,000 a day, below the bound, so only the 24 h expiry keeps
//     the store bounded.
//
// kept/op and refused-429/op count the answers per request of the run.
func BenchmarkIdempotencyGrowth(b *testing.B) {
	const days = 2 // the load L; the run is 2L
	for _, perDay := range []int{20_000, 5_000} {
		name := "cap"
		if perDay < 10_000 {
			name = "expiry"
		}
		b.Run(name+"/per-day="+strconv.Itoa(perDay), func(b *testing.B) {
			for b.Loop() {
				srv := fakeserver.NewUnstartedServer(fakeserver.WithMaxIdempotencyKeys(10_000))
				alice := newAccount(b, srv, "@alice").info
				newAccount(b, srv, "@bob")
				key := alice.TestKey.Reveal()
				h := srv.Handler()
				body := `{"to":"@bob","amount":"1","memo":"` + strings.Repeat("m", 1000) + `"}`
				const batch = 50 // requests between clock steps
				step := 24 * time.Hour / time.Duration(perDay/batch)
				var kept, refused, seq int
				run := func() {
					for range days * perDay / batch {
						for range batch {
							seq++
							a := serve(h, "POST", "/v1/transfers", key, body, "Idempotency-Key", "growth-"+strconv.Itoa(seq))
							status, out := a.status, a.body
							switch status {
							case http.StatusPaymentRequired:
								kept++
							case http.StatusTooManyRequests:
								refused++
							default:
								b.Fatalf("request %d: %d %s", seq, status, out)
							}
						}
						srv.Advance(step)
					}
				}
				run()
				first := liveHeap()
				run()
				second := liveHeap()
				reportGrowth(b, first, second, "L", "2L")
				b.ReportMetric(float64(kept)/float64(seq), "kept/op")
				b.ReportMetric(float64(refused)/float64(seq), "refused-429/op")
				if perDay < 10_000 && refused > 0 {
					b.Fatalf("%d requests refused 429 below the bound", refused)
				}
				if perDay > 10_000 && refused == 0 {
					b.Fatal("the bound never answered 429")
				}
				if trs, err := srv.Transfers("@alice", confpay.NetworkTest); err != nil || len(trs) != 0 {
					b.Fatalf("refused requests left %d transfers (%v)", len(trs), err)
				}
				srv.Close()
			}
		})
	}
}

// BenchmarkHeldGrowth (issue 16 item 2): an agent whose policy holds every
// payment above 1 USDG asks for a 2 USDG payment every virtual minute
// (1,440 a day), so the per-agent cap (1,000 awaiting a decision) answers
// 429 until held payments expire at the end of their 24 h approval
// window. Nobody decides. The heap is measured after 30 virtual days (the
// longest history window, so that the events' window is full too) and
// after 60. held/op and refused-429/op count the answers per request.
func BenchmarkHeldGrowth(b *testing.B) {
	const days = 30 // T; the run is 2T
	for b.Loop() {
		srv := fakeserver.NewServer()
		owner := newAccount(b, srv, "@owner").info
		newAccount(b, srv, "@bob")
		_, key := fundedAgent(b, srv, owner, confpay.SpendPolicyParams{
			DailyLimitUSDG: limit("1000000"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("1"),
		})
		h := srv.Handler()
		var held, refused, seq int
		run := func() {
			for range days * 24 * 60 {
				seq++
				a := serve(h, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"2"}`)
				status, out := a.status, a.body
				switch status {
				case http.StatusAccepted:
					held++
				case http.StatusTooManyRequests:
					refused++
				default:
					b.Fatalf("request %d: %d %s", seq, status, out)
				}
				srv.Advance(time.Minute)
			}
		}
		run()
		first := liveHeap()
		run()
		second := liveHeap()
		reportGrowth(b, first, second, "T", "2T")
		b.ReportMetric(float64(held)/float64(seq), "held/op")
		b.ReportMetric(float64(refused)/float64(seq), "refused-429/op")
		if refused == 0 {
			b.Fatal("the cap never answered 429")
		}
		srv.Close()
	}
}

// BenchmarkPendingListAtCap: GET /v1/agents/transactions/pending by the
// owner of an agent with the most held payments the cap allows (1,000),
// in process. The first listing seals each payment's note (amount and
// memo) to the owner; later listings reuse the notes. held=1 is the
// baseline: the same call with one held payment.
func BenchmarkPendingListAtCap(b *testing.B) {
	setup := func(b *testing.B, n int) (*fakeserver.Server, string) {
		b.Helper()
		srv := fakeserver.NewServer()
		owner := newAccount(b, srv, "@owner").info
		newAccount(b, srv, "@bob")
		_, key := fundedAgent(b, srv, owner, confpay.SpendPolicyParams{
			DailyLimitUSDG: limit("1000000"), PerTransactionLimitUSDG: limit("100"), HITLThresholdUSDG: limit("1"),
		})
		h := srv.Handler()
		pay := func(i, want int) {
			a := serve(h, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"2","memo":"invoice `+strconv.Itoa(i)+`"}`)
			status, out := a.status, a.body
			if status != want {
				b.Fatalf("payment %d: %d %s, want %d", i, status, out, want)
			}
		}
		for i := range n {
			pay(i, http.StatusAccepted)
		}
		if n == fakeserver.DefaultMaxHeldPerAgent {
			pay(n, http.StatusTooManyRequests) // at the cap
		}
		return srv, owner.TestKey.Reveal()
	}
	list := func(b *testing.B, h http.Handler, key string, want int) {
		a := serve(h, "GET", "/v1/agents/transactions/pending", key, "")
		status, out := a.status, a.body
		if status != http.StatusOK || strings.Count(string(out), `"transaction_id"`) != want {
			b.Fatalf("pending list: %d, %d items, want %d", status, strings.Count(string(out), `"transaction_id"`), want)
		}
	}
	for _, n := range []int{1, fakeserver.DefaultMaxHeldPerAgent} {
		b.Run(fmt.Sprintf("held=%d/warm", n), func(b *testing.B) {
			srv, key := setup(b, n)
			defer srv.Close()
			h := srv.Handler()
			list(b, h, key, n) // seals the notes
			b.ReportAllocs()
			for b.Loop() {
				list(b, h, key, n)
			}
		})
	}
	b.Run(fmt.Sprintf("held=%d/first", fakeserver.DefaultMaxHeldPerAgent), func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			srv, key := setup(b, fakeserver.DefaultMaxHeldPerAgent)
			h := srv.Handler()
			b.StartTimer()
			list(b, h, key, fakeserver.DefaultMaxHeldPerAgent)
			b.StopTimer()
			srv.Close()
		}
	})
}

// BenchmarkHookSoakOverHTTP is issue 12's soak through the wire: an owner
// changes its agent's spend policy (PATCH, in process), each change one
// agent.policy.updated event delivered over loopback HTTP to a receiver
// that keeps nothing; -soak.wire-events events (default 20,000) evenly
// over 60 virtual days, the clock stepping at most once a virtual minute.
// A policy change leaves nothing behind but its event and deliveries, so
// the heap after 60 days is within 1.2× of the heap after 30 when the
// history window (30 days) is pruned. events/s is the run's pace.
func BenchmarkHookSoakOverHTTP(b *testing.B) {
	total := *soakWireEvents
	const span = 60 * 24 * time.Hour
	steps := min(total, int(span/time.Minute))
	for b.Loop() {
		srv := fakeserver.NewServer()
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		owner := newAccount(b, srv, "@owner").info
		agent, _ := fundedAgent(b, srv, owner, confpay.SpendPolicyParams{DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("10")})
		c := srv.Client(owner.TestKey, confpay.WithMaxRetries(0))
		if _, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{
			URL: rc.URL + "/hook", Events: []confpay.EventKind{webhookverify.KindAgentPolicyUpdated},
		}); err != nil {
			b.Fatal(err)
		}
		h := srv.Handler()
		key := owner.TestKey.Reveal()
		path := "/v1/agents/" + agent.AccountID + "/spend-policy"
		start := srv.Now()
		begun := time.Now()
		var at30 uint64
		i := 0
		for step := 1; step <= steps; step++ {
			for ; i < total*step/steps; i++ {
				limit := 500 + i%2 // every PATCH changes the limit
				a := serve(h, "PATCH", path, key, `{"daily_limit_usdg": `+strconv.Itoa(limit)+`}`)
				status, out := a.status, a.body
				if status != http.StatusOK {
					b.Fatalf("PATCH %d: %d %s", i, status, out)
				}
			}
			srv.Set(start.Add(span / time.Duration(steps) * time.Duration(step)))
			if step == steps/2 {
				at30 = liveHeap()
			}
		}
		srv.Sync()
		elapsed := time.Since(begun)
		if got := srv.Now().Sub(start); got < span-time.Second || got > span {
			b.Fatalf("the run covered %v of server time, want %v", got, span)
		}
		at60 := liveHeap()
		reportGrowth(b, at30, at60, "30d", "60d")
		b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
		srv.Close()
		rc.Close()
	}
}

// BenchmarkIdempotencyKeyMemory (issue 22 item 5): what one kept
// Idempotency-Key costs. The same 20,000 payments (201, a typical
// answer kept whole) are made on two servers, one with a new key each
// and one without; the difference of the live heaps, per payment, is the
// cost of a key: its entry, the request's fingerprint and the stored
// answer. answer-B is the size of that answer's body.
func BenchmarkIdempotencyKeyMemory(b *testing.B) {
	const n = 20_000
	for b.Loop() {
		var heaps [2]uint64
		var answer int
		for i, keyed := range []bool{false, true} {
			srv := fakeserver.NewUnstartedServer(fakeserver.WithMaxIdempotencyKeys(n))
			alice := newAccount(b, srv, "@alice").info
			newAccount(b, srv, "@bob")
			if err := srv.Fund("@alice", confpay.NetworkTest, "USDG", "1000000"); err != nil {
				b.Fatal(err)
			}
			h, key := srv.Handler(), alice.TestKey.Reveal()
			base := liveHeap()
			for j := range n {
				var headers []string
				if keyed {
					headers = []string{"Idempotency-Key", "payment-" + strconv.Itoa(j)}
				}
				a := serve(h, "POST", "/v1/transfers", key, `{"to":"@bob","amount":"1","memo":"invoice `+strconv.Itoa(j)+`"}`, headers...)
				if a.status != http.StatusCreated {
					b.Fatalf("payment %d: %d %s", j, a.status, a.body)
				}
				answer = len(a.body)
			}
			heaps[i] = liveHeap() - base
			runtime.KeepAlive(srv)
			srv.Close()
		}
		b.ReportMetric(float64(int64(heaps[1])-int64(heaps[0]))/n, "B/key")
		b.ReportMetric(float64(answer), "answer-B")
	}
}

// floodEvents is how many policy changes BenchmarkOneAccountFlood's
// flooder makes in each half of its run.
var floodEvents = flag.Int("flood.events", 40_000, "policy changes per half of BenchmarkOneAccountFlood")

// BenchmarkOneAccountFlood (issue 22 item 4): one account floods the
// server with spend-policy changes (PATCH, which needs no funds), each an
// agent.policy.updated event for its sixteen subscriptions, whose
// receivers all answer 500; a victim account changes its own agent's
// policy once every 100 of the flooder's, and its one receiver answers at
// once. The clock steps 1 s every 100 changes. Bounds are scaled down
// (5,000 events and delivery records per account, 1,000 pending
// deliveries per subscription and 2,000 per account) so that the flood
// passes every one of them early in the run. The heap is measured after
// -flood.events changes (L) and after twice as many (2L): bounded per
// account, it stays flat. victim-late counts the victim's deliveries not
// made at the instant of their event or not succeeded (want 0).
func BenchmarkOneAccountFlood(b *testing.B) {
	L := *floodEvents
	for b.Loop() {
		srv := fakeserver.NewUnstartedServer(fakeserver.WithoutDeliveryJitter(), fakeserver.WithMaxEvents(5_000),
			fakeserver.WithMaxDeliveryRecords(5_000), fakeserver.WithMaxPendingDeliveries(1_000, 2_000))
		flooder := newAccount(b, srv, "@flood").info
		victim := newAccount(b, srv, "@victim").info
		floodAgent, _ := fundedAgent(b, srv, flooder, confpay.SpendPolicyParams{DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("10")})
		victimAgent, _ := fundedAgent(b, srv, victim, confpay.SpendPolicyParams{DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("10")})
		fail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		secret := confpay.Secret("whsec_" + strings.Repeat("s", 32))
		for range 16 {
			if _, err := srv.SubscribeHandler("@flood", confpay.NetworkTest, fail, secret, webhookverify.KindAgentPolicyUpdated); err != nil {
				b.Fatal(err)
			}
		}
		var mu sync.Mutex
		arrived := map[string]time.Time{} // victim's event id → server time of its first attempt
		if _, err := srv.SubscribeHandler("@victim", confpay.NetworkTest, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			if _, ok := arrived[r.Header.Get(webhookverify.EventIDHeader)]; !ok {
				arrived[r.Header.Get(webhookverify.EventIDHeader)] = srv.Now()
			}
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}), secret, webhookverify.KindAgentPolicyUpdated); err != nil {
			b.Fatal(err)
		}
		h := srv.Handler()
		patch := func(key, agentID string, i int) {
			a := serve(h, "PATCH", "/v1/agents/"+agentID+"/spend-policy", key, `{"daily_limit_usdg": `+strconv.Itoa(500+i%2)+`}`)
			if a.status != http.StatusOK {
				b.Fatalf("PATCH %d: %d %s", i, a.status, a.body)
			}
		}
		i := 0
		run := func() {
			for range L {
				i++
				patch(flooder.TestKey.Reveal(), floodAgent.AccountID, i)
				if i%100 == 0 {
					patch(victim.TestKey.Reveal(), victimAgent.AccountID, i/100)
					srv.Advance(time.Second)
				}
			}
		}
		run()
		first := liveHeap()
		run()
		second := liveHeap()
		srv.Sync()
		evs, err := srv.Events("@victim", confpay.NetworkTest)
		if err != nil {
			b.Fatal(err)
		}
		late := 0
		mu.Lock()
		for _, e := range evs {
			if at, ok := arrived[e.ID]; !ok || !at.Equal(e.At) {
				late++
			}
		}
		mu.Unlock()
		dels, err := srv.Deliveries("@victim", confpay.NetworkTest)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range dels {
			if d.Status != confpay.DeliverySucceeded || d.Attempts != 1 {
				late++
			}
		}
		if len(evs) != 2*L/100 || len(dels) != len(evs) {
			b.Fatalf("victim: %d events, %d deliveries; want %d each", len(evs), len(dels), 2*L/100)
		}
		var refused int
		fdels, _ := srv.Deliveries("@flood", confpay.NetworkTest)
		for _, d := range fdels {
			if d.Status == confpay.DeliveryFailed && d.Attempts == 0 {
				refused++
			}
		}
		reportGrowth(b, first, second, "L", "2L")
		b.ReportMetric(float64(late), "victim-late")
		b.ReportMetric(float64(len(evs)), "victim-events")
		b.ReportMetric(float64(refused), "flood-refused-kept")
		if late > 0 {
			b.Fatalf("%d of the victim's %d deliveries late or not succeeded", late, len(evs))
		}
		srv.Close()
	}
}
