package fakeserver_test

import (
	"context"
	"encoding/json"

	"net/url"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
)

func TestBalancesWithAndWithoutProof(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "1234.567891")
	srv.AddFunds(t, "@alice", "ETH", "0.000000000000004321")
	rec := leakcheck.New(nil)
	c := newClient(t, srv, alice.test(), rec)  // every answer without a figure
	cp := newClient(t, srv, alice.test(), nil) // answers to proofs, which carry figures
	ctx := context.Background()

	bs, err := c.Accounts.Balances(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Asset != "ETH" || bs[1].Asset != "USDG" {
		t.Fatalf("balances %+v", bs)
	}
	for _, b := range bs {
		if b.Amount != nil || b.Nonzero == nil || !*b.Nonzero || b.BalanceVersion != 1 {
			t.Fatalf("no-proof entry %+v", b)
		}
	}
	// The same version reads the same ciphertext every time.
	again, _ := c.Accounts.Balances(ctx, nil)
	if again[1].EncryptedBalance != bs[1].EncryptedBalance {
		t.Fatal("the ciphertext of one version changed between reads")
	}

	acct := proofAccount(t, alice, confpay.ChainIDTest)
	proof, amounts, err := decrypt.Prove(nil, alice.dk, acct, current(t, bs))
	if err != nil {
		t.Fatal(err)
	}
	if amounts[1].String() != "1234567891" {
		t.Fatalf("the ciphertext opens to %s", amounts[1])
	}
	var resp confpay.Response
	got, err := cp.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)}, confpay.WithResponse(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	if len(got) != 2 || got[0].Amount == nil || got[0].Amount.String() != "0.000000000000004321" ||
		got[1].Amount == nil || got[1].Amount.String() != "1234.567891" || got[1].Nonzero != nil || got[1].EncryptedBalance != "" {
		t.Fatalf("with proof %+v %+v", got[0], got[1])
	}
	// The figures from the proof agree with the books.
	books, _ := srv.Books("@alice", confpay.NetworkTest)
	for i, b := range books {
		if b.Available.String() != got[i].Amount.String() {
			t.Fatalf("books %s say %s, the proof %s", b.Asset, b.Available, got[i].Amount)
		}
	}

	// A proof of one asset: the other keeps the no-proof shape.
	proof1, _, err := decrypt.Prove(nil, alice.dk, acct, current(t, bs)[1:])
	if err != nil {
		t.Fatal(err)
	}
	got, err = cp.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof1)})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Amount != nil || got[0].Nonzero == nil || got[1].Amount == nil {
		t.Fatalf("partial proof %+v %+v", got[0], got[1])
	}

	// The query parameter works too.
	a := rawCall(t, srv, "GET", "/v1/accounts/me/balances?decryption_proof="+url.QueryEscape(decrypt.EncodeBase64(proof1)), alice.test(), "")
	if a.status != 200 || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	a = rawCall(t, srv, "GET", "/v1/accounts/me/balances?decryption_proof="+decrypt.EncodeBase64(proof1), alice.test(),
		`{"decryption_proof":"`+decrypt.EncodeBase64(proof1)+`"}`)
	if a.status != 400 || a.err().Param != "decryption_proof" {
		t.Fatalf("proof twice: %d %s", a.status, a.body)
	}

	// Spending makes the proof stale: a new version, a new ciphertext.
	send(t, c, "@bob", "0.5")
	_, err = c.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	if ae := wantAPIError(t, err, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof", ""); ae.Reason != confpay.ReasonStale {
		t.Fatalf("reason %s", ae.Reason)
	}
	bs2, _ := c.Accounts.Balances(ctx, nil)
	if bs2[1].BalanceVersion != 2 || bs2[1].EncryptedBalance == bs[1].EncryptedBalance {
		t.Fatalf("after a payment %+v", bs2[1])
	}
	// Confirmation does not change the sender's available figure: same
	// version. The recipient's changes.
	srv.Advance(time.Second)
	bs3, _ := c.Accounts.Balances(ctx, nil)
	if bs3[1].BalanceVersion != 2 || bs3[1].EncryptedBalance != bs2[1].EncryptedBalance {
		t.Fatalf("after confirmation %+v", bs3[1])
	}
	proof, _, err = decrypt.Prove(nil, alice.dk, acct, current(t, bs3))
	if err != nil {
		t.Fatal(err)
	}
	got, err = cp.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	if err != nil || got[1].Amount.String() != "1234.067891" {
		t.Fatalf("after the payment %v %v", got, err)
	}
	rec.Check(t, "1234.567891", "1234567891", "1234.067891", "0.000000000000004321", "4321", "0.5")
}

