package decrypt

import "errors"

// Sentinel errors. Use errors.Is: the errors this package returns wrap one of
// these with a message naming the field or entry at fault. No error ever
// contains key material, shared secrets, proofs or plaintext figures.
var (
	// ErrMalformed reports input that does not parse: wrong length, suite
	// byte, point encoding, scalar range, duplicate asset, trailing bytes,
	// or an argument outside its documented range. A server answers 422
	// with reason "malformed".
	ErrMalformed = errors.New("decrypt: malformed input")

	// ErrStale reports a proof made for a ciphertext version that is no
	// longer the current one. The client should fetch the balances and prove
	// again. A server answers 422 with reason "stale".
	ErrStale = errors.New("decrypt: stale ciphertext version")

	// ErrVerification reports a proof that does not verify, or a ciphertext
	// or note that does not authenticate under the given key and context.
	// A server answers 422 with reason "verification_failed".
	ErrVerification = errors.New("decrypt: verification failed")

	// ErrNotForThisKey reports a private key that does not belong to the
	// account, or that is not one of a note's readers.
	ErrNotForThisKey = errors.New("decrypt: not encrypted for this key")

	// ErrCorruptCiphertext reports that the verifier's own current data is
	// bad: a stored ciphertext that does not parse, an asset listed twice,
	// or a proof that verifies but whose ciphertext does not open. It is a
	// server bug (500), never the client's fault.
	ErrCorruptCiphertext = errors.New("decrypt: corrupt stored ciphertext")
)
