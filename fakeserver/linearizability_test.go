package fakeserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/go-cmp/cmp"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/internal/testbudget"
)

// The linearizability test of the money path: random histories of
// concurrent operations over HTTP, each checked against the sequential
// model in linearizability_model_test.go with porcupine, plus invariants
// read from the books after the run. See docs/fakeserver.md, "Reliability",
// for the long run.
//
//	go test ./fakeserver -run TestLinearizable -linz.histories=10000
//	go test ./fakeserver -run TestLinearizable -linz.seed=1234 -v  # replay one
var (
	linzHistories = flag.Int("linz.histories", 0, "random histories to check (0: the CI budget)")
	linzOps       = flag.Int("linz.ops", 220, "operations per history")
	linzSeed      = flag.Uint64("linz.seed", 0, "replay the history of this seed")
)

// linzClients is how many clients (API keys) call concurrently.
const linzClients = 10

// linzBudget is the number of histories to check: 200 in CI
// (CONFPAY_TEST_FULL=1, see internal/testbudget), 25 by default so the
// README's go test ./... stays quick, and a tenth of each under the race
// detector, which makes every request about ten times slower.
func linzBudget() int {
	if *linzHistories > 0 {
		return *linzHistories
	}
	n := testbudget.Pick(25, 200)
	if raceEnabled {
		n /= 10
	}
	return n
}

func TestLinearizable(t *testing.T) {
	if *linzSeed != 0 {
		runLinzHistory(t, *linzSeed, *linzOps, modelConfig{})
		return
	}
	srv := fakeserver.New(t)
	base := uint64(time.Now().UnixNano())
	for i := range linzBudget() {
		seed := base + uint64(i)
		h := newLinzHarness(t, srv, seed)
		if !h.run(linzRaceOps(), modelConfig{}) {
			t.Fatalf("seed %d: history not linearizable or an invariant broke; replay with -run TestLinearizable -linz.seed=%d", seed, seed)
		}
	}
}

// TestLinearizableRestarts is TestLinearizable on a data directory, with
// restarts in the histories: now and then a client closes the server and
// opens a new one on the same directory, and every client goes on against
// the new one. The model takes a restart as nothing happening to
// committed state, and the restarted server's whole state must equal the
// closed one's (a key's last use and request count aside).
func TestLinearizableRestarts(t *testing.T) {
	dir := t.TempDir()
	open := func() *fakeserver.Server {
		// A snapshot rewrite started at every commit while none runs: the
		// fuzzy snapshot's chunks interleave with the clients' operations,
		// and a restart lands mid-rewrite (aborted, folded at the open).
		return fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync(), fakeserver.WithDataDirRewriteAlways())
	}
	srv := open()
	base := uint64(time.Now().UnixNano())
	if *linzSeed != 0 {
		base = *linzSeed
	}
	n := max(1, testbudget.Pick(2, 20)) // a tenth of TestLinearizable's
	if raceEnabled {
		n = 1
	}
	switch {
	case *linzSeed != 0:
		n = 1
	case *linzHistories > 0:
		n = *linzHistories
	}
	restarts := 0
	for i := range n {
		seed := base + uint64(i)
		h := newLinzHarness(t, srv, seed)
		h.reopen = open
		if !h.run(linzRaceOps(), modelConfig{}) {
			t.Fatalf("seed %d: history with restarts not linearizable or an invariant broke; replay with -run TestLinearizableRestarts -linz.seed=%d", seed, seed)
		}
		srv = h.srv
		restarts += h.tally()["restart 200"]
	}
	if restarts == 0 {
		t.Errorf("%d histories and not one restart", n)
	}
	t.Logf("%d histories, %d restarts", n, restarts)
}

// TestLinearizableCatchesAModelBug is the mutation check: with a model
// that forgets to reserve a pending payment's amount, some history of a
// handful of seeds must be refused. A checker that accepts everything
// fails here.
func TestLinearizableCatchesAModelBug(t *testing.T) {
	srv := fakeserver.New(t)
	for seed := uint64(1); seed <= 20; seed++ {
		h := newLinzHarness(t, srv, seed)
		h.quiet = true
		if !h.run(linzRaceOps(), modelConfig{mutant: "forget reservation"}) {
			return
		}
	}
	t.Fatal("the checker accepted 20 histories against a model that forgets reservations")
}

// linzRaceOps is the operations per history: -linz.ops, but at most 120
// under the race detector, where requests run about ten times slower and
// overlap more, and the checker's search (every order of a history, to
// refuse one) could pass its one-minute limit on a loaded machine.
func linzRaceOps() int {
	if raceEnabled {
		return min(*linzOps, 120)
	}
	return *linzOps
}

