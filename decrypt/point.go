package decrypt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// point is an affine secp256k1 point other than the identity, with both
// coordinates normalized.
type point struct {
	x, y secp256k1.FieldVal
}

// generator is G.
var generator = mustPoint("0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")

// fieldP is the field prime p, for the verifier's variable-time inversions.
var fieldP, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)

func mustPoint(h string) point {
	b, err := hex.DecodeString(h)
	if err != nil {
		panic(err)
	}
	p, err := parsePointGo(b)
	if err != nil {
		panic(err)
	}
	return p
}

// parsePointGo parses P(X): exactly 33 bytes, prefix 02 or 03, x below the
// field prime, on the curve. The compressed form cannot encode the identity.
// decred's ParsePubKey is not used because it also accepts the 65-byte
// uncompressed and hybrid forms. Builds pick parsePoint (scalarmult_*.go):
// this function, or libsecp256k1's faster square root under cgo. Every point
// parsed is a public wire value, so neither needs to be constant time.
func parsePointGo(b []byte) (point, error) {
	var p point
	if len(b) != pointLen {
		return p, fmt.Errorf("point is %d bytes, want 33 (compressed form only)", len(b))
	}
	if b[0] != 0x02 && b[0] != 0x03 {
		return p, fmt.Errorf("point prefix must be 02 or 03 (compressed form only)")
	}
	if p.x.SetByteSlice(b[1:]) {
		return p, fmt.Errorf("point x coordinate is not below the field prime")
	}
	if !secp256k1.DecompressY(&p.x, b[0] == 0x03, &p.y) {
		return p, fmt.Errorf("point is not on the curve")
	}
	p.x.Normalize()
	p.y.Normalize()
	return p, nil
}

// checkPointPrefix is the structural part of parsePoint (length and
// prefix), for checks that must happen before any curve work.
func checkPointPrefix(b []byte) bool {
	return len(b) == pointLen && (b[0] == 0x02 || b[0] == 0x03)
}

// bytes returns P(p), the 33-byte compressed encoding.
func (p *point) bytes() [pointLen]byte {
	var out [pointLen]byte
	out[0] = 0x02 | byte(p.y.IsOddBit())
	p.x.PutBytesUnchecked(out[1:])
	return out
}

// bigXY returns the coordinates as big.Int, for go-ethereum's curve API.
func (p *point) bigXY() (*big.Int, *big.Int) {
	xb, yb := p.x.Bytes(), p.y.Bytes()
	return new(big.Int).SetBytes(xb[:]), new(big.Int).SetBytes(yb[:])
}

// jacobian returns p with Z = 1.
func (p *point) jacobian(out *secp256k1.JacobianPoint) {
	out.X.Set(&p.x)
	out.Y.Set(&p.y)
	out.Z.SetInt(1)
}

// pointFromBig builds a point from affine big.Int coordinates returned by
// a scalar multiplication (so known to be on the curve).
func pointFromBig(x, y *big.Int) point {
	var p point
	var buf [32]byte
	p.x.SetBytes((*[32]byte)(x.FillBytes(buf[:])))
	p.y.SetBytes((*[32]byte)(y.FillBytes(buf[:])))
	clear(buf[:])
	p.x.Normalize()
	p.y.Normalize()
	return p
}

// compressPublic converts public Jacobian points to P(X) with one
// variable-time big.Int inversion for all of them (Montgomery's trick;
// several times faster than the constant-time exponentiation). It returns
// the index of the first identity point, or -1. Only for public values.
func compressPublic(js []secp256k1.JacobianPoint, out [][pointLen]byte) int {
	// prefix[i] = Z_0 · … · Z_i
	prefix := make([]secp256k1.FieldVal, len(js))
	for i := range js {
		js[i].Z.Normalize()
		if js[i].Z.IsZero() {
			return i
		}
		if i == 0 {
			prefix[0].Set(&js[0].Z)
		} else {
			prefix[i].Mul2(&prefix[i-1], &js[i].Z).Normalize()
		}
	}
	last := prefix[len(js)-1].Bytes()
	inv := new(big.Int).SetBytes(last[:])
	inv.ModInverse(inv, fieldP)
	var buf [32]byte
	var acc secp256k1.FieldVal // (Z_0 · … · Z_i)^-1 going down
	acc.SetBytes((*[32]byte)(inv.FillBytes(buf[:])))
	for i := len(js) - 1; i >= 0; i-- {
		var zinv, zinv2, x, y secp256k1.FieldVal
		if i > 0 {
			zinv.Mul2(&acc, &prefix[i-1])
			acc.Mul(&js[i].Z)
		} else {
			zinv.Set(&acc)
		}
		zinv2.SquareVal(&zinv)
		x.Mul2(&js[i].X, &zinv2).Normalize()
		y.Mul2(&js[i].Y, &zinv2).Mul(&zinv).Normalize()
		out[i][0] = 0x02 | byte(y.IsOddBit())
		x.PutBytesUnchecked(out[i][1:])
	}
	return -1
}

// challenge computes c = H(stmt ∥ P(A_0) ∥ … ∥ P(A_m)) mod n.
func challenge(stmt *[32]byte, as [][pointLen]byte) secp256k1.ModNScalar {
	h := sha256.New()
	h.Write(stmt[:])
	for i := range as {
		h.Write(as[i][:])
	}
	var sum [32]byte
	h.Sum(sum[:0])
	var c secp256k1.ModNScalar
	c.SetBytes(&sum) // reduces mod n; the overflow flag is irrelevant here
	return c
}
