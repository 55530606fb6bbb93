package decrypt

import (
	"encoding/base64"
	"fmt"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
)

// EncodeBase64 returns b as base64url without padding, the form in which the
// API carries ciphertexts, proofs and notes.
func EncodeBase64(b []byte) string {
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeBase64 decodes base64url without padding, strictly: padding,
// characters outside the URL-safe alphabet, line breaks and non-zero
// trailing bits are all rejected with an error wrapping ErrMalformed.
func DecodeBase64(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		// encoding/base64 skips CR and LF even in strict mode.
		if s[i] == '\r' || s[i] == '\n' {
			return nil, fmt.Errorf("%w: base64url: line break at offset %d", ErrMalformed, i)
		}
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		if off, ok := err.(base64.CorruptInputError); ok {
			return nil, fmt.Errorf("%w: base64url without padding: bad input at offset %d", ErrMalformed, int64(off))
		}
		return nil, fmt.Errorf("%w: base64url without padding", ErrMalformed)
	}
	return b, nil
}

// MaxMemoBytes is the longest memo a note can carry, in bytes of UTF-8.
// The SDK and the fakeserver refuse a longer one before anything is sealed.
const MaxMemoBytes = 1024

// Limits of the wire formats.
const (
	maxProofAssets = 16  // m in a decryption proof
	maxNoteReaders = 4   // m in a note
	maxAsset       = 64  // bytes of an asset code (a choice: the design is silent)
	maxReference   = 255 // bytes of a note reference (a choice: the design is silent)

	pointLen      = 33
	scalarLen     = 32
	amountLen     = 32
	tagLen        = 16
	ciphertextLen = 1 + pointLen + amountLen + tagLen // 82
	wrapLen       = 32 + tagLen                       // 48
	commitLen     = 32                                // kc in a note
	notePadBlock  = 64
)

// Domain tags. Every tag starts with "cpay/v1/" and changes with Suite.
const (
	tagEncKey        = "cpay/v1/enc-key"
	tagBalanceCtx    = "cpay/v1/balance-ctx"
	tagBalanceKey    = "cpay/v1/balance-key"
	tagDecryptProof  = "cpay/v1/decryption-proof"
	tagNoteCtx       = "cpay/v1/note-ctx"
	tagNoteKEK       = "cpay/v1/note-kek"
	tagNoteBody      = "cpay/v1/note-body"
	tagNoteCommit    = "cpay/v1/note-commit"
	hkdfOutputLength = 32 + 12 // AES-256 key and GCM nonce
)

// addLPString adds lp(s) = u16(len s) ∥ s; past 65535 bytes the builder
// fails (callers check lengths first, so BytesOrPanic never panics).
func addLPString(b *cryptobyte.Builder, s string) {
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
}

// validAsset reports whether s is an acceptable asset code: 1 to 64 bytes of
// printable ASCII without spaces. The design leaves the alphabet open; codes
// such as "USDG" and "ETH" fit, and a strict alphabet keeps lp(asset) short
// and unambiguous in every transcript.
func validAsset(s string) bool {
	if len(s) == 0 || len(s) > maxAsset {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkAsset returns an error naming what is wrong with an asset code.
func checkAsset(what, s string) error {
	if !validAsset(s) {
		return fmt.Errorf("%w: %s: asset code must be 1 to %d printable ASCII bytes without spaces", ErrMalformed, what, maxAsset)
	}
	return nil
}

// amountBytes encodes 0 ≤ a < 2^256 as 32 bytes big-endian.
func amountBytes(what string, a *big.Int) ([amountLen]byte, error) {
	var out [amountLen]byte
	switch {
	case a == nil:
		return out, fmt.Errorf("%w: %s: amount is nil", ErrMalformed, what)
	case a.Sign() < 0:
		return out, fmt.Errorf("%w: %s: amount is negative", ErrMalformed, what)
	case a.BitLen() > 8*amountLen:
		return out, fmt.Errorf("%w: %s: amount does not fit in 256 bits", ErrMalformed, what)
	}
	a.FillBytes(out[:])
	return out, nil
}
