package decrypt_test

import (
	"errors"
	"fmt"
	"log"
	"math/big"

	"github.com/confpay/confpay-go/decrypt"
)

// An account's encryption key: generate it once, keep ek secret, publish EK
// as the account's encryption_key.
func ExampleGenerateKey() {
	ek, err := decrypt.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	EK := ek.PublicKey()
	fmt.Println(len(EK.Hex()), "hex digits:", EK.Bytes()[0] == 0x02 || EK.Bytes()[0] == 0x03)
	fmt.Println(ek) // never prints the key

	// Export explicitly, and read back.
	again, err := decrypt.ParsePrivateKeyHex(ek.Hex())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.PublicKey().Equal(EK))
	// Output:
	// 66 hex digits: true
	// decrypt.PrivateKey(REDACTED)
	// true
}

// The ledger encrypts each balance to the account's public key; only the
// owner's private key opens it.
func ExampleEncryptBalance() {
	ek, _ := decrypt.GenerateKey(nil)
	acct := decrypt.Account{ChainID: 8453, Address: [20]byte{0xa1}, Key: ek.PublicKey()}

	// Server side: no private key needed.
	ct, err := decrypt.EncryptBalance(nil, acct, "USDG", 1, big.NewInt(1250000))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ct), "bytes")

	// Client side.
	amount, err := decrypt.DecryptBalance(ek, acct, decrypt.Balance{Asset: "USDG", Version: 1, Ciphertext: ct})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(amount)
	// Output:
	// 82 bytes
	// 1250000
}

// The client proves its balances; the server verifies without any key and
// returns the figures. A proof goes stale when the balance changes.
func ExampleProve() {
	ek, _ := decrypt.GenerateKey(nil)
	acct := decrypt.Account{ChainID: 8453, Address: [20]byte{0xa1}, Key: ek.PublicKey()}
	ct, _ := decrypt.EncryptBalance(nil, acct, "USDG", 7, big.NewInt(1250000))
	current := []decrypt.Balance{{Asset: "USDG", Version: 7, Ciphertext: ct}}

	// Client: prove what it read from GET /v1/accounts/me/balances.
	proof, amounts, err := decrypt.Prove(nil, ek, acct, current)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("client reads", amounts[0])
	wire := decrypt.EncodeBase64(proof) // the decryption_proof field

	// Server: verify against its own current ciphertexts.
	b, err := decrypt.DecodeBase64(wire)
	if err != nil {
		log.Fatal(err)
	}
	figures, err := decrypt.Verify(acct, b, current)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("server returns", figures[0].Asset, figures[0].Amount)

	// After a balance change the same proof is stale.
	ct8, _ := decrypt.EncryptBalance(nil, acct, "USDG", 8, big.NewInt(1000000))
	_, err = decrypt.Verify(acct, b, []decrypt.Balance{{Asset: "USDG", Version: 8, Ciphertext: ct8}})
	fmt.Println(errors.Is(err, decrypt.ErrStale))
	// Output:
	// client reads 1250000
	// server returns USDG 1250000
	// true
}

// A transfer's amount and memo, sealed by the ledger to sender and
// recipient; a third party cannot open it.
func ExampleSealNote() {
	sender, _ := decrypt.GenerateKey(nil)
	recipient, _ := decrypt.GenerateKey(nil)
	stranger, _ := decrypt.GenerateKey(nil)
	ctx := decrypt.NoteContext{
		ChainID:   8453,
		Reference: "tr_01J9Z8",
		Asset:     "USDG",
		Readers:   []*decrypt.PublicKey{sender.PublicKey(), recipient.PublicKey()},
	}
	note, err := decrypt.SealNote(nil, ctx, big.NewInt(1250000), "invoice 42")
	if err != nil {
		log.Fatal(err)
	}

	n, err := decrypt.OpenNote(recipient, ctx, note)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Amount, n.Asset, n.Memo)
	fmt.Println(n) // a Note never prints its contents

	_, err = decrypt.OpenNote(stranger, ctx, note)
	fmt.Println(errors.Is(err, decrypt.ErrNotForThisKey))
	// Output:
	// 1250000 USDG invoice 42
	// decrypt.Note(REDACTED)
	// true
}
