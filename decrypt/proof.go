package decrypt

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"golang.org/x/crypto/cryptobyte"
)

const redactedProof = "decrypt.Proof(REDACTED)"

// Proof is a parsed decryption proof:
//
//	0x01 ∥ u8 m (1..16) ∥ m × { lp(asset) ∥ u64 version ∥ P(S_i) } ∥ c (32) ∥ z (32)
//
// A proof opens the ciphertexts it covers, so it is as sensitive as the
// figures: it never prints (String, GoString and Format are redacted).
type Proof struct {
	raw     []byte
	entries []proofEntry
	c, z    secp256k1.ModNScalar
}

type proofEntry struct {
	asset   string
	version uint64
	s       [pointLen]byte
}

// ProofEntry is the public part of one proof entry.
type ProofEntry struct {
	Asset   string
	Version uint64
}

// Figure is one opened balance: an asset and its amount in base units. It
// is a plaintext figure, so String, GoString, Format and LogValue redact the
// amount; read Amount explicitly.
type Figure struct {
	Asset  string
	Amount *big.Int
}

// String returns the asset with the amount redacted.
func (f Figure) String() string { return "decrypt.Figure(" + f.Asset + ", REDACTED)" }

// GoString returns the asset with the amount redacted.
func (f Figure) GoString() string { return f.String() }

// Format prints String for every verb.
func (f Figure) Format(s fmt.State, _ rune) { io.WriteString(s, f.String()) }

// LogValue keeps the amount out of log/slog output, whose JSON handler
// would otherwise encode the fields.
func (f Figure) LogValue() slog.Value { return slog.StringValue(f.String()) }

// ParseProof parses a decryption proof strictly: suite byte 0x01, 1 to 16
// entries, valid and distinct asset codes, 33-byte compressed points on the
// curve, c and z below n, no trailing bytes. Errors wrap ErrMalformed.
func ParseProof(b []byte) (*Proof, error) {
	p, err := parseProofShape(b)
	if err != nil {
		return nil, err
	}
	p.raw = append([]byte(nil), b...)
	for i := range p.entries {
		if _, err := parsePoint(p.entries[i].s[:]); err != nil {
			return nil, fmt.Errorf("%w: proof entry %d (%s): S: %v", ErrMalformed, i, p.entries[i].asset, err)
		}
	}
	return p, nil
}

// parseProofShape is ParseProof without curve work: points are checked for
// length and prefix only, so that a stale proof is answered before any
// point is decompressed.
func parseProofShape(b []byte) (*Proof, error) {
	bad := func(format string, args ...any) (*Proof, error) {
		return nil, fmt.Errorf("%w: proof: "+format, append([]any{ErrMalformed}, args...)...)
	}
	in := cryptobyte.String(b)
	var suite, m8 uint8
	if !in.ReadUint8(&suite) || !in.ReadUint8(&m8) {
		return bad("%d bytes, too short", len(b))
	}
	if suite != Suite {
		return bad("suite byte is not 0x01")
	}
	m := int(m8)
	if m < 1 || m > maxProofAssets {
		return bad("covers %d assets, want 1 to %d", m, maxProofAssets)
	}
	p := &Proof{entries: make([]proofEntry, m)}
	for i := range m {
		var assetBytes cryptobyte.String
		if !in.ReadUint16LengthPrefixed(&assetBytes) {
			return bad("entry %d: truncated asset", i)
		}
		asset := string(assetBytes)
		if !validAsset(asset) {
			return bad("entry %d: asset code must be 1 to %d printable ASCII bytes without spaces", i, maxAsset)
		}
		for j := range i {
			if p.entries[j].asset == asset {
				return bad("entry %d: asset %s appears twice", i, asset)
			}
		}
		var sBytes []byte
		if !in.ReadUint64(&p.entries[i].version) || !in.ReadBytes(&sBytes, pointLen) {
			return bad("entry %d (%s): truncated", i, asset)
		}
		p.entries[i].asset = asset
		if !checkPointPrefix(sBytes) {
			return bad("entry %d (%s): S prefix must be 02 or 03 (compressed form only)", i, asset)
		}
		copy(p.entries[i].s[:], sBytes)
	}
	var cb, zb []byte
	if !in.ReadBytes(&cb, scalarLen) || !in.ReadBytes(&zb, scalarLen) {
		return bad("truncated c and z")
	}
	if !in.Empty() {
		return bad("%d trailing bytes", len(in))
	}
	if p.c.SetBytes((*[32]byte)(cb)) != 0 {
		return bad("c is not below the group order")
	}
	if p.z.SetBytes((*[32]byte)(zb)) != 0 {
		return bad("z is not below the group order")
	}
	p.raw = b // ParseProof copies; Verify does not keep p
	return p, nil
}

// Entries returns the asset and version of each entry, in proof order.
func (p *Proof) Entries() []ProofEntry {
	out := make([]ProofEntry, len(p.entries))
	for i, e := range p.entries {
		out[i] = ProofEntry{Asset: e.asset, Version: e.version}
	}
	return out
}

