package decrypt

import (
	"crypto/subtle"
	"encoding/binary"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// The fixed-base multiplication k·G, constant time with respect to k: a
// comb over 64 precomputed tables, one per 4-bit window, with signed odd
// digits so that no table entry is the identity and the cheaper mixed
// addition (complete for an affine second operand) always applies.
//
// Recoding: if k is even, k is replaced by n − k (odd, since n is odd) and
// the result negated at the end; the choice is a masked copy and a
// branch-free conditional negation. An odd k < 2^256 is
//
//	k = Σ_{i<64} d_i·16^i,  d_i odd, |d_i| ≤ 15,
//	d_i = (((k >> 4i) & 31) | 1) − 16 for i < 63,  d_63 = (k >> 252) | 1
//
// (the regular recoding of Joye and Tunstall: subtracting d_i leaves the
// next window odd again, so it is bits of k, an OR and a subtraction; the
// top digit is at most 15 because k − 1 < 2^256).
//
// baseTable()[i][j] is (2j+1)·16^i·G in affine coordinates, with −y stored
// too, so a lookup is one masked scan of 8 entries and a masked pick of y or
// −y: 64 × 8 entries × 96 bytes = 48 KiB, built once on first use
// (sync.OnceValue, about 1 ms: it is public data, so decred's variable-time
// Jacobian arithmetic and one batched inversion build it).
//
// Cost: 63 mixed additions, no doubling, and one blinded inversion
// (toAffine).

// combEntry is an affine point as big-endian 64-bit words: x ∥ y ∥ −y.
type combEntry [12]uint64

// combTable holds the comb's 64 windows.
type combTable [64][8]combEntry

var baseTable = sync.OnceValue(buildBaseTable)

func buildBaseTable() *combTable {
	var js [64 * 8]secp256k1.JacobianPoint
	var b, twoB secp256k1.JacobianPoint
	generator.jacobian(&b)
	for i := range 64 {
		secp256k1.DoubleNonConst(&b, &twoB)
		js[8*i] = b
		for j := 1; j < 8; j++ {
			secp256k1.AddNonConst(&js[8*i+j-1], &twoB, &js[8*i+j])
		}
		for range 4 {
			var d secp256k1.JacobianPoint
			secp256k1.DoubleNonConst(&b, &d)
			b = d
		}
	}
	// Batched affine conversion (Montgomery's trick): one inversion.
	prefix := make([]secp256k1.FieldVal, len(js))
	for i := range js {
		js[i].Z.Normalize()
		if i == 0 {
			prefix[0].Set(&js[0].Z)
		} else {
			prefix[i].Mul2(&prefix[i-1], &js[i].Z).Normalize()
		}
	}
	var acc secp256k1.FieldVal
	acc.Set(&prefix[len(js)-1]).Inverse()
	t := new(combTable)
	for i := len(js) - 1; i >= 0; i-- {
		var zinv, zinv2, x, y, ny secp256k1.FieldVal
		if i > 0 {
			zinv.Mul2(&acc, &prefix[i-1])
			acc.Mul(&js[i].Z).Normalize()
		} else {
			zinv.Set(&acc)
		}
		zinv2.SquareVal(&zinv)
		x.Mul2(&js[i].X, &zinv2).Normalize()
		y.Mul2(&js[i].Y, &zinv2).Mul(&zinv).Normalize()
		ny.NegateVal(&y, 1).Normalize()
		var buf [96]byte
		x.PutBytesUnchecked(buf[0:32])
		y.PutBytesUnchecked(buf[32:64])
		ny.PutBytesUnchecked(buf[64:96])
		e := &t[i/8][i%8]
		for w := range e {
			e[w] = binary.BigEndian.Uint64(buf[8*w:])
		}
	}
	return t
}

// lookupComb sets x, y to the affine point d·16^i·G for the odd digit
// d = (2·idx+1)·(1 − 2·neg): every entry of the window is read and one kept
// by masking, then y or −y is kept by masking (as in lookupProj).
func lookupComb(x, y *secp256k1.FieldVal, window *[8]combEntry, idx uint8, neg uint32) {
	var sel combEntry
	for e := range window {
		mask := -uint64(subtle.ConstantTimeByteEq(uint8(e), idx))
		for w := range sel {
			sel[w] |= window[e][w] & mask
		}
	}
	nmask := -uint64(neg)
	var b [64]byte
	for w := range 4 {
		binary.BigEndian.PutUint64(b[8*w:], sel[w])
		binary.BigEndian.PutUint64(b[32+8*w:], sel[4+w]&^nmask|sel[8+w]&nmask)
	}
	x.SetBytes((*[32]byte)(b[0:32]))
	y.SetBytes((*[32]byte)(b[32:64]))
	clear(b[:])
	sel = combEntry{}
}

// combDigit returns window i's digit of the odd big-endian scalar kb as
// (|d|−1)/2 in 0..7 and its sign (1 for negative). i is public.
func combDigit(kb *[32]byte, i int) (idx uint8, neg uint32) {
	// Bits 4i..4i+4 of k (bit 256 reads as zero).
	lo := uint32(kb[31-i/2])
	hi := uint32(0)
	if i/2 < 31 {
		hi = uint32(kb[30-i/2])
	}
	v := lo | hi<<8
	if i%2 == 1 {
		v >>= 4
	}
	var d uint32
	if i < 63 {
		d = (v&31 | 1) - 16 // odd, in [−15, 15], as a two's-complement uint32
	} else {
		d = v&15 | 1
	}
	neg = d >> 31
	abs := (d ^ -neg) + neg // |d|
	return uint8(abs >> 1), neg
}

// ctScalarBaseMult returns k·G in constant time with respect to k, which
// must be in [1, n).
func ctScalarBaseMult(k *secp256k1.ModNScalar) point {
	t := baseTable()

	// Make k odd: k or n − k, and negate the result in the second case.
	even := boolToUint32(!k.IsOdd())
	kb := k.Bytes()
	var nk secp256k1.ModNScalar
	nk.NegateVal(k)
	nb := nk.Bytes()
	subtle.ConstantTimeCopy(int(even), kb[:], nb[:])

	var acc projPoint
	var x, y secp256k1.FieldVal
	idx, neg := combDigit(&kb, 0)
	lookupComb(&acc.x, &acc.y, &t[0], idx, neg)
	acc.y.Normalize()
	acc.z.SetInt(1)
	for i := 1; i < 64; i++ {
		idx, neg := combDigit(&kb, i)
		lookupComb(&x, &y, &t[i], idx, neg)
		projAddAffine(&acc, &acc, &x, &y)
	}
	out := toAffine(&acc)
	condNegate(&out.y, even)
	out.y.Normalize()

	clear(kb[:])
	clear(nb[:])
	nk.Zero()
	acc, x, y = projPoint{}, secp256k1.FieldVal{}, secp256k1.FieldVal{}
	return out
}
