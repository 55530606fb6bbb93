package decrypt

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/big"
	"testing"
)

func mustHex(t testing.TB, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// detReader is a deterministic byte stream: SHA-256(label ∥ u64 counter)
// blocks. Tests and test vectors use it in place of crypto/rand.
type detReader struct {
	label string
	ctr   uint64
	buf   []byte
}

func newDetReader(label string) *detReader { return &detReader{label: label} }

func (r *detReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.buf) == 0 {
			in := binary.BigEndian.AppendUint64([]byte(r.label), r.ctr)
			r.ctr++
			h := sha256.Sum256(in)
			r.buf = h[:]
		}
		c := copy(p[n:], r.buf)
		r.buf = r.buf[c:]
		n += c
	}
	return n, nil
}

// fixture is one account with two encrypted balances and a second key.
type fixture struct {
	alice, bob *PrivateKey
	acct       Account // alice's account
	bobAcct    Account
	balances   []Balance // USDG v7, ETH v3
	amounts    []int64
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{}
	var err error
	if f.alice, err = DeriveKey([]byte("alice's seed, thirty-two bytes!!"), 8453, addr(0xa1)); err != nil {
		t.Fatal(err)
	}
	if f.bob, err = DeriveKey([]byte("bob's seed, thirty-two bytes!!!!"), 8453, addr(0xb0)); err != nil {
		t.Fatal(err)
	}
	f.acct = Account{ChainID: 8453, Address: addr(0xa1), Key: f.alice.PublicKey()}
	f.bobAcct = Account{ChainID: 8453, Address: addr(0xb0), Key: f.bob.PublicKey()}
	f.amounts = []int64{1250000, 42}
	rnd := newDetReader("fixture")
	for i, a := range []struct {
		asset   string
		version uint64
	}{{"USDG", 7}, {"ETH", 3}} {
		ct, err := EncryptBalance(rnd, f.acct, a.asset, a.version, big.NewInt(f.amounts[i]))
		if err != nil {
			t.Fatal(err)
		}
		f.balances = append(f.balances, Balance{Asset: a.asset, Version: a.version, Ciphertext: ct})
	}
	return f
}

func addr(b byte) [20]byte {
	var a [20]byte
	for i := range a {
		a[i] = b + byte(i)
	}
	return a
}

// flips yields copies of b with one byte changed, for every byte and a few
// patterns.
func flips(b []byte, fn func(i int, mutated []byte)) {
	for i := range b {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			m := append([]byte(nil), b...)
			m[i] ^= x
			fn(i, m)
		}
	}
}

// isAny reports whether err wraps one of targets.
func isAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// offCurve returns a 33-byte encoding with prefix 02 whose x is below p
// but has no point on the curve.
func offCurve(t testing.TB) []byte {
	t.Helper()
	for x := 1; ; x++ {
		var b [33]byte
		b[0] = 0x02
		b[32] = byte(x)
		if _, err := parsePoint(b[:]); err != nil {
			return b[:]
		}
	}
}

// appendU16 appends v big-endian (tests build malformed inputs by hand).
func appendU16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// appendU64 appends v big-endian.
func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// appendLPString appends lp(s) = u16(len s) ∥ s.
func appendLPString(b []byte, s string) []byte { return append(appendU16(b, len(s)), s...) }
