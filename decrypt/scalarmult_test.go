package decrypt

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// refMul is decred's variable-time multiplication, an independent reference.
func refMul(k *secp256k1.ModNScalar, p *point) [pointLen]byte {
	var j secp256k1.JacobianPoint
	p.jacobian(&j)
	out := make([]secp256k1.JacobianPoint, 1)
	secp256k1.ScalarMultNonConst(k, &j, &out[0])
	b := make([][pointLen]byte, 1)
	if compressPublic(out, b) >= 0 {
		panic("identity")
	}
	return b[0]
}

// testScalar derives a scalar in [1, n) from a label and counter.
func testScalar(t testing.TB, label string, i int) secp256k1.ModNScalar {
	t.Helper()
	var s secp256k1.ModNScalar
	for ctr := 0; ; ctr++ {
		var in []byte
		in = append(in, label...)
		in = binary.BigEndian.AppendUint64(in, uint64(i))
		in = binary.BigEndian.AppendUint64(in, uint64(ctr))
		h := sha256.Sum256(in)
		if s.SetBytes(&h) == 0 && !s.IsZero() {
			return s
		}
	}
}

func scalarFromHex(t testing.TB, h string) secp256k1.ModNScalar {
	t.Helper()
	var s secp256k1.ModNScalar
	if s.SetByteSlice(mustHex(t, h)) {
		t.Fatalf("scalar %s overflows", h)
	}
	return s
}

// TestScalarMultBackendsAgree checks that the build's constant-time backend
// (libsecp256k1 under cgo), the always-compiled pure-Go constant-time
// implementation and decred's variable-time reference give identical bytes.
func TestScalarMultBackendsAgree(t *testing.T) {
	t.Logf("backend: %s", backendName)
	edge := []string{
		"0000000000000000000000000000000000000000000000000000000000000001",
		"0000000000000000000000000000000000000000000000000000000000000002",
		"000000000000000000000000000000000000000000000000000000000000000f",
		"0000000000000000000000000000000000000000000000000000000000000010",
		"00000000000000000000000000000000000000000000000000000000000000ff",
		"8000000000000000000000000000000000000000000000000000000000000000",
		"7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0", // (n-1)/2
		"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd036413f", // n-2
		"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140", // n-1
	}
	var scalars []secp256k1.ModNScalar
	for _, h := range edge {
		scalars = append(scalars, scalarFromHex(t, h))
	}
	for _, k := range glvEdgeScalars() {
		scalars = append(scalars, bigToScalar(t, k))
	}
	n := 48
	if testing.Short() {
		n = 8
	}
	for i := range n {
		scalars = append(scalars, testScalar(t, "scalar", i))
	}
	points := []point{generator}
	for i := range 6 {
		s := testScalar(t, "point", i)
		points = append(points, ctScalarMult(&s, &generator))
	}
	for i := range scalars {
		k := &scalars[i]
		p := &points[i%len(points)]
		want := refMul(k, p)
		backend := mulSecret(k, p)
		pure := ctScalarMult(k, p)
		old := oldCtScalarMult(k, p)
		if got := backend.bytes(); got != want {
			t.Fatalf("scalar %d: backend %x, reference %x", i, got, want)
		}
		if got := pure.bytes(); got != want {
			t.Fatalf("scalar %d: pure Go %x, reference %x", i, got, want)
		}
		if got := old.bytes(); got != want {
			t.Fatalf("scalar %d: pure Go before issue 27 %x, reference %x", i, got, want)
		}
		wantG := refMul(k, &generator)
		base := mulSecretBase(k)
		comb := ctScalarBaseMult(k)
		if got := base.bytes(); got != wantG {
			t.Fatalf("scalar %d: backend k·G %x, reference %x", i, got, wantG)
		}
		if got := comb.bytes(); got != wantG {
			t.Fatalf("scalar %d: comb k·G %x, reference %x", i, got, wantG)
		}
		j := make([]secp256k1.JacobianPoint, 1)
		mulPublic(k, p, &j[0])
		got := make([][pointLen]byte, 1)
		if compressPublic(j, got); got[0] != want {
			t.Fatalf("scalar %d: public backend %x, reference %x", i, got, want)
		}
	}
}