// runLinzHistory checks one seed on a fresh server, verbosely.
func runLinzHistory(t *testing.T, seed uint64, ops int, m modelConfig) {
	srv := fakeserver.New(t)
	h := newLinzHarness(t, srv, seed)
	if !h.run(ops, m) {
		t.Fatalf("seed %d: history not linearizable or an invariant broke", seed)
	}
}

// linzClient is one API key's caller.
type linzClient struct {
	idx       int
	acct, net int
	key       string
	keyID     string
	http      *http.Client
	idemCount int
	idemUsed  []linzIdem // keys this client sent, for reuse
}

type linzIdem struct {
	key  string
	desc string // method, path and body first sent under it
}

// linzHarness runs one history on a reset server.
type linzHarness struct {
	t     *testing.T
	srv   *fakeserver.Server
	seed  uint64
	quiet bool

	start   time.Time
	clients []*linzClient
	agents  map[int]string // model account → agent account id
	funded  [mAccounts][mNetworks][mAssets]int64
	pol     [mAccounts][mNetworks]mPolicy // the agents' policies at the start

	// exclusive makes a clock advance, a key revocation or a restart run
	// alone (see one).
	exclusive sync.RWMutex
	// reopen, when set, opens a new server on the data directory of srv,
	// which is closed: histories then hold restarts.
	reopen func() *fakeserver.Server

	mu       sync.Mutex
	seenTr   []string // transfer ids seen in answers, in order
	seenHeld []string
	ops      []porcupine.Operation
	t0       time.Time
}

func newLinzHarness(t *testing.T, srv *fakeserver.Server, seed uint64) *linzHarness {
	t.Helper()
	srv.Reset()
	srv.ClearFaults()
	h := &linzHarness{t: t, srv: srv, seed: seed, start: srv.Now(), agents: map[int]string{}}
	var infos [mAccounts]*fakeserver.AccountInfo
	for a := mAlice; a <= mDave; a++ {
		if mOwner[a] >= 0 {
			continue
		}
		if a == mAlice || a == mBob || a == mCarol || a == mDave {
			info, err := srv.CreateAccount(fakeserver.AccountParams{Handle: mHandles[a], GenerateEncryptionKey: mReady[a]})
			if err != nil {
				t.Fatal(err)
			}
			infos[a] = info
		}
	}
	// The agents, created over /v1 by their owners, each with a key of
	// one network; in half the histories the owner then sets a policy on
	// the other network too, and in the rest it allows nothing there.
	prng := rand.New(rand.NewPCG(seed, 3))
	for _, a := range []int{mAliceBot, mBobBot} {
		c := mCreated[a]
		key := infos[mOwner[a]].TestKey
		if c.net == mLive {
			key = infos[mOwner[a]].LiveKey
		}
		name := strings.TrimPrefix(mHandles[a], mHandles[mOwner[a]]+"/")
		ag, err := srv.Client(key, confpay.WithMaxRetries(0)).Agents.Create(context.Background(),
			&confpay.AgentCreateParams{Name: name, SpendPolicy: policyParams(c.p)})
		if err != nil {
			t.Fatalf("create %s: %v", mHandles[a], err)
		}
		if ag.Handle != mHandles[a] {
			t.Fatalf("agent handle %q, want %q", ag.Handle, mHandles[a])
		}
		h.agents[a] = ag.AccountID
		h.pol[a][c.net] = c.p
		if prng.IntN(2) == 0 {
			other := mLive + mTest - c.net
			if _, err := srv.SetPolicy(ag.AccountID, netOf(other), policyParams(mOtherNet[a])); err != nil {
				t.Fatalf("set %s's policy on %s: %v", mHandles[a], netOf(other), err)
			}
			h.pol[a][other] = mOtherNet[a]
		}
	}
	ref := func(a int) string {
		if id, ok := h.agents[a]; ok {
			return id
		}
		return mHandles[a]
	}
	// Funding: random, per account, network and asset, sometimes none.
	rng := rand.New(rand.NewPCG(seed, 1))
	for a := range mAccounts {
		for n := range mNetworks {
			for x := range mAssets {
				var units int64
				switch rng.IntN(4) {
				case 0:
				case 1:
					units = rng.Int64N(5_000000)
				default:
					units = rng.Int64N(60_000000)
				}
				if x == mETH {
					units /= 1000 // micro-ETH: 0 to 0.06 ETH
				}
				if units == 0 {
					continue
				}
				if err := srv.Fund(ref(a), netOf(n), mAssetCode[x], microString(units)); err != nil {
					t.Fatal(err)
				}
				h.funded[a][n][x] = units
			}
		}
	}
	// The clients: one API key each.
	plan := []struct{ acct, net int }{
		{mAlice, mTest}, {mAlice, mLive}, {mBob, mTest}, {mCarol, mTest}, {mCarol, mLive},
		{mAliceBot, mTest}, {mAliceBot, mTest}, {mAliceBot, mLive}, {mBobBot, mTest}, {mBob, mLive},
	}
	for i, p := range plan[:linzClients] {
		k, err := srv.IssueKey(ref(p.acct), netOf(p.net), fmt.Sprintf("linz-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		// No keep-alive: Go's transport resends an idempotent request by
		// itself when a reused connection dies, which would hide from the
		// recorder that a request was sent twice.
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		h.clients = append(h.clients, &linzClient{idx: i, acct: p.acct, net: p.net, key: k.APIKey.Reveal(), keyID: k.KeyID, http: hc})
	}
	return h
}

// policyParams is the wire form of a whole policy.
func policyParams(p mPolicy) confpay.SpendPolicyParams {
	params := confpay.SpendPolicyParams{
		DailyLimitUSDG:          limitOfMicro(p.daily),
		PerTransactionLimitUSDG: limitOfMicro(p.perTx),
	}
	if p.hasThreshold {
		params.HITLThresholdUSDG = limitOfMicro(p.threshold)
	}
	if p.eth {
		params.Assets = []string{"USDG", "ETH"}
	}
	return params
}

func netOf(n int) confpay.Network {
	if n == mLive {
		return confpay.NetworkLive
	}
	return confpay.NetworkTest
}

func limitOfMicro(u int64) *confpay.Limit {
	l := confpay.MustParseLimit(microString(u))
	return &l
}

// microString writes micro-units as a decimal with six places.
func microString(u int64) string { return fmt.Sprintf("%d.%06d", u/1_000000, u%1_000000) }

// run runs ops operations from the clients concurrently, then checks the
// history and the invariants. It reports whether all held.
func (h *linzHarness) run(ops int, m modelConfig) bool {
	h.t0 = time.Now()
	var wg sync.WaitGroup
	per := (ops + len(h.clients) - 1) / len(h.clients)
	for _, c := range h.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(h.seed, uint64(c.idx)+2))
			for i := range per {
				// With a data directory, the first client restarts the
				// server halfway through its share, so every history
				// holds at least one restart whatever the seed draws.
				h.one(c, rng, h.reopen != nil && c.idx == 0 && i == per/2)
			}
		}()
	}
	wg.Wait()
	return h.check(m)
}

