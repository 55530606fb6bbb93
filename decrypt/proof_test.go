package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func mustProve(t testing.TB, f *fixture, balances []Balance) []byte {
	t.Helper()
	proof, _, err := Prove(newDetReader("prove"), f.alice, f.acct, balances)
	if err != nil {
		t.Fatal(err)
	}
	return proof
}

func TestProveVerify(t *testing.T) {
	f := newFixture(t)
	proof, amounts, err := Prove(nil, f.alice, f.acct, f.balances)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range amounts {
		if a.Int64() != f.amounts[i] {
			t.Fatalf("Prove amount %d = %v, want %d", i, a, f.amounts[i])
		}
	}
	// The server's list in another order, with an asset the proof skips.
	extra, _ := EncryptBalance(nil, f.acct, "EURC", 1, big.NewInt(9))
	current := []Balance{f.balances[1], {Asset: "EURC", Version: 1, Ciphertext: extra}, f.balances[0]}
	figures, err := Verify(f.acct, proof, current)
	if err != nil {
		t.Fatal(err)
	}
	if len(figures) != 2 || figures[0].Asset != "USDG" || figures[1].Asset != "ETH" ||
		figures[0].Amount.Int64() != f.amounts[0] || figures[1].Amount.Int64() != f.amounts[1] {
		t.Fatalf("figures %v %v %v %v", figures[0].Asset, figures[0].Amount, figures[1].Asset, figures[1].Amount)
	}
	p, err := ParseProof(proof)
	if err != nil {
		t.Fatal(err)
	}
	want := []ProofEntry{{"USDG", 7}, {"ETH", 3}}
	if got := p.Entries(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("entries %v", got)
	}
	if !bytes.Equal(p.Bytes(), proof) {
		t.Fatal("Bytes() differs from the input")
	}
	// One asset of two.
	one := mustProve(t, f, f.balances[1:])
	if figures, err := Verify(f.acct, one, f.balances); err != nil || len(figures) != 1 || figures[0].Amount.Int64() != 42 {
		t.Fatalf("one asset: %v", err)
	}
	// The proof is hedged: the same inputs with other randomness differ.
	again, _, _ := Prove(nil, f.alice, f.acct, f.balances)
	if bytes.Equal(again, proof) {
		t.Fatal("two proofs with fresh randomness are identical")
	}
}

func TestProveVerifySixteenAssets(t *testing.T) {
	f := newFixture(t)
	var bs []Balance
	for i := range 17 {
		asset := fmt.Sprintf("A%02d", i)
		ct, err := EncryptBalance(nil, f.acct, asset, uint64(i), big.NewInt(int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, Balance{Asset: asset, Version: uint64(i), Ciphertext: ct})
	}
	proof, _, err := Prove(nil, f.alice, f.acct, bs[:16])
	if err != nil {
		t.Fatal(err)
	}
	figures, err := Verify(f.acct, proof, bs)
	if err != nil {
		t.Fatal(err)
	}
	for i, fig := range figures {
		if fig.Amount.Int64() != int64(i) {
			t.Fatalf("figure %d = %v", i, fig.Amount)
		}
	}
	if _, _, err := Prove(nil, f.alice, f.acct, bs); !errors.Is(err, ErrMalformed) {
		t.Fatalf("17 balances: got %v, want ErrMalformed", err)
	}
	if _, _, err := Prove(nil, f.alice, f.acct, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("0 balances: got %v, want ErrMalformed", err)
	}
}

func TestProofEveryByteFlipRejected(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances)
	flips(proof, func(i int, p []byte) {
		if _, err := Verify(f.acct, p, f.balances); !isAny(err, ErrMalformed, ErrVerification, ErrStale) {
			t.Fatalf("byte %d flipped: got %v", i, err)
		}
	})
}

