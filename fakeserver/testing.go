package fakeserver

import (
	"math/big"
	"net/http"

	confpay "github.com/confpay/confpay-go"
)

// Test helpers. A method of Server whose first parameter is t is a test
// helper: it marks itself with t.Helper, returns no error, and fails the
// test (t.Fatalf) when the operation fails, so that a test reads as a
// story. Each is the twin of an error-returning method of the direct API,
// which works outside tests too:
//
//	Seed(t, seed)                    Load(seed)
//	Reseed(t)                        ResetToSeed()
//	AddAccount(t, params)            CreateAccount(params)
//	AddAgent(t, owner, name, policy) CreateAgent(owner, name, policy)
//	AddFunds(t, ref, asset, amount)  Fund(ref, NetworkTest, asset, amount)
//	Balance(t, ref, asset)           Books(ref, NetworkTest)
//	BalanceOn(t, n, ref, asset)      Books(ref, n)
//	CheckBalance(t, ref, asset, w)   Books(ref, NetworkTest), compared
//	Held(t, id)                      HeldPayment(id)
//	Inject(t, fault)                 AddFault(fault)
//	AddWebhook(t, ref, h, secret)    SubscribeHandler(ref, NetworkTest, h, secret)
//	Record(t, ref)                   SubscribeHandler, with a recorder
//
// Failure messages never hold a key, a figure or a memo.

// Seed loads seed (see Load) and returns what it created, or fails the
// test. The seed becomes the server's seed, which Reseed loads again.
func (s *Server) Seed(t Tester, seed *Seed) *Seeded {
	t.Helper()
	out, err := s.Load(seed)
	if err != nil {
		t.Fatalf("fakeserver: Seed: %v", err)
	}
	return out
}

// Reseed empties the server and loads its seed again (see ResetToSeed),
// or fails the test. The ids and keys are new.
func (s *Server) Reseed(t Tester) *Seeded {
	t.Helper()
	out, err := s.ResetToSeed()
	if err != nil {
		t.Fatalf("fakeserver: Reseed: %v", err)
	}
	return out
}

// AddAccount creates an account (see CreateAccount), or fails the test.
func (s *Server) AddAccount(t Tester, p AccountParams) *AccountInfo {
	t.Helper()
	info, err := s.CreateAccount(p)
	if err != nil {
		t.Fatalf("fakeserver: AddAccount(%s): %v", p.Handle, err)
	}
	return info
}

// AddAgent creates an agent of owner with a spend policy and a test and a
// live key (see CreateAgent), or fails the test.
func (s *Server) AddAgent(t Tester, owner, name string, policy confpay.SpendPolicyParams) *AgentInfo {
	t.Helper()
	info, err := s.CreateAgent(owner, name, policy)
	if err != nil {
		t.Fatalf("fakeserver: AddAgent(%s, %s): %v", owner, name, err)
	}
	return info
}

// AddFunds credits an account (an agent included) with amount of asset on
// the test network (see Fund), or fails the test.
func (s *Server) AddFunds(t Tester, accountRef, asset, amount string) {
	t.Helper()
	if err := s.Fund(accountRef, confpay.NetworkTest, asset, amount); err != nil {
		t.Fatalf("fakeserver: AddFunds(%s, %s): %v", accountRef, asset, err)
	}
}

// AddInbound pays an account from outside (see Inbound), or fails the
// test, and returns the pending transfer.
func (s *Server) AddInbound(t Tester, p InboundParams) TransferRecord {
	t.Helper()
	r, err := s.Inbound(p)
	if err != nil {
		t.Fatalf("fakeserver: AddInbound(from %s to %s): %v", p.From, p.To, err)
	}
	return r
}

// Balance returns what an account (an agent included) can spend of asset
// on the test network, from the server's books: its settled balance less
// what its pending outgoing transfers reserve, the figure its balance
// ciphertext encrypts and a decryption proof reveals. An asset the account
// never held is zero; an unknown account or asset fails the test. It is
// for assertions only: the /v1 interface never answers a figure except
// from the account's own proof. Books has the settled and reserved
// figures too.
func (s *Server) Balance(t Tester, accountRef, asset string) confpay.Amount {
	t.Helper()
	return s.balance(t, "Balance", confpay.NetworkTest, accountRef, asset)
}