// Bytes returns the proof's wire bytes.
func (p *Proof) Bytes() []byte { return append([]byte(nil), p.raw...) }

// String returns "decrypt.Proof(REDACTED)".
func (p Proof) String() string { return redactedProof }

// GoString returns "decrypt.Proof(REDACTED)".
func (p Proof) GoString() string { return redactedProof }

// Format prints "decrypt.Proof(REDACTED)" for every verb.
func (p Proof) Format(f fmt.State, _ rune) { io.WriteString(f, redactedProof) }

// Prove opens every given ciphertext with k and builds a proof that lets a
// keyless verifier open them too. balances are the account's current
// ciphertexts as read from the API (1 to 16, distinct assets); the proof
// lists them in the given order and amounts holds the opened figures in that
// order. Prove refuses to reveal ek·R for a ciphertext it cannot open:
// ErrNotForThisKey when acct.Key is not k's public key (a nil acct.Key means
// k's), ErrVerification when a ciphertext does not authenticate.
//
// rand (nil means crypto/rand) supplies 32 bytes of extra data for the
// hedged RFC 6979 nonce.
func Prove(rand io.Reader, k *PrivateKey, acct Account, balances []Balance) (proof []byte, amounts []*big.Int, err error) {
	acct, err = ownerAccount(k, acct)
	if err != nil {
		return nil, nil, err
	}
	m := len(balances)
	if m < 1 || m > maxProofAssets {
		return nil, nil, fmt.Errorf("%w: proof must cover 1 to %d balances, got %d", ErrMalformed, maxProofAssets, m)
	}
	for i := range balances {
		for j := range i {
			if balances[j].Asset == balances[i].Asset {
				return nil, nil, fmt.Errorf("%w: balances list asset %s twice", ErrMalformed, balances[i].Asset)
			}
		}
	}
	amounts = make([]*big.Int, m)
	ss := make([][pointLen]byte, m)
	rs := make([]point, m)
	defer clear(ss)
	for i, b := range balances {
		amount, sb, err := decryptBalance(k, acct, b)
		if err != nil {
			return nil, nil, err
		}
		amounts[i], ss[i] = amount, sb
		rs[i], _ = parseCiphertext(b.Ciphertext) // parsed fine just above
	}
	proof, err = buildProof(rand, k, acct, balances, rs, ss)
	if err != nil {
		return nil, nil, err
	}
	return proof, amounts, nil
}

// buildProof makes the proof from the witnesses S_i = ek·R_i, without
// opening anything (Prove has done that).
func buildProof(rand io.Reader, k *PrivateKey, acct Account, balances []Balance, rs []point, ss [][pointLen]byte) ([]byte, error) {
	m := len(balances)
	stmt := proofStatement(acct, balances, ss)
	var extra [32]byte
	if err := readRandom(rand, extra[:]); err != nil {
		return nil, err
	}
	ek := k.s.Bytes()
	w := secp256k1.NonceRFC6979(ek[:], stmt[:], extra[:], nil, 0)
	clear(ek[:])
	defer w.Zero()

	as := make([][pointLen]byte, m+1)
	a0 := mulSecretBase(w)
	as[0] = a0.bytes()
	for i := range rs {
		ai := mulSecret(w, &rs[i])
		as[i+1] = ai.bytes()
	}
	c := challenge(&stmt, as)
	var z secp256k1.ModNScalar
	z.Mul2(&c, &k.s).Add(w)
	defer z.Zero()

	out := cryptobyte.NewFixedBuilder(make([]byte, 0, proofLen(balances)))
	out.AddUint8(Suite)
	out.AddUint8(uint8(m))
	for i, b := range balances {
		addLPString(out, b.Asset)
		out.AddUint64(b.Version)
		out.AddBytes(ss[i][:])
	}
	cb, zb := c.Bytes(), z.Bytes()
	out.AddBytes(cb[:])
	out.AddBytes(zb[:])
	clear(zb[:])
	return out.BytesOrPanic(), nil
}

func proofLen(balances []Balance) int {
	n := 2 + 2*scalarLen
	for _, b := range balances {
		n += 2 + len(b.Asset) + 8 + pointLen
	}
	return n
}

