package decrypt

import (
	"crypto/hkdf"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Suite is the format byte that opens every ciphertext, proof and note. It
// fixes the whole suite: secp256k1, SHA-256, HKDF-SHA256, AES-256-GCM and
// the "cpay/v1/" domain tags.
const Suite byte = 0x01

// redactedKey is what every secret-holding type prints.
const redactedKey = "decrypt.PrivateKey(REDACTED)"

// minSeedLen is the shortest seed DeriveKey accepts (a choice: the design
// is silent; 16 bytes matches secp256k1's 128-bit security level).
const minSeedLen = 16

// PrivateKey is an account's encryption key ek, a scalar 1 ≤ ek < n. It is
// separate from the account's signing key. It never prints: String,
// GoString, Format, MarshalText and LogValue all give
// "decrypt.PrivateKey(REDACTED)". Export it explicitly with Hex or Bytes.
type PrivateKey struct {
	s   secp256k1.ModNScalar
	pub *PublicKey
}

// PublicKey is an account's public encryption key EK = ek·G, shown on the
// account object as encryption_key (hex of the 33-byte compressed point).
type PublicKey struct {
	b [pointLen]byte
	p point
}

// GenerateKey returns a new random private key. rand nil means crypto/rand.
func GenerateKey(rand io.Reader) (*PrivateKey, error) {
	s, err := randScalar(rand)
	if err != nil {
		return nil, err
	}
	k := newPrivateKey(&s)
	s.Zero()
	return k, nil
}

// DeriveKey derives an account's private key from a seed of at least 16
// bytes: ek = HKDF-SHA256(ikm = seed, salt = "cpay/v1/enc-key",
// info = u64 chainID ∥ addr ∥ u32 ctr, 32 bytes), for the first ctr = 0, 1, …
// that gives 1 ≤ ek < n. Every u32 counter may be tried: there is no limit
// below 2^32 (a try fails with probability below 2^-127, so ctr is 0 in
// practice); only if all 2^32 failed would it return an error.
func DeriveKey(seed []byte, chainID uint64, addr [20]byte) (*PrivateKey, error) {
	if len(seed) < minSeedLen {
		return nil, fmt.Errorf("%w: seed is %d bytes, want at least %d", ErrMalformed, len(seed), minSeedLen)
	}
	info := make([]byte, 0, 8+20+4)
	info = binary.BigEndian.AppendUint64(info, chainID)
	info = append(info, addr[:]...)
	info = append(info, 0, 0, 0, 0)
	return firstScalar(func(ctr uint32) ([]byte, error) {
		binary.BigEndian.PutUint32(info[28:], ctr)
		return hkdf.Key(sha256.New, seed, []byte(tagEncKey), string(info), scalarLen)
	})
}

// firstScalar returns the key made from the first candidate(ctr), for ctr
// = 0, 1, …, 2^32 − 1, that is a scalar in [1, n). Every u32 counter may be
// tried; only if all failed (each fails with probability below 2^-127) does
// it return an error.
func firstScalar(candidate func(ctr uint32) ([]byte, error)) (*PrivateKey, error) {
	for ctr := uint64(0); ctr <= math.MaxUint32; ctr++ {
		okm, err := candidate(uint32(ctr))
		if err != nil {
			return nil, fmt.Errorf("decrypt: deriving key: %w", err)
		}
		var s secp256k1.ModNScalar
		overflow := s.SetBytes((*[32]byte)(okm))
		clear(okm)
		if overflow == 0 && !s.IsZero() {
			k := newPrivateKey(&s)
			s.Zero()
			return k, nil
		}
	}
	return nil, errors.New("decrypt: deriving key: no valid scalar for any u32 counter")
}

// NewPrivateKey returns the private key with the 32-byte big-endian scalar
// b, which must satisfy 1 ≤ b < n.
func NewPrivateKey(b []byte) (*PrivateKey, error) {
	if len(b) != scalarLen {
		return nil, fmt.Errorf("%w: private key is %d bytes, want 32", ErrMalformed, len(b))
	}
	var s secp256k1.ModNScalar
	if s.SetBytes((*[32]byte)(b)) != 0 {
		s.Zero()
		return nil, fmt.Errorf("%w: private key is not below the group order", ErrMalformed)
	}
	if s.IsZero() {
		return nil, fmt.Errorf("%w: private key is zero", ErrMalformed)
	}
	k := newPrivateKey(&s)
	s.Zero()
	return k, nil
}

// ParsePrivateKeyHex parses a private key written as 64 hex digits (no
// prefix). Errors never quote the input.
func ParsePrivateKeyHex(s string) (*PrivateKey, error) {
	if len(s) != 2*scalarLen {
		return nil, fmt.Errorf("%w: private key hex is %d characters, want 64", ErrMalformed, len(s))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		// The hex package's error quotes the offending character: drop it.
		return nil, fmt.Errorf("%w: private key is not hex", ErrMalformed)
	}
	defer clear(b)
	return NewPrivateKey(b)
}

func newPrivateKey(s *secp256k1.ModNScalar) *PrivateKey {
	k := &PrivateKey{}
	k.s.Set(s)
	k.pub = publicKeyFromPoint(mulSecretBase(&k.s))
	return k
}

// valid reports whether k was made by this package.
func (k *PrivateKey) valid() bool { return k != nil && k.pub != nil }

// Bytes returns the 32-byte big-endian scalar. Handle it as the secret it is.
func (k *PrivateKey) Bytes() []byte {
	b := k.s.Bytes()
	out := append([]byte(nil), b[:]...)
	clear(b[:])
	return out
}

// Hex returns the scalar as 64 lowercase hex digits: the explicit export.
func (k *PrivateKey) Hex() string {
	b := k.Bytes()
	defer clear(b)
	return hex.EncodeToString(b)
}

// PublicKey returns EK = ek·G.
func (k *PrivateKey) PublicKey() *PublicKey { return k.pub }

// String returns "decrypt.PrivateKey(REDACTED)".
func (k PrivateKey) String() string { return redactedKey }

// GoString returns "decrypt.PrivateKey(REDACTED)".
func (k PrivateKey) GoString() string { return redactedKey }

// Format prints "decrypt.PrivateKey(REDACTED)" for every verb.
func (k PrivateKey) Format(f fmt.State, _ rune) { io.WriteString(f, redactedKey) }

// MarshalText returns "decrypt.PrivateKey(REDACTED)", so that encoding a
// struct that holds a key by accident never writes the key.
func (k PrivateKey) MarshalText() ([]byte, error) { return []byte(redactedKey), nil }

// LogValue keeps the key out of log/slog output.
func (k PrivateKey) LogValue() slog.Value { return slog.StringValue(redactedKey) }

// NewPublicKey parses a 33-byte compressed point (prefix 02 or 03, on the
// curve). Uncompressed and hybrid 65-byte forms are rejected.
func NewPublicKey(b []byte) (*PublicKey, error) {
	p, err := parsePoint(b)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %v", ErrMalformed, err)
	}
	return publicKeyFromPoint(p), nil
}

