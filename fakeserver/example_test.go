package fakeserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
)

// A payment from one account to another, confirmed one block later on the
// server's virtual clock. In a test, fakeserver.New(t) does the Start and
// Close.
func ExampleNewServer() {
	srv := fakeserver.NewServer()
	defer srv.Close()

	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	_ = srv.Fund("@alice", confpay.NetworkTest, "USDG", "100")

	client := srv.Client(alice.TestKey)
	ctx := context.Background()
	tr, err := client.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("12.5")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tr.Status, tr.To)

	srv.Advance(time.Second) // one block
	tr, _ = client.Transfers.Get(ctx, tr.TransferID)
	fmt.Println(tr.Status)

	books, _ := srv.Books("@bob", confpay.NetworkTest)
	fmt.Println("bob holds", books[0].Balance, books[0].Asset)
	// Output:
	// pending @bob
	// confirmed
	// bob holds 12.5 USDG
}

// Faults script the next requests: here the first POST /v1/transfers
// answers 503, and the SDK's retry goes through once, exactly.
func ExampleServer_AddFault() {
	srv := fakeserver.NewServer()
	defer srv.Close()
	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	_ = srv.Fund("@alice", confpay.NetworkTest, "USDG", "10")

	_, _ = srv.AddFault(fakeserver.Fault{
		Method: "POST", Path: "/v1/transfers", Times: 1,
		Action: fakeserver.FaultError, Status: 503, RetryAfter: confpay.Ptr(0),
	})
	client := srv.Client(alice.TestKey)
	var resp confpay.Response
	_, err := client.Transfers.Create(context.Background(),
		&confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}, confpay.WithResponse(&resp))
	fmt.Println(err, resp.Attempts, resp.StatusCode)
	transfers, _ := srv.Transfers("@alice", confpay.NetworkTest)
	fmt.Println(len(transfers), "transfer")
	// Output:
	// <nil> 2 201
	// 1 transfer
}

// Reading a figure takes a decryption proof built on the client: the server
// verifies it against the current ciphertexts and returns what it opens.
func ExampleServer_proof() {
	srv := fakeserver.NewServer()
	defer srv.Close()
	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_ = srv.Fund("@alice", confpay.NetworkTest, "USDG", "42.000001")

	client := srv.Client(alice.TestKey)
	ctx := context.Background()
	plain, _ := client.Accounts.Balances(ctx, nil)
	fmt.Println(plain[0].Asset, *plain[0].Nonzero, plain[0].Amount == nil)

	key, _ := decrypt.ParsePrivateKeyHex(alice.DecryptionKey.Reveal())
	ct, _ := decrypt.DecodeBase64(plain[0].EncryptedBalance)
	acct := decrypt.Account{ChainID: confpay.ChainIDTest, Address: common.HexToAddress(alice.PublicKey), Key: key.PublicKey()}
	proof, _, _ := decrypt.Prove(nil, key, acct, []decrypt.Balance{{Asset: "USDG", Version: plain[0].BalanceVersion, Ciphertext: ct}})

	proven, _ := client.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	fmt.Println(proven[0].Asset, proven[0].Amount)
	// Output:
	// USDG true true
	// USDG 42.000001
}

// The admin interface is plain HTTP under /_fake, for tests in other
// languages and for curl against the binary.
func ExampleServer_Handler() {
	srv := fakeserver.NewServer()
	defer srv.Close()
	post := func(path, body string) int {
		resp, err := http.Post(srv.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println(post("/_fake/accounts", `{"handle":"@carol"}`))
	fmt.Println(post("/_fake/fund", `{"account":"@carol","network":"test","asset":"USDG","amount":"5"}`))
	fmt.Println(post("/_fake/clock", `{"advance":"25h"}`))
	fmt.Println(srv.Now().Format(time.RFC3339))
	// Output:
	// 201
	// 200
	// 200
	// 2026-01-06T10:00:00Z
}
