package decrypt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

const orderHex = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"

func TestNewPrivateKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		ok   bool
	}{
		{"one", "0000000000000000000000000000000000000000000000000000000000000001", true},
		{"n-1", "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140", true},
		{"zero", "0000000000000000000000000000000000000000000000000000000000000000", false},
		{"n", orderHex, false},
		{"n+1", "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364142", false},
		{"2^256-1", strings.Repeat("ff", 32), false},
		{"31 bytes", strings.Repeat("01", 31), false},
		{"33 bytes", strings.Repeat("01", 33), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewPrivateKey(mustHex(t, tc.hex))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if k.Hex() != tc.hex {
					t.Fatalf("Hex() does not round-trip")
				}
				if !bytes.Equal(k.Bytes(), mustHex(t, tc.hex)) {
					t.Fatal("Bytes() does not round-trip")
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestPublicKeyOfOneIsG(t *testing.T) {
	k, err := NewPrivateKey(mustHex(t, "0000000000000000000000000000000000000000000000000000000000000001"))
	if err != nil {
		t.Fatal(err)
	}
	if got := k.PublicKey().Hex(); got != "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798" {
		t.Fatalf("1·G = %s", got)
	}
}

func TestParsePrivateKeyHex(t *testing.T) {
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := ParsePrivateKeyHex(k.Hex())
	if err != nil {
		t.Fatal(err)
	}
	if !k2.PublicKey().Equal(k.PublicKey()) {
		t.Fatal("hex round trip changed the key")
	}
	secret := "g" + k.Hex()[1:]
	_, err = ParsePrivateKeyHex(secret)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
	if strings.Contains(err.Error(), k.Hex()[1:9]) || strings.Contains(err.Error(), "'g'") {
		t.Fatalf("error quotes the secret: %v", err)
	}
	for _, s := range []string{"", "0x" + k.Hex(), k.Hex() + "00", k.Hex()[2:]} {
		if _, err := ParsePrivateKeyHex(s); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%d chars: got %v, want ErrMalformed", len(s), err)
		}
	}
}

func TestNewPublicKeyStrict(t *testing.T) {
	f := newFixture(t)
	comp := f.alice.PublicKey().Bytes()
	p := f.alice.PublicKey().p
	xb, yb := p.x.Bytes(), p.y.Bytes()
	uncompressed := append(append([]byte{0x04}, xb[:]...), yb[:]...)
	hybrid := append(append([]byte{0x06 | (yb[31] & 1)}, xb[:]...), yb[:]...)

	got, err := NewPublicKey(comp)
	if err != nil || !got.Equal(f.alice.PublicKey()) {
		t.Fatalf("compressed key: %v", err)
	}
	over := append([]byte{0x02}, mustHex(t, "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc30")...)
	for name, b := range map[string][]byte{
		"uncompressed 65 bytes":  uncompressed,
		"hybrid 65 bytes":        hybrid,
		"prefix 04 at 33 bytes":  append([]byte{0x04}, comp[1:]...),
		"prefix 06 at 33 bytes":  append([]byte{0x06}, comp[1:]...),
		"prefix 00":              append([]byte{0x00}, comp[1:]...),
		"32 bytes":               comp[1:],
		"34 bytes":               append(append([]byte(nil), comp...), 0),
		"empty":                  nil,
		"identity as 00 x 33":    make([]byte, 33),
		"x not on curve":         offCurve(t),
		"x not below field size": over,
	} {
		if _, err := NewPublicKey(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	if _, err := ParsePublicKeyHex(hex.EncodeToString(uncompressed)); !errors.Is(err, ErrMalformed) {
		t.Errorf("uncompressed hex: got %v", err)
	}
	if _, err := ParsePublicKeyHex(strings.Repeat("zz", 33)); !errors.Is(err, ErrMalformed) {
		t.Errorf("non-hex: got %v", err)
	}
}

func TestPublicKeyText(t *testing.T) {
	f := newFixture(t)
	type account struct {
		EncryptionKey *PublicKey `json:"encryption_key"`
	}
	b, err := json.Marshal(account{f.alice.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"encryption_key":"` + f.alice.PublicKey().Hex() + `"}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var back account
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.EncryptionKey.Equal(f.alice.PublicKey()) {
		t.Fatal("JSON round trip changed the key")
	}
	if err := json.Unmarshal([]byte(`{"encryption_key":"04abcd"}`), &back); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad key: got %v", err)
	}
	if f.alice.PublicKey().Equal(f.bob.PublicKey()) || !(*PublicKey)(nil).Equal(nil) || f.alice.PublicKey().Equal(nil) {
		t.Fatal("Equal is wrong")
	}
}

func TestGenerateKey(t *testing.T) {
	k1, err := GenerateKey(newDetReader("gen"))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := GenerateKey(newDetReader("gen"))
	if err != nil {
		t.Fatal(err)
	}
	if k1.Hex() != k2.Hex() {
		t.Fatal("the same randomness gave different keys")
	}
	k3, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if k3.Hex() == k1.Hex() {
		t.Fatal("crypto/rand gave the deterministic key")
	}
	// A source that only yields values ≥ n, or zero, must fail, not loop.
	if _, err := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{0xff}, 64*32))); err == nil {
		t.Fatal("accepted a source of invalid scalars")
	}
	if _, err := GenerateKey(bytes.NewReader(make([]byte, 64*32))); err == nil {
		t.Fatal("accepted a source of zeros")
	}
	// Rejection sampling: one invalid draw, then a valid one.
	src := append(mustHex(t, orderHex), mustHex(t, "0000000000000000000000000000000000000000000000000000000000000001")...)
	k, err := GenerateKey(bytes.NewReader(src))
	if err != nil || k.Hex() != "0000000000000000000000000000000000000000000000000000000000000001" {
		t.Fatalf("rejection sampling: %v", err)
	}
	if _, err := GenerateKey(bytes.NewReader([]byte{1, 2, 3})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short source: got %v", err)
	}
}

func TestDeriveKey(t *testing.T) {
	seed := []byte("0123456789abcdef0123456789abcdef")
	k, err := DeriveKey(seed, 1, addr(1))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := DeriveKey(seed, 1, addr(1))
	if k.Hex() != again.Hex() {
		t.Fatal("derivation is not deterministic")
	}
	others := []func() (*PrivateKey, error){
		func() (*PrivateKey, error) { return DeriveKey(seed, 2, addr(1)) },
		func() (*PrivateKey, error) { return DeriveKey(seed, 1, addr(2)) },
		func() (*PrivateKey, error) { return DeriveKey(append([]byte("x"), seed...), 1, addr(1)) },
	}
	for i, fn := range others {
		o, err := fn()
		if err != nil {
			t.Fatal(err)
		}
		if o.Hex() == k.Hex() {
			t.Fatalf("variant %d derived the same key", i)
		}
	}
	if _, err := DeriveKey(seed[:15], 1, addr(1)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short seed: got %v", err)
	}
}

func TestPrivateKeyNeverPrints(t *testing.T) {
	f := newFixture(t)
	secret := f.alice.Hex()
	holder := struct {
		Name string
		Key  *PrivateKey
	}{"alice", f.alice}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
		outs = append(outs, fmt.Sprintf(verb, f.alice), fmt.Sprintf(verb, holder))
	}
	outs = append(outs, f.alice.String(), f.alice.GoString(), fmt.Sprint(f.alice), fmt.Sprintf("%v %+v %#v", *f.alice, *f.alice, *f.alice))
	if b, err := json.Marshal(*f.alice); err != nil || string(b) != `"decrypt.PrivateKey(REDACTED)"` {
		t.Fatalf("json of a key value: %s %v", b, err)
	}
	b, err := json.Marshal(holder)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(b))
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("key", "k", f.alice)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("key", "k", f.alice)
	outs = append(outs, logBuf.String())
	kb := f.alice.Bytes()
	for _, o := range outs {
		if strings.Contains(strings.ToLower(o), secret) || strings.Contains(strings.ToLower(o), secret[:16]) || bytes.Contains([]byte(o), kb) {
			t.Fatalf("secret printed: %q", o)
		}
		if !strings.Contains(o, "REDACTED") {
			t.Fatalf("output does not say REDACTED: %q", o)
		}
	}
}

// TestDeriveKeyCounterPast255: candidates at or above n, and zero, are
// skipped for as long as it takes; the search does not stop at counter 255
// (it once did, while the documentation promised no limit).
func TestDeriveKeyCounterPast255(t *testing.T) {
	n := mustHex(t, orderHex)
	var asked []uint32
	k, err := firstScalar(func(ctr uint32) ([]byte, error) {
		asked = append(asked, ctr)
		switch {
		case ctr < 300:
			return append([]byte(nil), n...), nil // n itself: not below n
		case ctr < 302:
			return make([]byte, 32), nil // zero
		}
		b := make([]byte, 32)
		b[31] = 7
		return b, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 303 || asked[302] != 302 || k.Hex() != strings.Repeat("0", 63)+"7" {
		t.Fatalf("asked %d counters, got key %v", len(asked), k)
	}
}
