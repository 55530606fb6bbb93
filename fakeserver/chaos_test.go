package fakeserver_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestFaultMatchesAccountKeyAndIdempotencyKey: a fault scripted for an
// account, an API key id or an Idempotency-Key hits that caller or
// request only.
func TestFaultMatchesAccountKeyAndIdempotencyKey(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	extra, err := srv.IssueKey("@alice", confpay.NetworkTest, "second")
	if err != nil {
		t.Fatal(err)
	}
	status := func(key string, headers ...string) int {
		t.Helper()
		return rawCall(t, srv, "GET", "/v1/accounts/me", key, "", headers...).status
	}
	for _, tc := range []struct {
		name  string
		fault fakeserver.Fault
		// what each caller gets: alice's first key, alice's second key,
		// bob, alice's first key with Idempotency-Key k1
		want [4]int
	}{
		{"account by handle", fakeserver.Fault{Account: "@ALICE"}, [4]int{500, 500, 200, 500}},
		{"account by id", fakeserver.Fault{Account: bob.info.AccountID}, [4]int{200, 200, 500, 200}},
		{"key id", fakeserver.Fault{KeyID: extra.KeyID}, [4]int{200, 500, 200, 200}},
		{"idempotency key", fakeserver.Fault{IdempotencyKey: "k1"}, [4]int{200, 200, 200, 500}},
		{"all of them", fakeserver.Fault{Account: "@alice", KeyID: extra.KeyID, IdempotencyKey: "k1"}, [4]int{200, 200, 200, 200}},
	} {
		srv.ClearFaults()
		f := tc.fault
		f.Action, f.Status = fakeserver.FaultError, 500
		if _, err := srv.AddFault(f); err != nil {
			t.Fatal(err)
		}
		got := [4]int{status(alice.test()), status(extra.APIKey.Reveal()), status(bob.test()), status(alice.test(), "Idempotency-Key", "k1")}
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// The wire: the same fields on POST /_fake/faults, listed back.
	srv.ClearFaults()
	a := rawCall(t, srv, "POST", "/_fake/faults", "", `{"action":"error","status":500,"account":"@bob","key_id":"`+extra.KeyID+`","idempotency_key":"k2","probability_bp":5000}`)
	if a.status != 201 {
		t.Fatalf("add: %d %s", a.status, a.body)
	}
	l := rawCall(t, srv, "GET", "/_fake/faults", "", "")
	for _, want := range []string{`"account":"@bob"`, `"key_id":"` + extra.KeyID + `"`, `"idempotency_key":"k2"`, `"probability_bp":5000`} {
		if !strings.Contains(string(l.body), want) {
			t.Errorf("listing %s lacks %s", l.body, want)
		}
	}
}

// TestFaultProbability: a fault with a probability hits about that share
// of the requests it matches, the same ones on every run with the same
// seed, and other ones with another seed.
func TestFaultProbability(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) string {
		srv := fakeserver.New(t, fakeserver.WithChaos(seed, fakeserver.ChaosRates{}))
		alice := newAccount(t, srv, "@alice")
		if _, err := srv.AddFault(fakeserver.Fault{Path: "/v1/accounts/me", Action: fakeserver.FaultError, Status: 500, Probability: 2500}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for range 400 {
			if rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), "").status == 500 {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	one, again, other := run(7), run(7), run(8)
	if one != again {
		t.Errorf("seed 7 twice gave two sequences:\n%s\n%s", one, again)
	}
	if one == other {
		t.Errorf("seeds 7 and 8 gave the same sequence")
	}
	// 400 draws at 1/4: 100 expected, sd 8.7; 60 to 140 is over 4.5 sd.
	if n := strings.Count(one, "x"); n < 60 || n > 140 {
		t.Errorf("%d of 400 faulted at 2500bp", n)
	}
}

// chaosRates are the rates of the tests: every kind drawn often.
var chaosRates = fakeserver.ChaosRates{Error: 1000, DropAfterCommit: 500, ResetAfterCommit: 500, Delay: 500, DelayFor: time.Millisecond,
	LoseAnswer: 1000, Duplicate: 1000}

// chaosRun pays n times from @alice to @bob on a chaos server with seed,
// with SDK retries, webhooks delivered to a sink, and returns the faults
// chaos drew, without their request ids.
func chaosRun(t *testing.T, seed uint64, n int) []fakeserver.ChaosFault {
	srv := fakeserver.New(t, fakeserver.WithChaos(seed, chaosRates), fakeserver.WithRealClock())
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10000")
	c := newClient(t, srv, alice.test(), nil, confpay.WithRetryBackoff(time.Millisecond, time.Millisecond), confpay.WithMaxRetries(20))
	sink := newHookSink(t, http.StatusOK)
	if _, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: sink.hs.URL, Events: []confpay.EventKind{confpay.EventTransferInitiated}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := pay(c, "@bob", fmt.Sprintf("%d", i+1), withMemo(fmt.Sprintf("order %d", i))); err != nil {
			t.Fatalf("pay %d: %v", i, err)
		}
	}
	ts, err := srv.Transfers("@alice", confpay.NetworkTest)
	if err != nil || len(ts) != n {
		t.Fatalf("%d transfers (%v), want %d: chaos broke exactly-once", len(ts), err, n)
	}
	fs := srv.ChaosFaults()
	for i := range fs {
		fs[i].RequestID = ""
	}
	return fs
}

// TestChaosSameSeedSameFaults: chaos draws every API fault kind, and the
// same seed draws the same faults for the same sequence of requests.
func TestChaosSameSeedSameFaults(t *testing.T) {
	t.Parallel()
	one := chaosRun(t, 42, 80)
	seen := map[string]bool{}
	for _, f := range one {
		seen[f.Action] = true
		if f.Kind == "api" && (f.Account != "@alice" || f.Ordinal == 0 || f.Route == "") {
			t.Errorf("fault %+v", f)
		}
	}
	for _, k := range []string{fakeserver.FaultError, fakeserver.FaultDropAfterCommit, fakeserver.FaultResetAfterCommit, fakeserver.FaultDelay} {
		if !seen[k] {
			t.Errorf("no %s among %d faults", k, len(one))
		}
	}
	var api []fakeserver.ChaosFault
	for _, f := range one {
		if f.Kind == "api" {
			api = append(api, f)
		}
	}
	again := chaosRun(t, 42, 80)
	var api2 []fakeserver.ChaosFault
	for _, f := range again {
		if f.Kind == "api" {
			api2 = append(api2, f)
		}
	}
	if !reflect.DeepEqual(api, api2) {
		t.Errorf("seed 42 twice:\n%v\n%v", api, api2)
	}
}

// TestChaosDeliveryFaults: chaos draws delivery faults too, keyed by the
// account's handle, the event kind and the attempt's ordinal.
func TestChaosDeliveryFaults(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithChaos(3, fakeserver.ChaosRates{LoseAnswer: 2000, Duplicate: 2000, DeliveryDelay: 2000, Reorder: 2000}))
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "1000")
	c := newClient(t, srv, alice.test(), nil)
	sink := newHookSink(t, http.StatusOK)
	if _, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: sink.hs.URL, Events: []confpay.EventKind{confpay.EventTransferInitiated}}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		send(t, c, "@bob", fmt.Sprint(i+1))
	}
	srv.Sync()
	for range 10 { // lost answers are retried on the schedule
		srv.Advance(time.Hour)
	}
	seen := map[string]int{}
	for _, f := range srv.ChaosFaults() {
		if f.Kind != "delivery" || f.Account != "@alice" || f.Route != string(confpay.EventTransferInitiated) {
			t.Errorf("fault %+v", f)
		}
		seen[f.Action]++
	}
	if seen[fakeserver.DeliveryLoseAnswer] == 0 || seen[fakeserver.DeliveryDuplicate] == 0 || seen[fakeserver.DeliveryDelay] == 0 || seen[fakeserver.DeliveryReorder] == 0 {
		t.Errorf("delivery faults drawn: %v", seen)
	}
	ds, err := srv.Deliveries("@alice", confpay.NetworkTest)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Status != confpay.DeliverySucceeded {
			t.Errorf("delivery %s %s after %d attempts", d.DeliveryID, d.Status, d.Attempts)
		}
	}
}

