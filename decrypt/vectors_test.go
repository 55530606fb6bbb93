package decrypt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/google/go-cmp/cmp"
)

// update regenerates testdata/vectors.json: go test ./decrypt -run TestVectors -update
// It must not change unless the protocol does.
var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

const vectorsFile = "testdata/vectors.json"

type vectorFile struct {
	Suite         int             `json:"suite"`
	About         []string        `json:"about"`
	Keys          []keyVector     `json:"keys"`
	Balances      []balanceVector `json:"balances"`
	Proofs        []proofVector   `json:"proofs"`
	InvalidProofs []invalidProof  `json:"invalid_proofs"`
	Notes         []noteVector    `json:"notes"`
	InvalidNotes  []invalidNote   `json:"invalid_notes"`
}

// invalidNote is a note that must not open: 'note' under the context of
// notes[base] (with 'asset' in place of its asset), for every reader.
type invalidNote struct {
	Name  string `json:"name"`
	Base  int    `json:"base"`
	Asset string `json:"asset"`
	Note  string `json:"note"`
	Error string `json:"error"`
}

type keyVector struct {
	Name    string `json:"name"`
	Seed    string `json:"seed,omitempty"`
	ChainID uint64 `json:"chain_id,omitempty"`
	Address string `json:"address,omitempty"`
	Rand    string `json:"rand,omitempty"`
	EK      string `json:"ek"`
	PubEK   string `json:"EK"`
}

type balanceVector struct {
	Name       string `json:"name"`
	ChainID    uint64 `json:"chain_id"`
	Address    string `json:"address"`
	EK         string `json:"ek"`
	PubEK      string `json:"EK"`
	Asset      string `json:"asset"`
	Version    uint64 `json:"version"`
	Amount     string `json:"amount"`
	Rand       string `json:"rand"`
	R          string `json:"r"`
	PubR       string `json:"R"`
	S          string `json:"S"`
	TH         string `json:"th"`
	Ciphertext string `json:"ciphertext"`
}

type balanceRef struct {
	Asset      string `json:"asset"`
	Version    uint64 `json:"version"`
	Ciphertext string `json:"ciphertext"`
}

type proofVector struct {
	Name     string       `json:"name"`
	ChainID  uint64       `json:"chain_id"`
	Address  string       `json:"address"`
	EK       string       `json:"ek"`
	PubEK    string       `json:"EK"`
	Balances []balanceRef `json:"balances"`
	Rand     string       `json:"rand"`
	S        []string     `json:"S"`
	Stmt     string       `json:"stmt"`
	W        string       `json:"w"`
	A        []string     `json:"A"`
	C        string       `json:"c"`
	Z        string       `json:"z"`
	Proof    string       `json:"proof"`
	Amounts  []string     `json:"amounts"`
}

type invalidProof struct {
	Name    string       `json:"name"`
	Proof   string       `json:"proof"`
	Current []balanceRef `json:"current"`
	Error   string       `json:"error"`
}

type noteVector struct {
	Name       string   `json:"name"`
	ChainID    uint64   `json:"chain_id"`
	Reference  string   `json:"reference"`
	Asset      string   `json:"asset"`
	Readers    []string `json:"readers"`
	ReaderKeys []string `json:"reader_keys"`
	Amount     string   `json:"amount"`
	Memo       string   `json:"memo"`
	Rand       string   `json:"rand"`
	R          string   `json:"r"`
	K          string   `json:"K"`
	MH         string   `json:"mh"`
	KC         string   `json:"kc"`
	Note       string   `json:"note"`
}

// recorder keeps what an operation read from its random source.
type recorder struct {
	r   io.Reader
	got []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.got = append(r.got, p[:n]...)
	return n, err
}

func hx(b []byte) string { return hex.EncodeToString(b) }

func hx33(b [pointLen]byte) string { return hex.EncodeToString(b[:]) }