// proofStatement computes
//
//	stmt = H(lp("cpay/v1/decryption-proof") ∥ u64 chain ∥ addr ∥ P(EK) ∥ u8 m ∥
//	         Σ_i [lp(asset_i) ∥ u64 version_i ∥ lp(ciphertext_i) ∥ P(S_i)])
func proofStatement(acct Account, balances []Balance, ss [][pointLen]byte) [32]byte {
	h := sha256.New()
	b := cryptobyte.NewBuilder(make([]byte, 0, 2+len(tagDecryptProof)+8+20+pointLen+1))
	addLPString(b, tagDecryptProof)
	b.AddUint64(acct.ChainID)
	b.AddBytes(acct.Address[:])
	b.AddBytes(acct.Key.b[:])
	b.AddUint8(uint8(len(balances)))
	h.Write(b.BytesOrPanic())
	var buf [2 + maxAsset + 8 + 2 + ciphertextLen + pointLen]byte
	for i, bal := range balances {
		e := cryptobyte.NewBuilder(buf[:0])
		addLPString(e, bal.Asset)
		e.AddUint64(bal.Version)
		e.AddUint16LengthPrefixed(func(e *cryptobyte.Builder) { e.AddBytes(bal.Ciphertext) })
		e.AddBytes(ss[i][:])
		h.Write(e.BytesOrPanic())
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Verify checks a decryption proof against the verifier's current
// ciphertexts for the account (in any order; matched by asset) and returns
// the opened figures in proof order. It needs no key. In order:
//
//   - a proof that does not parse: ErrMalformed;
//   - an asset in the proof that current does not hold: ErrVerification;
//   - a version that is not the current one: ErrStale, before any curve work;
//   - an S_i that is not on the curve: ErrMalformed;
//   - a proof whose equations fail (another account, chain, key, asset or
//     ciphertext, or altered bytes): ErrVerification;
//   - a proof that verifies but whose ciphertext does not open, or a
//     current list that is itself bad: ErrCorruptCiphertext (a server bug).
func Verify(acct Account, proof []byte, current []Balance) ([]Figure, error) {
	if !acct.Key.valid() {
		return nil, errors.New("decrypt: verify: account has no encryption key")
	}
	p, err := parseProofShape(proof)
	if err != nil {
		return nil, err
	}
	m := len(p.entries)

	// Match entries with the current ciphertexts: shape checks only.
	matched := make([]Balance, m)
	found := make([]bool, m)
	for _, cur := range current {
		for i := range p.entries {
			if p.entries[i].asset != cur.Asset {
				continue
			}
			if found[i] {
				return nil, fmt.Errorf("%w: current balances list asset %s twice", ErrCorruptCiphertext, cur.Asset)
			}
			found[i], matched[i] = true, cur
		}
	}
	for i := range p.entries {
		if !found[i] {
			return nil, fmt.Errorf("%w: proof entry %d: the account holds no balance in %s", ErrVerification, i, p.entries[i].asset)
		}
	}
	for i, e := range p.entries {
		if e.version != matched[i].Version {
			return nil, fmt.Errorf("%w: proof entry %d (%s): proof is for version %d, current is %d", ErrStale, i, e.asset, e.version, matched[i].Version)
		}
	}
	for i := range matched {
		if err := checkCiphertextShape(matched[i].Ciphertext); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorruptCiphertext, matched[i].Asset, err)
		}
	}

	// Curve work.
	ss := make([]point, m)
	rs := make([]point, m)
	sbs := make([][pointLen]byte, m)
	for i := range p.entries {
		if ss[i], err = parsePoint(p.entries[i].s[:]); err != nil {
			return nil, fmt.Errorf("%w: proof entry %d (%s): S: %v", ErrMalformed, i, p.entries[i].asset, err)
		}
		sbs[i] = p.entries[i].s
	}
	for i := range matched {
		if rs[i], err = parsePoint(matched[i].Ciphertext[1 : 1+pointLen]); err != nil {
			return nil, fmt.Errorf("%w: %s: R: %v", ErrCorruptCiphertext, matched[i].Asset, err)
		}
	}

	// A_0 = z·G − c·EK, A_i = z·R_i − c·S_i.
	var negC secp256k1.ModNScalar
	negC.NegateVal(&p.c)
	sums := make([]secp256k1.JacobianPoint, m+1)
	var zp, cp secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&p.z, &zp)
	mulPublic(&negC, &acct.Key.p, &cp)
	secp256k1.AddNonConst(&zp, &cp, &sums[0])
	for i := range rs {
		mulPublic(&p.z, &rs[i], &zp)
		mulPublic(&negC, &ss[i], &cp)
		secp256k1.AddNonConst(&zp, &cp, &sums[i+1])
	}
	as := make([][pointLen]byte, m+1)
	if i := compressPublic(sums, as); i >= 0 {
		return nil, fmt.Errorf("%w: A_%d is the identity", ErrVerification, i)
	}
	stmt := proofStatement(acct, matched, sbs)
	c := challenge(&stmt, as)
	if !c.Equals(&p.c) {
		return nil, ErrVerification
	}

	figures := make([]Figure, m)
	for i := range matched {
		amount, ok := openBalance(acct, matched[i].Asset, matched[i].Version, matched[i].Ciphertext, &sbs[i])
		if !ok {
			return nil, fmt.Errorf("%w: %s: the proof verifies but the ciphertext does not open", ErrCorruptCiphertext, matched[i].Asset)
		}
		figures[i] = Figure{Asset: matched[i].Asset, Amount: amount}
	}
	return figures, nil
}
