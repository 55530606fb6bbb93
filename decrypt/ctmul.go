package decrypt

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// This file is the pure-Go constant-time variable-base scalar
// multiplication k·P; ctbase.go is the fixed-base k·G and glv.go the split
// of k. All three are always compiled: CGO_ENABLED=0 builds use them for
// every multiplication by a secret scalar (scalarmult_purego.go), and the
// tests of cgo builds compare them with libsecp256k1 on many random inputs.
//
// decred's ScalarMultNonConst and ScalarBaseMultNonConst branch on the bits
// of the scalar and must never see a secret. Here only decred's field and
// scalar arithmetic (FieldVal, ModNScalar), which is constant time, is used,
// under:
//
//   - complete projective addition, mixed addition and doubling formulas for
//     a = 0 curves (Renes, Costello, Batina 2016, algorithms 7, 8 and 9): no
//     special case for the identity, doubling or inverse points, hence no
//     branch;
//   - lazy reduction: a field value is normalized only where decred's
//     magnitude rules require it (Mul and Square take magnitude ≤ 8, Add
//     sums magnitudes up to 64, MulInt multiplies them), not after every
//     operation. Each line below carries the magnitude of its result as
//     "// m"; the inputs' bounds are in each function's comment;
//   - the GLV endomorphism φ(x, y) = (β·x, y) = λ·(x, y): k = k1 + k2·λ with
//     |k1|, |k2| < 2^128 (glv.go), so k·P = k1·P + k2·φ(P) takes 128
//     doublings instead of 256. The signs of k1 and k2 are folded into the
//     two tables once, before the loop;
//   - a fixed window of signed 5-bit digits: 26 rounds of (5 doublings,)
//     one addition from each table; the same sequence of operations for
//     every scalar;
//   - table lookups that read every entry and keep one by masking
//     (lookupProj; see its comment for the generated code);
//   - one inversion at the end, of Z blinded by a random factor
//     (toAffine).
//
// Cost: 125 doublings, 52 additions, 1 doubling, 14 mixed additions and
// 16 multiplications for the tables, one blinded inversion (toAffine).

// projPoint is (X:Y:Z) with x = X/Z, y = Y/Z; the identity is (0:1:0).
// Coordinates are not normalized: each producer documents their magnitudes.
type projPoint struct {
	x, y, z secp256k1.FieldVal
}

// b3 = 3·b for y² = x³ + 7.
const b3 = 21

// feSub sets r = a − b, where b has magnitude mb. The result's magnitude
// is a's plus mb+1.
func feSub(r, a, b *secp256k1.FieldVal, mb uint32) {
	var nb secp256k1.FieldVal
	nb.NegateVal(b, mb)
	r.Add2(a, &nb)
}

// mulB3 sets r = 3b·a, normalized; a must have magnitude ≤ 3.
func mulB3(r, a *secp256k1.FieldVal) { r.Set(a).MulInt(b3).Normalize() }

// condNegate sets y = −y if neg is 1 and leaves it if neg is 0, with the
// same operations either way. y must have magnitude 1; on return it has
// magnitude ≤ 4.
func condNegate(y *secp256k1.FieldVal, neg uint32) {
	var d secp256k1.FieldVal
	d.Set(y).MulInt(2).Negate(2) // −2y, 3
	d.MulInt(uint8(neg))         // 0 or −2y, ≤ 3
	y.Add(&d)                    // 4
}

