package fakeserver

import (
	"math/big"
	"sync"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/fakeserver/internal/rules"
)

// agentForBench makes an owner, a payee and an agent of the owner with
// the given policy body, directly in the server's state.
func agentForBench(tb testing.TB, s *Server, policyBody string) (agent, payee *account) {
	tb.Helper()
	owner, err := s.CreateAccount(AccountParams{Handle: "@owner", GenerateEncryptionKey: true})
	if err != nil {
		tb.Fatal(err)
	}
	bob, err := s.CreateAccount(AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	if err != nil {
		tb.Fatal(err)
	}
	pr, err := rules.Parse([]byte(policyBody))
	if err != nil {
		tb.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.accounts[owner.AccountID]
	agent = &account{
		id: names.NewID("acct_"), handle: "@owner/bot", typ: confpay.AccountAgent, address: newAddress(),
		createdAt: s.clock.Now(), owner: o, agentName: "bot", agentStatus: confpay.AgentActive,
		policyID: names.NewID("policy_"),
	}
	s.addAccountLocked(agent)
	s.setPoliciesLocked(agent.id, agent.policyID, pr, nil)
	o.agents = append(o.agents, agent)
	return agent, s.accounts[bob.AccountID]
}

// BenchmarkAgentHeldExpiry100k holds 100,000 agent payments and measures
// the one clock advance that expires them all (goal: under 1 s). The
// holding is not timed.
func BenchmarkAgentHeldExpiry100k(b *testing.B) {
	const held = 100_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := NewUnstartedServer(WithApprovalWindow(time.Hour))
		agent, bob := agentForBench(b, s, `{"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 1}`)
		n := s.nets[confpay.NetworkTest]
		for j := 0; j < held; j += 1000 { // 100 batches, a second apart
			s.mu.Lock()
			for k := 0; k < 1000; k++ {
				p := &payment{from: agent, to: bob, toAddr: bob.address, toText: "@bob", asset: "USDG", units: big.NewInt(5_000_000), confidential: true}
				s.holdLocked(n, p, nil)
			}
			s.mu.Unlock()
			s.Advance(time.Second)
		}
		b.StartTimer()
		s.Advance(time.Hour)
		b.StopTimer()
		s.mu.Lock()
		left, expired := len(n.held.pending[agent.owner]), 0
		for _, h := range n.held.byID {
			if h.status == heldExpired {
				expired++
			}
		}
		s.mu.Unlock()
		if left != 0 || expired != held || s.clock.Pending() != 0 {
			b.Fatalf("after the advance: %d pending, %d expired, %d timers", left, expired, s.clock.Pending())
		}
		s.Close()
	}
}

// BenchmarkAgentPolicyCheck is the whole in-process policy check of an
// agent payment: taking the lock, gathering the facts (reference rate,
// recipient names, window spend over 20 earlier payments, available
// balance) and judging a restricted policy. Goal: under 5 µs.
func BenchmarkAgentPolicyCheck(b *testing.B) {
	s := NewUnstartedServer()
	defer s.Close()
	agent, bob := agentForBench(b, s, `{"daily_limit_usdg": 5000, "per_transaction_limit_usdg": 50, "hitl_threshold_usdg": 40,
		"allowed_recipients": ["@carol", "@dave/bot", "0x52908400098527886E0F7030069857D2E4169EE7", "api.market", "*.example.com", "@bob"],
		"assets": ["USDG", "ETH"], "active_hours": "00:00-23:59"}`)
	n := s.nets[confpay.NetworkTest]
	s.mu.Lock()
	w := n.held.window(agent)
	for i := 0; i < 20; i++ {
		w.add(s.clock.Now(), 10_000_000, &transfer{status: stateConfirmed}, nil)
	}
	s.mu.Unlock()
	p := &payment{from: agent, to: bob, toAddr: bob.address, toText: "@bob", asset: "USDG", units: big.NewInt(12_500_000), confidential: true}
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		o, _, apiErr := s.judgeLocked(n, p, rules.Payment)
		s.mu.Unlock()
		if apiErr != nil || o == rules.Hold {
			b.Fatal(o, apiErr)
		}
	}
}

// BenchmarkAgentExpiryFloor100k is the baseline for
// BenchmarkAgentHeldExpiry100k: the same clock advance over 100,000 timers
// whose functions only take and release the server's lock.
func BenchmarkAgentExpiryFloor100k(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := NewUnstartedServer(WithApprovalWindow(time.Hour))
		for j := 0; j < 100_000; j += 1000 {
			for k := 0; k < 1000; k++ {
				s.clock.At(s.clock.Now().Add(time.Hour), func(time.Time) { lockAndRelease(&s.mu.Mutex) })
			}
			s.Advance(time.Second)
		}
		b.StartTimer()
		s.Advance(time.Hour)
		b.StopTimer()
		if s.clock.Pending() != 0 {
			b.Fatal("timers left")
		}
		s.Close()
	}
}

// lockAndRelease takes and releases mu: the least a timer that touches the
// server's state does.
func lockAndRelease(mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
}
