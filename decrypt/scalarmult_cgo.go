//go:build cgo && !gofuzz

package decrypt

import (
	"errors"

	ethsecp "github.com/ethereum/go-ethereum/crypto/secp256k1"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// The cgo build multiplies through go-ethereum's crypto/secp256k1, which
// wraps libsecp256k1's secp256k1_ecmult_const: constant time, and faster
// than any pure-Go path here. (go-ethereum's cgo file is excluded under the
// legacy gofuzz tag, hence "!gofuzz" beside "cgo".)

// backendName names the scalar multiplication in use, for tests and docs.
const backendName = "libsecp256k1 (cgo)"

// mulSecret returns k·P in constant time with respect to k, which must be
// in [1, n).
func mulSecret(k *secp256k1.ModNScalar, p *point) point {
	kb := k.Bytes()
	defer clear(kb[:])
	px, py := p.bigXY()
	x, y := ethsecp.S256().ScalarMult(px, py, kb[:])
	if x == nil {
		// Only a zero or out-of-range scalar gets here; callers never pass one.
		panic("decrypt: internal error: invalid scalar in constant-time multiplication")
	}
	return pointFromBig(x, y)
}

// mulSecretBase returns k·G in constant time with respect to k, which must
// be in [1, n).
func mulSecretBase(k *secp256k1.ModNScalar) point {
	return mulSecret(k, &generator)
}

// mulPublic sets out = k·P for public k and P (k = 0 gives the identity).
// libsecp256k1's constant-time multiplication is still faster than
// decred v4.0.1's variable-time one, so the verifier uses it too.
func mulPublic(k *secp256k1.ModNScalar, p *point, out *secp256k1.JacobianPoint) {
	if k.IsZero() {
		*out = secp256k1.JacobianPoint{}
		return
	}
	kb := k.Bytes()
	px, py := p.bigXY()
	x, y := ethsecp.S256().ScalarMult(px, py, kb[:])
	q := pointFromBig(x, y)
	q.jacobian(out)
}

// parsePoint is parsePointGo with libsecp256k1's square root, about twice as
// fast. The length and prefix are checked here first: libsecp256k1 rejects
// other forms at 33 bytes, but the contract must not depend on that.
func parsePoint(b []byte) (point, error) {
	if len(b) != pointLen || (b[0] != 0x02 && b[0] != 0x03) {
		return parsePointGo(b) // for its error message
	}
	x, y := ethsecp.DecompressPubkey(b)
	if x == nil {
		return point{}, errors.New("point is not on the curve or x is not below the field prime")
	}
	return pointFromBig(x, y), nil
}
