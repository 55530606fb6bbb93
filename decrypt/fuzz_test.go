package decrypt

import (
	"bytes"
	"errors"
	"math/big"
	"testing"
)

// The fuzz targets run their seeds as part of go test; run one for real
// with e.g. go test ./decrypt -run '^$' -fuzz FuzzVerify -fuzztime 30s.

func FuzzParseProof(f *testing.F) {
	fx := newFixture(f)
	proof := mustProve(f, fx, fx.balances)
	f.Add(proof)
	f.Add(proof[:len(proof)-1])
	f.Add(append(append([]byte(nil), proof...), 0))
	f.Add([]byte{Suite, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProof(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if !bytes.Equal(p.Bytes(), b) {
			t.Fatal("Bytes() differs from the parsed input")
		}
		if n := len(p.Entries()); n < 1 || n > 16 || n != int(b[1]) {
			t.Fatalf("%d entries", n)
		}
	})
}

func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	proof := mustProve(f, fx, fx.balances)
	f.Add(proof)
	f.Add(mustProve(f, fx, fx.balances[1:]))
	bad := append([]byte(nil), proof...)
	bad[len(bad)-1] ^= 1
	f.Add(bad)
	f.Add([]byte{Suite, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		figures, err := Verify(fx.acct, b, fx.balances)
		if err != nil {
			if !isAny(err, ErrMalformed, ErrStale, ErrVerification) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		// Anything that verifies opens to the real figures.
		for _, fig := range figures {
			want := fx.amounts[0]
			if fig.Asset == "ETH" {
				want = fx.amounts[1]
			}
			if fig.Amount.Cmp(big.NewInt(want)) != 0 {
				t.Fatal("a proof verified to a wrong figure")
			}
		}
	})
}

func FuzzDecryptBalance(f *testing.F) {
	fx := newFixture(f)
	ct := fx.balances[0].Ciphertext
	f.Add(ct)
	f.Add(ct[:81])
	f.Add(append([]byte{Suite, 0x04}, ct[2:]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		amount, err := DecryptBalance(fx.alice, fx.acct, Balance{Asset: "USDG", Version: 7, Ciphertext: b})
		if err != nil {
			if !isAny(err, ErrMalformed, ErrVerification) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if amount.Cmp(big.NewInt(fx.amounts[0])) != 0 {
			t.Fatal("a ciphertext opened to a wrong figure")
		}
	})
}

func FuzzOpenNote(f *testing.F) {
	fx := newNoteFixture(f)
	note, err := SealNote(newDetReader("fuzz note"), fx.ctx, big.NewInt(77), "fuzz memo")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(note)
	f.Add(note[:len(note)-1])
	f.Add(append(append([]byte(nil), note...), make([]byte, 64)...))
	f.Add([]byte{Suite})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := OpenNote(fx.bob, fx.ctx, b)
		if err != nil {
			if !isAny(err, ErrMalformed, ErrVerification) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if n.Amount.Int64() != 77 || n.Memo != "fuzz memo" {
			t.Fatal("a note opened to wrong contents")
		}
	})
}

func FuzzNewPublicKey(f *testing.F) {
	fx := newFixture(f)
	f.Add(fx.alice.PublicKey().Bytes())
	f.Add(append([]byte{0x04}, make([]byte, 64)...))
	f.Add(make([]byte, 33))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := NewPublicKey(b)
		if err != nil {
			return
		}
		if !bytes.Equal(k.Bytes(), b) {
			t.Fatal("a parsed key does not re-encode to its input")
		}
	})
}

func FuzzDecodeBase64(f *testing.F) {
	f.Add("-_8")
	f.Add("AAAA")
	f.Add("A=")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeBase64(s)
		if err != nil {
			return
		}
		if EncodeBase64(b) != s {
			t.Fatal("decoding is not canonical")
		}
	})
}
