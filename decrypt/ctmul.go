package decrypt

import (
	"crypto/subtle"
	"encoding/binary"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// This file is the pure-Go constant-time scalar multiplication. It is always
// compiled: CGO_ENABLED=0 builds use it for every multiplication by a secret
// scalar (scalarmult_purego.go), and the tests of cgo builds compare it with
// libsecp256k1 on many random inputs.
//
// decred's ScalarMultNonConst and ScalarBaseMultNonConst branch on the bits
// of the scalar and must never see a secret. Here only decred's field
// arithmetic (FieldVal: Mul, Square, Add, Negate, MulInt, Normalize, Inverse,
// SetBytes, PutBytes), which is constant time, is used, under:
//
//   - complete projective addition and doubling formulas for a = 0 curves
//     (Renes, Costello, Batina 2016, algorithms 7 and 9): no special case
//     for the identity, doubling or inverse points, hence no branch;
//   - a fixed 4-bit window: 64 rounds of 4 doublings and one addition, the
//     same sequence of operations for every scalar;
//   - table lookups that read all 16 entries and keep one by masking.
//
// Cost is about 256 doublings and 78 additions, a few times slower than
// libsecp256k1.

// projPoint is (X:Y:Z) with x = X/Z, y = Y/Z; the identity is (0:1:0).
// All coordinates are kept normalized (magnitude 1).
type projPoint struct {
	x, y, z secp256k1.FieldVal
}

// b3 = 3·b for y² = x³ + 7.
const b3 = 21

func feAdd(r, a, b *secp256k1.FieldVal) { r.Add2(a, b).Normalize() }

func feSub(r, a, b *secp256k1.FieldVal) {
	var nb secp256k1.FieldVal
	nb.NegateVal(b, 1)
	r.Add2(a, &nb).Normalize()
}

func feMul(r, a, b *secp256k1.FieldVal) { r.Mul2(a, b).Normalize() }

func feMulB3(r, a *secp256k1.FieldVal) { r.Set(a).MulInt(b3).Normalize() }

// projAdd sets r = p + q (complete; r may alias p or q).
func projAdd(r, p, q *projPoint) {
	var t0, t1, t2, t3, t4, x3, y3, z3 secp256k1.FieldVal
	feMul(&t0, &p.x, &q.x)
	feMul(&t1, &p.y, &q.y)
	feMul(&t2, &p.z, &q.z)
	feAdd(&t3, &p.x, &p.y)
	feAdd(&t4, &q.x, &q.y)
	feMul(&t3, &t3, &t4)
	feAdd(&t4, &t0, &t1)
	feSub(&t3, &t3, &t4)
	feAdd(&t4, &p.y, &p.z)
	feAdd(&x3, &q.y, &q.z)
	feMul(&t4, &t4, &x3)
	feAdd(&x3, &t1, &t2)
	feSub(&t4, &t4, &x3)
	feAdd(&x3, &p.x, &p.z)
	feAdd(&y3, &q.x, &q.z)
	feMul(&x3, &x3, &y3)
	feAdd(&y3, &t0, &t2)
	feSub(&y3, &x3, &y3)
	feAdd(&x3, &t0, &t0)
	feAdd(&t0, &x3, &t0)
	feMulB3(&t2, &t2)
	feAdd(&z3, &t1, &t2)
	feSub(&t1, &t1, &t2)
	feMulB3(&y3, &y3)
	feMul(&x3, &t4, &y3)
	feMul(&t2, &t3, &t1)
	feSub(&x3, &t2, &x3)
	feMul(&y3, &y3, &t0)
	feMul(&t1, &t1, &z3)
	feAdd(&y3, &t1, &y3)
	feMul(&t0, &t0, &t3)
	feMul(&z3, &z3, &t4)
	feAdd(&z3, &z3, &t0)
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// projDouble sets r = 2p (complete; r may alias p).
func projDouble(r, p *projPoint) {
	var t0, t1, t2, x3, y3, z3 secp256k1.FieldVal
	feMul(&t0, &p.y, &p.y)
	feAdd(&z3, &t0, &t0)
	feAdd(&z3, &z3, &z3)
	feAdd(&z3, &z3, &z3)
	feMul(&t1, &p.y, &p.z)
	feMul(&t2, &p.z, &p.z)
	feMulB3(&t2, &t2)
	feMul(&x3, &t2, &z3)
	feAdd(&y3, &t0, &t2)
	feMul(&z3, &t1, &z3)
	feAdd(&t1, &t2, &t2)
	feAdd(&t2, &t1, &t2)
	feSub(&t0, &t0, &t2)
	feMul(&y3, &t0, &y3)
	feAdd(&y3, &x3, &y3)
	feMul(&t1, &p.x, &p.y)
	feMul(&x3, &t0, &t1)
	feAdd(&x3, &x3, &x3)
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// packedPoint is a normalized projPoint as 12 big-endian 64-bit words
// (X ∥ Y ∥ Z), so a lookup can mask whole words.
type packedPoint [12]uint64

func (pp *packedPoint) pack(p *projPoint) {
	var b [96]byte
	p.x.PutBytesUnchecked(b[0:32])
	p.y.PutBytesUnchecked(b[32:64])
	p.z.PutBytesUnchecked(b[64:96])
	for i := range pp {
		pp[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	clear(b[:])
}

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

// ctScalarMult returns k·P in constant time with respect to k. k must be in
// [1, n) and p a valid point, so the result is never the identity.
func ctScalarMult(k *secp256k1.ModNScalar, p *point) point {
	// table[i] = i·P for i in 0..15, table[0] the identity.
	var table [16]packedPoint
	var acc, base projPoint
	acc.y.SetInt(1) // (0:1:0)
	table[0].pack(&acc)
	base.x.Set(&p.x)
	base.y.Set(&p.y)
	base.z.SetInt(1)
	table[1].pack(&base)
	var cur projPoint
	cur = base
	for i := 2; i < 16; i++ {
		projAdd(&cur, &cur, &base)
		table[i].pack(&cur)
	}

	kb := k.Bytes()
	var sel packedPoint
	var selP projPoint
	for i := 0; i < 64; i++ {
		for j := 0; j < 4; j++ {
			projDouble(&acc, &acc)
		}
		nibble := kb[i/2] >> 4
		if i%2 == 1 {
			nibble = kb[i/2] & 0x0f
		}
		sel = packedPoint{}
		for e := range table {
			mask := -uint64(subtle.ConstantTimeByteEq(uint8(e), nibble))
			for w := range sel {
				sel[w] |= table[e][w] & mask
			}
		}
		sel.unpack(&selP)
		projAdd(&acc, &acc, &selP)
	}

	var zinv secp256k1.FieldVal
	zinv.Set(&acc.z).Inverse()
	var out point
	out.x.Mul2(&acc.x, &zinv).Normalize()
	out.y.Mul2(&acc.y, &zinv).Normalize()

	clear(kb[:])
	clear(table[:])
	sel = packedPoint{}
	acc, cur, selP = projPoint{}, projPoint{}, projPoint{}
	return out
}
