package decrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
)

// Account is the account a balance or proof is about. Every ciphertext and
// proof is bound to all three fields.
type Account struct {
	ChainID uint64
	Address [20]byte
	Key     *PublicKey // the account's encryption key EK
}

// Balance is one current balance ciphertext, as the ledger holds it and the
// API returns it (encrypted_balance and balance_version). The ciphertext is
// not secret.
type Balance struct {
	Asset      string
	Version    uint64
	Ciphertext []byte // 82 bytes
}

// EncryptBalance encrypts amount (0 ≤ amount < 2^256) for the account's key,
// bound to the account, asset and version. Each call draws a fresh r from
// rand (nil means crypto/rand); the ledger calls it with version+1 on every
// balance change. The result is 82 bytes:
//
//	0x01 ∥ P(R = r·G) ∥ AES-256-GCM(k, nonce, uint256 amount, aad = th)
func EncryptBalance(rand io.Reader, acct Account, asset string, version uint64, amount *big.Int) ([]byte, error) {
	if !acct.Key.valid() {
		return nil, fmt.Errorf("%w: account has no encryption key", ErrMalformed)
	}
	if err := checkAsset("balance", asset); err != nil {
		return nil, err
	}
	pt, err := amountBytes("balance", amount)
	if err != nil {
		return nil, err
	}
	defer clear(pt[:])
	r, err := randScalar(rand)
	if err != nil {
		return nil, err
	}
	defer r.Zero()
	R := mulSecretBase(&r)
	S := mulSecret(&r, &acct.Key.p)
	rb, sb := R.bytes(), S.bytes()
	defer clear(sb[:])
	th := balanceTH(acct, asset, version, &rb)
	aead, nonce := deriveAEAD(sb[:], nil, tagBalanceKey, th[:])
	out := make([]byte, 0, ciphertextLen)
	out = append(out, Suite)
	out = append(out, rb[:]...)
	out = aead.Seal(out, nonce, pt[:], th[:])
	return out, nil
}

// DecryptBalance opens b with the account's private key. acct.Key may be
// nil (k's public key is used); otherwise it must be k's public key, else
// ErrNotForThisKey. A ciphertext that does not parse gives ErrMalformed;
// one that does not authenticate (another account, asset, version or key,
// or tampered bytes) gives ErrVerification.
func DecryptBalance(k *PrivateKey, acct Account, b Balance) (*big.Int, error) {
	acct, err := ownerAccount(k, acct)
	if err != nil {
		return nil, err
	}
	amount, _, err := decryptBalance(k, acct, b)
	return amount, err
}

// ownerAccount checks that k owns acct and fills in acct.Key when nil.
func ownerAccount(k *PrivateKey, acct Account) (Account, error) {
	if !k.valid() {
		return acct, errors.New("decrypt: private key is nil or was not made by this package")
	}
	if acct.Key == nil {
		acct.Key = k.pub
		return acct, nil
	}
	if !acct.Key.Equal(k.pub) {
		return acct, fmt.Errorf("%w: the account's encryption key is not this private key's public key", ErrNotForThisKey)
	}
	return acct, nil
}

// decryptBalance opens b and also returns P(S) = P(ek·R), the prover's
// witness. acct.Key is k's public key.
func decryptBalance(k *PrivateKey, acct Account, b Balance) (*big.Int, [pointLen]byte, error) {
	var sb [pointLen]byte
	if err := checkAsset("balance", b.Asset); err != nil {
		return nil, sb, err
	}
	R, err := parseCiphertext(b.Ciphertext)
	if err != nil {
		return nil, sb, fmt.Errorf("%w: ciphertext for %s: %v", ErrMalformed, b.Asset, err)
	}
	S := mulSecret(&k.s, &R)
	sb = S.bytes()
	amount, ok := openBalance(acct, b.Asset, b.Version, b.Ciphertext, &sb)
	if !ok {
		clear(sb[:])
		return nil, sb, fmt.Errorf("%w: ciphertext for %s does not open with this key, account, asset and version", ErrVerification, b.Asset)
	}
	return amount, sb, nil
}

// checkCiphertextShape is the structural check: length, suite byte, point
// prefix. It does no curve work.
func checkCiphertextShape(ct []byte) error {
	if len(ct) != ciphertextLen {
		return fmt.Errorf("ciphertext is %d bytes, want %d", len(ct), ciphertextLen)
	}
	if ct[0] != Suite {
		return errors.New("ciphertext suite byte is not 0x01")
	}
	if !checkPointPrefix(ct[1 : 1+pointLen]) {
		return errors.New("ciphertext R prefix must be 02 or 03")
	}
	return nil
}

// parseCiphertext checks the shape and returns R.
func parseCiphertext(ct []byte) (point, error) {
	if err := checkCiphertextShape(ct); err != nil {
		return point{}, err
	}
	R, err := parsePoint(ct[1 : 1+pointLen])
	if err != nil {
		return point{}, fmt.Errorf("ciphertext R: %v", err)
	}
	return R, nil
}

// openBalance opens a well-shaped ciphertext with the shared point P(S).
func openBalance(acct Account, asset string, version uint64, ct []byte, sb *[pointLen]byte) (*big.Int, bool) {
	rb := (*[pointLen]byte)(ct[1 : 1+pointLen])
	th := balanceTH(acct, asset, version, rb)
	aead, nonce := deriveAEAD(sb[:], nil, tagBalanceKey, th[:])
	var pt [amountLen]byte
	if _, err := aead.Open(pt[:0], nonce, ct[1+pointLen:], th[:]); err != nil {
		return nil, false
	}
	amount := new(big.Int).SetBytes(pt[:])
	clear(pt[:])
	return amount, true
}

// balanceTH computes th = H(ctx ∥ P(R)) with
// ctx = lp("cpay/v1/balance-ctx") ∥ u64 chain ∥ addr ∥ lp(asset) ∥ u64 version ∥ P(EK).
func balanceTH(acct Account, asset string, version uint64, rb *[pointLen]byte) [32]byte {
	var buf [2 + len(tagBalanceCtx) + 8 + 20 + 2 + maxAsset + 8 + 2*pointLen]byte
	b := cryptobyte.NewBuilder(buf[:0]) // grows past buf only if a caller skipped validation
	addLPString(b, tagBalanceCtx)
	b.AddUint64(acct.ChainID)
	b.AddBytes(acct.Address[:])
	addLPString(b, asset)
	b.AddUint64(version)
	b.AddBytes(acct.Key.b[:])
	b.AddBytes(rb[:])
	return sha256.Sum256(b.BytesOrPanic())
}

// deriveAEAD computes key ∥ nonce = HKDF-SHA256(ikm, salt, info = tag ∥ ctx,
// 44 bytes) and returns AES-256-GCM under key with the 12-byte nonce.
func deriveAEAD(ikm, salt []byte, tag string, ctx ...[]byte) (cipher.AEAD, []byte) {
	n := len(tag)
	for _, c := range ctx {
		n += len(c)
	}
	info := make([]byte, 0, n)
	info = append(info, tag...)
	for _, c := range ctx {
		info = append(info, c...)
	}
	okm, err := hkdf.Key(sha256.New, ikm, salt, string(info), hkdfOutputLength)
	if err != nil {
		panic("decrypt: internal error: hkdf: " + err.Error()) // only for lengths > 255·32
	}
	block, err := aes.NewCipher(okm[:32])
	if err != nil {
		panic("decrypt: internal error: aes: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("decrypt: internal error: gcm: " + err.Error())
	}
	nonce := append([]byte(nil), okm[32:]...)
	clear(okm)
	return aead, nonce
}
