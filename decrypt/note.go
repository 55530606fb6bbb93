package decrypt

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"unicode/utf8"
)

// NoteContext is what a note is bound to besides its bytes: the chain, the
// transfer id (or held transaction id) and the readers' keys in wrap order.
// Both sides must present the same context.
type NoteContext struct {
	ChainID   uint64
	Reference string       // transfer id or held transaction id, 1 to 255 bytes
	Readers   []*PublicKey // in wrap order; 1 to 4, no duplicates
}

// Note is an opened note: a transfer's amount and memo. String, GoString,
// Format and LogValue redact both; read the fields explicitly.
type Note struct {
	Amount *big.Int
	Memo   string
}

const redactedNote = "decrypt.Note(REDACTED)"

// String returns "decrypt.Note(REDACTED)".
func (n Note) String() string { return redactedNote }

// GoString returns "decrypt.Note(REDACTED)".
func (n Note) GoString() string { return redactedNote }

// Format prints "decrypt.Note(REDACTED)" for every verb.
func (n Note) Format(f fmt.State, _ rune) { io.WriteString(f, redactedNote) }

// LogValue keeps the amount and memo out of log/slog output, whose JSON
// handler would otherwise encode the fields.
func (n Note) LogValue() slog.Value { return slog.StringValue(redactedNote) }

// SealNote seals amount (0 ≤ amount < 2^256) and memo (valid UTF-8, at most
// 1024 bytes) so that each reader, and nobody else, can open them:
//
//	0x01 ∥ P(R = r·G) ∥ u8 m ∥ m × wrap_i (48) ∥ body
//
// rand (nil means crypto/rand) supplies r (32 bytes, redrawn while not in
// [1, n)) and then the 32-byte body key K.
func SealNote(rand io.Reader, ctx NoteContext, amount *big.Int, memo string) ([]byte, error) {
	if err := ctx.check(); err != nil {
		return nil, err
	}
	ab, err := amountBytes("note", amount)
	if err != nil {
		return nil, err
	}
	defer clear(ab[:])
	if len(memo) > maxMemo {
		return nil, fmt.Errorf("%w: note: memo is %d bytes, at most %d", ErrMalformed, len(memo), maxMemo)
	}
	if !utf8.ValidString(memo) {
		return nil, fmt.Errorf("%w: note: memo is not valid UTF-8", ErrMalformed)
	}
	r, err := randScalar(rand)
	if err != nil {
		return nil, err
	}
	defer r.Zero()
	var key [32]byte
	defer clear(key[:])
	if err := readRandom(rand, key[:]); err != nil {
		return nil, err
	}

	R := mulSecret(&r, &generator)
	rb := R.bytes()
	mh := noteHash(ctx, &rb)
	m := len(ctx.Readers)
	body := notePlainLen(len(memo))
	out := make([]byte, 0, 1+pointLen+1+m*wrapLen+body+tagLen)
	out = append(out, Suite)
	out = append(out, rb[:]...)
	out = append(out, byte(m))
	for i, ek := range ctx.Readers {
		S := mulSecret(&r, &ek.p)
		sb := S.bytes()
		aead, nonce := deriveAEAD(sb[:], nil, tagNoteKEK, []byte{byte(i)}, mh[:])
		clear(sb[:])
		out = aead.Seal(out, nonce, key[:], mh[:])
	}
	pt := make([]byte, 0, body)
	pt = append(pt, ab[:]...)
	pt = appendU16(pt, len(memo))
	pt = append(pt, memo...)
	pt = pt[:body] // zero padding: make gave zeroed capacity
	aead, nonce := deriveAEAD(key[:], nil, tagNoteBody, mh[:])
	out = aead.Seal(out, nonce, pt, mh[:])
	clear(pt)
	return out, nil
}

// OpenNote opens a note with a reader's private key. k must be one of
// ctx.Readers, else ErrNotForThisKey; k is tried against each wrap. A note
// that does not parse or does not match the context's reader count gives
// ErrMalformed; one that does not authenticate (another context, swapped or
// altered bytes) gives ErrVerification.
func OpenNote(k *PrivateKey, ctx NoteContext, note []byte) (*Note, error) {
	if !k.valid() {
		return nil, errors.New("decrypt: private key is nil or was not made by this package")
	}
	if err := ctx.check(); err != nil {
		return nil, err
	}
	m := len(ctx.Readers)
	if err := checkNoteShape(note, m); err != nil {
		return nil, fmt.Errorf("%w: note: %v", ErrMalformed, err)
	}
	reader := false
	for _, ek := range ctx.Readers {
		reader = reader || ek.Equal(k.pub)
	}
	if !reader {
		return nil, fmt.Errorf("%w: the key is not one of the note's readers", ErrNotForThisKey)
	}
	R, err := parsePoint(note[1 : 1+pointLen])
	if err != nil {
		return nil, fmt.Errorf("%w: note: R: %v", ErrMalformed, err)
	}
	rb := (*[pointLen]byte)(note[1 : 1+pointLen])
	mh := noteHash(ctx, rb)
	S := mulSecret(&k.s, &R)
	sb := S.bytes()
	defer clear(sb[:])

	var key [32]byte
	defer clear(key[:])
	opened := false
	wraps := note[1+pointLen+1:]
	for i := range m {
		aead, nonce := deriveAEAD(sb[:], nil, tagNoteKEK, []byte{byte(i)}, mh[:])
		if _, err := aead.Open(key[:0], nonce, wraps[i*wrapLen:(i+1)*wrapLen], mh[:]); err == nil {
			opened = true
			break
		}
	}
	if !opened {
		return nil, fmt.Errorf("%w: note: no wrap opens with this key and context", ErrVerification)
	}
	aead, nonce := deriveAEAD(key[:], nil, tagNoteBody, mh[:])
	pt, err := aead.Open(nil, nonce, wraps[m*wrapLen:], mh[:])
	if err != nil {
		return nil, fmt.Errorf("%w: note: body does not open", ErrVerification)
	}
	defer clear(pt)
	return parseNotePlain(pt)
}