func TestBalancesBadProofs(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	mallory := newAccount(t, srv, "@mallory")
	srv.AddFunds(t, "@alice", "USDG", "10")
	srv.AddFunds(t, "@mallory", "USDG", "10")
	c := newClient(t, srv, alice.test(), nil)
	ctx := context.Background()
	bs, _ := c.Accounts.Balances(ctx, nil)
	acct := proofAccount(t, alice, confpay.ChainIDTest)
	proof, _, err := decrypt.Prove(nil, alice.dk, acct, current(t, bs))
	if err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte(nil), proof...)
	tampered[len(tampered)-1] ^= 1
	mbs, _ := newClient(t, srv, mallory.test(), nil).Accounts.Balances(ctx, nil)
	other, _, err := decrypt.Prove(nil, mallory.dk, proofAccount(t, mallory, confpay.ChainIDTest), current(t, mbs))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, proof, reason string
	}{
		{"not base64", "!!!", confpay.ReasonMalformed},
		{"padded", decrypt.EncodeBase64(proof) + "=", confpay.ReasonMalformed},
		{"truncated", decrypt.EncodeBase64(proof[:len(proof)-1]), confpay.ReasonMalformed},
		{"garbage", decrypt.EncodeBase64([]byte("hello")), confpay.ReasonMalformed},
		{"tampered", decrypt.EncodeBase64(tampered), confpay.ReasonVerificationFailed},
		{"another account", decrypt.EncodeBase64(other), confpay.ReasonVerificationFailed},
	}
	for _, tc := range cases {
		_, err := c.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: tc.proof})
		ae := wantAPIError(t, err, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof", "")
		if ae.Reason != tc.reason {
			t.Errorf("%s: reason %s, want %s", tc.name, ae.Reason, tc.reason)
		}
	}
	// The same proof on the live network (another chain, other
	// ciphertexts) fails.
	fundOn(t, srv, "@alice", confpay.NetworkLive, "USDG", "10")
	_, err = newClient(t, srv, alice.live(), nil).Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	wantAPIError(t, err, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof", "")

	// An account without an encryption key has no ciphertexts.
	plain := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@plain"})
	srv.AddFunds(t, "@plain", "USDG", "3")
	pc := newClient(t, srv, plain.test(), nil)
	pbs, err := pc.Accounts.Balances(ctx, nil)
	if err != nil || len(pbs) != 1 || pbs[0].EncryptedBalance != "" || !*pbs[0].Nonzero {
		t.Fatalf("keyless balances %+v %v", pbs, err)
	}
	_, err = pc.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	if ae := wantAPIError(t, err, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof", ""); ae.Reason != confpay.ReasonVerificationFailed {
		t.Fatalf("reason %s", ae.Reason)
	}
	// Unknown fields in the GET body are refused.
	a := rawCall(t, srv, "GET", "/v1/accounts/me/balances", alice.test(), `{"proof":"x"}`)
	if a.status != 400 || a.err().Param != "proof" {
		t.Fatalf("%d %s", a.status, a.body)
	}
}

func TestBalancesZeroAfterSpendingAll(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "2")
	c := newClient(t, srv, alice.test(), nil)
	send(t, c, "@bob", "2")
	bs, _ := c.Accounts.Balances(context.Background(), nil)
	if len(bs) != 1 || *bs[0].Nonzero {
		t.Fatalf("%+v", bs[0])
	}
	proof, amounts, err := decrypt.Prove(nil, alice.dk, proofAccount(t, alice, confpay.ChainIDTest), current(t, bs))
	if err != nil || amounts[0].Sign() != 0 {
		t.Fatal(err)
	}
	got, err := c.Accounts.Balances(context.Background(), &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	if err != nil || got[0].Amount.String() != "0" {
		t.Fatalf("%v %v", got, err)
	}
	// The answer is an exact JSON string, never a number.
	a := rawCall(t, srv, "GET", "/v1/accounts/me/balances", alice.test(), `{"decryption_proof":"`+decrypt.EncodeBase64(proof)+`"}`)
	var m struct {
		Balances []map[string]json.RawMessage `json:"balances"`
	}
	a.decode(t, &m)
	if string(m.Balances[0]["amount"]) != `"0"` {
		t.Fatalf("amount %s", m.Balances[0]["amount"])
	}

}
