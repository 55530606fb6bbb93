package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"
)

type noteFixture struct {
	*fixture
	carol *PrivateKey // a third party
	ctx   NoteContext // alice (sender) and bob (recipient)
}

func newNoteFixture(t testing.TB) *noteFixture {
	t.Helper()
	f := &noteFixture{fixture: newFixture(t)}
	var err error
	if f.carol, err = DeriveKey([]byte("carol's seed, 32 bytes long!!!!!"), 8453, addr(0xc0)); err != nil {
		t.Fatal(err)
	}
	f.ctx = NoteContext{ChainID: 8453, Reference: "tr_01J9Z8", Asset: "USDG", Readers: []*PublicKey{f.alice.PublicKey(), f.bob.PublicKey()}}
	return f
}

func TestNoteRoundTrip(t *testing.T) {
	f := newNoteFixture(t)
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	for _, tc := range []struct {
		amount *big.Int
		memo   string
		size   int // plaintext bytes before the tag
	}{
		{big.NewInt(0), "", 64},
		{big.NewInt(1250000), "invoice 42 — merci ☕", 64},
		{max, strings.Repeat("m", 30), 64},
		{big.NewInt(7), strings.Repeat("m", 31), 128},
		{big.NewInt(7), strings.Repeat("é", 512), 1088},
	} {
		note, err := SealNote(nil, f.ctx, tc.amount, tc.memo)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + 33 + 1 + 2*48 + 32 + tc.size + 16; len(note) != want {
			t.Fatalf("memo of %d bytes: note is %d bytes, want %d", len(tc.memo), len(note), want)
		}
		for _, k := range []*PrivateKey{f.alice, f.bob} {
			n, err := OpenNote(k, f.ctx, note)
			if err != nil {
				t.Fatal(err)
			}
			if n.Amount.Cmp(tc.amount) != 0 || n.Memo != tc.memo {
				t.Fatal("opened note differs from the sealed one")
			}
		}
	}
}

func TestNoteReaderCounts(t *testing.T) {
	f := newNoteFixture(t)
	dave, _ := GenerateKey(nil)
	all := []*PrivateKey{f.alice, f.bob, f.carol, dave}
	for m := 1; m <= 4; m++ {
		ctx := NoteContext{ChainID: 1, Reference: "held_1", Asset: "ETH"}
		for _, k := range all[:m] {
			ctx.Readers = append(ctx.Readers, k.PublicKey())
		}
		note, err := SealNote(nil, ctx, big.NewInt(int64(m)), "x")
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range all {
			n, err := OpenNote(k, ctx, note)
			if i < m {
				if err != nil || n.Amount.Int64() != int64(m) {
					t.Fatalf("m=%d reader %d: %v", m, i, err)
				}
			} else if !errors.Is(err, ErrNotForThisKey) {
				t.Fatalf("m=%d non-reader %d: got %v, want ErrNotForThisKey", m, i, err)
			}
		}
	}
	five := NoteContext{ChainID: 1, Reference: "r", Asset: "USDG", Readers: []*PublicKey{f.alice.PublicKey(), f.bob.PublicKey(), f.carol.PublicKey(), dave.PublicKey(), f.fixture.alice.PublicKey()}}
	five.Readers[4], _ = NewPublicKey(mustHex(t, "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"))
	if _, err := SealNote(nil, five, big.NewInt(1), ""); !errors.Is(err, ErrMalformed) {
		t.Fatalf("5 readers: got %v, want ErrMalformed", err)
	}
	if _, err := SealNote(nil, NoteContext{ChainID: 1, Reference: "r", Asset: "USDG"}, big.NewInt(1), ""); !errors.Is(err, ErrMalformed) {
		t.Fatalf("0 readers: got %v, want ErrMalformed", err)
	}
}

