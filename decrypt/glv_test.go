package decrypt

import (
	"math/big"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// The GLV split and the two digit recodings, checked against math/big.
// Run the fuzz targets for real with e.g.
//
//	go test ./decrypt -run '^$' -fuzz FuzzSplitScalar -fuzztime 60s
//	go test ./decrypt -run '^$' -fuzz FuzzScalarBaseMult -fuzztime 60s
//	go test ./decrypt -run '^$' -fuzz FuzzScalarMult -fuzztime 60s

var (
	bigLambda, _ = new(big.Int).SetString("5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72", 16)
	two128       = new(big.Int).Lsh(big.NewInt(1), 128)
)

// glvEdgeScalars are scalars at the edges of the split: around λ, −λ,
// 2^128, n/2, n and the basis vectors.
func glvEdgeScalars() []*big.Int {
	var out []*big.Int
	add := func(v *big.Int) {
		v = new(big.Int).Mod(v, curveN)
		if v.Sign() != 0 {
			out = append(out, v)
		}
	}
	for _, d := range []int64{-2, -1, 0, 1, 2} {
		dd := big.NewInt(d)
		add(new(big.Int).Add(bigLambda, dd))
		add(new(big.Int).Sub(dd, bigLambda))
		add(new(big.Int).Add(two128, dd))
		add(new(big.Int).Sub(dd, two128))
		add(new(big.Int).Add(new(big.Int).Rsh(curveN, 1), dd))
		add(new(big.Int).Add(curveN, dd))
		add(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 255), dd))
		add(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 256), dd))
		for _, h := range []string{"3086d221a7d46bcde86c90e49284eb15", "e4437ed6010e88286f547fa90abfe4c3", "114ca50f7a8e2f3f657c1108d9d44cfd8"} {
			b, _ := new(big.Int).SetString(h, 16)
			add(new(big.Int).Add(b, dd))
			add(new(big.Int).Add(new(big.Int).Mul(b, bigLambda), dd))
			add(new(big.Int).Add(new(big.Int).Lsh(b, 127), dd))
		}
	}
	return out
}

func bigToScalar(t testing.TB, v *big.Int) secp256k1.ModNScalar {
	t.Helper()
	var b [32]byte
	var s secp256k1.ModNScalar
	if s.SetBytes((*[32]byte)(v.FillBytes(b[:]))) != 0 {
		t.Fatalf("%x overflows", v)
	}
	return s
}

// checkSplit checks k ≡ ±k1 ± k2·λ (mod n) with k1, k2 < 2^128.
func checkSplit(t testing.TB, k *big.Int) {
	t.Helper()
	ks := bigToScalar(t, k)
	s := splitScalar(&ks)
	k1 := new(big.Int).SetBytes(s.k1[:])
	k2 := new(big.Int).SetBytes(s.k2[:])
	if k1.Cmp(two128) >= 0 || k2.Cmp(two128) >= 0 {
		t.Fatalf("k = %x: split %x, %x is not below 2^128", k, k1, k2)
	}
	if s.neg1 > 1 || s.neg2 > 1 {
		t.Fatalf("k = %x: signs %d, %d", k, s.neg1, s.neg2)
	}
	if s.neg1 == 1 {
		k1.Neg(k1)
	}
	if s.neg2 == 1 {
		k2.Neg(k2)
	}
	sum := new(big.Int).Mul(k2, bigLambda)
	sum.Add(sum, k1).Mod(sum, curveN)
	if sum.Cmp(k) != 0 {
		t.Fatalf("k = %x: k1 + k2·λ = %x", k, sum)
	}
	// The 5-bit signed recoding of each half adds back up.
	for _, half := range []struct {
		b   [32]byte
		abs *big.Int
	}{{s.k1, new(big.Int).SetBytes(s.k1[:])}, {s.k2, new(big.Int).SetBytes(s.k2[:])}} {
		abs, neg := signedDigits(&half.b)
		got := new(big.Int)
		for i := windows - 1; i >= 0; i-- {
			got.Lsh(got, windowBits)
			if abs[i] > 1<<(windowBits-1) || neg[i] > 1 || (neg[i] == 1 && abs[i] == 0) {
				t.Fatalf("digit %d out of range: %d, sign %d", i, abs[i], neg[i])
			}
			d := big.NewInt(int64(abs[i]))
			if neg[i] == 1 {
				d.Neg(d)
			}
			got.Add(got, d)
		}
		if got.Cmp(half.abs) != 0 {
			t.Fatalf("signed digits of %x add up to %x", half.abs, got)
		}
	}
}

