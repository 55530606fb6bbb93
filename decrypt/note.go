package decrypt

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
)

// NoteContext is what a note is bound to besides its bytes: the chain, the
// transfer id (or held transaction id), the asset of the payment and the
// readers' keys in wrap order. Both sides must present the same context; a
// note opened under another asset (or any other field) does not open, so the
// asset a reader gets back in Note.Asset is authenticated.
type NoteContext struct {
	ChainID   uint64
	Reference string       // transfer id or held transaction id, 1 to 255 bytes
	Asset     string       // asset code of the payment, as in the balance context
	Readers   []*PublicKey // in wrap order; 1 to 4, no duplicates
}

// Note is an opened note: a transfer's amount (in base units of Asset) and
// memo. Asset is the context's asset, which the note authenticates: take
// the amount's decimals from it, never from an unauthenticated field.
// String, GoString, Format and LogValue redact everything; read the fields
// explicitly.
type Note struct {
	Asset  string
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

// SealNote seals amount (0 ≤ amount < 2^256, in base units of ctx.Asset)
// and memo (valid UTF-8, at most 1024 bytes) so that each reader, and
// nobody else, can open them, and all of them read the same values:
//
//	0x01 ∥ P(R = r·G) ∥ u8 m ∥ m × wrap_i (48) ∥ kc (32) ∥ body
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
	if len(memo) > MaxMemoBytes {
		return nil, fmt.Errorf("%w: note: memo is %d bytes, at most %d", ErrMalformed, len(memo), MaxMemoBytes)
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

	R := mulSecretBase(&r)
	rb := R.bytes()
	mh := noteHash(ctx, &rb)
	m := len(ctx.Readers)
	bodyLen := notePlainLen(len(memo))

	// The plaintext: uint256 amount ∥ lp(memo) ∥ zero pad.
	pb := cryptobyte.NewFixedBuilder(make([]byte, 0, bodyLen))
	pb.AddBytes(ab[:])
	pb.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(memo)) })
	pb.AddBytes(make([]byte, bodyLen-amountLen-2-len(memo)))
	pt := pb.BytesOrPanic()
	defer clear(pt)

	kc := noteCommitment(key[:], &mh)
	b := cryptobyte.NewFixedBuilder(make([]byte, 0, noteLen(m, bodyLen)))
	b.AddUint8(Suite)
	b.AddBytes(rb[:])
	b.AddUint8(uint8(m))
	for i, ek := range ctx.Readers {
		S := mulSecret(&r, &ek.p)
		sb := S.bytes()
		aead, nonce := deriveAEAD(sb[:], nil, tagNoteKEK, []byte{byte(i)}, mh[:])
		clear(sb[:])
		b.AddBytes(aead.Seal(nil, nonce, key[:], mh[:]))
	}
	b.AddBytes(kc[:])
	aead, nonce := deriveAEAD(key[:], nil, tagNoteBody, mh[:])
	b.AddBytes(aead.Seal(nil, nonce, pt, mh[:]))
	return b.BytesOrPanic(), nil
}

// noteLen is the length of a note with m readers and a padded plaintext of
// bodyLen bytes.
func noteLen(m, bodyLen int) int {
	return 1 + pointLen + 1 + m*wrapLen + commitLen + bodyLen + tagLen
}

// OpenNote opens a note with a reader's private key. k must be one of
// ctx.Readers, else ErrNotForThisKey; k is tried against each wrap. A note
// that does not parse or does not match the context's reader count gives
// ErrMalformed; one that does not authenticate (another context, swapped or
// altered bytes, or a wrap whose key does not match the key commitment kc)
// gives ErrVerification. The returned note's Asset is ctx.Asset, which the
// note authenticates.
func OpenNote(k *PrivateKey, ctx NoteContext, note []byte) (*Note, error) {
	if !k.valid() {
		return nil, errors.New("decrypt: private key is nil or was not made by this package")
	}
	if err := ctx.check(); err != nil {
		return nil, err
	}
	parts, err := parseNote(note, len(ctx.Readers))
	if err != nil {
		return nil, fmt.Errorf("%w: note: %v", ErrMalformed, err)
	}
	reader := false
	for _, ek := range ctx.Readers {
		reader = reader || ek.Equal(k.pub)
	}
	if !reader {
		return nil, fmt.Errorf("%w: the key is not one of the note's readers", ErrNotForThisKey)
	}
	R, err := parsePoint(parts.r)
	if err != nil {
		return nil, fmt.Errorf("%w: note: R: %v", ErrMalformed, err)
	}
	mh := noteHash(ctx, (*[pointLen]byte)(parts.r))
	S := mulSecret(&k.s, &R)
	sb := S.bytes()
	defer clear(sb[:])

	var key [32]byte
	defer clear(key[:])
	opened := false
	for i, wrap := range parts.wraps {
		aead, nonce := deriveAEAD(sb[:], nil, tagNoteKEK, []byte{byte(i)}, mh[:])
		if _, err := aead.Open(key[:0], nonce, wrap, mh[:]); err == nil {
			opened = true
			break
		}
	}
	if !opened {
		return nil, fmt.Errorf("%w: note: no wrap opens with this key and context", ErrVerification)
	}
	// Key commitment: the body is not touched unless K is the key every
	// other reader gets too.
	kc := noteCommitment(key[:], &mh)
	if subtle.ConstantTimeCompare(kc[:], parts.kc) != 1 {
		return nil, fmt.Errorf("%w: note: the key in this reader's wrap does not match the key commitment", ErrVerification)
	}
	aead, nonce := deriveAEAD(key[:], nil, tagNoteBody, mh[:])
	pt, err := aead.Open(nil, nonce, parts.body, mh[:])
	if err != nil {
		return nil, fmt.Errorf("%w: note: body does not open", ErrVerification)
	}
	defer clear(pt)
	n, err := parseNotePlain(pt)
	if err != nil {
		return nil, err
	}
	n.Asset = ctx.Asset
	return n, nil
}

