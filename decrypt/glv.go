package decrypt

import (
	"crypto/subtle"
	"encoding/binary"
	"math/big"
	"math/bits"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// The GLV split of a secret scalar, in constant time: k = k1 + k2·λ mod n
// with |k1|, |k2| < 2^128 (Gallant, Lambert, Vanstone 2001; the rounding
// by precomputed reciprocals is libsecp256k1's secp256k1_scalar_split_lambda,
// whose source comments prove the bound). decred's splitK does the same
// with math/big, in variable time, and must not see a secret.
//
// With the lattice basis (a1, b1), (a2, b2) of {(x, y) : x + y·λ ≡ 0 mod n}
// (decred's endomorphism constants; b1 < 0):
//
//	c1 = round(k·g1 / 2^384), g1 = round(2^384·b2 / n)
//	c2 = round(k·g2 / 2^384), g2 = round(2^384·(−b1) / n)
//	k2 = c1·(−b1) + c2·(−b2) mod n
//	k1 = k − k2·λ mod n
//
// Both come out as residues mod n; each is either below 2^128 or n minus
// such a value, and is replaced by its negation when over n/2, the sign
// kept as a 0/1 word (decred's IsOverHalfOrder and NegateVal are constant
// time; the choice between the two is a masked copy).

// endoBeta is β, a cube root of unity mod p with φ(x, y) = (β·x, y) = λ·(x, y).
var endoBeta = fieldFromHex("7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501ee")

var (
	// endoLambda is λ.
	endoLambda = scalarFromHexConst("5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72")
	// endoMinusB1 and endoMinusB2 are −b1 and −b2 mod n.
	endoMinusB1 = scalarFromHexConst("e4437ed6010e88286f547fa90abfe4c3")
	endoMinusB2 = negScalar(scalarFromHexConst("3086d221a7d46bcde86c90e49284eb15"))
	// endoG1 and endoG2 are g1 and g2 as little-endian 64-bit limbs.
	endoG1 = limbsFromBig(roundedQuotient("3086d221a7d46bcde86c90e49284eb15"))
	endoG2 = limbsFromBig(roundedQuotient("e4437ed6010e88286f547fa90abfe4c3"))
)

// curveN is the group order n.
var curveN, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)

// roundedQuotient returns round(2^384·b / n) for the hex b (public
// constants, computed once at init).
func roundedQuotient(bh string) *big.Int {
	b, _ := new(big.Int).SetString(bh, 16)
	q := new(big.Int).Lsh(b, 384)
	q.Add(q, new(big.Int).Rsh(curveN, 1))
	return q.Quo(q, curveN)
}

func limbsFromBig(v *big.Int) [4]uint64 {
	var buf [32]byte
	v.FillBytes(buf[:])
	return limbsFromBytes(&buf)
}

func limbsFromBytes(b *[32]byte) [4]uint64 {
	return [4]uint64{
		binary.BigEndian.Uint64(b[24:]),
		binary.BigEndian.Uint64(b[16:]),
		binary.BigEndian.Uint64(b[8:]),
		binary.BigEndian.Uint64(b[0:]),
	}
}

func fieldFromHex(h string) secp256k1.FieldVal {
	var f secp256k1.FieldVal
	b, _ := new(big.Int).SetString(h, 16)
	var buf [32]byte
	f.SetBytes((*[32]byte)(b.FillBytes(buf[:])))
	return f
}

func scalarFromHexConst(h string) secp256k1.ModNScalar {
	var s secp256k1.ModNScalar
	b, _ := new(big.Int).SetString(h, 16)
	var buf [32]byte
	s.SetBytes((*[32]byte)(b.FillBytes(buf[:])))
	return s
}

func negScalar(s secp256k1.ModNScalar) secp256k1.ModNScalar {
	s.Negate()
	return s
}

// mulShift384 returns round(k·g / 2^384) for 256-bit k and g whose product
// is below 2^510, so the result fits in 128 bits. math/bits.Mul64 and
// Add64 compile to fixed instruction sequences (MULQ, ADCQ), so the time
// does not depend on the values.
func mulShift384(k, g *[4]uint64) [2]uint64 {
	var r [8]uint64
	for i := range 4 {
		var carry uint64
		for j := range 4 {
			hi, lo := bits.Mul64(k[i], g[j])
			var c uint64
			lo, c = bits.Add64(lo, r[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			r[i+j] = lo
			carry = hi
		}
		r[i+4] = carry
	}
	// r[6], r[7] is the product >> 384; bit 383 rounds.
	var c uint64
	out0, c := bits.Add64(r[6], r[5]>>63, 0)
	out1, _ := bits.Add64(r[7], 0, c)
	clear(r[:])
	return [2]uint64{out0, out1}
}

func scalarFromLimbs(l [2]uint64) secp256k1.ModNScalar {
	var b [32]byte
	binary.BigEndian.PutUint64(b[16:], l[1])
	binary.BigEndian.PutUint64(b[24:], l[0])
	var s secp256k1.ModNScalar
	s.SetBytes(&b) // below 2^128 < n: no reduction
	clear(b[:])
	return s
}

// split is k as ±k1 + ±k2·λ: k1 and k2 big-endian, below 2^128, and
// negN 1 when the sign is minus.
type split struct {
	k1, k2     [32]byte
	neg1, neg2 uint32
}

func (s *split) clear() {
	clear(s.k1[:])
	clear(s.k2[:])
	s.neg1, s.neg2 = 0, 0
}

// splitScalar returns the GLV split of k in constant time.
func splitScalar(k *secp256k1.ModNScalar) split {
	kb := k.Bytes()
	kl := limbsFromBytes(&kb)
	c1 := scalarFromLimbs(mulShift384(&kl, &endoG1))
	c2 := scalarFromLimbs(mulShift384(&kl, &endoG2))
	var r1, r2 secp256k1.ModNScalar
	c1.Mul(&endoMinusB1)
	c2.Mul(&endoMinusB2)
	r2.Add2(&c1, &c2)
	r1.Mul2(&r2, &endoLambda).Negate().Add(k)

	var s split
	s.neg1 = absScalar(&s.k1, &r1)
	s.neg2 = absScalar(&s.k2, &r2)
	clear(kb[:])
	clear(kl[:])
	c1.Zero()
	c2.Zero()
	r1.Zero()
	r2.Zero()
	return s
}

// absScalar writes min(r, n−r) to out and returns 1 if that is n−r.
func absScalar(out *[32]byte, r *secp256k1.ModNScalar) uint32 {
	neg := boolToUint32(r.IsOverHalfOrder())
	var nr secp256k1.ModNScalar
	nr.NegateVal(r)
	*out = r.Bytes()
	nb := nr.Bytes()
	subtle.ConstantTimeCopy(int(neg), out[:], nb[:])
	clear(nb[:])
	nr.Zero()
	return neg
}

// boolToUint32 compiles to a zero-extending move of the bool's byte (no
// branch; see lookupProj for how the code was read).
func boolToUint32(b bool) uint32 {
	var u uint32
	if b {
		u = 1
	}
	return u
}