func TestVerifyStale(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances)
	// The ledger moved USDG to version 8 with a fresh ciphertext.
	ct, _ := EncryptBalance(nil, f.acct, "USDG", 8, big.NewInt(1))
	current := []Balance{{Asset: "USDG", Version: 8, Ciphertext: ct}, f.balances[1]}
	_, err := Verify(f.acct, proof, current)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("got %v, want ErrStale", err)
	}
	if !strings.Contains(err.Error(), "version 7") || !strings.Contains(err.Error(), "current is 8") {
		t.Fatalf("error does not name the versions: %v", err)
	}
	// Stale is answered before any curve work: an S that is not on the
	// curve does not matter yet.
	bad := append([]byte(nil), proof...)
	off := 2 + 2 + 4 + 8 // first S
	copy(bad[off:off+33], offCurve(t))
	if _, err := Verify(f.acct, bad, current); !errors.Is(err, ErrStale) {
		t.Fatalf("stale proof with a bad point: got %v, want ErrStale", err)
	}
	if _, err := Verify(f.acct, bad, f.balances); !errors.Is(err, ErrMalformed) {
		t.Fatalf("current proof with a bad point: got %v, want ErrMalformed", err)
	}
	if _, err := ParseProof(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseProof with a bad point: got %v, want ErrMalformed", err)
	}
}

func TestVerifyRewrittenCiphertext(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances[:1])
	// Same amount, same version, new r: the old proof must not verify.
	ct, _ := EncryptBalance(nil, f.acct, "USDG", 7, big.NewInt(f.amounts[0]))
	current := []Balance{{Asset: "USDG", Version: 7, Ciphertext: ct}}
	if _, err := Verify(f.acct, proof, current); !errors.Is(err, ErrVerification) {
		t.Fatalf("got %v, want ErrVerification", err)
	}
}

