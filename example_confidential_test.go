package confpay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"

	"github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/ethereum/go-ethereum/common"
)

// exampleLedger is a stand-in for the service's balances: it encrypts a
// balance of 1250.5 USDG to the account's key and verifies proofs with no key.
func exampleLedger(ek *decrypt.PublicKey) *httptest.Server {
	const address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	acct := decrypt.Account{ChainID: confpay.ChainIDTest, Address: common.HexToAddress(address), Key: ek}
	ct, err := decrypt.EncryptBalance(nil, acct, "USDG", 1, big.NewInt(1_250_500_000))
	if err != nil {
		log.Fatal(err)
	}
	current := []decrypt.Balance{{Asset: "USDG", Version: 1, Ciphertext: ct}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/accounts/me", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(confpay.Account{AccountID: "acct_1", Handle: "@alice", PublicKey: address, EncryptionKey: ek.Hex()})
	})
	mux.HandleFunc("GET /v1/accounts/me/balances", func(w http.ResponseWriter, r *http.Request) {
		var p confpay.BalancesParams
		_ = json.NewDecoder(r.Body).Decode(&p)
		if p.DecryptionProof == "" {
			fmt.Fprintf(w, `{"balances":[{"asset":"USDG","nonzero":true,"encrypted_balance":%q,"balance_version":1}]}`, decrypt.EncodeBase64(ct))
			return
		}
		proof, _ := decrypt.DecodeBase64(p.DecryptionProof)
		figs, err := decrypt.Verify(acct, proof, current)
		if err != nil {
			w.WriteHeader(422)
			fmt.Fprint(w, `{"code":"decryption_proof_invalid","reason":"verification_failed"}`)
			return
		}
		fmt.Fprintf(w, `{"balances":[{"asset":"USDG","amount":%q}]}`, confpay.AmountFromUnits(figs[0].Amount, 6).String())
	})
	return httptest.NewServer(mux)
}

// Reading a balance's figure takes the account's own decryption key: the
// service holds none. ReadBalances proves the figures to the service without
// revealing the key.
func ExampleAccountsService_ReadBalances() {
	key, err := decrypt.GenerateKey(nil) // in real use: decrypt.ParsePrivateKeyHex(os.Getenv(...))
	if err != nil {
		log.Fatal(err)
	}
	srv := exampleLedger(key.PublicKey())
	defer srv.Close()
	client, err := confpay.NewClient("hc_test_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh", confpay.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	balances, err := client.Accounts.ReadBalances(context.Background(), key)
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range balances {
		fmt.Println(b.Asset, b.Amount)
	}
	// Output:
	// USDG 1250.5
}

// A transfer's amount and memo are sealed to its sender and recipient; either
// opens them with its own key.
func ExampleOpenTransferNote() {
	sender, _ := decrypt.GenerateKey(nil)
	recipient, _ := decrypt.GenerateKey(nil)

	// What the service does when it records the transfer.
	note, err := decrypt.SealNote(nil, decrypt.NoteContext{
		ChainID:   confpay.ChainIDTest,
		Reference: "tr_3k9d8f7g6h5j",
		Asset:     "USDG",
		Readers:   []*decrypt.PublicKey{sender.PublicKey(), recipient.PublicKey()},
	}, big.NewInt(12_500_000), "invoice 42")
	if err != nil {
		log.Fatal(err)
	}
	t := &confpay.Transfer{
		TransferID:    "tr_3k9d8f7g6h5j",
		Asset:         "USDG",
		EncryptedNote: decrypt.EncodeBase64(note),
		NoteReaders:   []string{sender.PublicKey().Hex(), recipient.PublicKey().Hex()},
	}

	// What the recipient does with the transfer it read (Transfers.Get).
	n, err := confpay.OpenTransferNote(recipient, confpay.ChainIDTest, t)
	if err != nil {
		log.Fatal(err)
	}
	amount, err := confpay.NoteAmount(n) // in the asset the note authenticates
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(amount, n.Asset, n.Memo)
	fmt.Println(n) // an opened note never prints by accident
	// Output:
	// 12.5 USDG invoice 42
	// decrypt.Note(REDACTED)
}
