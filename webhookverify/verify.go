package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	blockSize = sha256.BlockSize // 64
	macSize   = sha256.Size      // 32
	hexSize   = 2 * macSize      // 64
)

// Sign returns the signature header value the service sends for body: the
// lowercase hexadecimal HMAC-SHA256 of body, keyed with the bytes of secret.
// The fakeserver uses it to sign deliveries; tests use it to build them.
// Sign computes a MAC for any secret, even the empty one, which Verify
// refuses.
func Sign(secret string, body []byte) string {
	var k macKey
	k.init(secret)
	mac := k.sum(body)
	k.clear()
	return hex.EncodeToString(mac[:])
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
func Verify(secret string, body []byte, signatureHeader string) error {
	if secret == "" {
		return ErrNoSecret
	}
	got, err := parseSignature(signatureHeader)
	if err != nil {
		return err
	}
	var k macKey
	k.init(secret)
	want := k.sum(body)
	k.clear()
	if !hmac.Equal(got[:], want[:]) {
		return ErrSignatureMismatch
	}
	return nil
}

// VerifyAny is Verify for secret rotation: it succeeds if any of secrets
// signs body as signatureHeader. During a rotation configure both the old
// and the new secret, then drop the old one once deliveries signed with it
// can no longer arrive (the service retries for up to 24 hours). An empty
// list, or any empty secret in it, yields ErrNoSecret.
func VerifyAny(secrets []string, body []byte, signatureHeader string) error {
	if len(secrets) == 0 {
		return ErrNoSecret
	}
	for _, s := range secrets {
		if s == "" {
			return ErrNoSecret
		}
	}
	got, err := parseSignature(signatureHeader)
	if err != nil {
		return err
	}
	var k macKey
	for _, s := range secrets {
		k.init(s)
		ok := k.verify(body, &got)
		k.clear()
		if ok {
			return nil
		}
	}
	return ErrSignatureMismatch
}

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

// macKey is an HMAC-SHA256 key (RFC 2104) expanded into its inner and outer
// pad blocks. HMAC(K, m) = SHA256(K^opad || SHA256(K^ipad || m)).
//
// It is computed here rather than through crypto/hmac.New because that
// allocates five objects per call; the result is tested byte for byte
// against crypto/hmac.
type macKey struct {
	ipad, opad [blockSize]byte
}

// init derives the pad blocks from secret.
func (k *macKey) init(secret string) {
	var k0 [blockSize]byte
	if len(secret) > blockSize {
		// Keys longer than a block are hashed first (RFC 2104 section 2).
		sum := sha256.Sum256([]byte(secret))
		copy(k0[:], sum[:])
	} else {
		copy(k0[:], secret)
	}
	for i := range k0 {
		k.ipad[i] = k0[i] ^ 0x36
		k.opad[i] = k0[i] ^ 0x5c
	}
	clear(k0[:])
}

// sum returns HMAC-SHA256(key, body).
func (k *macKey) sum(body []byte) [macSize]byte {
	h := sha256.New()
	h.Write(k.ipad[:])
	h.Write(body)
	var outer [blockSize + macSize]byte
	copy(outer[:], k.opad[:])
	h.Sum(outer[:blockSize])
	mac := sha256.Sum256(outer[:])
	clear(outer[:])
	return mac
}

// verify reports, in constant time, whether mac is HMAC-SHA256(key, body).
func (k *macKey) verify(body []byte, mac *[macSize]byte) bool {
	want := k.sum(body)
	return hmac.Equal(want[:], mac[:])
}

// clear wipes the key material.
func (k *macKey) clear() {
	clear(k.ipad[:])
	clear(k.opad[:])
}
