// Package decrypt implements confpay's confidentiality protocol, suite 0x01,
// for both sides: the SDK (decrypt balances, prove them, open notes) and the
// server (encrypt balances, verify proofs without any key, seal notes).
//
// The service never holds a decryption key. Each account has an encryption
// key pair, PrivateKey ek and PublicKey EK = ek·G on secp256k1, separate
// from its signing key. Then:
//
//   - The ledger stores each balance as an 82-byte ciphertext bound to the
//     chain, address, asset, version and EK (EncryptBalance). Only ek opens
//     it (DecryptBalance).
//   - To have the server return a figure, the client sends a decryption
//     proof (Prove): for each ciphertext, the shared point S = ek·R and a
//     Chaum–Pedersen proof that log_G EK = log_R S. The server checks it
//     against its current ciphertexts and opens them with S (Verify). A proof
//     goes stale on the next balance change.
//   - A transfer's amount and memo are sealed to up to four readers, usually
//     sender and recipient (SealNote); each reader opens with its own key
//     (OpenNote).
//
// Byte layouts, transcripts and domain tags are in docs/confidentiality.md;
// known-answer vectors are in testdata/vectors.json. The wire carries
// ciphertexts, proofs and notes as base64url without padding (EncodeBase64,
// DecodeBase64).
//
// Every multiplication by a secret scalar is constant time: libsecp256k1
// through go-ethereum's crypto/secp256k1 in cgo builds; in CGO_ENABLED=0
// builds pure Go on decred's field arithmetic with complete formulas, a
// GLV split and signed 5-bit window for k·P (ctmul.go, glv.go) and a
// signed-digit comb over a 48 KiB table of multiples of G, built on first
// use, for k·G (ctbase.go).
//
// Secrets never print: PrivateKey, Proof, Note and Figure redact themselves
// in String, GoString and Format (and PrivateKey, Note and Figure in
// LogValue, for log/slog), and errors never carry key material, proof
// bytes or figures. Errors wrap one of the sentinels (ErrMalformed, ErrStale,
// ErrVerification, ErrNotForThisKey, ErrCorruptCiphertext); test them with
// errors.Is.
package decrypt