// TestChaosNeverAdmin: chaos at every request never touches /_fake.
func TestChaosNeverAdmin(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithChaos(1, fakeserver.ChaosRates{Error: fakeserver.Always}))
	alice := newAccount(t, srv, "@alice")
	for range 20 {
		if a := rawCall(t, srv, "GET", "/_fake/clock", "", ""); a.status != 200 {
			t.Fatalf("admin: %d", a.status)
		}
	}
	if a := rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), ""); a.status < 429 || a.header.Get("Retry-After") != "0" {
		t.Fatalf("/v1 at Always: %d %v", a.status, a.header)
	}
}

// fakeT is a testing.TB stand-in whose failure is only recorded, and
// whose logs and cleanups are kept: it lets a test see what a failing
// test prints.
type fakeT struct {
	testing.TB // nil: a method not defined here panics
	name       string
	failed     bool
	logs       []string
	cleanups   []func()
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Name() string                   { return f.name }
func (f *fakeT) Failed() bool                   { return f.failed }
func (f *fakeT) Errorf(format string, a ...any) { f.failed = true }
func (f *fakeT) Fatalf(format string, a ...any) { f.failed = true }
func (f *fakeT) Logf(format string, a ...any)   { f.logs = append(f.logs, fmt.Sprintf(format, a...)) }
func (f *fakeT) Cleanup(fn func())              { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// TestChaosSeedPrintedAndReplayed: a failing test on a chaos server logs
// its seed and the replay command; a passing one logs nothing; the seed
// set through the environment variable replaces the one in the code and
// gives the same faults.
func TestChaosSeedPrintedAndReplayed(t *testing.T) { // not parallel: t.Setenv
	faults := func(ft *fakeT, seed uint64) []fakeserver.ChaosFault {
		srv := fakeserver.New(ft, fakeserver.WithChaos(seed, fakeserver.ChaosRates{Error: 3000}))
		alice := newAccount(t, srv, "@alice")
		for range 30 {
			rawCall(t, srv, "GET", "/v1/accounts/me", alice.test(), "")
		}
		fs := srv.ChaosFaults()
		for i := range fs {
			fs[i].RequestID = ""
		}
		return fs
	}
	pass := &fakeT{name: "TestPass"}
	faults(pass, 99)
	pass.finish()
	if len(pass.logs) != 0 {
		t.Errorf("a passing test logged %q", pass.logs)
	}

	fail := &fakeT{name: "TestShop/checkout"}
	want := faults(fail, 1234)
	fail.failed = true
	fail.finish()
	if len(fail.logs) != 1 || !strings.Contains(fail.logs[0], "seed 1234") ||
		!strings.Contains(fail.logs[0], "CONFPAY_CHAOS_SEED=1234 go test -run '^TestShop$/^checkout$'") {
		t.Fatalf("a failing test logged %q", fail.logs)
	}

	t.Setenv(fakeserver.ChaosSeedEnv, "1234")
	replay := &fakeT{name: "TestShop/checkout"}
	got := faults(replay, 5) // the code's seed, replaced by the environment's
	replay.finish()
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("replay with the printed seed drew\n%v\nwant\n%v", got, want)
	}
}

// TestParseChaos reads the binary's -chaos spec, exactly.
func TestParseChaos(t *testing.T) {
	t.Parallel()
	seed, r, err := fakeserver.ParseChaos("seed=42,error=250bp,drop=1.5%,reset=1%,delay=0.05%,lose_answer=5%,duplicate=100bp,delivery_delay=2%,reorder=3bp,retry_after=2,delay_for=3s")
	want := fakeserver.ChaosRates{Error: 250, DropAfterCommit: 150, ResetAfterCommit: 100, Delay: 5, LoseAnswer: 500, Duplicate: 100, DeliveryDelay: 200, Reorder: 3, RetryAfter: 2, DelayFor: 3 * time.Second}
	if err != nil || seed != 42 || r != want {
		t.Fatalf("%d %+v %v", seed, r, err)
	}
	if back := r.String(); back != "error=250bp,drop=150bp,reset=100bp,delay=5bp,lose_answer=500bp,duplicate=100bp,delivery_delay=200bp,reorder=3bp,retry_after=2,delay_for=3s" {
		t.Errorf("String %s", back)
	}
	for spec, wantErr := range map[string]string{
		"error=1%":                              "seed=N is required",
		"seed=-1":                               "seed must be",
		"seed=1,error=0.5":                      "error: a rate is",
		"seed=1,error=1.234%":                   "error: a rate is",
		"seed=1,error=101%":                     "error: a rate is",
		"seed=1,error=-1bp":                     "error: a rate is",
		"seed=1,error=60%,drop=50%":             "add up to more than 10000",
		"seed=1,boom=1%":                        "unknown name",
		"seed=1,seed=2":                         "seed given twice",
		"seed=1,delay_for=-1s":                  "delay_for must be",
		"seed=1,retry_after=x":                  "retry_after must be",
		"seed=1,lose_answer=80%,duplicate=30%":  "lose_answer, duplicate, delivery_delay, reorder add up",
		"seed=1,reorder=50%,delivery_delay=60%": "lose_answer, duplicate, delivery_delay, reorder add up",
	} {
		if _, _, err := fakeserver.ParseChaos(spec); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", spec, err, wantErr)
		}
	}
}