// record appends one finished operation.
func (h *linzHarness) record(c *linzClient, in *mInput, out *mOutput, call time.Time) {
	ret := time.Since(h.t0)
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.trID != "" && !containsStr(h.seenTr, out.trID) {
		h.seenTr = append(h.seenTr, out.trID)
	}
	if out.heldID != "" && !containsStr(h.seenHeld, out.heldID) {
		h.seenHeld = append(h.seenHeld, out.heldID)
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: c.idx, Input: in, Output: out,
		Call: int64(call.Sub(h.t0)), Return: int64(ret)})
}

func containsStr(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// pick returns a seen id (or, one time in eight, one that never existed).
func (h *linzHarness) pick(rng *rand.Rand, held bool) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.seenTr
	if held {
		seen = h.seenHeld
	}
	if len(seen) == 0 || rng.IntN(8) == 0 {
		if held {
			return "atx_doesnotexist0000000000"
		}
		return "tr_doesnotexist00000000000"
	}
	return seen[rng.IntN(len(seen))]
}

// one runs one random operation of client c, or a restart when restart
// is set.
func (h *linzHarness) one(c *linzClient, rng *rand.Rand, restart bool) {
	in := &mInput{client: c.idx, acct: c.acct, net: c.net, key: c.idx, idem: -1, tr: -1, held: -1}
	r := rng.IntN(100)
	switch {
	case r < 46:
		in.kind = opPay
	case r < 50:
		in.kind = opPolicy
	case r < 58:
		in.kind = opApprove
	case r < 62:
		in.kind = opReject
	case r < 74:
		in.kind = opGet
	case r < 80:
		in.kind = opFail
	case r < 84:
		in.kind = opSettle
	case r < 89:
		in.kind = opAdvance
	case r < 99 || rng.IntN(3) > 0:
		in.kind = opFault
	default:
		in.kind = opRevoke
	}
	if in.kind == opPolicy && c.acct != mAlice && c.acct != mBob && rng.IntN(4) > 0 {
		in.kind = opPay // a stranger's or an agent's PATCH (403) now and then
	}
	if restart || h.reopen != nil && rng.IntN(60) == 0 {
		in.kind = opRestart
	}
	// A clock advance and a key revocation run alone. The model takes an
	// advance as one step, while the server runs its timers one by one;
	// and a payment whose answer was lost and whose retry met a revoked
	// key has an outcome the client cannot know.
	if in.kind == opAdvance || in.kind == opRevoke || in.kind == opRestart {
		h.exclusive.Lock()
		defer h.exclusive.Unlock()
	} else {
		h.exclusive.RLock()
		defer h.exclusive.RUnlock()
	}
	switch in.kind {
	case opPay, opApprove, opReject:
		h.mutate(c, rng, in)
	case opPolicy:
		h.patchPolicy(c, rng, in)
	case opRestart:
		h.restart(c, in)
	case opGet:
		id := h.pick(rng, false)
		in.desc = "get " + id
		in.trRaw = id
		call := time.Now()
		out := h.send(c, in, "GET", "/v1/transfers/"+id, "", "")
		h.record(c, in, out, call)
	default:
		h.admin(c, rng, in)
	}
}

