package fakeserver

// The helpers of the internal tests (package fakeserver), mostly for
// webhooks: a recording receiver (hookReceiver), accounts and agents built
// directly (testParty), and events emitted by hand (the tests of emission
// call the emit functions the way transfers and agents do).

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// hookHit is one request a receiver got.
type hookHit struct {
	at     time.Time // the server's clock when it arrived
	header http.Header
	body   []byte
}

// hookReceiver is a local webhook endpoint that records every request and
// answers with answer(n, r), n counting from 1. An answer of 0 means "do
// not answer": the handler waits until the request is cancelled.
type hookReceiver struct {
	srv    *Server
	hs     *httptest.Server
	answer func(n int, r *http.Request) int
	// arrived, if set, gets the number of each request as it arrives
	// (buffered; the test reads what it needs).
	arrived chan int

	mu   sync.Mutex
	hits []hookHit
}

func newHookReceiver(t testing.TB, s *Server, answer func(n int, r *http.Request) int) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{srv: s, answer: answer, arrived: make(chan int, 64)}
	rc.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hookHit{at: s.Now(), header: r.Header.Clone(), body: body})
		n := len(rc.hits)
		rc.mu.Unlock()
		select {
		case rc.arrived <- n:
		default:
		}
		code := rc.answer(n, r)
		if code == 0 {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.hs.Close)
	return rc
}

// answerAlways answers every request with code.
func answerAlways(code int) func(int, *http.Request) int {
	return func(int, *http.Request) int { return code }
}

func (rc *hookReceiver) url() string { return rc.hs.URL + "/hooks" }

func (rc *hookReceiver) all() []hookHit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookHit(nil), rc.hits...)
}

// waitFor waits for the receiver's request number n to arrive. The
// timeout (a minute of real time, far beyond any expected wait) only
// turns a hang into a failure.
func (rc *hookReceiver) waitFor(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-rc.arrived:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("request %d never arrived", n)
		}
	}
}

func (rc *hookReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

// testHMAC is the test's own HMAC-SHA256, independent of webhookverify.
func testHMAC(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// testParty is an account with an SDK client on the test network.
type testParty struct {
	acct   *account
	client *confpay.Client
}

// newTestParty creates an account (a person) with a test key.
func newTestParty(t testing.TB, s *Server, handle string) *testParty {
	t.Helper()
	info, err := s.CreateAccount(AccountParams{Handle: handle})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client(info.TestKey, confpay.WithMaxRetries(0))
	s.mu.Lock()
	a := s.accounts[info.AccountID]
	s.mu.Unlock()
	return &testParty{acct: a, client: c}
}

// newTestAgent builds an agent under owner directly (as agent creation
// does) and gives it a test key.
func newTestAgent(t testing.TB, s *Server, owner *testParty, name string) *testParty {
	t.Helper()
	s.mu.Lock()
	a := &account{
		id:          names.NewID("acct_"),
		handle:      owner.acct.handle + "/" + name,
		typ:         confpay.AccountAgent,
		address:     newAddress(),
		createdAt:   s.clock.Now(),
		owner:       owner.acct,
		agentName:   name,
		agentStatus: confpay.AgentActive,
		policyID:    names.NewID("policy_"), // every agent has one (agent.policy.updated names it)
	}
	s.addAccountLocked(a)
	s.setPoliciesLocked(a.id, a.policyID, rules.Closed(), nil)
	owner.acct.agents = append(owner.acct.agents, a)
	s.mu.Unlock()
	k, err := s.IssueKey(a.id, confpay.NetworkTest, "agent")
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client(k.APIKey, confpay.WithMaxRetries(0))
	return &testParty{acct: a, client: c}
}

// subscribeHooks creates a subscription through the SDK and returns it with
// its secret.
func subscribeHooks(t testing.TB, p *testParty, url string, events ...string) *confpay.Webhook {
	t.Helper()
	kinds := make([]confpay.EventKind, len(events))
	for i, e := range events {
		kinds[i] = confpay.EventKind(e)
	}
	w, err := p.client.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: url, Events: kinds})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// handUnits is the amount of every hand-built transfer: 123.456789 USDG.
// It must never appear in a delivery.
var handUnits = big.NewInt(123456789)

// handTransfer builds a pending transfer from one account to another (to
// nil: an external wallet).
func handTransfer(s *Server, from, to *account) *transfer {
	t := &transfer{
		id:           names.NewID("tr_"),
		from:         from,
		to:           to,
		asset:        "USDG",
		units:        new(big.Int).Set(handUnits),
		confidential: true,
		memo:         "invoice 42",
		status:       statePending,
		txHash:       [32]byte(bytes.Repeat([]byte{0xab}, 32)),
		createdAt:    s.Now(),
	}
	if to != nil {
		t.toAddr, t.toText = to.address, to.handle
	} else {
		t.toAddr = newAddress()
		t.toText = t.toAddr.Hex()
	}
	return t
}

// emitTransfer emits a transfer event on the test network the way the
// transfer code does: under s.mu.
func emitTransfer(s *Server, kind string, t *transfer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emitTransferLocked(s.nets[confpay.NetworkTest], kind, t)
}

// setJitter replaces the retry jitter of s's delivery pool.
func setJitter(s *Server, f func(time.Duration) time.Duration) {
	s.hooks.SetJitter(f)
}

// noJitter keeps every retry wait nominal.
func noJitter(d time.Duration) time.Duration { return d }

// listDeliveries lists a subscription's deliveries through the SDK.
func listDeliveries(t testing.TB, p *testParty, webhookID string) []*confpay.Delivery {
	t.Helper()
	page, err := p.client.Webhooks.Deliveries(context.Background(), webhookID, &confpay.DeliveryListParams{Limit: confpay.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	return page.Deliveries
}