func TestNoteRejects(t *testing.T) {
	f := newNoteFixture(t)
	dup := f.ctx
	dup.Readers = []*PublicKey{f.alice.PublicKey(), f.alice.PublicKey()}
	nilReader := f.ctx
	nilReader.Readers = []*PublicKey{f.alice.PublicKey(), nil}
	noRef := f.ctx
	noRef.Reference = ""
	longRef := f.ctx
	longRef.Reference = strings.Repeat("r", 256)
	for name, call := range map[string]func() error{
		"memo of 1025 bytes": func() error { _, err := SealNote(nil, f.ctx, big.NewInt(1), strings.Repeat("m", 1025)); return err },
		"memo not UTF-8":     func() error { _, err := SealNote(nil, f.ctx, big.NewInt(1), "\xff\xfe"); return err },
		"duplicate readers":  func() error { _, err := SealNote(nil, dup, big.NewInt(1), ""); return err },
		"nil reader":         func() error { _, err := SealNote(nil, nilReader, big.NewInt(1), ""); return err },
		"empty reference":    func() error { _, err := SealNote(nil, noRef, big.NewInt(1), ""); return err },
		"long reference":     func() error { _, err := SealNote(nil, longRef, big.NewInt(1), ""); return err },
		"negative amount":    func() error { _, err := SealNote(nil, f.ctx, big.NewInt(-1), ""); return err },
		"amount of 2^256":    func() error { _, err := SealNote(nil, f.ctx, new(big.Int).Lsh(big.NewInt(1), 256), ""); return err },
	} {
		if err := call(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	if _, err := SealNote(nil, f.ctx, big.NewInt(1), strings.Repeat("m", 1024)); err != nil {
		t.Errorf("memo of 1024 bytes: %v", err)
	}
	if _, err := SealNote(bytes.NewReader(make([]byte, 40)), f.ctx, big.NewInt(1), ""); err == nil {
		t.Error("randomness too short for r and K accepted")
	}
}

// The asset is part of the context: the opened note reports it, and a
// context without a valid asset code is refused on both sides.
func TestNoteAsset(t *testing.T) {
	f := newNoteFixture(t)
	note, err := SealNote(nil, f.ctx, big.NewInt(5), "")
	if err != nil {
		t.Fatal(err)
	}
	n, err := OpenNote(f.bob, f.ctx, note)
	if err != nil || n.Asset != "USDG" {
		t.Fatalf("opened note: asset %q, %v", n.Asset, err)
	}
	for _, bad := range []string{"", "US DG", strings.Repeat("A", 65)} {
		ctx := f.ctx
		ctx.Asset = bad
		if _, err := SealNote(nil, ctx, big.NewInt(5), ""); !errors.Is(err, ErrMalformed) {
			t.Errorf("seal with asset %q: got %v, want ErrMalformed", bad, err)
		}
		if _, err := OpenNote(f.bob, ctx, note); !errors.Is(err, ErrMalformed) {
			t.Errorf("open with asset %q: got %v, want ErrMalformed", bad, err)
		}
	}
}

// A memo that starts with a UTF-8 byte-order mark comes back byte for byte
// (some decoders drop a leading BOM).
func TestNoteMemoByteOrderMark(t *testing.T) {
	f := newNoteFixture(t)
	memo := "\xef\xbb\xbfinvoice 42"
	note, err := SealNote(nil, f.ctx, big.NewInt(5), memo)
	if err != nil {
		t.Fatal(err)
	}
	n, err := OpenNote(f.alice, f.ctx, note)
	if err != nil || n.Memo != memo {
		t.Fatalf("memo with a BOM: %q, %v", n.Memo, err)
	}
}

// A changed key commitment stops every reader, before the body is opened.
func TestNoteCommitmentMismatch(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(5), "memo")
	kc := 1 + 33 + 1 + 2*48
	for i := kc; i < kc+32; i++ {
		b := append([]byte(nil), note...)
		b[i] ^= 0x40
		for j, k := range []*PrivateKey{f.alice, f.bob} {
			_, err := OpenNote(k, f.ctx, b)
			if !errors.Is(err, ErrVerification) || !strings.Contains(err.Error(), "key commitment") {
				t.Fatalf("kc byte %d changed: reader %d got %v", i-kc, j, err)
			}
		}
	}
}

func TestNoteThirdParty(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(5), "secret memo")
	if _, err := OpenNote(f.carol, f.ctx, note); !errors.Is(err, ErrNotForThisKey) {
		t.Fatalf("third party: got %v, want ErrNotForThisKey", err)
	}
	// Carol swaps her key in for Bob's in the context: mh changes, nothing opens.
	forged := f.ctx
	forged.Readers = []*PublicKey{f.alice.PublicKey(), f.carol.PublicKey()}
	if _, err := OpenNote(f.carol, forged, note); !errors.Is(err, ErrVerification) {
		t.Fatalf("third party in a forged context: got %v, want ErrVerification", err)
	}
}

func TestNoteWrapsNotInterchangeable(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(5), "memo")
	const w0 = 1 + 33 + 1
	swapped := append([]byte(nil), note...)
	copy(swapped[w0:w0+48], note[w0+48:w0+96])
	copy(swapped[w0+48:w0+96], note[w0:w0+48])
	for _, k := range []*PrivateKey{f.alice, f.bob} {
		if _, err := OpenNote(k, f.ctx, swapped); !errors.Is(err, ErrVerification) {
			t.Fatalf("swapped wraps: got %v, want ErrVerification", err)
		}
	}
	// The readers listed in the other order.
	reordered := f.ctx
	reordered.Readers = []*PublicKey{f.bob.PublicKey(), f.alice.PublicKey()}
	for _, k := range []*PrivateKey{f.alice, f.bob} {
		if _, err := OpenNote(k, reordered, note); !errors.Is(err, ErrVerification) {
			t.Fatalf("reordered readers: got %v, want ErrVerification", err)
		}
	}
	// Both wraps swapped and the readers reordered to match: still bound by index.
	for _, k := range []*PrivateKey{f.alice, f.bob} {
		if _, err := OpenNote(k, reordered, swapped); !errors.Is(err, ErrVerification) {
			t.Fatalf("swapped wraps and readers: got %v, want ErrVerification", err)
		}
	}
}