// makeVectors computes every vector from fixed inputs and deterministic
// randomness. The test checks the committed file equals its output.
func makeVectors(t *testing.T) *vectorFile {
	t.Helper()
	v := &vectorFile{
		Suite: int(Suite),
		About: []string{
			"Known-answer vectors for the confpay confidentiality protocol, suite 0x01 (docs/confidentiality.md).",
			"Byte strings are lowercase hex; amounts are decimal strings of base units; chain_id and version are integers.",
			"'rand' is the exact byte stream the operation reads from its random source, in order: a generated key (32, drawn again while not in [1, n)); balance r (32, likewise); proof extra data for the hedged RFC 6979 nonce (32); note r (32, likewise) then K (32). An implementation given these bytes must produce exactly 'ek', 'ciphertext', 'proof' or 'note'. The key 'generated, first draw rejected' and the note 'r drawn twice' start with a draw of 32 0xff bytes (at least n), which must be rejected and drawn again.",
			"Notes bind the asset (lp(asset) in mh) and carry kc = H(lp(\"cpay/v1/note-commit\") ∥ K ∥ mh) between the wraps and the body; invalid_notes must fail to open for every reader (error 'verification').",
			"Intermediate values: r, R, S = r·EK = ek·R, th, stmt, w, A_0..A_m, c, z, mh, K, as named in the document.",
			"invalid_proofs are checked with Verify against proofs[1]'s account and the listed current ciphertexts; 'error' is the 422 reason (malformed, stale, verification_failed).",
		},
	}
	seeds := []struct {
		name    string
		seed    string
		chainID uint64
		addr    [20]byte
	}{
		{"alice", "alice's seed, thirty-two bytes!!", 8453, addr(0xa1)},
		{"bob", "bob's seed, thirty-two bytes!!!!", 8453, addr(0xb0)},
		{"carol", "carol's seed, 32 bytes long!!!!!", 84532, addr(0xc0)},
	}
	keys := map[string]*PrivateKey{}
	accts := map[string]Account{}
	for _, s := range seeds {
		k, err := DeriveKey([]byte(s.seed), s.chainID, s.addr)
		if err != nil {
			t.Fatal(err)
		}
		keys[s.name] = k
		accts[s.name] = Account{ChainID: s.chainID, Address: s.addr, Key: k.PublicKey()}
		v.Keys = append(v.Keys, keyVector{Name: s.name, Seed: hx([]byte(s.seed)), ChainID: s.chainID, Address: hx(s.addr[:]), EK: k.Hex(), PubEK: k.PublicKey().Hex()})
	}
	rec := &recorder{r: newDetReader("vectors/generate-key")}
	gk, err := GenerateKey(rec)
	if err != nil {
		t.Fatal(err)
	}
	v.Keys = append(v.Keys, keyVector{Name: "generated", Rand: hx(rec.got), EK: gk.Hex(), PubEK: gk.PublicKey().Hex()})
	rec = &recorder{r: io.MultiReader(bytes.NewReader(bytes.Repeat([]byte{0xff}, 32)), newDetReader("vectors/generate-key-redrawn"))}
	rk, err := GenerateKey(rec)
	if err != nil {
		t.Fatal(err)
	}
	v.Keys = append(v.Keys, keyVector{Name: "generated, first draw rejected", Rand: hx(rec.got), EK: rk.Hex(), PubEK: rk.PublicKey().Hex()})

	maxAmount := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	ethAmount, _ := new(big.Int).SetString("1500000000000000000", 10)
	cts := map[string]Balance{}
	for _, b := range []struct {
		name, who, asset string
		version          uint64
		amount           *big.Int
	}{
		{"alice USDG v1 zero", "alice", "USDG", 1, big.NewInt(0)},
		{"alice USDG v7", "alice", "USDG", 7, big.NewInt(1250000)},
		{"alice ETH v3", "alice", "ETH", 3, ethAmount},
		{"bob USDG v1 max", "bob", "USDG", 1, maxAmount},
	} {
		acct, k := accts[b.who], keys[b.who]
		rec := &recorder{r: newDetReader("vectors/balance/" + b.name)}
		ct, err := EncryptBalance(rec, acct, b.asset, b.version, b.amount)
		if err != nil {
			t.Fatal(err)
		}
		var r secp256k1.ModNScalar
		r.SetByteSlice(rec.got[len(rec.got)-32:])
		R := ctScalarMult(&r, &generator)
		S := ctScalarMult(&k.s, &R)
		rb := R.bytes()
		th := balanceTH(acct, b.asset, b.version, &rb)
		cts[b.name] = Balance{Asset: b.asset, Version: b.version, Ciphertext: ct}
		v.Balances = append(v.Balances, balanceVector{
			Name: b.name, ChainID: acct.ChainID, Address: hx(acct.Address[:]), EK: k.Hex(), PubEK: k.PublicKey().Hex(),
			Asset: b.asset, Version: b.version, Amount: b.amount.String(), Rand: hx(rec.got),
			R: hx(rec.got[len(rec.got)-32:]), PubR: hx33(rb), S: hx33(S.bytes()), TH: hx(th[:]), Ciphertext: hx(ct),
		})
	}

	for _, p := range []struct {
		name  string
		items []string
	}{
		{"alice one asset", []string{"alice USDG v7"}},
		{"alice two assets", []string{"alice USDG v7", "alice ETH v3"}},
	} {
		acct, k := accts["alice"], keys["alice"]
		var bs []Balance
		var refs []balanceRef
		var ss [][pointLen]byte
		var sHex []string
		for _, name := range p.items {
			b := cts[name]
			bs = append(bs, b)
			refs = append(refs, balanceRef{Asset: b.Asset, Version: b.Version, Ciphertext: hx(b.Ciphertext)})
			R, _ := parseCiphertext(b.Ciphertext)
			S := ctScalarMult(&k.s, &R)
			ss = append(ss, S.bytes())
			sHex = append(sHex, hx33(S.bytes()))
		}
		rec := &recorder{r: newDetReader("vectors/proof/" + p.name)}
		proof, amounts, err := Prove(rec, k, acct, bs)
		if err != nil {
			t.Fatal(err)
		}
		stmt := proofStatement(acct, bs, ss)
		ek := k.s.Bytes()
		w := secp256k1.NonceRFC6979(ek[:], stmt[:], rec.got, nil, 0)
		wb := w.Bytes()
		as := []string{hx33(func() [pointLen]byte { a := ctScalarMult(w, &generator); return a.bytes() }())}
		for _, b := range bs {
			R, _ := parseCiphertext(b.Ciphertext)
			a := ctScalarMult(w, &R)
			as = append(as, hx33(a.bytes()))
		}
		var amountStrs []string
		for _, a := range amounts {
			amountStrs = append(amountStrs, a.String())
		}
		v.Proofs = append(v.Proofs, proofVector{
			Name: p.name, ChainID: acct.ChainID, Address: hx(acct.Address[:]), EK: k.Hex(), PubEK: k.PublicKey().Hex(),
			Balances: refs, Rand: hx(rec.got), S: sHex, Stmt: hx(stmt[:]), W: hx(wb[:]), A: as,
			C: hx(proof[len(proof)-64 : len(proof)-32]), Z: hx(proof[len(proof)-32:]), Proof: hx(proof), Amounts: amountStrs,
		})
	}
	v.InvalidProofs = makeInvalidProofs(t, v.Proofs[1])

	for _, n := range []struct {
		name, reference, asset, memo string
		chainID                      uint64
		readers                      []string
		amount                       *big.Int
		rejected                     []byte // a draw of r to be rejected first
	}{
		{"transfer alice to bob", "tr_01J9Z8Q4N7", "USDG", "invoice 42", 8453, []string{"alice", "bob"}, big.NewInt(1250000), nil},
		{"held payment, owner only", "atx_7f3a", "USDG", "", 8453, []string{"alice"}, big.NewInt(99), nil},
		{"four readers, long memo", "tr_4", "ETH", strings.Repeat("reçu n° 7 ☕ ", 20), 84532, []string{"carol", "alice", "bob", "generated"}, maxAmount, nil},
		{"memo filling one block", "tr_30", "USDC", strings.Repeat("m", 30), 1, []string{"bob", "alice"}, big.NewInt(1), nil},
		{"memo starting with a byte-order mark", "tr_bom", "USDG", "\ufeffinvoice 43", 8453, []string{"alice", "bob"}, big.NewInt(5), nil},
		{"r drawn twice", "tr_redraw", "USDG", "redrawn", 8453, []string{"bob"}, big.NewInt(7), bytes.Repeat([]byte{0xff}, 32)},
	} {
		ctx := NoteContext{ChainID: n.chainID, Reference: n.reference, Asset: n.asset}
		var readers, readerKeys []string
		for _, who := range n.readers {
			k := keys[who]
			if who == "generated" {
				k = gk
			}
			ctx.Readers = append(ctx.Readers, k.PublicKey())
			readers = append(readers, k.PublicKey().Hex())
			readerKeys = append(readerKeys, k.Hex())
		}
		rec := &recorder{r: io.MultiReader(bytes.NewReader(n.rejected), newDetReader("vectors/note/"+n.name))}
		note, err := SealNote(rec, ctx, n.amount, n.memo)
		if err != nil {
			t.Fatal(err)
		}
		rb := (*[pointLen]byte)(note[1:34])
		mh := noteHash(ctx, rb)
		got := rec.got[len(n.rejected):]
		kcAt := 1 + pointLen + 1 + len(ctx.Readers)*wrapLen
		v.Notes = append(v.Notes, noteVector{
			Name: n.name, ChainID: n.chainID, Reference: n.reference, Asset: n.asset, Readers: readers, ReaderKeys: readerKeys,
			Amount: n.amount.String(), Memo: n.memo, Rand: hx(rec.got), R: hx(got[:32]), K: hx(got[32:64]),
			MH: hx(mh[:]), KC: hx(note[kcAt : kcAt+commitLen]), Note: hx(note),
		})
	}
	v.InvalidNotes = makeInvalidNotes(t, v.Notes[0])
	return v
}