// restart closes the server and opens a new one on its data directory
// (every other client waits: see one), and checks that the new server's
// state is the old one's.
func (h *linzHarness) restart(c *linzClient, in *mInput) {
	in.desc = "restart"
	call := time.Now()
	before := h.srv.Snapshot()
	h.srv.Close()
	h.srv = h.reopen()
	if diff := cmp.Diff(before, h.srv.Snapshot(), snapshotOptions); diff != "" {
		h.t.Errorf("seed %d: the restart changed the state (-before +after):\n%s", h.seed, diff)
	}
	h.record(c, in, &mOutput{ans: mAnswer{status: http.StatusOK, tr: -1, held: -1}}, call)
}

// mutate sends a payment, approval or rejection with an idempotency key:
// usually a new one, sometimes one the client sent before (a replay if
// the request is the same, a reuse if not).
func (h *linzHarness) mutate(c *linzClient, rng *rand.Rand, in *mInput) {
	var method, path, body string
	method = "POST"
	switch in.kind {
	case opPay:
		to := []int{mAlice, mBob, mCarol, mAliceBot, mBobBot, mDave, mGhost}[rng.IntN(7)]
		in.to = to
		handle := "@nobody"
		if to >= 0 {
			handle = mHandles[to]
		}
		in.asset = mUSDG
		if rng.IntN(4) == 0 {
			in.asset = mETH
		}
		switch rng.IntN(3) {
		case 0:
			in.units = 1 + rng.Int64N(4_000000)
		case 1:
			in.units = 1 + rng.Int64N(12_000000)
		default:
			in.units = 1 + rng.Int64N(25_000000)
		}
		if p := h.pol[c.acct][c.net]; p.perTx > 0 && rng.IntN(2) == 0 {
			in.units = p.perTx - 2_000000 + rng.Int64N(3_000000) // around the starting limit
		}
		if in.asset == mETH {
			in.units = 1 + in.units/3000 // micro-ETH, about the same USDG equivalent
		}
		in.conf = rng.IntN(3) == 0
		path = "/v1/transfers"
		body = fmt.Sprintf(`{"to":%q,"amount":%q,"asset":%q,"confidential":%t}`, handle, microString(in.units), mAssetCode[in.asset], in.conf)
	case opApprove, opReject:
		id := h.pick(rng, true)
		in.heldRaw = id
		verb := "approve"
		if in.kind == opReject {
			verb = "reject"
		}
		path = "/v1/agents/transactions/" + id + "/" + verb
	}
	desc := method + " " + path + " " + body
	var key string
	if len(c.idemUsed) > 0 && rng.IntN(8) == 0 {
		u := c.idemUsed[rng.IntN(len(c.idemUsed))]
		key = u.key
		if rng.IntN(2) == 0 { // the same request again
			desc = u.desc
			method, path, body = splitDesc(u.desc)
			in = reparse(in, u.desc)
		}
	} else {
		c.idemCount++
		key = fmt.Sprintf("linz-%d-%d", c.idx, c.idemCount)
		c.idemUsed = append(c.idemUsed, linzIdem{key: key, desc: desc})
	}
	in.idemRaw = key
	in.sig = desc
	in.desc = desc + " key " + key
	call := time.Now()
	out := h.send(c, in, method, path, body, key)
	h.record(c, in, out, call)
}