// parseNotePlain reads amount ∥ u16 len ∥ memo ∥ zero pad, strictly.
func parseNotePlain(pt []byte) (*Note, error) {
	s := cryptobyte.String(pt)
	var amount []byte
	var n uint16
	if !s.ReadBytes(&amount, amountLen) || !s.ReadUint16(&n) {
		return nil, fmt.Errorf("%w: note: plaintext too short", ErrMalformed)
	}
	if n > MaxMemoBytes {
		return nil, fmt.Errorf("%w: note: memo length exceeds %d bytes", ErrMalformed, MaxMemoBytes)
	}
	var memo []byte
	if len(pt) != notePlainLen(int(n)) || !s.ReadBytes(&memo, int(n)) {
		return nil, fmt.Errorf("%w: note: padding is not minimal", ErrMalformed)
	}
	var nonzero byte
	for _, c := range s {
		nonzero |= c
	}
	if subtle.ConstantTimeByteEq(nonzero, 0) != 1 {
		return nil, fmt.Errorf("%w: note: padding is not zero", ErrMalformed)
	}
	if !utf8.Valid(memo) {
		return nil, fmt.Errorf("%w: note: memo is not valid UTF-8", ErrMalformed)
	}
	return &Note{Amount: new(big.Int).SetBytes(amount), Memo: string(memo)}, nil
}

// notePlainLen is len(amount ∥ u16 len ∥ memo) rounded up to a multiple of 64.
func notePlainLen(memoLen int) int {
	n := amountLen + 2 + memoLen
	return (n + notePadBlock - 1) / notePadBlock * notePadBlock
}

// noteParts are the fields of a note, as slices of its bytes.
type noteParts struct {
	r     []byte   // P(R), 33 bytes, prefix checked
	wraps [][]byte // m × 48 bytes
	kc    []byte   // 32 bytes
	body  []byte   // AES-GCM ciphertext and tag
}

// parseNote splits a note and checks lengths, suite byte, R prefix and m,
// without curve work.
func parseNote(note []byte, readers int) (noteParts, error) {
	var p noteParts
	s := cryptobyte.String(note)
	var suite, m uint8
	if !s.ReadUint8(&suite) || !s.ReadBytes(&p.r, pointLen) || !s.ReadUint8(&m) {
		return p, fmt.Errorf("%d bytes, too short", len(note))
	}
	if suite != Suite {
		return p, errors.New("suite byte is not 0x01")
	}
	if !checkPointPrefix(p.r) {
		return p, errors.New("the point R must start 02 or 03 (compressed form only)")
	}
	if m < 1 || m > maxNoteReaders {
		return p, fmt.Errorf("has %d readers, want 1 to %d", m, maxNoteReaders)
	}
	if int(m) != readers {
		return p, fmt.Errorf("has %d readers, the context names %d", m, readers)
	}
	p.wraps = make([][]byte, m)
	for i := range p.wraps {
		if !s.ReadBytes(&p.wraps[i], wrapLen) {
			return p, fmt.Errorf("wrap %d is truncated", i)
		}
	}
	if !s.ReadBytes(&p.kc, commitLen) {
		return p, errors.New("key commitment is truncated")
	}
	p.body = s
	if n := len(p.body) - tagLen; n < notePadBlock || n > notePlainLen(MaxMemoBytes) || n%notePadBlock != 0 {
		return p, fmt.Errorf("body length %d is not a valid padded length", len(p.body))
	}
	return p, nil
}

// check validates the context.
func (ctx NoteContext) check() error {
	if len(ctx.Reference) == 0 || len(ctx.Reference) > maxReference {
		return fmt.Errorf("%w: note context: reference must be 1 to %d bytes", ErrMalformed, maxReference)
	}
	if err := checkAsset("note context", ctx.Asset); err != nil {
		return err
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
//	mh = H(lp("cpay/v1/note-ctx") ∥ u64 chain ∥ lp(reference) ∥ lp(asset) ∥ u8 m ∥ Σ P(EK_i) ∥ P(R))
func noteHash(ctx NoteContext, rb *[pointLen]byte) [32]byte {
	b := cryptobyte.NewBuilder(make([]byte, 0, 2+len(tagNoteCtx)+8+2+len(ctx.Reference)+2+len(ctx.Asset)+1+(len(ctx.Readers)+1)*pointLen))
	addLPString(b, tagNoteCtx)
	b.AddUint64(ctx.ChainID)
	addLPString(b, ctx.Reference)
	addLPString(b, ctx.Asset)
	b.AddUint8(uint8(len(ctx.Readers)))
	for _, ek := range ctx.Readers {
		b.AddBytes(ek.b[:])
	}
	b.AddBytes(rb[:])
	return sha256.Sum256(b.BytesOrPanic())
}

// noteCommitment computes kc = H(lp("cpay/v1/note-commit") ∥ K ∥ mh).
func noteCommitment(key []byte, mh *[32]byte) [commitLen]byte {
	b := cryptobyte.NewFixedBuilder(make([]byte, 0, 2+len(tagNoteCommit)+len(key)+len(mh)))
	addLPString(b, tagNoteCommit)
	b.AddBytes(key)
	b.AddBytes(mh[:])
	buf := b.BytesOrPanic()
	defer clear(buf)
	return sha256.Sum256(buf)
}