// BalanceOn is Balance on network n.
func (s *Server) BalanceOn(t Tester, n confpay.Network, accountRef, asset string) confpay.Amount {
	t.Helper()
	return s.balance(t, "BalanceOn", n, accountRef, asset)
}

// balance is Balance and BalanceOn; name is the caller's, for messages.
func (s *Server) balance(t Tester, name string, n confpay.Network, accountRef, asset string) confpay.Amount {
	t.Helper()
	books, err := s.Books(accountRef, n)
	if err == nil {
		for _, e := range books {
			if e.Asset == asset {
				return e.Available
			}
		}
		dec, apiErr := s.assets.known("asset", asset)
		if apiErr == nil {
			return confpay.AmountFromUnits(new(big.Int), dec)
		}
		err = apiErr
	}
	t.Fatalf("fakeserver: %s(%s, %s, %s): %v", name, n, accountRef, asset, err)
	return confpay.Amount{}
}

// CheckBalance fails the test unless what an account (an agent included)
// can spend of asset on the test network (see Balance) is exactly want, a
// decimal string of at most the asset's decimals: "87.5", "87.50" and
// "0" are figures. Like every helper here its message holds no figure: it
// says whether the balance is above or below want (read it with Balance).
func (s *Server) CheckBalance(t Tester, accountRef, asset, want string) {
	t.Helper()
	got := s.balance(t, "CheckBalance", confpay.NetworkTest, accountRef, asset)
	w, err := confpay.ParseAmount(want)
	if err == nil {
		dec, _ := s.assets.known("asset", asset) // Balance checked it
		_, err = w.Units(dec)
	}
	if err != nil {
		t.Fatalf("fakeserver: CheckBalance(%s, %s): want is not a figure of %s: a decimal string such as \"12.5\", at most the asset's decimals", accountRef, asset, asset)
		return
	}
	switch got.Cmp(w) {
	case 1:
		t.Fatalf("fakeserver: CheckBalance(%s, %s): the balance is above the figure wanted", accountRef, asset)
	case -1:
		t.Fatalf("fakeserver: CheckBalance(%s, %s): the balance is below the figure wanted", accountRef, asset)
	}
}

// Inject scripts a fault (see AddFault and Fault) and returns its id, or
// fails the test.
func (s *Server) Inject(t Tester, f Fault) string {
	t.Helper()
	id, err := s.AddFault(f)
	if err != nil {
		t.Fatalf("fakeserver: Inject: %v", err)
	}
	return id
}

// InjectDelivery scripts a delivery fault (see AddDeliveryFault) and
// returns its id, or fails the test.
func (s *Server) InjectDelivery(t Tester, f DeliveryFault) string {
	t.Helper()
	id, err := s.AddDeliveryFault(f)
	if err != nil {
		t.Fatalf("fakeserver: InjectDelivery(%s): %v", f.Action, err)
	}
	return id
}

// Held returns a held agent payment with its status (see HeldPayment), or
// fails the test.
func (s *Server) Held(t Tester, id string) *HeldPayment {
	t.Helper()
	p, err := s.HeldPayment(id)
	if err != nil {
		t.Fatalf("fakeserver: Held(%s): %v", id, err)
	}
	return p
}

// AddWebhook subscribes h, a handler in this process, to accountRef's
// events of kinds (all when none) on the test network, signed with secret
// (see SubscribeHandler), or fails the test. Use it for your own webhook
// handler under test, which needs its secret before the first event; use
// Record to just watch the events.
func (s *Server) AddWebhook(t Tester, accountRef string, h http.Handler, secret confpay.Secret, kinds ...confpay.EventKind) *confpay.Webhook {
	t.Helper()
	w, err := s.SubscribeHandler(accountRef, confpay.NetworkTest, h, secret, kinds...)
	if err != nil {
		t.Fatalf("fakeserver: AddWebhook(%s): %v", accountRef, err)
	}
	return w
}