// patchPolicy sends a PATCH of one agent's spend policy on c's network:
// both limits, one of them (refused while the policy allows nothing, or
// when the merged limits cross), the threshold, the assets, or nothing.
// Without an idempotency key: a PATCH sets values, so sending it again
// changes nothing more.
func (h *linzHarness) patchPolicy(c *linzClient, rng *rand.Rand, in *mInput) {
	in.agent = []int{mAliceBot, mBobBot}[rng.IntN(2)]
	if isAgent(c.acct) {
		in.agent = c.acct // an agent's own PATCH: 403
	} else if c.acct == mAlice || c.acct == mBob {
		in.agent = map[int]int{mAlice: mAliceBot, mBob: mBobBot}[c.acct]
		if rng.IntN(8) == 0 {
			in.agent = mAliceBot + mBobBot - in.agent // the other owner's agent: 403
		}
	}
	usdg := func(u int64) string { return strconv.FormatInt(u/1_000000, 10) }
	var q mPatch
	var body string
	switch rng.IntN(6) {
	case 0, 1:
		l := [][2]int64{{50_000000, 20_000000}, {25_000000, 10_000000}, {30_000000, 30_000000}, {100_000000, 5_000000}}[rng.IntN(4)]
		q.daily, q.perTx = l[0], l[1]
		body = fmt.Sprintf(`{"daily_limit_usdg":%s,"per_transaction_limit_usdg":%s}`, usdg(q.daily), usdg(q.perTx))
	case 2:
		q.perTx = []int64{5_000000, 15_000000, 40_000000}[rng.IntN(3)]
		body = fmt.Sprintf(`{"per_transaction_limit_usdg":%s}`, usdg(q.perTx))
	case 3:
		q.daily = []int64{8_000000, 60_000000}[rng.IntN(2)]
		body = fmt.Sprintf(`{"daily_limit_usdg":%s}`, usdg(q.daily))
	case 4:
		if rng.IntN(3) == 0 {
			q.noThreshold = true
			body = `{"hitl_threshold_usdg":null}`
		} else {
			q.setThreshold, q.threshold = true, []int64{3_000000, 12_000000}[rng.IntN(2)]
			body = fmt.Sprintf(`{"hitl_threshold_usdg":%s}`, usdg(q.threshold))
		}
	default:
		q.setAssets, q.eth = true, rng.IntN(2) == 0
		body = `{"assets":["USDG"]}`
		if q.eth {
			body = `{"assets":["USDG","ETH"]}`
		}
		if rng.IntN(3) == 0 {
			q, body = mPatch{}, `{}`
		}
	}
	in.patch = q
	path := "/v1/agents/" + h.agents[in.agent] + "/spend-policy"
	in.desc = "PATCH " + path + " " + body
	call := time.Now()
	out := h.send(c, in, "PATCH", path, body, "")
	h.record(c, in, out, call)
}

// splitDesc splits "METHOD path body".
func splitDesc(d string) (method, path, body string) {
	method, rest, _ := strings.Cut(d, " ")
	path, body, _ = strings.Cut(rest, " ")
	return method, path, body
}

// reparse makes in describe the request desc (sent before by the same
// client) again.
func reparse(in *mInput, desc string) *mInput {
	_, path, body := splitDesc(desc)
	n := &mInput{client: in.client, acct: in.acct, net: in.net, key: in.key, idem: -1, tr: -1, held: -1}
	switch {
	case path == "/v1/transfers":
		n.kind = opPay
		var b struct {
			To           string `json:"to"`
			Amount       string `json:"amount"`
			Asset        string `json:"asset"`
			Confidential bool   `json:"confidential"`
		}
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			panic(err)
		}
		n.to = mGhost
		for a, hd := range mHandles {
			if hd == b.To {
				n.to = a
			}
		}
		n.asset = mUSDG
		if b.Asset == "ETH" {
			n.asset = mETH
		}
		var whole, frac int64
		fmt.Sscanf(b.Amount, "%d.%d", &whole, &frac)
		n.units = whole*1_000000 + frac
		n.conf = b.Confidential
	default:
		n.kind = opApprove
		if strings.HasSuffix(path, "/reject") {
			n.kind = opReject
		}
		n.heldRaw = strings.Split(path, "/")[4]
	}
	return n
}