// parseNotePlain reads amount ∥ u16 len ∥ memo ∥ zero pad, strictly.
func parseNotePlain(pt []byte) (*Note, error) {
	n := int(binary.BigEndian.Uint16(pt[amountLen:]))
	if n > maxMemo {
		return nil, fmt.Errorf("%w: note: memo length exceeds %d bytes", ErrMalformed, maxMemo)
	}
	if len(pt) != notePlainLen(n) {
		return nil, fmt.Errorf("%w: note: padding is not minimal", ErrMalformed)
	}
	var nonzero byte
	for _, c := range pt[amountLen+2+n:] {
		nonzero |= c
	}
	if subtle.ConstantTimeByteEq(nonzero, 0) != 1 {
		return nil, fmt.Errorf("%w: note: padding is not zero", ErrMalformed)
	}
	memo := pt[amountLen+2 : amountLen+2+n]
	if !utf8.Valid(memo) {
		return nil, fmt.Errorf("%w: note: memo is not valid UTF-8", ErrMalformed)
	}
	return &Note{Amount: new(big.Int).SetBytes(pt[:amountLen]), Memo: string(memo)}, nil
}

// notePlainLen is len(amount ∥ u16 len ∥ memo) rounded up to a multiple of 64.
func notePlainLen(memoLen int) int {
	n := amountLen + 2 + memoLen
	return (n + notePadBlock - 1) / notePadBlock * notePadBlock
}

// checkNoteShape checks lengths, suite byte, R prefix and m, without curve work.
func checkNoteShape(note []byte, readers int) error {
	const head = 1 + pointLen + 1
	if len(note) < head {
		return fmt.Errorf("%d bytes, too short", len(note))
	}
	if note[0] != Suite {
		return errors.New("suite byte is not 0x01")
	}
	if !checkPointPrefix(note[1 : 1+pointLen]) {
		return errors.New("the point R must start 02 or 03 (compressed form only)")
	}
	m := int(note[1+pointLen])
	if m < 1 || m > maxNoteReaders {
		return fmt.Errorf("has %d readers, want 1 to %d", m, maxNoteReaders)
	}
	if m != readers {
		return fmt.Errorf("has %d readers, the context names %d", m, readers)
	}
	body := len(note) - head - m*wrapLen - tagLen
	if body < notePadBlock || body > notePlainLen(maxMemo) || body%notePadBlock != 0 {
		return fmt.Errorf("body length %d is not a valid padded length", len(note)-head-m*wrapLen)
	}
	return nil
}

// check validates the context.
func (ctx NoteContext) check() error {
	if len(ctx.Reference) == 0 || len(ctx.Reference) > maxReference {
		return fmt.Errorf("%w: note context: reference must be 1 to %d bytes", ErrMalformed, maxReference)
	}
	m := len(ctx.Readers)
	if m < 1 || m > maxNoteReaders {
		return fmt.Errorf("%w: note context: %d readers, want 1 to %d", ErrMalformed, m, maxNoteReaders)
	}
	for i, ek := range ctx.Readers {
		if !ek.valid() {
			return fmt.Errorf("%w: note context: reader %d has no key", ErrMalformed, i)
		}
		for j := range i {
			if ctx.Readers[j].Equal(ek) {
				return fmt.Errorf("%w: note context: reader %d repeats reader %d", ErrMalformed, i, j)
			}
		}
	}
	return nil
}

// noteHash computes
//
//	mh = H(lp("cpay/v1/note-ctx") ∥ u64 chain ∥ lp(reference) ∥ u8 m ∥ Σ P(EK_i) ∥ P(R))
func noteHash(ctx NoteContext, rb *[pointLen]byte) [32]byte {
	buf := make([]byte, 0, 2+len(tagNoteCtx)+8+2+len(ctx.Reference)+1+(len(ctx.Readers)+1)*pointLen)
	buf = appendLPString(buf, tagNoteCtx)
	buf = appendU64(buf, ctx.ChainID)
	buf = appendLPString(buf, ctx.Reference)
	buf = append(buf, byte(len(ctx.Readers)))
	for _, ek := range ctx.Readers {
		buf = append(buf, ek.b[:]...)
	}
	buf = append(buf, rb[:]...)
	return sha256.Sum256(buf)
}
