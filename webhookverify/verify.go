package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// Header names carried by every delivery.
const (
	// SignatureHeader carries the lowercase hexadecimal HMAC-SHA256 of the
	// raw request body, keyed with the subscription secret's bytes.
	SignatureHeader = "X-Service-Signature"
	// EventIDHeader repeats the event's id (evt_...). It is not covered by
	// the signature; trust the event_id inside the verified body instead.
	EventIDHeader = "X-Service-Event-Id"
	// AttemptHeader carries the delivery attempt number (1 for the first
	// attempt). It is not covered by the signature.
	AttemptHeader = "X-Service-Delivery-Attempt"
)

// Errors returned by Verify, VerifyAny and ConstructEvent. They never carry
// the secret, the expected MAC or the received header value; match them with
// errors.Is.
var (
	// ErrMissingSignature means the signature header is absent or blank.
	ErrMissingSignature = errors.New("webhookverify: missing signature header")
	// ErrMalformedSignature means the signature header is not exactly 64
	// hexadecimal digits.
	ErrMalformedSignature = errors.New("webhookverify: malformed signature header")
	// ErrSignatureMismatch means the header is well formed but no configured
	// secret produces it for this body.
	ErrSignatureMismatch = errors.New("webhookverify: signature does not match")
	// ErrNoSecret means no usable secret was given: an empty list, or an
	// empty string, which is always a configuration mistake (an unset
	// environment variable, say) and would let anyone sign deliveries.
	ErrNoSecret = errors.New("webhookverify: no signing secret configured")
)

const (
	macSize = sha256.Size // 32
	hexSize = 2 * macSize // 64
)

// Sign returns the signature header value the service sends for body: the
// lowercase hexadecimal HMAC-SHA256 of body, keyed with the bytes of secret.
// The fakeserver uses it to sign deliveries; tests use it to build them.
// Sign computes a MAC for any secret, even the empty one, which Verify
// refuses.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks that signatureHeader is the HMAC-SHA256 of body under
// secret. It returns nil on success, or an error matching one of
// ErrNoSecret, ErrMissingSignature, ErrMalformedSignature or
// ErrSignatureMismatch. The comparison is constant time.
//
// The header must be exactly 64 hexadecimal digits once surrounding spaces
// and tabs are trimmed (HTTP optional whitespace; net/http already trims it
// from headers it parses). Upper- and lowercase digits are both accepted:
// the header is decoded and the 32 bytes compared, so case carries no
// meaning. Anything else, including a "sha256=" prefix or a list of
// signatures, is malformed.
//
// body must be the exact bytes received, before any JSON decoding.
//
// Verify keys a fresh HMAC for each call. A receiver that verifies many
// deliveries should build a Verifier once (Handler does): it keys the HMAC
// once per secret and verifies with no allocation.
func Verify(secret string, body []byte, signatureHeader string) error {
	return VerifyAny([]string{secret}, body, signatureHeader)
}

// VerifyAny is Verify for secret rotation: it succeeds if any of secrets
// signs body as signatureHeader. During a rotation configure both the old
// and the new secret, then drop the old one once deliveries signed with it
// can no longer arrive (the service retries for up to 24 hours). An empty
// list, or any empty secret in it, yields ErrNoSecret.
func VerifyAny(secrets []string, body []byte, signatureHeader string) error {
	if err := checkSecrets(secrets); err != nil {
		return err
	}
	got, err := parseSignature(signatureHeader)
	if err != nil {
		return err
	}
	var sum [macSize]byte
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write(body)
		if hmac.Equal(m.Sum(sum[:0]), got[:]) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// checkSecrets refuses an empty list and an empty secret.
func checkSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return ErrNoSecret
	}
	for _, s := range secrets {
		if s == "" {
			return ErrNoSecret
		}
	}
	return nil
}

// Verifier verifies signatures against a fixed set of secrets, with an
// HMAC keyed once per secret (crypto/hmac, Reset per message): no
// allocation per verification. It is safe for concurrent use. Build it
// once with NewVerifier; it never prints its secrets.
type Verifier struct {
	keys []*macKey
}

// NewVerifier returns a Verifier for secrets (the current one first during
// a rotation, as VerifyAny takes them). It fails with ErrNoSecret for an
// empty list or an empty secret.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if err := checkSecrets(secrets); err != nil {
		return nil, err
	}
	v := &Verifier{keys: make([]*macKey, len(secrets))}
	for i, s := range secrets {
		v.keys[i] = newMACKey(s)
	}
	return v, nil
}

// Verify is the package's VerifyAny with the Verifier's secrets.
func (v *Verifier) Verify(body []byte, signatureHeader string) error {
	got, err := parseSignature(signatureHeader)
	if err != nil {
		return err
	}
	for _, k := range v.keys {
		if k.verify(body, &got) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// String describes the verifier without its secrets.
func (v *Verifier) String() string {
	return fmt.Sprintf("webhookverify.Verifier{Secrets: [%d redacted]}", len(v.keys))
}

// GoString is String.
func (v *Verifier) GoString() string { return v.String() }

// Format prints String for every verb.
func (v *Verifier) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, v.String()) }

// parseSignature trims surrounding spaces and tabs and decodes exactly 64
// hexadecimal digits of either case. The error never echoes the header.
func parseSignature(h string) (mac [macSize]byte, err error) {
	for len(h) > 0 && (h[0] == ' ' || h[0] == '\t') {
		h = h[1:]
	}
	for len(h) > 0 && (h[len(h)-1] == ' ' || h[len(h)-1] == '\t') {
		h = h[:len(h)-1]
	}
	if h == "" {
		return mac, ErrMissingSignature
	}
	if len(h) != hexSize {
		return mac, fmt.Errorf("%w: want %d hex digits, got %d characters", ErrMalformedSignature, hexSize, len(h))
	}
	for i := range mac {
		hi, ok1 := fromHex(h[2*i])
		lo, ok2 := fromHex(h[2*i+1])
		if !ok1 || !ok2 {
			return mac, fmt.Errorf("%w: not a hex digit near position %d", ErrMalformedSignature, 2*i)
		}
		mac[i] = hi<<4 | lo
	}
	return mac, nil
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// macKey is one secret's HMAC-SHA256 (crypto/hmac), keyed once: a pool of
// keyed states, each Reset before a message, so that concurrent
// verifications share no state and allocate nothing.
type macKey struct {
	pool sync.Pool // of *macState
}

// macState is one keyed HMAC and the buffer its sum is written to.
type macState struct {
	h   hash.Hash
	sum [macSize]byte
}

func newMACKey(secret string) *macKey {
	key := []byte(secret)
	k := &macKey{}
	k.pool.New = func() any { return &macState{h: hmac.New(sha256.New, key)} }
	return k
}

// verify reports, in constant time, whether mac is HMAC-SHA256(key, body).
func (k *macKey) verify(body []byte, mac *[macSize]byte) bool {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	st.h.Write(body)
	ok := hmac.Equal(st.h.Sum(st.sum[:0]), mac[:])
	clear(st.sum[:])
	k.pool.Put(st)
	return ok
}
