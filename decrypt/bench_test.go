package decrypt

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Run with: go test ./decrypt -run '^$' -bench . -benchmem -count 3
//
// The pure-Go comb's table for k·G is built on first use, once per
// process (BenchmarkBuildBaseTable); every benchmark builds it before its
// timed loop, so the figures are the steady state.
// BenchmarkFloorVerify1 is the baseline for BenchmarkVerify1: the one
// fixed-base and three variable-base multiplications a one-asset
// verification cannot avoid, done with the verifier's own primitives.
//
// Besides ns/op (wall time), each benchmark reports cpu-ns/op, the process's
// CPU time per operation, which stays comparable when other processes
// compete for the cores.

// cpuMeter starts measuring; call the result after the loop.
func cpuMeter(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		end, ok2 := processCPU()
		if ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func BenchmarkGenerateKey(b *testing.B) {
	baseTable()
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := GenerateKey(nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncryptBalance(b *testing.B) {
	f := newFixture(b)
	amount := big.NewInt(1250000)
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := EncryptBalance(nil, f.acct, "USDG", 8, amount); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecryptBalance(b *testing.B) {
	f := newFixture(b)
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := DecryptBalance(f.alice, f.acct, f.balances[0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProve1(b *testing.B) {
	f := newFixture(b)
	defer cpuMeter(b)()
	for b.Loop() {
		if _, _, err := Prove(nil, f.alice, f.acct, f.balances[:1]); err != nil {
			b.Fatal(err)
		}
	}
}

func fourBalances(b *testing.B, f *fixture) []Balance {
	bs := append([]Balance(nil), f.balances...)
	for i := range 2 {
		asset := fmt.Sprintf("X%d", i)
		ct, err := EncryptBalance(nil, f.acct, asset, 1, big.NewInt(int64(i)))
		if err != nil {
			b.Fatal(err)
		}
		bs = append(bs, Balance{Asset: asset, Version: 1, Ciphertext: ct})
	}
	return bs
}

func BenchmarkVerify1(b *testing.B) {
	f := newFixture(b)
	proof := mustProve(b, f, f.balances[:1])
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := Verify(f.acct, proof, f.balances); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify4(b *testing.B) {
	f := newFixture(b)
	bs := fourBalances(b, f)
	proof := mustProve(b, f, bs)
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := Verify(f.acct, proof, bs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyStale(b *testing.B) {
	f := newFixture(b)
	proof := mustProve(b, f, f.balances[:1])
	current := append([]Balance(nil), f.balances...)
	current[0].Version++
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := Verify(f.acct, proof, current); err == nil {
			b.Fatal("stale proof accepted")
		}
	}
}

// BenchmarkFloorVerify1 does exactly 1 fixed-base and 3 variable-base
// multiplications, with the primitives Verify uses (decred's table-based
// ScalarBaseMultNonConst and this build's mulPublic), on already parsed
// points.
func BenchmarkFloorVerify1(b *testing.B) {
	f := newFixture(b)
	proof := mustProve(b, f, f.balances[:1])
	p, err := ParseProof(proof)
	if err != nil {
		b.Fatal(err)
	}
	S, _ := parsePoint(p.entries[0].s[:])
	R, _ := parseCiphertext(f.balances[0].Ciphertext)
	var negC secp256k1.ModNScalar
	negC.NegateVal(&p.c)
	var out secp256k1.JacobianPoint
	defer cpuMeter(b)()
	for b.Loop() {
		secp256k1.ScalarBaseMultNonConst(&p.z, &out)
		mulPublic(&negC, &f.acct.Key.p, &out)
		mulPublic(&p.z, &R, &out)
		mulPublic(&negC, &S, &out)
	}
}

func BenchmarkSealNote2(b *testing.B) {
	f := newNoteFixture(b)
	amount := big.NewInt(1250000)
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := SealNote(nil, f.ctx, amount, "invoice 42"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenNote(b *testing.B) {
	f := newNoteFixture(b)
	note, _ := SealNote(nil, f.ctx, big.NewInt(1250000), "invoice 42")
	defer cpuMeter(b)()
	for b.Loop() {
		if _, err := OpenNote(f.bob, f.ctx, note); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMulSecret is this build's constant-time multiplication;
// BenchmarkMulSecretPureGo the always-compiled pure-Go one (what a
// CGO_ENABLED=0 build uses).
func BenchmarkMulSecret(b *testing.B) {
	k := testScalar(b, "bench", 0)
	defer cpuMeter(b)()
	for b.Loop() {
		mulSecret(&k, &generator)
	}
}

func BenchmarkMulSecretPureGo(b *testing.B) {
	k := testScalar(b, "bench", 0)
	defer cpuMeter(b)()
	for b.Loop() {
		ctScalarMult(&k, &generator)
	}
}

// BenchmarkParseProofShape4 parses a four-asset proof without curve work:
// the part of verification that reads the binary format.
func BenchmarkParseProofShape4(b *testing.B) {
	f := newFixture(b)
	proof := mustProve(b, f, fourBalances(b, f))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseProofShape(proof); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMulSecretBase is this build's constant-time k·G;
// BenchmarkMulSecretBasePureGo the pure-Go comb, and
// BenchmarkMulSecretPureGoOld the pure-Go multiplication as it was before
// issue 27 (every value normalized, 256 doublings), for comparison.
func BenchmarkMulSecretBase(b *testing.B) {
	k := testScalar(b, "bench", 0)
	baseTable()
	defer cpuMeter(b)()
	for b.Loop() {
		mulSecretBase(&k)
	}
}

// BenchmarkBuildBaseTable is the one-time cost of the comb's table.
func BenchmarkBuildBaseTable(b *testing.B) {
	for b.Loop() {
		buildBaseTable()
	}
}

func BenchmarkMulSecretBasePureGo(b *testing.B) {
	k := testScalar(b, "bench", 0)
	baseTable()
	defer cpuMeter(b)()
	for b.Loop() {
		ctScalarBaseMult(&k)
	}
}

func BenchmarkMulSecretPureGoOld(b *testing.B) {
	k := testScalar(b, "bench", 0)
	defer cpuMeter(b)()
	for b.Loop() {
		oldCtScalarMult(&k, &generator)
	}
}
