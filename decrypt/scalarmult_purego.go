//go:build !cgo || gofuzz

package decrypt

import "github.com/decred/dcrd/dcrec/secp256k1/v4"

// backendName names the scalar multiplication in use, for tests and docs.
const backendName = "pure Go (constant-time: GLV split and fixed window for k·P, comb for k·G)"

// mulSecret returns k·P in constant time with respect to k, which must be
// in [1, n).
func mulSecret(k *secp256k1.ModNScalar, p *point) point {
	return ctScalarMult(k, p)
}

// mulSecretBase returns k·G in constant time with respect to k, which must
// be in [1, n).
func mulSecretBase(k *secp256k1.ModNScalar) point {
	return ctScalarBaseMult(k)
}

// mulPublic sets out = k·P for public k and P (k = 0 gives the identity),
// with decred's variable-time multiplication.
func mulPublic(k *secp256k1.ModNScalar, p *point, out *secp256k1.JacobianPoint) {
	if k.IsZero() {
		*out = secp256k1.JacobianPoint{}
		return
	}
	var j secp256k1.JacobianPoint
	p.jacobian(&j)
	secp256k1.ScalarMultNonConst(k, &j, out)
}

// parsePoint parses a compressed point in pure Go.
func parsePoint(b []byte) (point, error) { return parsePointGo(b) }
