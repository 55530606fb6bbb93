package fakeserver_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// beforeProof is a transport that runs hook once, just before the first
// balances request that carries a decryption proof goes out.
type beforeProof struct {
	base  http.RoundTripper
	hook  func()
	fired atomic.Bool
	sent  atomic.Int32 // balances requests with a proof
}

func (b *beforeProof) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/v1/accounts/me/balances" && r.ContentLength > 0 {
		b.sent.Add(1)
		if b.fired.CompareAndSwap(false, true) {
			b.hook()
		}
	}
	return b.base.RoundTrip(r)
}

// TestReadBalancesRacesABalanceChange races a balance change against a
// proof, end to end: the change lands between the SDK reading the
// ciphertexts and sending its proof, the server answers 422 stale, and the
// SDK's one fresh start reads and proves the new figure.
func TestReadBalancesRacesABalanceChange(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	srv.AddFunds(t, "@alice", "USDG", "10.5")

	tr := &beforeProof{base: http.DefaultTransport, hook: func() {
		srv.AddFunds(t, "@alice", "USDG", "0.25")
	}}
	c := newClient(t, srv, alice.test(), nil, confpay.WithHTTPClient(&http.Client{Transport: tr}))

	var resp confpay.Response
	bals, err := c.Accounts.ReadBalances(context.Background(), alice.dk, confpay.WithResponse(&resp))
	if err != nil {
		t.Fatalf("ReadBalances: %v", err)
	}
	if len(bals) != 1 || bals[0].Amount == nil || bals[0].Amount.String() != "10.75" {
		t.Fatalf("balances after the race = %+v, want USDG 10.75", bals)
	}
	if n := tr.sent.Load(); n != 2 {
		t.Errorf("%d proofs sent, want 2: the stale one and the fresh one", n)
	}
	if got := settled(t, srv, "@alice", confpay.NetworkTest, "USDG"); got != "10.75" {
		t.Errorf("books say %s, the proof said 10.75", got)
	}
}