// ParsePublicKeyHex parses a public key written as 66 hex digits (no prefix).
func ParsePublicKeyHex(s string) (*PublicKey, error) {
	if len(s) != 2*pointLen {
		return nil, fmt.Errorf("%w: public key hex is %d characters, want 66", ErrMalformed, len(s))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: public key is not hex", ErrMalformed)
	}
	return NewPublicKey(b)
}

func publicKeyFromPoint(p point) *PublicKey {
	return &PublicKey{b: p.bytes(), p: p}
}

// valid reports whether p was made by this package.
func (p *PublicKey) valid() bool { return p != nil && (p.b[0] == 0x02 || p.b[0] == 0x03) }

// Bytes returns the 33-byte compressed encoding.
func (p *PublicKey) Bytes() []byte { return append([]byte(nil), p.b[:]...) }

// Hex returns the compressed encoding as 66 lowercase hex digits.
func (p *PublicKey) Hex() string { return hex.EncodeToString(p.b[:]) }

// String returns Hex: a public key is public.
func (p *PublicKey) String() string { return p.Hex() }

// Equal reports whether p and q are the same key. Two nil keys are equal.
func (p *PublicKey) Equal(q *PublicKey) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.b == q.b
}

// MarshalText returns Hex, the form of the account's encryption_key field.
func (p *PublicKey) MarshalText() ([]byte, error) { return []byte(p.Hex()), nil }

// UnmarshalText parses the hex form strictly (see ParsePublicKeyHex).
func (p *PublicKey) UnmarshalText(b []byte) error {
	q, err := ParsePublicKeyHex(string(b))
	if err != nil {
		return err
	}
	*p = *q
	return nil
}

// randScalar draws a uniform scalar in [1, n) by rejection: 32 bytes at a
// time from rand (nil means crypto/rand), retried while ≥ n or zero.
func randScalar(rand io.Reader) (secp256k1.ModNScalar, error) {
	if rand == nil {
		rand = cryptorand.Reader
	}
	var s secp256k1.ModNScalar
	var buf [scalarLen]byte
	defer clear(buf[:])
	for range 64 {
		if _, err := io.ReadFull(rand, buf[:]); err != nil {
			return s, fmt.Errorf("decrypt: reading randomness: %w", err)
		}
		if s.SetBytes(&buf) == 0 && !s.IsZero() {
			return s, nil
		}
	}
	s.Zero()
	return s, errors.New("decrypt: randomness source keeps giving invalid scalars")
}

// readRandom fills b from rand (nil means crypto/rand).
func readRandom(rand io.Reader, b []byte) error {
	if rand == nil {
		rand = cryptorand.Reader
	}
	if _, err := io.ReadFull(rand, b); err != nil {
		return fmt.Errorf("decrypt: reading randomness: %w", err)
	}
	return nil
}