// checkCombDigits checks the comb's odd-digit recoding of k (or n − k).
func checkCombDigits(t testing.TB, k *big.Int) {
	t.Helper()
	odd := new(big.Int).Set(k)
	if k.Bit(0) == 0 {
		odd.Sub(curveN, k)
	}
	var kb [32]byte
	odd.FillBytes(kb[:])
	got := new(big.Int)
	for i := 63; i >= 0; i-- {
		idx, neg := combDigit(&kb, i)
		if idx > 7 || neg > 1 {
			t.Fatalf("comb digit %d out of range: %d, sign %d", i, idx, neg)
		}
		d := big.NewInt(2*int64(idx) + 1)
		if neg == 1 {
			d.Neg(d)
		}
		got.Lsh(got, 4).Add(got, d)
	}
	if got.Cmp(odd) != 0 {
		t.Fatalf("comb digits of %x add up to %x", odd, got)
	}
}

func TestSplitScalarEdges(t *testing.T) {
	for _, k := range glvEdgeScalars() {
		checkSplit(t, k)
		checkCombDigits(t, k)
	}
	for i := range 200 {
		s := testScalar(t, "split", i)
		b := s.Bytes()
		k := new(big.Int).SetBytes(b[:])
		checkSplit(t, k)
		checkCombDigits(t, k)
	}
}

// TestGLVEdgeMultiplications multiplies by the edge scalars with both
// pure-Go paths and compares with decred's variable-time multiplication.
func TestGLVEdgeMultiplications(t *testing.T) {
	p := ctScalarMult(ptr(testScalar(t, "edge point", 0)), &generator)
	for _, kb := range glvEdgeScalars() {
		k := bigToScalar(t, kb)
		if got, want := ctScalarMult(&k, &p), refMul(&k, &p); got.bytes() != want {
			t.Fatalf("k = %x: k·P %x, reference %x", kb, got.bytes(), want)
		}
		if got, want := ctScalarBaseMult(&k), refMul(&k, &generator); got.bytes() != want {
			t.Fatalf("k = %x: k·G %x, reference %x", kb, got.bytes(), want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// fuzzScalar maps fuzz bytes to a scalar in [1, n), or false.
func fuzzScalar(b []byte) (*big.Int, bool) {
	if len(b) > 32 {
		b = b[:32]
	}
	k := new(big.Int).SetBytes(b)
	k.Mod(k, curveN)
	return k, k.Sign() != 0
}

func FuzzSplitScalar(f *testing.F) {
	for _, k := range glvEdgeScalars() {
		f.Add(k.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, ok := fuzzScalar(b)
		if !ok {
			return
		}
		checkSplit(t, k)
		checkCombDigits(t, k)
	})
}

// FuzzScalarBaseMult checks the comb against decred's variable-time
// fixed-base multiplication.
func FuzzScalarBaseMult(f *testing.F) {
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Add(mustHex(f, "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kb, ok := fuzzScalar(b)
		if !ok {
			return
		}
		k := bigToScalar(t, kb)
		checkCombDigits(t, kb)
		if got, want := ctScalarBaseMult(&k), refMul(&k, &generator); got.bytes() != want {
			t.Fatalf("k = %x: comb %x, reference %x", kb, got.bytes(), want)
		}
	})
}

// FuzzScalarMult checks the GLV multiplication against decred's
// variable-time one, on a point derived from the input too.
func FuzzScalarMult(f *testing.F) {
	f.Add([]byte{1}, []byte{1})
	f.Add(bigLambda.Bytes(), []byte{7})
	f.Fuzz(func(t *testing.T, b, pb []byte) {
		kb, ok := fuzzScalar(b)
		if !ok {
			return
		}
		pk, ok := fuzzScalar(pb)
		if !ok {
			return
		}
		k, ps := bigToScalar(t, kb), bigToScalar(t, pk)
		var pj secp256k1.JacobianPoint
		secp256k1.ScalarBaseMultNonConst(&ps, &pj)
		pj.ToAffine()
		p := point{x: pj.X, y: pj.Y}
		if got, want := ctScalarMult(&k, &p), refMul(&k, &p); got.bytes() != want {
			t.Fatalf("k = %x, P = %x·G: %x, reference %x", kb, pk, got.bytes(), want)
		}
	})
}
