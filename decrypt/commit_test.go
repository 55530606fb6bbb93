package decrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/big"
	"testing"
)

// This file builds the attack that key-committing notes stop: a dishonest
// sealer writes one note whose wraps hand two readers two different body
// keys K1 and K2, and one body that AES-GCM authenticates under both keys,
// so that each reader would read a different "authentic" amount and memo.
// AES-GCM is not key-committing: with both keys known, one ciphertext block
// can be solved for so that both tags agree (GHASH is linear in the
// ciphertext). The rest of the body is chosen so that both plaintexts pass
// the strict plaintext parser: a 64-byte body, memo length 30 under both
// keys (K2 is ground until the two keystreams agree on the two length bytes)
// and a memo that is valid UTF-8 under both keystreams.

// gcmBlock is a GF(2^128) element in GCM's bit order.
type gcmBlock [16]byte

// gfMul multiplies in GF(2^128) with GCM's reduction (NIST SP 800-38D,
// algorithm 1).
func gfMul(x, y gcmBlock) gcmBlock {
	var z0, z1 uint64
	v0, v1 := binary.BigEndian.Uint64(y[:8]), binary.BigEndian.Uint64(y[8:])
	for i := range 128 {
		if x[i/8]>>(7-i%8)&1 == 1 {
			z0 ^= v0
			z1 ^= v1
		}
		lsb := v1 & 1
		v1 = v1>>1 | v0<<63
		v0 >>= 1
		if lsb == 1 {
			v0 ^= 0xe1 << 56
		}
	}
	var out gcmBlock
	binary.BigEndian.PutUint64(out[:8], z0)
	binary.BigEndian.PutUint64(out[8:], z1)
	return out
}

// gfInv returns x^(2^128 − 2), the inverse of a nonzero x.
func gfInv(x gcmBlock) gcmBlock {
	one := gcmBlock{0x80}
	result := one
	for range 127 { // exponent bits: 127 ones then a zero
		result = gfMul(gfMul(result, result), x)
	}
	return gfMul(result, result)
}

func gfXor(a, b gcmBlock) gcmBlock {
	for i := range a {
		a[i] ^= b[i]
	}
	return a
}

// gcmKey is what the attacker knows of one AES-GCM key.
type gcmKey struct {
	block cipher.Block
	nonce []byte
	h     gcmBlock // E(0^128)
}

func newGCMKey(t testing.TB, key, nonce []byte) *gcmKey {
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	g := &gcmKey{block: block, nonce: nonce}
	block.Encrypt(g.h[:], make([]byte, 16))
	return g
}

// counter returns E(nonce ∥ u32 i): i = 1 masks the tag, i ≥ 2 is keystream.
func (g *gcmKey) counter(i uint32) gcmBlock {
	var in, out gcmBlock
	copy(in[:], g.nonce)
	binary.BigEndian.PutUint32(in[12:], i)
	g.block.Encrypt(out[:], in[:])
	return out
}

// ghash computes GHASH_H(aad, ct) for aad and ct multiples of 16 bytes.
func (g *gcmKey) ghash(aad, ct []byte) gcmBlock {
	var x gcmBlock
	for _, data := range [][]byte{aad, ct} {
		for i := 0; i < len(data); i += 16 {
			x = gfMul(gfXor(x, gcmBlock(data[i:i+16])), g.h)
		}
	}
	var lens gcmBlock
	binary.BigEndian.PutUint64(lens[:8], uint64(len(aad))*8)
	binary.BigEndian.PutUint64(lens[8:], uint64(len(ct))*8)
	return gfMul(gfXor(x, lens), g.h)
}

// noteBodyKey derives K_body ∥ nonce from K as the note format does.
func noteBodyKey(t testing.TB, k []byte, mh *[32]byte) *gcmKey {
	okm, err := hkdf.Key(sha256.New, k, nil, tagNoteBody+string(mh[:]), hkdfOutputLength)
	if err != nil {
		t.Fatal(err)
	}
	return newGCMKey(t, okm[:32], okm[32:])
}

// twoWayUTF8 finds 30 bytes p such that p and p ⊕ d are both valid UTF-8,
// using sequences of one to four bytes (a dynamic programme over the pair
// of decoder states). ok is false when there is none.
func twoWayUTF8(d []byte) (p []byte, ok bool) {
	// state s: s continuation bytes still expected (0 between characters).
	// Leads with restricted continuations (E0, ED, F0, F4) are not used.
	step := func(s int, c byte) (int, bool) {
		switch {
		case s > 0 && c >= 0x80 && c <= 0xbf:
			return s - 1, true
		case s > 0:
			return 0, false
		case c < 0x80:
			return 0, true
		case c >= 0xc2 && c <= 0xdf:
			return 1, true
		case c >= 0xe1 && c <= 0xef && c != 0xed:
			return 2, true
		case c >= 0xf1 && c <= 0xf3:
			return 3, true
		}
		return 0, false
	}
	n := len(d)
	// reach[i][s] = a byte that leads to pair state s after i bytes, and the state before.
	type edge struct {
		prev int
		c    byte
		ok   bool
	}
	reach := make([][16]edge, n+1)
	reach[0][0].ok = true
	for i := range n {
		for s := range 16 {
			if !reach[i][s].ok {
				continue
			}
			for c := range 256 {
				s1, ok1 := step(s&3, byte(c))
				s2, ok2 := step(s>>2, byte(c)^d[i])
				if ok1 && ok2 && !reach[i+1][s1|s2<<2].ok {
					reach[i+1][s1|s2<<2] = edge{prev: s, c: byte(c), ok: true}
				}
			}
		}
	}
	if !reach[n][0].ok {
		return nil, false
	}
	p = make([]byte, n)
	for i, s := n, 0; i > 0; i-- {
		e := reach[i][s]
		p[i-1], s = e.c, e.prev
	}
	return p, true
}