// projAdd sets r = p + q (complete; r may alias p or q). Every coordinate
// of p and q must have magnitude ≤ 4; r.x has magnitude ≤ 3, r.y and r.z
// ≤ 2.
func projAdd(r, p, q *projPoint) {
	var t0, t1, t2, t3, t4, x3, y3, z3 secp256k1.FieldVal
	t0.Mul2(&p.x, &q.x)     // 1
	t1.Mul2(&p.y, &q.y)     // 1
	t2.Mul2(&p.z, &q.z)     // 1
	t3.Add2(&p.x, &p.y)     // 8
	t4.Add2(&q.x, &q.y)     // 8
	t3.Mul(&t4)             // 1
	t4.Add2(&t0, &t1)       // 2
	feSub(&t3, &t3, &t4, 2) // 4
	t4.Add2(&p.y, &p.z)     // 8
	x3.Add2(&q.y, &q.z)     // 8
	t4.Mul(&x3)             // 1
	x3.Add2(&t1, &t2)       // 2
	feSub(&t4, &t4, &x3, 2) // 4
	x3.Add2(&p.x, &p.z)     // 8
	y3.Add2(&q.x, &q.z)     // 8
	x3.Mul(&y3)             // 1
	y3.Add2(&t0, &t2)       // 2
	feSub(&y3, &x3, &y3, 2) // 4
	x3.Add2(&t0, &t0)       // 2
	t0.Add(&x3)             // 3
	mulB3(&t2, &t2)         // 1
	z3.Add2(&t1, &t2)       // 2
	feSub(&t1, &t1, &t2, 1) // 3
	y3.Normalize()          // 1: 4·21 would exceed 64
	mulB3(&y3, &y3)         // 1
	x3.Mul2(&t4, &y3)       // 1
	t2.Mul2(&t3, &t1)       // 1
	feSub(&x3, &t2, &x3, 1) // 3
	y3.Mul(&t0)             // 1
	t1.Mul(&z3)             // 1
	y3.Add(&t1)             // 2
	t0.Mul(&t3)             // 1
	z3.Mul(&t4)             // 1
	z3.Add(&t0)             // 2
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// projAddAffine sets r = p + (x2, y2), an affine point other than the
// identity (complete for every p; r may alias p). p.x and p.y must have
// magnitude ≤ 3 and p.z ≤ 3; x2 must have magnitude 1 and y2 ≤ 4. r.x has
// magnitude ≤ 3, r.y and r.z ≤ 2.
func projAddAffine(r, p *projPoint, x2, y2 *secp256k1.FieldVal) {
	var t0, t1, t2, t3, t4, x3, y3, z3 secp256k1.FieldVal
	t0.Mul2(&p.x, x2)       // 1
	t1.Mul2(&p.y, y2)       // 1
	t3.Add2(x2, y2)         // 5
	t4.Add2(&p.x, &p.y)     // 6
	t3.Mul(&t4)             // 1
	t4.Add2(&t0, &t1)       // 2
	feSub(&t3, &t3, &t4, 2) // 4
	t4.Mul2(y2, &p.z)       // 1
	t4.Add(&p.y)            // 4
	y3.Mul2(x2, &p.z)       // 1
	y3.Add(&p.x)            // 4
	x3.Add2(&t0, &t0)       // 2
	t0.Add(&x3)             // 3
	mulB3(&t2, &p.z)        // 1
	z3.Add2(&t1, &t2)       // 2
	feSub(&t1, &t1, &t2, 1) // 3
	y3.Normalize()          // 1: 4·21 would exceed 64
	mulB3(&y3, &y3)         // 1
	x3.Mul2(&t4, &y3)       // 1
	t2.Mul2(&t3, &t1)       // 1
	feSub(&x3, &t2, &x3, 1) // 3
	y3.Mul(&t0)             // 1
	t1.Mul(&z3)             // 1
	y3.Add(&t1)             // 2
	t0.Mul(&t3)             // 1
	z3.Mul(&t4)             // 1
	z3.Add(&t0)             // 2
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// projDouble sets r = 2p (complete; r may alias p). Every coordinate of p
// must have magnitude ≤ 8; r.x and r.y have magnitude ≤ 2, r.z 1.
func projDouble(r, p *projPoint) {
	var t0, t1, t2, x3, y3, z3 secp256k1.FieldVal
	t0.SquareVal(&p.y)      // 1
	z3.Add2(&t0, &t0)       // 2
	z3.Add(&z3)             // 4
	z3.Add(&z3)             // 8
	t1.Mul2(&p.y, &p.z)     // 1
	t2.SquareVal(&p.z)      // 1
	mulB3(&t2, &t2)         // 1
	x3.Mul2(&t2, &z3)       // 1
	y3.Add2(&t0, &t2)       // 2
	z3.Mul(&t1)             // 1
	t1.Add2(&t2, &t2)       // 2
	t2.Add(&t1)             // 3
	feSub(&t0, &t0, &t2, 3) // 5
	y3.Mul(&t0)             // 1
	y3.Add(&x3)             // 2
	t1.Mul2(&p.x, &p.y)     // 1
	x3.Mul2(&t0, &t1)       // 1
	x3.Add(&x3)             // 2
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// packedPoint is a normalized projPoint as 12 big-endian 64-bit words
// (X ∥ Y ∥ Z), so a lookup can mask whole words.
type packedPoint [12]uint64

// pack normalizes p and stores it.
func (pp *packedPoint) pack(p *projPoint) {
	var b [96]byte
	p.x.Normalize().PutBytesUnchecked(b[0:32])
	p.y.Normalize().PutBytesUnchecked(b[32:64])
	p.z.Normalize().PutBytesUnchecked(b[64:96])
	for i := range pp {
		pp[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	clear(b[:])
}

// unpack sets p to the stored point, every coordinate with magnitude 1.
func (pp *packedPoint) unpack(p *projPoint) {
	var b [96]byte
	for i := range pp {
		binary.BigEndian.PutUint64(b[8*i:], pp[i])
	}
	p.x.SetBytes((*[32]byte)(b[0:32]))
	p.y.SetBytes((*[32]byte)(b[32:64]))
	p.z.SetBytes((*[32]byte)(b[64:96]))
	clear(b[:])
}

// lookupProj sets out = table[idx] reading every entry: the mask is all
// ones for the wanted entry and zero for the others, so neither a branch
// nor a memory address depends on idx.
//
// Checked in the generated code (Go 1.26, amd64), with
//
//	CGO_ENABLED=0 go build -gcflags=-S ./decrypt 2>&1 | less   # find decrypt.lookupProj
//
// (or go tool objdump -s 'decrypt\.lookupProj' on a test binary): the
// outer loop runs 17 times whatever idx (CMPQ DX, $17); the byte compare is
// CMPB, SETEQ, MOVBLZX, NEGQ into the mask, no jump; the inner loop is 12
// MOVQ (R8)(DI*8) loads from table + 96·e, ANDQ with the mask, ORQ into
// out, so every address depends on e and w only. The only conditional
// jumps are the two loop counters. The same read of lookupComb,
// signedDigits, combDigit, condNegate, boolToUint32 (one MOVBLZX), absScalar,
// splitScalar, mulShift384, ctScalarMult and ctScalarBaseMult found no
// conditional jump or CMOV on anything but a public loop index or constant,
// and decred's IsOverHalfOrder ends in SETNE without a jump.
func lookupProj(out *packedPoint, table *[windowEntries]packedPoint, idx uint8) {
	*out = packedPoint{}
	for e := range table {
		mask := -uint64(subtle.ConstantTimeByteEq(uint8(e), idx))
		for w := range out {
			out[w] |= table[e][w] & mask
		}
	}
}

// The variable-base window: signed 5-bit digits in [−16, 16], so a table
// holds 0·P … 16·P and a digit's sign is a conditional negation of the
// looked-up y. 26 windows cover 130 bits: |k1|, |k2| < 2^128 plus the
// recoding's carry.
const (
	windowBits    = 5
	windowEntries = 1<<(windowBits-1) + 1
	windows       = 26
)

// signedDigits recodes the big-endian b < 2^128 into windows digits
// d_i in [−16, 16] with b = Σ d_i·32^i, as (|d_i|, sign): the carry and the
// sign are arithmetic on the bits, never a branch on them.
func signedDigits(b *[32]byte) (abs [windows]uint8, neg [windows]uint32) {
	w := [3]uint64{
		binary.BigEndian.Uint64(b[24:]),
		binary.BigEndian.Uint64(b[16:]),
	}
	var carry uint32
	for i := range windows {
		bit := windowBits * i // public
		v := w[bit/64] >> (bit % 64)
		if bit%64 > 64-windowBits {
			v |= w[bit/64+1] << (64 - bit%64)
		}
		d := uint32(v&31) + carry // 0..32
		carry = (d + 15) >> 5     // 1 iff d ≥ 17
		d -= carry << 5           // −15..16, two's complement
		n := d >> 31
		abs[i] = uint8((d ^ -n) + n)
		neg[i] = n
	}
	clear(w[:])
	return abs, neg
}

// ctScalarMult returns k·P in constant time with respect to k. k must be in
// [1, n) and p a valid point, so the result is never the identity.
func ctScalarMult(k *secp256k1.ModNScalar, p *point) point {
	s := splitScalar(k)
	abs1, neg1 := signedDigits(&s.k1)
	abs2, neg2 := signedDigits(&s.k2)

	// t1[i] = i·P, t2[i] = φ(i·P) = (β·X : Y : Z); entry 0 is the identity.
	var t1, t2 [windowEntries]packedPoint
	var cur, acc projPoint
	acc.y.SetInt(1) // (0:1:0)
	t1[0].pack(&acc)
	t2[0].pack(&acc)
	cur.x.Set(&p.x)
	cur.y.Set(&p.y)
	cur.z.SetInt(1)
	for i := 1; i < windowEntries; i++ {
		if i == 2 {
			projDouble(&cur, &cur)
		} else if i > 2 {
			projAddAffine(&cur, &cur, &p.x, &p.y)
		}
		t1[i].pack(&cur) // normalizes cur
		var phi projPoint
		phi.x.Mul2(&cur.x, &endoBeta)
		phi.y.Set(&cur.y)
		phi.z.Set(&cur.z)
		t2[i].pack(&phi)
	}

	var sel packedPoint
	var selP projPoint
	for i := windows - 1; i >= 0; i-- {
		if i != windows-1 { // i is public
			for range windowBits {
				projDouble(&acc, &acc)
			}
		}
		lookupProj(&sel, &t1, abs1[i])
		sel.unpack(&selP)
		condNegate(&selP.y, neg1[i]^s.neg1)
		projAdd(&acc, &acc, &selP)
		lookupProj(&sel, &t2, abs2[i])
		sel.unpack(&selP)
		condNegate(&selP.y, neg2[i]^s.neg2)
		projAdd(&acc, &acc, &selP)
	}

	out := toAffine(&acc)
	s.clear()
	clear(abs1[:])
	clear(abs2[:])
	clear(neg1[:])
	clear(neg2[:])
	clear(t1[:])
	clear(t2[:])
	sel = packedPoint{}
	acc, cur, selP = projPoint{}, projPoint{}, projPoint{}
	return out
}

// toAffine returns (X/Z, Y/Z), normalized. acc's magnitudes must be ≤ 8
// and Z nonzero.
//
// Z depends on the secret scalar, so its inverse must not take a
// Z-dependent time. decred's constant-time Inverse (an exponentiation) costs
// about 300 multiplications, a third of a k·G; instead Z is blinded by a
// fresh uniformly random ρ in [1, p) and Z·ρ, itself uniformly random and
// independent of Z, inverted with math/big's faster variable-time
// ModInverse: Z⁻¹ = (Z·ρ)⁻¹·ρ. Its time depends on Z·ρ only.
func toAffine(acc *projPoint) point {
	var rho, zr, zinv secp256k1.FieldVal
	blindingFactor(&rho)
	zr.Mul2(&acc.z, &rho).Normalize()
	zb := zr.Bytes()
	inv := new(big.Int).SetBytes(zb[:])
	inv.ModInverse(inv, fieldP)
	var buf [32]byte
	zinv.SetBytes((*[32]byte)(inv.FillBytes(buf[:])))
	zinv.Mul(&rho)
	var out point
	out.x.Mul2(&acc.x, &zinv).Normalize()
	out.y.Mul2(&acc.y, &zinv).Normalize()
	clear(inv.Bits())
	clear(buf[:])
	clear(zb[:])
	rho.Zero()
	zr.Zero()
	zinv.Zero()
	return out
}

// blindingFactor sets f to a uniformly random element of [1, p) from
// crypto/rand (which does not fail: Go 1.24 and later crash the process
// rather than return an error).
func blindingFactor(f *secp256k1.FieldVal) {
	var b [32]byte
	for {
		_, _ = rand.Read(b[:])
		// SetBytes reports overflow (b ≥ p) as 1; the retry, taken with
		// probability about 2^-224, depends on ρ only.
		if f.SetBytes(&b) == 0 && !f.IsZero() {
			break
		}
	}
	clear(b[:])
}