func TestVerifyOtherContext(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances[:1])
	otherChain, otherAddr, otherKey := f.acct, f.acct, f.acct
	otherChain.ChainID++
	otherAddr.Address[19] ^= 1
	otherKey.Key = f.bob.PublicKey()
	for name, acct := range map[string]Account{"chain": otherChain, "address": otherAddr, "key": otherKey} {
		if _, err := Verify(acct, proof, f.balances); !errors.Is(err, ErrVerification) {
			t.Errorf("other %s: got %v, want ErrVerification", name, err)
		}
	}
	// The USDG proof against a server that has this ciphertext as another asset.
	renamed := []Balance{{Asset: "EURC", Version: 7, Ciphertext: f.balances[0].Ciphertext}}
	if _, err := Verify(f.acct, proof, renamed); !errors.Is(err, ErrVerification) {
		t.Errorf("asset the server lacks: got %v, want ErrVerification", err)
	}
	// The ETH ciphertext presented as USDG at the same version.
	swapped := []Balance{{Asset: "USDG", Version: 7, Ciphertext: f.balances[1].Ciphertext}}
	if _, err := Verify(f.acct, proof, swapped); !errors.Is(err, ErrVerification) {
		t.Errorf("other asset's ciphertext: got %v, want ErrVerification", err)
	}
	// Bob proves his own balance; it must not pass as Alice's.
	bobCT, _ := EncryptBalance(nil, f.bobAcct, "USDG", 7, big.NewInt(5))
	bobProof, _, err := Prove(nil, f.bob, f.bobAcct, []Balance{{Asset: "USDG", Version: 7, Ciphertext: bobCT}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(f.acct, bobProof, []Balance{{Asset: "USDG", Version: 7, Ciphertext: bobCT}}); !errors.Is(err, ErrVerification) {
		t.Errorf("another account's proof: got %v, want ErrVerification", err)
	}
	if _, err := Verify(Account{}, proof, f.balances); err == nil {
		t.Error("Verify without an account key accepted")
	}
}

func TestProveRefuses(t *testing.T) {
	f := newFixture(t)
	if _, _, err := Prove(nil, f.bob, f.acct, f.balances); !errors.Is(err, ErrNotForThisKey) {
		t.Errorf("other key: got %v, want ErrNotForThisKey", err)
	}
	if _, _, err := Prove(nil, f.bob, f.bobAcct, f.balances); !errors.Is(err, ErrVerification) {
		t.Errorf("ciphertexts of another account: got %v, want ErrVerification", err)
	}
	tampered := append([]byte(nil), f.balances[0].Ciphertext...)
	tampered[60] ^= 1
	if _, _, err := Prove(nil, f.alice, f.acct, []Balance{{Asset: "USDG", Version: 7, Ciphertext: tampered}}); !errors.Is(err, ErrVerification) {
		t.Errorf("tampered ciphertext: got %v, want ErrVerification", err)
	}
	dup := []Balance{f.balances[0], f.balances[0]}
	if _, _, err := Prove(nil, f.alice, f.acct, dup); !errors.Is(err, ErrMalformed) {
		t.Errorf("duplicate assets: got %v, want ErrMalformed", err)
	}
	if _, _, err := Prove(bytes.NewReader(nil), f.alice, f.acct, f.balances); err == nil {
		t.Error("failing randomness accepted")
	}
}

// entry encodes one proof entry.
func entry(asset string, version uint64, s []byte) []byte {
	b := appendLPString(nil, asset)
	b = appendU64(b, version)
	return append(b, s...)
}

func TestParseProofStrict(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances)
	p, _ := ParseProof(proof)
	s0 := p.entries[0].s[:]
	tail := proof[len(proof)-64:]
	build := func(m byte, entries ...[]byte) []byte {
		b := []byte{Suite, m}
		for _, e := range entries {
			b = append(b, e...)
		}
		return append(b, tail...)
	}
	sp, _ := parsePoint(s0)
	xb, yb := sp.x.Bytes(), sp.y.Bytes()
	uncompressed := append(append([]byte{0x04}, xb[:]...), yb[:]...)
	hybrid := append(append([]byte{0x06 | (yb[31] & 1)}, xb[:]...), yb[:]...)
	n := mustHex(t, orderHex)
	ff := bytes.Repeat([]byte{0xff}, 32)
	withScalars := func(c, z []byte) []byte {
		b := append([]byte(nil), proof[:len(proof)-64]...)
		return append(append(b, c...), z...)
	}
	var seventeen [][]byte
	for i := range 17 {
		seventeen = append(seventeen, entry(fmt.Sprintf("A%02d", i), 1, s0))
	}
	cases := map[string][]byte{
		"empty":               nil,
		"one byte":            {Suite},
		"suite 0x02":          append([]byte{0x02}, proof[1:]...),
		"m = 0":               build(0),
		"m = 17":              build(17, seventeen...),
		"m says 2, has 1":     build(2, entry("USDG", 7, s0)),
		"duplicate asset":     build(2, entry("USDG", 7, s0), entry("USDG", 7, s0)),
		"empty asset":         build(1, entry("", 7, s0)),
		"asset with space":    build(1, entry("US DG", 7, s0)),
		"S uncompressed":      build(1, entry("USDG", 7, uncompressed)),
		"S hybrid":            build(1, entry("USDG", 7, hybrid)),
		"S prefix 04 33B":     build(1, entry("USDG", 7, append([]byte{0x04}, s0[1:]...))),
		"S prefix 06 33B":     build(1, entry("USDG", 7, append([]byte{0x06}, s0[1:]...))),
		"S off curve":         build(1, entry("USDG", 7, offCurve(t))),
		"c = n":               withScalars(n, tail[32:]),
		"z = n":               withScalars(tail[:32], n),
		"c = 2^256-1":         withScalars(ff, tail[32:]),
		"z = 2^256-1":         withScalars(tail[:32], ff),
		"trailing byte":       append(append([]byte(nil), proof...), 0),
		"missing last byte":   proof[:len(proof)-1],
		"truncated in entry":  proof[:20],
		"asset length beyond": append([]byte{Suite, 1, 0xff, 0xff}, tail...),
	}
	for name, b := range cases {
		if _, err := ParseProof(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseProof %s: got %v, want ErrMalformed", name, err)
		}
		if _, err := Verify(f.acct, b, f.balances); !errors.Is(err, ErrMalformed) {
			t.Errorf("Verify %s: got %v, want ErrMalformed", name, err)
		}
	}
	// A well-formed single entry parses (and is a sanity check of build).
	if _, err := ParseProof(build(1, entry("USDG", 7, s0))); err != nil {
		t.Fatalf("well-formed proof: %v", err)
	}
}

