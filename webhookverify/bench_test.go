package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// benchSecret has the shape of a real subscription secret.
const benchSecret = "whsec_0123456789abcdefABCDEFghijklmn"

func bench1KiB() []byte {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	return body
}

// BenchmarkVerify1KiB measures Verify on a 1 KiB body with a valid header.
func BenchmarkVerify1KiB(b *testing.B) {
	body := bench1KiB()
	sig := Sign(benchSecret, body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := Verify(benchSecret, body, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineHMACHex1KiB is the textbook check on the same input:
// crypto/hmac.New, hex.DecodeString, hmac.Equal. Verify is judged against it.
func BenchmarkBaselineHMACHex1KiB(b *testing.B) {
	body := bench1KiB()
	sig := Sign(benchSecret, body)
	secret := benchSecret
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		want := mac.Sum(nil)
		got, err := hex.DecodeString(sig)
		if err != nil || !hmac.Equal(got, want) {
			b.Fatal("baseline mismatch")
		}
	}
}

// BenchmarkVerifier1KiB measures a Verifier (keyed once) on the same input.
func BenchmarkVerifier1KiB(b *testing.B) {
	body := bench1KiB()
	sig := Sign(benchSecret, body)
	v, err := NewVerifier(benchSecret)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := v.Verify(body, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineHMACKeyedOnce1KiB is the strongest plain use of
// crypto/hmac on the same input, the floor Verifier is judged against: one
// HMAC keyed once, Reset per message, the sum and the decoded header in
// stack buffers, hmac.Equal.
func BenchmarkBaselineHMACKeyedOnce1KiB(b *testing.B) {
	body := bench1KiB()
	sig := Sign(benchSecret, body)
	mac := hmac.New(sha256.New, []byte(benchSecret))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var sum, got [sha256.Size]byte
		mac.Reset()
		mac.Write(body)
		if _, err := hex.Decode(got[:], []byte(sig)); err != nil || !hmac.Equal(mac.Sum(sum[:0]), got[:]) {
			b.Fatal("baseline mismatch")
		}
	}
}

// BenchmarkVerifyAnySecondOf21KiB measures a rotation check where the
// second of two secrets matches (two MACs computed).
func BenchmarkVerifyAnySecondOf21KiB(b *testing.B) {
	body := bench1KiB()
	secrets := []string{"whsec_old00000000000000000000000000", benchSecret}
	sig := Sign(benchSecret, body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := VerifyAny(secrets, body, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseEventTransfer measures decoding a typical transfer payload.
func BenchmarkParseEventTransfer(b *testing.B) {
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_8k2m","account":"@alice","direction":"received","counterparty":"@bob","asset":"USDG","confidential":true,"tx_hash":"0x5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f5e1f","transfer_id":"tr_4h7q","timestamp":"2026-07-02T14:23:09Z"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEvent(body); err != nil {
			b.Fatal(err)
		}
	}
}