// admin runs one /_fake operation.
func (h *linzHarness) admin(c *linzClient, rng *rand.Rand, in *mInput) {
	var method, path, body string
	switch in.kind {
	case opFail:
		id := h.pick(rng, false)
		in.trRaw = id
		method, path = "POST", "/_fake/transfers/"+id+"/fail"
	case opSettle:
		method, path = "POST", "/_fake/settle"
	case opAdvance:
		d := []time.Duration{time.Second, 30 * time.Second, 10 * time.Minute, 2 * time.Hour, 12 * time.Hour, 25 * time.Hour}[rng.IntN(6)]
		in.d = int64(d)
		method, path, body = "POST", "/_fake/clock", fmt.Sprintf(`{"advance":%q}`, d.String())
	case opFault:
		action := []string{"drop_after_commit", "reset_after_commit", "error"}[rng.IntN(3)]
		target := []string{"/v1/transfers", "/v1/agents/transactions/*"}[rng.IntN(2)]
		method, path = "POST", "/_fake/faults"
		body = fmt.Sprintf(`{"action":%q,"method":"POST","path":%q,"times":1}`, action, target)
	case opRevoke:
		victim := h.clients[rng.IntN(len(h.clients))]
		in.key = victim.idx
		method, path = "DELETE", "/_fake/keys/"+victim.keyID
	}
	in.desc = method + " " + path + " " + body
	call := time.Now()
	out := h.send(c, in, method, path, body, "")
	h.record(c, in, out, call)
}

// send sends a request until it gets an answer that is not an injected
// fault, and reads the answer into an mOutput. A mutating request is sent
// again, with the same idempotency key, after a transport error or a
// 503/429 (in.retried then says so).
func (h *linzHarness) send(c *linzClient, in *mInput, method, path, body, key string) *mOutput {
	for attempt := 0; ; attempt++ {
		if attempt > 20 {
			h.t.Fatalf("seed %d: %s gave no answer after 20 attempts", h.seed, in.desc)
		}
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, h.srv.URL()+path, r)
		if err != nil {
			h.t.Fatal(err)
		}
		if strings.HasPrefix(path, "/v1/") {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		// The OpenAPI recorder checks a sample of these (openapi_test.go).
		req.Header.Set("User-Agent", "confpay-linearizability-test")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if key == "" {
				h.t.Fatalf("seed %d: %s: %v", h.seed, in.desc, err)
			}
			in.retried = true
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			if key == "" {
				h.t.Fatalf("seed %d: %s: %v", h.seed, in.desc, err)
			}
			in.retried = true
			continue
		}
		if key != "" && resp.StatusCode == http.StatusServiceUnavailable { // an injected fault
			in.retried = true
			continue
		}
		return h.parse(in, resp, raw)
	}
}