func TestVerifyBadCurrent(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances[:1])
	short := []Balance{{Asset: "USDG", Version: 7, Ciphertext: f.balances[0].Ciphertext[:81]}}
	if _, err := Verify(f.acct, proof, short); !errors.Is(err, ErrCorruptCiphertext) {
		t.Errorf("short stored ciphertext: got %v, want ErrCorruptCiphertext", err)
	}
	twice := []Balance{f.balances[0], f.balances[0]}
	if _, err := Verify(f.acct, proof, twice); !errors.Is(err, ErrCorruptCiphertext) {
		t.Errorf("asset listed twice: got %v, want ErrCorruptCiphertext", err)
	}
	offR := append(append([]byte{Suite}, offCurve(t)...), f.balances[0].Ciphertext[34:]...)
	if _, err := Verify(f.acct, proof, []Balance{{Asset: "USDG", Version: 7, Ciphertext: offR}}); !errors.Is(err, ErrCorruptCiphertext) {
		t.Errorf("stored R off the curve: got %v, want ErrCorruptCiphertext", err)
	}
	// A proof that verifies over a ciphertext whose body the ledger broke:
	// the prover side is bypassed (Prove would refuse), as a buggy ledger
	// that proves for itself would.
	broken := append([]byte(nil), f.balances[0].Ciphertext...)
	broken[70] ^= 1
	bs := []Balance{{Asset: "USDG", Version: 7, Ciphertext: broken}}
	R, _ := parseCiphertext(broken)
	S := mulSecret(&f.alice.s, &R)
	bad, err := buildProof(nil, f.alice, f.acct, bs, []point{R}, [][pointLen]byte{S.bytes()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(f.acct, bad, bs); !errors.Is(err, ErrCorruptCiphertext) {
		t.Errorf("verifies but does not open: got %v, want ErrCorruptCiphertext", err)
	}
	// The same proof with a wrong S_i (2·S) fails verification, not opening.
	var two [32]byte
	two[31] = 2
	k2, _ := NewPrivateKey(two[:])
	S2 := mulSecret(&k2.s, &S)
	wrong, _ := buildProof(nil, f.alice, f.acct, f.balances[:1], []point{R}, [][pointLen]byte{S2.bytes()})
	if _, err := Verify(f.acct, wrong, f.balances[:1]); !errors.Is(err, ErrVerification) {
		t.Errorf("wrong witness: got %v, want ErrVerification", err)
	}
}

func TestProofNeverPrints(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances)
	p, _ := ParseProof(proof)
	figures, _ := Verify(f.acct, proof, f.balances)
	for _, s := range []string{
		fmt.Sprintf("%v %+v %#v %s %x", p, p, p, p, p),
		fmt.Sprintf("%v %+v %#v", *p, *p, struct{ P Proof }{*p}),
		fmt.Sprintf("%v %+v %#v %s %d", figures, figures, figures[0], figures[0], figures[0]),
		figures[0].String(), figures[0].GoString(), p.String(), p.GoString(),
		slogLine(figures[0]), slogLine(&figures[0]), slogLine(p),
	} {
		if strings.Contains(s, "1250000") || strings.Contains(s, "42") || strings.Contains(s, fmt.Sprintf("%x", proof[20:30])) {
			t.Fatalf("secret printed: %s", s)
		}
		if !strings.Contains(s, "REDACTED") {
			t.Fatalf("not redacted: %s", s)
		}
	}
}

// TestVerifyRejectsIdentity builds, with the key, a proof whose A_0 is the
// identity (z = c·ek): it must fail, never pass as a degenerate equation.
func TestVerifyRejectsIdentity(t *testing.T) {
	f := newFixture(t)
	proof := mustProve(t, f, f.balances[:1])
	c := testScalar(t, "identity", 0)
	var z secp256k1.ModNScalar
	z.Mul2(&c, &f.alice.s)
	cb, zb := c.Bytes(), z.Bytes()
	bad := append(append(append([]byte(nil), proof[:len(proof)-64]...), cb[:]...), zb[:]...)
	_, err := Verify(f.acct, bad, f.balances)
	if !errors.Is(err, ErrVerification) || !strings.Contains(err.Error(), "identity") {
		t.Fatalf("got %v, want ErrVerification for an identity A_0", err)
	}
}