// chaosAnswer is the body of GET /_fake/chaos.
type chaosAnswer struct {
	Enabled bool                    `json:"enabled"`
	Seed    string                  `json:"seed"`
	Rates   string                  `json:"rates"`
	Faults  []fakeserver.ChaosFault `json:"faults"`
}

// TestChaosOverHTTP: GET /_fake/chaos tells a test in another language
// what chaos drew: the seed, the rates as -chaos reads them, and the
// faults ChaosFaults lists, every account's or one's; it is guarded by
// the admin token like the rest of /_fake, and answers chaos off too.
func TestChaosOverHTTP(t *testing.T) {
	t.Parallel()
	const token = "adm-chaos-0123456789"
	rates := fakeserver.ChaosRates{Error: 4000, LoseAnswer: 5000, RetryAfter: 2}
	srv := fakeserver.New(t, fakeserver.WithChaos(7, rates), fakeserver.WithAdminToken(token))
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	srv.AddWebhook(t, "@bob", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), hookSecret, confpay.EventTransferInitiated)
	for i := range 20 {
		rawCall(t, srv, "GET", "/v1/accounts/me", bob.test(), "")
		rawCall(t, srv, "POST", "/v1/transfers", alice.test(), payBody, "Idempotency-Key", fmt.Sprint("order-", i))
	}
	srv.Sync()

	if a := rawCall(t, srv, "GET", "/_fake/chaos", "", ""); a.status != http.StatusUnauthorized {
		t.Fatalf("without the admin token: %d %s", a.status, a.body)
	}
	var all chaosAnswer
	rawCall(t, srv, "GET", "/_fake/chaos", token, "").decode(t, &all)
	want := srv.ChaosFaults()
	if !all.Enabled || all.Seed != fmt.Sprint(srv.ChaosSeed()) || all.Rates != "error=4000bp,lose_answer=5000bp,retry_after=2" ||
		!reflect.DeepEqual(all.Faults, want) {
		t.Fatalf("GET /_fake/chaos = %+v; want seed %d, the rates, and %d faults %+v", all, srv.ChaosSeed(), len(want), want)
	}
	if seed, back, err := fakeserver.ParseChaos("seed=" + all.Seed + "," + all.Rates); err != nil || back != rates || fmt.Sprint(seed) != all.Seed {
		t.Errorf("the answer does not replay: %d %+v %v", seed, back, err)
	}
	kinds := map[string]map[string]bool{"@alice": {}, "@bob": {}}
	for _, f := range all.Faults {
		kinds[f.Account][f.Kind] = true
	}
	if !kinds["@alice"]["api"] || !kinds["@bob"]["api"] || !kinds["@bob"]["delivery"] {
		t.Fatalf("drew %v; want api faults for both and delivery faults for @bob", kinds)
	}

	for _, ref := range []string{"%40bob", bob.info.AccountID} {
		var one chaosAnswer
		rawCall(t, srv, "GET", "/_fake/chaos?account="+ref, token, "").decode(t, &one)
		var wantBob []fakeserver.ChaosFault
		for _, f := range want {
			if f.Account == "@bob" {
				wantBob = append(wantBob, f)
			}
		}
		if !reflect.DeepEqual(one.Faults, wantBob) || one.Seed != all.Seed {
			t.Errorf("?account=%s: %+v, want @bob's %d faults", ref, one.Faults, len(wantBob))
		}
	}
	if a := rawCall(t, srv, "GET", "/_fake/chaos?account=%40nobody", token, ""); a.status != http.StatusNotFound {
		t.Errorf("unknown account: %d %s", a.status, a.body)
	}

	var off chaosAnswer
	plain := fakeserver.New(t)
	a := rawCall(t, plain, "GET", "/_fake/chaos", "", "")
	a.decode(t, &off)
	if off.Enabled || off.Rates != "" || off.Faults == nil || len(off.Faults) != 0 || off.Seed != fmt.Sprint(plain.ChaosSeed()) {
		t.Errorf("chaos off: %s", a.body)
	}
}