// parse reads the part of an answer the model predicts.
func (h *linzHarness) parse(in *mInput, resp *http.Response, raw []byte) *mOutput {
	out := &mOutput{ans: mAnswer{status: resp.StatusCode, tr: -1, held: -1}, body: string(raw),
		replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	var b struct {
		Code          string     `json:"code"`
		Rule          string     `json:"rule"`
		Param         string     `json:"param"`
		Status        string     `json:"status"`
		TransferID    string     `json:"transfer_id"`
		TransactionID string     `json:"transaction_id"`
		CreatedAt     *time.Time `json:"created_at"`
		RequestedAt   *time.Time `json:"requested_at"`
		DecidedAt     *time.Time `json:"decided_at"`
		Now           *time.Time `json:"now"`
		Confirmed     int        `json:"confirmed"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &b); err != nil {
			h.t.Fatalf("seed %d: %s: answer %d is not JSON: %q", h.seed, in.desc, resp.StatusCode, raw)
		}
	}
	a := &out.ans
	if resp.StatusCode >= 400 {
		a.code, a.rule = b.Code, b.Rule
		if in.kind == opPolicy {
			a.param = b.Param
		}
		return out
	}
	at := func(t *time.Time) int64 {
		if t == nil {
			return -1
		}
		return int64(t.Sub(h.start))
	}
	switch in.kind {
	case opSettle:
		a.count = b.Confirmed
	case opAdvance:
		a.at = at(b.Now)
	case opPay, opGet, opFail:
		a.tstatus = b.Status
		out.trID = b.TransferID
		a.at = at(b.CreatedAt)
		if b.Status == "pending_approval" {
			out.heldID, out.trID = b.TransactionID, ""
			a.at = at(b.RequestedAt)
		}
	case opApprove, opReject:
		a.tstatus = b.Status
		out.heldID, out.trID = b.TransactionID, b.TransferID
		a.at = at(b.DecidedAt)
	case opPolicy:
		var p confpay.SpendPolicy
		if err := json.Unmarshal(raw, &p); err != nil {
			h.t.Fatalf("seed %d: %s: %v", h.seed, in.desc, err)
		}
		a.pol = mPolicy{daily: microOfText(h.t, p.DailyLimitUSDG.String()), perTx: microOfText(h.t, p.PerTransactionLimitUSDG.String()),
			eth: slices.Contains(p.Assets, "ETH")}
		if p.HITLThresholdUSDG != nil {
			a.pol.threshold, a.pol.hasThreshold = microOfText(h.t, p.HITLThresholdUSDG.String()), true
		}
	}
	return out
}

// check numbers the ids densely, checks the history against the model
// and the invariants against the server's books.
func (h *linzHarness) check(m modelConfig) bool {
	h.t.Helper()
	trIdx := map[string]int32{}
	for i, id := range h.seenTr {
		trIdx[id] = int32(i)
	}
	heldIdx := map[string]int32{}
	for i, id := range h.seenHeld {
		heldIdx[id] = int32(i)
	}
	idemIdx := map[string]int32{}
	lookup := func(m map[string]int32, id string) int32 {
		if i, ok := m[id]; ok {
			return i
		}
		return -1
	}
	for _, op := range h.ops {
		in, out := op.Input.(*mInput), op.Output.(*mOutput)
		in.tr, in.held = lookup(trIdx, in.trRaw), lookup(heldIdx, in.heldRaw)
		if in.idemRaw != "" {
			if _, ok := idemIdx[in.idemRaw]; !ok {
				idemIdx[in.idemRaw] = int32(len(idemIdx))
			}
			in.idem = idemIdx[in.idemRaw]
		}
		out.ans.tr, out.ans.held = lookup(trIdx, out.trID), lookup(heldIdx, out.heldID)
	}
	model := m.porcupine(len(trIdx), len(heldIdx), len(idemIdx), h.funded, h.pol)
	res, info := porcupine.CheckOperationsVerbose(model, h.ops, time.Minute)
	ok := res == porcupine.Ok
	if res == porcupine.Unknown {
		if h.quiet { // the mutation check: a timeout refuses nothing; try the next seed
			h.t.Logf("seed %d: the checker timed out (inconclusive)", h.seed)
			return true
		}
		h.t.Errorf("seed %d: the checker timed out", h.seed)
	}
	if !ok && !h.quiet {
		dir := h.t.TempDir()
		if d := os.Getenv("LINZ_OUT"); d != "" {
			dir = d
		}
		file := filepath.Join(dir, fmt.Sprintf("linz-%d.html", h.seed))
		if err := porcupine.VisualizePath(model, info, file); err == nil {
			h.t.Logf("seed %d: visualization in %s", h.seed, file)
		}
		h.t.Logf("seed %d: %d operations, %d transfers, %d held; history:\n%s", h.seed, len(h.ops), len(trIdx), len(heldIdx), h.describe(model))
	}
	if ok && m.mutant == "" {
		ok = h.invariants(trIdx)
	}
	if testing.Verbose() && !h.quiet {
		h.t.Logf("seed %d: %d operations, %d transfers, %d held payments, %d keys; answers %v", h.seed, len(h.ops), len(trIdx), len(heldIdx), len(idemIdx), h.tally())
	}
	return ok
}

// tally counts the answers by operation and status.
func (h *linzHarness) tally() map[string]int {
	n := map[string]int{}
	for _, op := range h.ops {
		in, out := op.Input.(*mInput), op.Output.(*mOutput)
		k := fmt.Sprintf("%s %d%s", opNames[in.kind], out.ans.status, strings.TrimSuffix(" "+out.ans.code+" "+out.ans.rule, " "))
		if out.replayed {
			k += " replayed"
		}
		n[strings.TrimSpace(k)]++
	}
	return n
}

func (h *linzHarness) describe(model porcupine.Model) string {
	var b strings.Builder
	for _, op := range h.ops {
		fmt.Fprintf(&b, "  [%8d,%8d] %s\n", op.Call/1000, op.Return/1000, model.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// invariants checks, from the server's own books after the run: money
// conserved per asset per network, no negative available balance, exactly
// one transfer per idempotency key, and every agent's policy bounds.
func (h *linzHarness) invariants(trIdx map[string]int32) bool {
	t := h.t
	ok := true
	ref := func(a int) string {
		if id, ok := h.agents[a]; ok {
			return id
		}
		return mHandles[a]
	}
	for n := range mNetworks {
		for x := range mAssets {
			var funded, held int64
			for a := range mAccounts {
				funded += h.funded[a][n][x]
				books, err := h.srv.Books(ref(a), netOf(n))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range books {
					if e.Asset != mAssetCode[x] {
						continue
					}
					bal, avail := microOf(t, e.Balance), microOf(t, e.Available)
					if avail < 0 || bal < 0 {
						t.Errorf("seed %d: %s %s %s: negative balance", h.seed, mHandles[a], netOf(n), e.Asset)
						ok = false
					}
					held += bal
				}
			}
			if funded != held {
				t.Errorf("seed %d: %s %s: %d micro-units funded, %d in the books", h.seed, netOf(n), mAssetCode[x], funded, held)
				ok = false
			}
		}
	}
	// Exactly one transfer per idempotency key: every transfer the server
	// holds was answered to exactly one key.
	perKey := map[string]string{} // transfer id → key
	for _, op := range h.ops {
		in, out := op.Input.(*mInput), op.Output.(*mOutput)
		if out.trID == "" || in.idemRaw == "" || (in.kind != opPay && in.kind != opApprove) {
			continue
		}
		if k, dup := perKey[out.trID]; dup && k != in.idemRaw {
			t.Errorf("seed %d: transfer %s answered to keys %s and %s", h.seed, out.trID, k, in.idemRaw)
			ok = false
		}
		perKey[out.trID] = in.idemRaw
	}
	var records []fakeserver.TransferRecord
	for a := range mAccounts {
		for n := range mNetworks {
			rs, err := h.srv.Transfers(ref(a), netOf(n))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.FromAccountID == ref(a) || r.From == mHandles[a] {
					records = append(records, r)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range records {
		if seen[r.TransferID] {
			continue
		}
		seen[r.TransferID] = true
		if _, ok2 := perKey[r.TransferID]; !ok2 {
			t.Errorf("seed %d: transfer %s exists but no request was answered with it", h.seed, r.TransferID)
			ok = false
		}
	}
	// The audit's own invariants (money conserved, one transfer per key,
	// policy bounds against the policy each payment was judged under)
	// agree: none reports anything after a history the model accepts.
	for _, f := range h.srv.Audit() {
		if strings.HasPrefix(f.Rule, "invariant_") {
			t.Errorf("seed %d: the audit's invariant: %s", h.seed, f)
			ok = false
		}
	}
	// Policy bounds, per network: no agent payment over the highest
	// per-transaction limit that network's policy ever had, and no
	// rolling 24-hour window over its highest daily limit (a network
	// whose policy was never set allows nothing at all).
	most := h.pol
	for _, op := range h.ops {
		in, out := op.Input.(*mInput), op.Output.(*mOutput)
		if in.kind == opPolicy && out.ans.status == 200 {
			m := &most[in.agent][in.net]
			m.perTx, m.daily = max(m.perTx, out.ans.pol.perTx), max(m.daily, out.ans.pol.daily)
		}
	}
	for _, agent := range []int{mAliceBot, mBobBot} {
		for n := range mNetworks {
			p := most[agent][n]
			var mine []fakeserver.TransferRecord
			for _, r := range records {
				if r.From == mHandles[agent] && r.Network == netOf(n) && r.Status != confpay.StatusFailed {
					mine = append(mine, r)
				}
			}
			for _, r := range mine {
				eq := equivalentOf(t, r)
				if eq > p.perTx {
					t.Errorf("seed %d: %s paid %d on %s, over its per-transaction limit there", h.seed, mHandles[agent], eq, netOf(n))
					ok = false
				}
				var window int64
				for _, o := range mine {
					if !o.CreatedAt.After(r.CreatedAt) && o.CreatedAt.After(r.CreatedAt.Add(-24*time.Hour)) {
						window += equivalentOf(t, o)
					}
				}
				if window > p.daily {
					t.Errorf("seed %d: %s spent %d on %s in the 24 h before %s, over its daily limit there", h.seed, mHandles[agent], window, netOf(n), r.CreatedAt)
					ok = false
				}
			}
		}
	}
	return ok
}

func microOf(t *testing.T, a confpay.Amount) int64 {
	t.Helper()
	return microOfText(t, a.String())
}

// microOfText reads a decimal of at most six places as micro-units.
func microOfText(t *testing.T, a string) int64 {
	t.Helper()
	s, neg := strings.CutPrefix(a, "-")
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000000")
	if strings.Trim(frac[6:], "0") != "" {
		t.Fatalf("amount %s is finer than a micro-unit", a)
	}
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac[:6], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("amount %s does not parse", a)
	}
	if neg {
		return -(w*1_000000 + f)
	}
	return w*1_000000 + f
}

func equivalentOf(t *testing.T, r fakeserver.TransferRecord) int64 {
	u := microOf(t, r.Amount)
	if r.Asset == "ETH" {
		return u * ethMicroUSDG
	}
	return u
}