// makeInvalidNotes derives notes that must not open from nv (notes[0]).
func makeInvalidNotes(t *testing.T, nv noteVector) []invalidNote {
	note := mustHex(t, nv.Note)
	kcAt := 1 + pointLen + 1 + len(nv.Readers)*wrapLen
	mut := func(f func(b []byte) []byte) string { return hx(f(append([]byte(nil), note...))) }
	return []invalidNote{
		{"kc does not match", 0, nv.Asset, mut(func(b []byte) []byte { b[kcAt] ^= 0x01; return b }), "verification"},
		{"kc of another K", 0, nv.Asset, mut(func(b []byte) []byte {
			var mh [32]byte
			copy(mh[:], mustHex(t, nv.MH))
			other := noteCommitment(bytes.Repeat([]byte{7}, 32), &mh)
			copy(b[kcAt:], other[:])
			return b
		}), "verification"},
		{"opened under another asset", 0, "ETH", nv.Note, "verification"},
	}
}

func makeInvalidProofs(t *testing.T, pv proofVector) []invalidProof {
	proof := mustHex(t, pv.Proof)
	mut := func(f func(b []byte) []byte) string {
		return hx(f(append([]byte(nil), proof...)))
	}
	n := mustHex(t, orderHex)
	current := pv.Balances
	rewritten := append([]balanceRef(nil), current...)
	fresh, _ := EncryptBalance(newDetReader("vectors/rewrite"), Account{ChainID: pv.ChainID, Address: [20]byte(mustHex(t, pv.Address)), Key: mustPub(t, pv.PubEK)}, "USDG", 7, big.NewInt(1250000))
	rewritten[0].Ciphertext = hx(fresh)
	firstS := 2 + 2 + 4 + 8
	return []invalidProof{
		{"trailing byte", mut(func(b []byte) []byte { return append(b, 0) }), current, "malformed"},
		{"m = 0", mut(func(b []byte) []byte { b[1] = 0; return b }), current, "malformed"},
		{"m = 17", mut(func(b []byte) []byte { b[1] = 17; return b }), current, "malformed"},
		{"c = n", mut(func(b []byte) []byte { copy(b[len(b)-64:], n); return b }), current, "malformed"},
		{"z = n", mut(func(b []byte) []byte { copy(b[len(b)-32:], n); return b }), current, "malformed"},
		{"S with hybrid prefix 06", mut(func(b []byte) []byte { b[firstS] = 0x06; return b }), current, "malformed"},
		{"duplicate asset", mut(func(b []byte) []byte {
			second := firstS + 33 // entry 1: lp("ETH") ∥ version ∥ S
			return append(append(b[:second:second], 0, 4, 'U', 'S', 'D', 'G'), b[second+2+3:]...)
		}), current, "malformed"},
		{"version 7 claimed as 8", mut(func(b []byte) []byte { b[firstS-1] = 8; return b }), current, "stale"},
		{"z + 1", mut(func(b []byte) []byte { b[len(b)-1]++; return b }), current, "verification_failed"},
		{"ciphertext rewritten at the same version", pv.Proof, rewritten, "verification_failed"},
	}
}