func TestNoteOtherContext(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(5), "memo")
	chain, ref, asset := f.ctx, f.ctx, f.ctx
	chain.ChainID++
	ref.Reference = "tr_other"
	asset.Asset = "ETH" // the same figure read under another asset's decimals
	for name, ctx := range map[string]NoteContext{"chain": chain, "reference": ref, "asset": asset} {
		if _, err := OpenNote(f.bob, ctx, note); !errors.Is(err, ErrVerification) {
			t.Errorf("other %s: got %v, want ErrVerification", name, err)
		}
	}
	one := f.ctx
	one.Readers = one.Readers[1:]
	if _, err := OpenNote(f.bob, one, note); !errors.Is(err, ErrMalformed) {
		t.Errorf("context with fewer readers than the note: got %v, want ErrMalformed", err)
	}
}

// Every single-byte change is rejected. The design authenticates each wrap
// on its own (aad = mh), so a change inside reader j's wrap is caught by
// reader j and invisible to the others, who still read the authentic
// amount and memo; a change anywhere else is caught by every reader.
func TestNoteEveryByteFlipRejected(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(5), "memo")
	readers := []*PrivateKey{f.alice, f.bob}
	const w0 = 1 + 33 + 1
	flips(note, func(i int, b []byte) {
		for j, k := range readers {
			n, err := OpenNote(k, f.ctx, b)
			inOtherWrap := i >= w0 && i < w0+2*48 && (i-w0)/48 != j
			if inOtherWrap {
				if err != nil || n.Amount.Int64() != 5 || n.Memo != "memo" {
					t.Fatalf("byte %d (another reader's wrap) flipped: reader %d got %v", i, j, err)
				}
				continue
			}
			if !isAny(err, ErrMalformed, ErrVerification) {
				t.Fatalf("byte %d flipped: reader %d got %v", i, j, err)
			}
		}
	})
}

func TestNoteShape(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(5), "memo")
	mByte := 1 + 33
	with := func(i int, v byte) []byte {
		b := append([]byte(nil), note...)
		b[i] = v
		return b
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"header only":    note[:35],
		"trailing byte":  append(append([]byte(nil), note...), 0),
		"trailing block": append(append([]byte(nil), note...), make([]byte, 64)...),
		"truncated":      note[:len(note)-1],
		"m = 0":          with(mByte, 0),
		"m = 5":          with(mByte, 5),
		"suite 0x02":     with(0, 0x02),
		"R prefix 04":    with(1, 0x04),
		"R prefix 07":    with(1, 0x07),
		"R off curve":    append(append([]byte{Suite}, offCurve(t)...), note[34:]...),
	} {
		_, err := OpenNote(f.bob, f.ctx, b)
		if name == "trailing block" {
			// A whole extra block keeps a valid length: authentication fails.
			if !errors.Is(err, ErrVerification) {
				t.Errorf("%s: got %v, want ErrVerification", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestNotePlainStrict(t *testing.T) {
	plain := func(n int, memo string, total int) []byte {
		b := make([]byte, 32, total)
		b = appendU16(b, n)
		b = append(b, memo...)
		return b[:total]
	}
	if n, err := parseNotePlain(plain(2, "hi", 64)); err != nil || n.Memo != "hi" {
		t.Fatalf("valid plaintext: %v", err)
	}
	nonzero := plain(2, "hi", 64)
	nonzero[63] = 1
	for name, b := range map[string][]byte{
		"padding not minimal": plain(2, "hi", 128),
		"padding not zero":    nonzero,
		"memo length > 1024":  plain(1025, "", 1088),
		"length past the end": plain(40, "", 64),
		"memo not UTF-8":      plain(2, "\xff\xfe", 64),
	} {
		if _, err := parseNotePlain(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestNoteNeverPrints(t *testing.T) {
	f := newNoteFixture(t)
	note, _ := SealNote(nil, f.ctx, big.NewInt(987654321), "the secret memo")
	n, err := OpenNote(f.bob, f.ctx, note)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v %+v %#v %s %q %d", n, n, n, n, n, n),
		fmt.Sprintf("%v", struct{ N *Note }{n}),
		fmt.Sprintf("%v %+v %#v", *n, *n, struct{ N Note }{*n}),
		n.String(), n.GoString(),
		slogLine(n), slogLine(*n),
	} {
		if strings.Contains(s, "987654321") || strings.Contains(s, "secret memo") || !strings.Contains(s, "REDACTED") {
			t.Fatalf("note printed: %s", s)
		}
	}
}

// slogLine logs v through slog's JSON and text handlers and returns what
// they wrote.
// slogLine logs v through slog's JSON and text handlers, without the time
// (whose digits could otherwise match a figure the caller searches for).
func slogLine(v any) string {
	var buf bytes.Buffer
	noTime := &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	slog.New(slog.NewJSONHandler(&buf, noTime)).Info("v", "v", v)
	slog.New(slog.NewTextHandler(&buf, noTime)).Info("v", "v", v)
	return buf.String()
}