// TestCompleteFormulas checks the identity and doubling cases that the
// complete addition formulas must handle without special code.
func TestCompleteFormulas(t *testing.T) {
	var id, g, r projPoint
	id.y.SetInt(1)
	g.x.Set(&generator.x)
	g.y.Set(&generator.y)
	g.z.SetInt(1)
	affine := func(p *projPoint) [pointLen]byte {
		var zinv secp256k1.FieldVal
		zinv.Set(&p.z).Inverse()
		var q point
		q.x.Mul2(&p.x, &zinv).Normalize()
		q.y.Mul2(&p.y, &zinv).Normalize()
		return q.bytes()
	}
	projAdd(&r, &id, &g) // O + G
	if affine(&r) != generator.bytes() {
		t.Fatal("O + G != G")
	}
	projAdd(&r, &g, &g) // G + G through the addition formula
	var d projPoint
	projDouble(&d, &g)
	if affine(&r) != affine(&d) {
		t.Fatal("G + G != 2G")
	}
	two := scalarFromHex(t, "0000000000000000000000000000000000000000000000000000000000000002")
	if affine(&d) != refMul(&two, &generator) {
		t.Fatal("2G differs from the reference")
	}
	neg := g
	neg.y.Negate(1).Normalize()
	projAdd(&r, &g, &neg) // G + (−G) = O
	r.z.Normalize()
	if !r.z.IsZero() {
		t.Fatal("G + (−G) is not the identity")
	}
	projDouble(&r, &id)
	r.z.Normalize()
	if !r.z.IsZero() {
		t.Fatal("2·O is not the identity")
	}
}

// TestParsePointBackendsAgree checks the build's point parser against the
// pure-Go one on valid points and on every kind of invalid input.
func TestParsePointBackendsAgree(t *testing.T) {
	var inputs [][]byte
	for i := range 16 {
		s := testScalar(t, "parse", i)
		p := ctScalarMult(&s, &generator)
		b := p.bytes()
		inputs = append(inputs, b[:])
		flipped := b
		flipped[0] ^= 1 // the other y
		inputs = append(inputs, flipped[:])
		bad := b
		bad[32] ^= 1 // x of a point on the curve about half the time
		inputs = append(inputs, bad[:])
	}
	xp := append([]byte{0x02}, mustHex(t, "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f")...)
	inputs = append(inputs, xp, offCurve(t), make([]byte, 33), append([]byte{0x04}, make([]byte, 32)...), []byte{0x02})
	for _, b := range inputs {
		want, werr := parsePointGo(b)
		got, gerr := parsePoint(b)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%x: pure Go error %v, backend error %v", b, werr, gerr)
		}
		if werr == nil && got.bytes() != want.bytes() {
			t.Fatalf("%x: backends parse different points", b)
		}
		if werr == nil && got.bytes() != [33]byte(b) {
			t.Fatalf("%x: does not re-encode to its input", b)
		}
	}
}

// TestCompressPublicBatch checks the batched affine conversion against
// one-at-a-time conversion, and that it reports an identity.
func TestCompressPublicBatch(t *testing.T) {
	var js []secp256k1.JacobianPoint
	var want [][pointLen]byte
	for i := range 5 {
		k := testScalar(t, "batch", i)
		var j secp256k1.JacobianPoint
		secp256k1.ScalarBaseMultNonConst(&k, &j) // Z != 1
		js = append(js, j)
		p := ctScalarMult(&k, &generator)
		want = append(want, p.bytes())
	}
	got := make([][pointLen]byte, len(js))
	if i := compressPublic(append([]secp256k1.JacobianPoint(nil), js...), got); i != -1 {
		t.Fatalf("identity reported at %d", i)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("point %d: %x, want %x", i, got[i], want[i])
		}
	}
	js[3] = secp256k1.JacobianPoint{}
	if i := compressPublic(js, got); i != 3 {
		t.Fatalf("identity at 3 reported at %d", i)
	}
}

// TestPureGoMatchesBackendMany compares the pure-Go k·P (GLV) and k·G
// (comb) with the build's backend on many random scalars and points: with
// cgo that is libsecp256k1, in CGO_ENABLED=0 builds the same code, so
// decred's variable-time multiplication is the reference there.
func TestPureGoMatchesBackendMany(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	p := generator
	for i := range n {
		k := testScalar(t, "many", i)
		gotP, gotG := ctScalarMult(&k, &p), ctScalarBaseMult(&k)
		var wantP, wantG [pointLen]byte
		if backendName == "libsecp256k1 (cgo)" {
			q, g := mulSecret(&k, &p), mulSecretBase(&k)
			wantP, wantG = q.bytes(), g.bytes()
		} else {
			wantP, wantG = refMul(&k, &p), refMul(&k, &generator)
		}
		if gotP.bytes() != wantP {
			t.Fatalf("input %d: pure-Go k·P %x, want %x", i, gotP.bytes(), wantP)
		}
		if gotG.bytes() != wantG {
			t.Fatalf("input %d: pure-Go k·G %x, want %x", i, gotG.bytes(), wantG)
		}
		p = gotP // the next point: a fresh, unrelated one
	}
}