func mustPub(t testing.TB, h string) *PublicKey {
	t.Helper()
	p, err := ParsePublicKeyHex(h)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVectors(t *testing.T) {
	got := makeVectors(t)
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(vectorsFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", vectorsFile)
	}
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v (run with -update once to create it)", err)
	}
	var want vectorFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	// Direction 1: this implementation produces exactly the committed bytes.
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("vectors differ from %s (-file +computed):\n%s", vectorsFile, diff)
	}
	// Direction 2: the committed bytes, fed back in, give the committed values.
	checkVectorsOpen(t, &want)
}

func checkVectorsOpen(t *testing.T, v *vectorFile) {
	for _, kv := range v.Keys {
		var k *PrivateKey
		var err error
		if kv.Seed != "" {
			k, err = DeriveKey(mustHex(t, kv.Seed), kv.ChainID, [20]byte(mustHex(t, kv.Address)))
		} else {
			k, err = GenerateKey(bytes.NewReader(mustHex(t, kv.Rand)))
		}
		if err != nil || k.Hex() != kv.EK || k.PublicKey().Hex() != kv.PubEK {
			t.Fatalf("key %s: %v", kv.Name, err)
		}
	}
	for _, bv := range v.Balances {
		k, _ := ParsePrivateKeyHex(bv.EK)
		acct := Account{ChainID: bv.ChainID, Address: [20]byte(mustHex(t, bv.Address)), Key: mustPub(t, bv.PubEK)}
		b := Balance{Asset: bv.Asset, Version: bv.Version, Ciphertext: mustHex(t, bv.Ciphertext)}
		amount, err := DecryptBalance(k, acct, b)
		if err != nil || amount.String() != bv.Amount {
			t.Fatalf("balance %s: %v", bv.Name, err)
		}
		src := bytes.NewReader(mustHex(t, bv.Rand))
		ct, err := EncryptBalance(src, acct, bv.Asset, bv.Version, amount)
		if err != nil || hx(ct) != bv.Ciphertext || src.Len() != 0 {
			t.Fatalf("balance %s: re-encryption from 'rand' differs or leaves bytes unread", bv.Name)
		}
	}
	for _, pv := range v.Proofs {
		k, _ := ParsePrivateKeyHex(pv.EK)
		acct := Account{ChainID: pv.ChainID, Address: [20]byte(mustHex(t, pv.Address)), Key: mustPub(t, pv.PubEK)}
		var bs []Balance
		for _, r := range pv.Balances {
			bs = append(bs, Balance{Asset: r.Asset, Version: r.Version, Ciphertext: mustHex(t, r.Ciphertext)})
		}
		figures, err := Verify(acct, mustHex(t, pv.Proof), bs)
		if err != nil {
			t.Fatalf("proof %s: %v", pv.Name, err)
		}
		for i, f := range figures {
			if f.Amount.String() != pv.Amounts[i] || f.Asset != pv.Balances[i].Asset {
				t.Fatalf("proof %s: figure %d differs", pv.Name, i)
			}
		}
		src := bytes.NewReader(mustHex(t, pv.Rand))
		proof, _, err := Prove(src, k, acct, bs)
		if err != nil || hx(proof) != pv.Proof || src.Len() != 0 {
			t.Fatalf("proof %s: re-proving from 'rand' differs or leaves bytes unread", pv.Name)
		}
	}
	pv := v.Proofs[1]
	acct := Account{ChainID: pv.ChainID, Address: [20]byte(mustHex(t, pv.Address)), Key: mustPub(t, pv.PubEK)}
	reasons := map[string]error{"malformed": ErrMalformed, "stale": ErrStale, "verification_failed": ErrVerification}
	for _, iv := range v.InvalidProofs {
		var cur []Balance
		for _, r := range iv.Current {
			cur = append(cur, Balance{Asset: r.Asset, Version: r.Version, Ciphertext: mustHex(t, r.Ciphertext)})
		}
		_, err := Verify(acct, mustHex(t, iv.Proof), cur)
		if want := reasons[iv.Error]; want == nil || !errors.Is(err, want) {
			t.Fatalf("invalid proof %q: got %v, want %s", iv.Name, err, iv.Error)
		}
	}
	for _, iv := range v.InvalidNotes {
		nv := v.Notes[iv.Base]
		ctx := NoteContext{ChainID: nv.ChainID, Reference: nv.Reference, Asset: iv.Asset}
		for _, r := range nv.Readers {
			ctx.Readers = append(ctx.Readers, mustPub(t, r))
		}
		for i, kh := range nv.ReaderKeys {
			k, _ := ParsePrivateKeyHex(kh)
			if _, err := OpenNote(k, ctx, mustHex(t, iv.Note)); !errors.Is(err, ErrVerification) {
				t.Fatalf("invalid note %q: reader %d: got %v, want a verification error", iv.Name, i, err)
			}
		}
	}
	for _, nv := range v.Notes {
		ctx := NoteContext{ChainID: nv.ChainID, Reference: nv.Reference, Asset: nv.Asset}
		for _, r := range nv.Readers {
			ctx.Readers = append(ctx.Readers, mustPub(t, r))
		}
		note := mustHex(t, nv.Note)
		for i, kh := range nv.ReaderKeys {
			k, _ := ParsePrivateKeyHex(kh)
			n, err := OpenNote(k, ctx, note)
			if err != nil || n.Amount.String() != nv.Amount || n.Memo != nv.Memo || n.Asset != nv.Asset {
				t.Fatalf("note %s: reader %d: %v", nv.Name, i, err)
			}
		}
		amount, _ := new(big.Int).SetString(nv.Amount, 10)
		src := bytes.NewReader(mustHex(t, nv.Rand))
		again, err := SealNote(src, ctx, amount, nv.Memo)
		if err != nil || hx(again) != nv.Note || src.Len() != 0 {
			t.Fatalf("note %s: resealing from 'rand' differs or leaves bytes unread", nv.Name)
		}
	}
}
