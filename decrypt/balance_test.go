package decrypt

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestBalanceRoundTrip(t *testing.T) {
	f := newFixture(t)
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	for _, amount := range []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(1250000), max} {
		ct, err := EncryptBalance(nil, f.acct, "USDG", 9, amount)
		if err != nil {
			t.Fatal(err)
		}
		if len(ct) != 82 || ct[0] != Suite {
			t.Fatalf("ciphertext is %d bytes starting %#x", len(ct), ct[0])
		}
		got, err := DecryptBalance(f.alice, f.acct, Balance{Asset: "USDG", Version: 9, Ciphertext: ct})
		if err != nil {
			t.Fatal(err)
		}
		if got.Cmp(amount) != 0 {
			t.Fatalf("decrypted %v, want %v", got, amount)
		}
		// A nil acct.Key means the private key's own public key.
		noKey := f.acct
		noKey.Key = nil
		if got, err := DecryptBalance(f.alice, noKey, Balance{Asset: "USDG", Version: 9, Ciphertext: ct}); err != nil || got.Cmp(amount) != 0 {
			t.Fatalf("nil acct.Key: %v", err)
		}
	}
}

func TestEncryptBalanceFreshR(t *testing.T) {
	f := newFixture(t)
	a, _ := EncryptBalance(nil, f.acct, "USDG", 1, big.NewInt(5))
	b, _ := EncryptBalance(nil, f.acct, "USDG", 1, big.NewInt(5))
	if bytes.Equal(a[:34], b[:34]) {
		t.Fatal("two encryptions share R")
	}
}

func TestEncryptBalanceRejects(t *testing.T) {
	f := newFixture(t)
	huge := new(big.Int).Lsh(big.NewInt(1), 256)
	for name, call := range map[string]func() error{
		"nil key": func() error {
			a := f.acct
			a.Key = nil
			_, err := EncryptBalance(nil, a, "USDG", 1, big.NewInt(1))
			return err
		},
		"zero key": func() error {
			a := f.acct
			a.Key = &PublicKey{}
			_, err := EncryptBalance(nil, a, "USDG", 1, big.NewInt(1))
			return err
		},
		"empty asset":      func() error { _, err := EncryptBalance(nil, f.acct, "", 1, big.NewInt(1)); return err },
		"asset with space": func() error { _, err := EncryptBalance(nil, f.acct, "US DG", 1, big.NewInt(1)); return err },
		"asset not ascii":  func() error { _, err := EncryptBalance(nil, f.acct, "USDÉ", 1, big.NewInt(1)); return err },
		"asset of 65 bytes": func() error {
			_, err := EncryptBalance(nil, f.acct, strings.Repeat("A", 65), 1, big.NewInt(1))
			return err
		},
		"nil amount":      func() error { _, err := EncryptBalance(nil, f.acct, "USDG", 1, nil); return err },
		"negative amount": func() error { _, err := EncryptBalance(nil, f.acct, "USDG", 1, big.NewInt(-1)); return err },
		"amount of 2^256": func() error { _, err := EncryptBalance(nil, f.acct, "USDG", 1, huge); return err },
		"failing randomness": func() error {
			_, err := EncryptBalance(bytes.NewReader(nil), f.acct, "USDG", 1, big.NewInt(1))
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := EncryptBalance(nil, f.acct, strings.Repeat("A", 64), 1, big.NewInt(1)); err != nil {
		t.Errorf("64-byte asset: %v", err)
	}
}

func TestDecryptBalanceWrongContext(t *testing.T) {
	f := newFixture(t)
	b := f.balances[0]
	other := func(mod func(*Account, *Balance)) (Account, Balance) {
		a, bb := f.acct, b
		mod(&a, &bb)
		return a, bb
	}
	for name, mod := range map[string]func(*Account, *Balance){
		"other chain":   func(a *Account, _ *Balance) { a.ChainID++ },
		"other address": func(a *Account, _ *Balance) { a.Address[0] ^= 1 },
		"other asset":   func(_ *Account, b *Balance) { b.Asset = "ETH" },
		"other version": func(_ *Account, b *Balance) { b.Version++ },
	} {
		a, bb := other(mod)
		if _, err := DecryptBalance(f.alice, a, bb); !errors.Is(err, ErrVerification) {
			t.Errorf("%s: got %v, want ErrVerification", name, err)
		}
	}
	// Bob's key against Alice's account.
	if _, err := DecryptBalance(f.bob, f.acct, b); !errors.Is(err, ErrNotForThisKey) {
		t.Errorf("other key: got %v, want ErrNotForThisKey", err)
	}
	// Bob's key and Bob's own account, on Alice's ciphertext.
	if _, err := DecryptBalance(f.bob, f.bobAcct, b); !errors.Is(err, ErrVerification) {
		t.Errorf("ciphertext of another account: got %v, want ErrVerification", err)
	}
	if _, err := DecryptBalance(nil, f.acct, b); err == nil {
		t.Error("nil key accepted")
	}
	if _, err := DecryptBalance(&PrivateKey{}, f.acct, b); err == nil {
		t.Error("zero key accepted")
	}
}

func TestCiphertextEveryByteFlipRejected(t *testing.T) {
	f := newFixture(t)
	b := f.balances[0]
	flips(b.Ciphertext, func(i int, ct []byte) {
		_, err := DecryptBalance(f.alice, f.acct, Balance{Asset: b.Asset, Version: b.Version, Ciphertext: ct})
		if !isAny(err, ErrMalformed, ErrVerification) {
			t.Fatalf("byte %d flipped: got %v", i, err)
		}
	})
}

func TestCiphertextShape(t *testing.T) {
	f := newFixture(t)
	b := f.balances[0]
	ct := b.Ciphertext
	hybrid := append([]byte{0x06}, ct[1:]...)
	for name, bad := range map[string][]byte{
		"empty":         nil,
		"truncated":     ct[:81],
		"trailing byte": append(append([]byte(nil), ct...), 0),
		"suite 0x02":    append([]byte{0x02}, ct[1:]...),
		"R prefix 04":   append([]byte{0x01, 0x04}, ct[2:]...),
		"R hybrid":      append([]byte{0x01}, hybrid[:81]...),
		"R off curve":   append(append([]byte{0x01}, offCurve(t)...), ct[34:]...),
	} {
		_, err := DecryptBalance(f.alice, f.acct, Balance{Asset: b.Asset, Version: b.Version, Ciphertext: bad})
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}