// twoFacedBody returns K2 and one 64-byte body ∥ tag that opens under the
// body keys of both k1 and K2 (same mh) to two well-formed plaintexts.
func twoFacedBody(t testing.TB, k1 []byte, mh *[32]byte) (k2, body []byte) {
	g1 := noteBodyKey(t, k1, mh)
	ks1 := make([]byte, 0, 64)
	for i := range uint32(4) {
		b := g1.counter(2 + i)
		ks1 = append(ks1, b[:]...)
	}
	src := newDetReader("two-faced K2")
	k2 = make([]byte, 32)
	for range 1 << 22 {
		src.Read(k2)
		g2 := noteBodyKey(t, k2, mh)
		c2 := g2.counter(4) // bytes 32..47
		if c2[0] != ks1[32] || c2[1] != ks1[33] {
			continue
		}
		c3 := g2.counter(5)
		ks2 := append(c2[:], c3[:]...) // bytes 32..63
		var d [30]byte
		for i := range d {
			d[i] = ks1[34+i] ^ ks2[2+i]
		}
		memo, ok := twoWayUTF8(d[:])
		if !ok {
			continue
		}
		// Plaintext under K1: zero high half of the amount, block 1 free,
		// memo length 30, memo.
		ct := make([]byte, 64)
		copy(ct[0:16], ks1[0:16])
		ct[32], ct[33] = 0^ks1[32], 30^ks1[33]
		for i := range memo {
			ct[34+i] = memo[i] ^ ks1[34+i]
		}
		// Solve block 1 (GHASH coefficient H^4: aad 2 blocks, then ct blocks 0..3, then lengths).
		h1sq, h2sq := gfMul(g1.h, g1.h), gfMul(g2.h, g2.h)
		coef := gfXor(gfMul(h1sq, h1sq), gfMul(h2sq, h2sq))
		rhs := gfXor(gfXor(g1.ghash(mh[:], ct), g2.ghash(mh[:], ct)), gfXor(g1.counter(1), g2.counter(1)))
		c1 := gfMul(rhs, gfInv(coef))
		copy(ct[16:32], c1[:])
		tag := gfXor(g1.ghash(mh[:], ct), g1.counter(1))
		return k2, append(ct, tag[:]...)
	}
	t.Fatal("no second key found")
	return nil, nil
}

// twoFacedNote seals a note for ctx (two readers) in which reader 0's wrap
// holds K1 and reader 1's wrap holds K2, with a body that authenticates
// under both. It also returns what each reader's key would read from the
// body alone (the attack's payload), so the test can show it is real.
func twoFacedNote(t testing.TB, ctx NoteContext) (note []byte, plains [2]*Note) {
	t.Helper()
	if len(ctx.Readers) != 2 {
		t.Fatal("twoFacedNote wants two readers")
	}
	r, err := randScalar(newDetReader("two-faced r"))
	if err != nil {
		t.Fatal(err)
	}
	k1 := make([]byte, 32)
	newDetReader("two-faced K1").Read(k1)
	R := ctScalarMult(&r, &generator)
	rb := R.bytes()
	mh := noteHash(ctx, &rb)
	k2, body := twoFacedBody(t, k1, &mh)

	note = append([]byte{Suite}, rb[:]...)
	note = append(note, 2)
	for i, k := range [][]byte{k1, k2} {
		S := ctScalarMult(&r, &ctx.Readers[i].p)
		sb := S.bytes()
		aead, nonce := deriveAEAD(sb[:], nil, tagNoteKEK, []byte{byte(i)}, mh[:])
		note = aead.Seal(note, nonce, k, mh[:])
	}
	kc := noteCommitment(k1, &mh) // the sealer can commit to one key only
	note = append(note, kc[:]...)
	note = append(note, body...)

	for i, k := range [][]byte{k1, k2} {
		aead, nonce := deriveAEAD(k, nil, tagNoteBody, mh[:])
		pt, err := aead.Open(nil, nonce, body, mh[:])
		if err != nil {
			t.Fatalf("the forged body does not open under K%d: %v", i+1, err)
		}
		if plains[i], err = parseNotePlain(pt); err != nil {
			t.Fatalf("the forged body under K%d does not parse: %v", i+1, err)
		}
	}
	return note, plains
}

// A sealer cannot make two readers read two different authentic amounts:
// the attack's body really does open under both keys to two amounts, but
// every reader that opens the note reads the same one, and the reader whose
// wrap holds the other key is refused.
func TestNoteTwoFacedRejected(t *testing.T) {
	f := newNoteFixture(t)
	note, plains := twoFacedNote(t, f.ctx)
	if plains[0].Amount.Cmp(plains[1].Amount) == 0 {
		t.Fatal("the attack did not produce two different amounts")
	}
	var read []*big.Int
	for i, k := range []*PrivateKey{f.alice, f.bob} {
		n, err := OpenNote(k, f.ctx, note)
		if err != nil {
			if !errors.Is(err, ErrVerification) {
				t.Fatalf("reader %d: got %v, want ErrVerification", i, err)
			}
			continue
		}
		read = append(read, n.Amount)
	}
	if len(read) == 2 && read[0].Cmp(read[1]) != 0 {
		t.Fatal("two readers of one note read two different authenticated amounts")
	}
	if len(read) == 2 {
		t.Fatal("both readers opened a note whose wraps hold different keys")
	}
}
