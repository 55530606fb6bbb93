package decrypt

// The constant-time multiplication as it was before lazy reduction, the
// generator comb and the GLV split (issue 27): every field operation
// normalized, a fixed 4-bit window over all 256 bits. Kept for the tests
// only, as an independent implementation to compare with and as the "old
// path" of the timing test.

import (
	"crypto/subtle"
	"encoding/binary"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func oldFeAdd(r, a, b *secp256k1.FieldVal) { r.Add2(a, b).Normalize() }

func oldFeSub(r, a, b *secp256k1.FieldVal) {
	var nb secp256k1.FieldVal
	nb.NegateVal(b, 1)
	r.Add2(a, &nb).Normalize()
}

func oldFeMul(r, a, b *secp256k1.FieldVal) { r.Mul2(a, b).Normalize() }

func oldFeMulB3(r, a *secp256k1.FieldVal) { r.Set(a).MulInt(b3).Normalize() }

// oldProjAdd sets r = p + q (complete; r may alias p or q).
func oldProjAdd(r, p, q *projPoint) {
	var t0, t1, t2, t3, t4, x3, y3, z3 secp256k1.FieldVal
	oldFeMul(&t0, &p.x, &q.x)
	oldFeMul(&t1, &p.y, &q.y)
	oldFeMul(&t2, &p.z, &q.z)
	oldFeAdd(&t3, &p.x, &p.y)
	oldFeAdd(&t4, &q.x, &q.y)
	oldFeMul(&t3, &t3, &t4)
	oldFeAdd(&t4, &t0, &t1)
	oldFeSub(&t3, &t3, &t4)
	oldFeAdd(&t4, &p.y, &p.z)
	oldFeAdd(&x3, &q.y, &q.z)
	oldFeMul(&t4, &t4, &x3)
	oldFeAdd(&x3, &t1, &t2)
	oldFeSub(&t4, &t4, &x3)
	oldFeAdd(&x3, &p.x, &p.z)
	oldFeAdd(&y3, &q.x, &q.z)
	oldFeMul(&x3, &x3, &y3)
	oldFeAdd(&y3, &t0, &t2)
	oldFeSub(&y3, &x3, &y3)
	oldFeAdd(&x3, &t0, &t0)
	oldFeAdd(&t0, &x3, &t0)
	oldFeMulB3(&t2, &t2)
	oldFeAdd(&z3, &t1, &t2)
	oldFeSub(&t1, &t1, &t2)
	oldFeMulB3(&y3, &y3)
	oldFeMul(&x3, &t4, &y3)
	oldFeMul(&t2, &t3, &t1)
	oldFeSub(&x3, &t2, &x3)
	oldFeMul(&y3, &y3, &t0)
	oldFeMul(&t1, &t1, &z3)
	oldFeAdd(&y3, &t1, &y3)
	oldFeMul(&t0, &t0, &t3)
	oldFeMul(&z3, &z3, &t4)
	oldFeAdd(&z3, &z3, &t0)
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// oldProjDouble sets r = 2p (complete; r may alias p).
func oldProjDouble(r, p *projPoint) {
	var t0, t1, t2, x3, y3, z3 secp256k1.FieldVal
	oldFeMul(&t0, &p.y, &p.y)
	oldFeAdd(&z3, &t0, &t0)
	oldFeAdd(&z3, &z3, &z3)
	oldFeAdd(&z3, &z3, &z3)
	oldFeMul(&t1, &p.y, &p.z)
	oldFeMul(&t2, &p.z, &p.z)
	oldFeMulB3(&t2, &t2)
	oldFeMul(&x3, &t2, &z3)
	oldFeAdd(&y3, &t0, &t2)
	oldFeMul(&z3, &t1, &z3)
	oldFeAdd(&t1, &t2, &t2)
	oldFeAdd(&t2, &t1, &t2)
	oldFeSub(&t0, &t0, &t2)
	oldFeMul(&y3, &t0, &y3)
	oldFeAdd(&y3, &x3, &y3)
	oldFeMul(&t1, &p.x, &p.y)
	oldFeMul(&x3, &t0, &t1)
	oldFeAdd(&x3, &x3, &x3)
	r.x.Set(&x3)
	r.y.Set(&y3)
	r.z.Set(&z3)
}

// oldPackedPoint is a normalized projPoint as 12 big-endian 64-bit words
// (X ∥ Y ∥ Z), so a lookup can mask whole words.
type oldPackedPoint [12]uint64

func (pp *oldPackedPoint) pack(p *projPoint) {
	var b [96]byte
	p.x.PutBytesUnchecked(b[0:32])
	p.y.PutBytesUnchecked(b[32:64])
	p.z.PutBytesUnchecked(b[64:96])
	for i := range pp {
		pp[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	clear(b[:])
}

func (pp *oldPackedPoint) unpack(p *projPoint) {
	var b [96]byte
	for i := range pp {
		binary.BigEndian.PutUint64(b[8*i:], pp[i])
	}
	p.x.SetBytes((*[32]byte)(b[0:32]))
	p.y.SetBytes((*[32]byte)(b[32:64]))
	p.z.SetBytes((*[32]byte)(b[64:96]))
	clear(b[:])
}

// oldCtScalarMult returns k·P in constant time with respect to k. k must be in
// [1, n) and p a valid point, so the result is never the identity.
func oldCtScalarMult(k *secp256k1.ModNScalar, p *point) point {
	// table[i] = i·P for i in 0..15, table[0] the identity.
	var table [16]oldPackedPoint
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
		oldProjAdd(&cur, &cur, &base)
		table[i].pack(&cur)
	}

	kb := k.Bytes()
	var sel oldPackedPoint
	var selP projPoint
	for i := 0; i < 64; i++ {
		for j := 0; j < 4; j++ {
			oldProjDouble(&acc, &acc)
		}
		nibble := kb[i/2] >> 4
		if i%2 == 1 {
			nibble = kb[i/2] & 0x0f
		}
		sel = oldPackedPoint{}
		for e := range table {
			mask := -uint64(subtle.ConstantTimeByteEq(uint8(e), nibble))
			for w := range sel {
				sel[w] |= table[e][w] & mask
			}
		}
		sel.unpack(&selP)
		oldProjAdd(&acc, &acc, &selP)
	}

	var zinv secp256k1.FieldVal
	zinv.Set(&acc.z).Inverse()
	var out point
	out.x.Mul2(&acc.x, &zinv).Normalize()
	out.y.Mul2(&acc.y, &zinv).Normalize()

	clear(kb[:])
	clear(table[:])
	sel = oldPackedPoint{}
	acc, cur, selP = projPoint{}, projPoint{}, projPoint{}
	return out
}
