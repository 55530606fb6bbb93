package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

const testSecret = "whsec_AbCdEfGhIjKlMnOpQrStUvWxYz012345"

// refMAC is the independent computation: crypto/hmac over the same bytes.
func refMAC(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignMatchesCryptoHMAC(t *testing.T) {
	secrets := []string{
		"k",
		testSecret,
		strings.Repeat("s", 63),
		strings.Repeat("s", 64), // exactly one block: used as is
		strings.Repeat("s", 65), // longer than a block: hashed first
		strings.Repeat("long secret ", 30),
		"\x00\xff binary \x80",
	}
	var bodies [][]byte
	for _, n := range []int{0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 4096} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		bodies = append(bodies, b)
	}
	for _, s := range secrets {
		for _, b := range bodies {
			got := Sign(s, b)
			if want := refMAC(s, b); got != want {
				t.Fatalf("Sign(secret of %d bytes, body of %d bytes) = %s, crypto/hmac gives %s", len(s), len(b), got, want)
			}
			if err := Verify(s, b, got); err != nil {
				t.Fatalf("Verify(secret of %d bytes, body of %d bytes, Sign(...)) = %v", len(s), len(b), err)
			}
		}
	}
}

// TestSignRFC4231 checks published HMAC-SHA256 test vectors (RFC 4231
// test cases 1, 2 and 6).
func TestSignRFC4231(t *testing.T) {
	tests := []struct {
		key, data, mac string
	}{
		{strings.Repeat("\x0b", 20), "Hi There",
			"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"Jefe", "what do ya want for nothing?",
			"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{strings.Repeat("\xaa", 131), "Test Using Larger Than Block-Size Key - Hash Key First",
			"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	}
	for i, tc := range tests {
		if got := Sign(tc.key, []byte(tc.data)); got != tc.mac {
			t.Errorf("vector %d: Sign = %s, want %s", i, got, tc.mac)
		}
	}
}

func TestVerifyValid(t *testing.T) {
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_1"}`)
	if err := Verify(testSecret, body, refMAC(testSecret, body)); err != nil {
		t.Fatalf("Verify with a crypto/hmac signature: %v", err)
	}
}

func TestVerifyEmptyBody(t *testing.T) {
	for _, body := range [][]byte{nil, {}} {
		sig := refMAC(testSecret, body)
		if err := Verify(testSecret, body, sig); err != nil {
			t.Fatalf("Verify(empty body): %v", err)
		}
		if err := Verify(testSecret, []byte(" "), sig); !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("Verify(one space, signature of empty body) = %v, want ErrSignatureMismatch", err)
		}
	}
}

func TestVerifyTamperedBody(t *testing.T) {
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_1","counterparty":"@bob"}`)
	sig := Sign(testSecret, body)
	for i := range body {
		tampered := append([]byte(nil), body...)
		tampered[i] ^= 0x01
		if err := Verify(testSecret, tampered, sig); !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("byte %d flipped: Verify = %v, want ErrSignatureMismatch", i, err)
		}
	}
	for name, b := range map[string][]byte{
		"truncated":         body[:len(body)-1],
		"extended":          append(append([]byte(nil), body...), ' '),
		"trailing newline":  append(append([]byte(nil), body...), '\n'),
		"leading space":     append([]byte{' '}, body...),
		"re-encoded spaced": []byte(strings.ReplaceAll(string(body), ":", ": ")),
	} {
		if err := Verify(testSecret, b, sig); !errors.Is(err, ErrSignatureMismatch) {
			t.Errorf("%s body: Verify = %v, want ErrSignatureMismatch", name, err)
		}
	}
}

func TestVerifyWrongSecret(t *testing.T) {
	body := []byte(`{"event":"transfer.failed","event_id":"evt_2"}`)
	sig := Sign(testSecret, body)
	for _, s := range []string{testSecret + "x", testSecret[:len(testSecret)-1], strings.ToUpper(testSecret), "whsec_other"} {
		if err := Verify(s, body, sig); !errors.Is(err, ErrSignatureMismatch) {
			t.Errorf("Verify with a different secret = %v, want ErrSignatureMismatch", err)
		}
	}
}

func TestVerifyHexCase(t *testing.T) {
	body := []byte(`{"event":"agent.policy.updated","event_id":"evt_3"}`)
	lower := refMAC(testSecret, body)
	if lower != strings.ToLower(lower) {
		t.Fatal("crypto/hmac reference is not lowercase")
	}
	if Sign(testSecret, body) != lower {
		t.Fatal("Sign is not lowercase hex")
	}
	var mixed strings.Builder
	for i, c := range lower {
		if i%2 == 0 {
			c = []rune(strings.ToUpper(string(c)))[0]
		}
		mixed.WriteRune(c)
	}
	for name, h := range map[string]string{"lower": lower, "upper": strings.ToUpper(lower), "mixed": mixed.String()} {
		if err := Verify(testSecret, body, h); err != nil {
			t.Errorf("%s hex: Verify = %v", name, err)
		}
	}
}

func TestVerifyTrimsSpacesAndTabs(t *testing.T) {
	body := []byte(`{}`)
	sig := Sign(testSecret, body)
	for _, h := range []string{" " + sig, sig + " ", "\t" + sig + " \t", "  " + sig + "  "} {
		if err := Verify(testSecret, body, h); err != nil {
			t.Errorf("Verify(%q) = %v, want nil", h, err)
		}
	}
	for _, h := range []string{sig + "\n", "\r\n" + sig, sig[:32] + " " + sig[32:]} {
		if err := Verify(testSecret, body, h); !errors.Is(err, ErrMalformedSignature) {
			t.Errorf("Verify(%q) = %v, want ErrMalformedSignature", h, err)
		}
	}
}

func TestVerifyHeaderShape(t *testing.T) {
	body := []byte(`{"event":"transfer.initiated","event_id":"evt_4"}`)
	sig := Sign(testSecret, body)
	tests := []struct {
		name, header string
		want         error
	}{
		{"empty", "", ErrMissingSignature},
		{"blank", "   \t ", ErrMissingSignature},
		{"one digit", sig[:1], ErrMalformedSignature},
		{"truncated by one", sig[:63], ErrMalformedSignature},
		{"truncated by two", sig[:62], ErrMalformedSignature},
		{"half", sig[:32], ErrMalformedSignature},
		{"over-long by one", sig + "0", ErrMalformedSignature},
		{"over-long by two", sig + "00", ErrMalformedSignature},
		{"twice", sig + sig, ErrMalformedSignature},
		{"comma list", sig + "," + sig, ErrMalformedSignature},
		{"sha256= prefix", "sha256=" + sig, ErrMalformedSignature},
		{"0x prefix", "0x" + sig[2:], ErrMalformedSignature},
		{"non-hex last", sig[:63] + "g", ErrMalformedSignature},
		{"non-hex first", "z" + sig[1:], ErrMalformedSignature},
		{"multibyte", "é" + sig[2:], ErrMalformedSignature},
		{"NUL", sig[:63] + "\x00", ErrMalformedSignature},
		{"64 base64 characters", "sGz0cJVhE8gS3Q7a9xX0h0PBBbSbPcF0SxMt0hDm3hU+/XXXXXXXXXXXXXXXXXXX", ErrMalformedSignature},
		{"right shape, wrong value", strings.Repeat("0", 64), ErrSignatureMismatch},
	}
	for _, tc := range tests {
		err := Verify(testSecret, body, tc.header)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
		for _, other := range []error{ErrMissingSignature, ErrMalformedSignature, ErrSignatureMismatch, ErrNoSecret} {
			if other != tc.want && errors.Is(err, other) {
				t.Errorf("%s: error %v also matches %v", tc.name, err, other)
			}
		}
	}
}

func TestVerifyRefusesEmptySecret(t *testing.T) {
	body := []byte(`{}`)
	if err := Verify("", body, Sign("", body)); !errors.Is(err, ErrNoSecret) {
		t.Errorf("Verify(empty secret) = %v, want ErrNoSecret", err)
	}
	for _, secrets := range [][]string{nil, {}, {""}, {testSecret, ""}} {
		if err := VerifyAny(secrets, body, Sign(testSecret, body)); !errors.Is(err, ErrNoSecret) {
			t.Errorf("VerifyAny(%d secrets, one empty or none) = %v, want ErrNoSecret", len(secrets), err)
		}
	}
}

func TestVerifyAnyRotation(t *testing.T) {
	oldSecret, newSecret := "whsec_old00000000000000000000000000", "whsec_new11111111111111111111111111"
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_5"}`)

	byNew := Sign(newSecret, body)
	if err := VerifyAny([]string{oldSecret, newSecret}, body, byNew); err != nil {
		t.Errorf("second secret signs: VerifyAny = %v", err)
	}
	byOld := Sign(oldSecret, body)
	if err := VerifyAny([]string{oldSecret, newSecret}, body, byOld); err != nil {
		t.Errorf("first secret signs: VerifyAny = %v", err)
	}
	if err := VerifyAny([]string{newSecret}, body, byOld); !errors.Is(err, ErrSignatureMismatch) {
		t.Errorf("old secret dropped: VerifyAny = %v, want ErrSignatureMismatch", err)
	}
	if err := VerifyAny([]string{oldSecret, newSecret}, body, Sign("whsec_third", body)); !errors.Is(err, ErrSignatureMismatch) {
		t.Errorf("neither secret signs: VerifyAny = %v, want ErrSignatureMismatch", err)
	}
	if err := VerifyAny([]string{oldSecret, newSecret}, body, byNew[:40]); !errors.Is(err, ErrMalformedSignature) {
		t.Errorf("truncated header: VerifyAny = %v, want ErrMalformedSignature", err)
	}
}

// TestErrorsDoNotLeak checks that no failure message carries the secret,
// the expected MAC (either case) or the received header.
func TestErrorsDoNotLeak(t *testing.T) {
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_6"}`)
	want := Sign(testSecret, body)
	headers := []string{
		"",
		want[:63],
		want + "a",
		strings.Repeat("f", 64),
		"deadbeef" + want[8:63] + "q",
		Sign("whsec_other", body),
	}
	for _, h := range headers {
		_, errConstruct := ConstructEvent(body, h, testSecret)
		errs := []error{
			Verify(testSecret, body, h),
			VerifyAny([]string{"whsec_other2", testSecret}, body, h),
			errConstruct,
		}
		for _, err := range errs {
			if err == nil {
				t.Fatalf("header of %d chars unexpectedly verified", len(h))
			}
			msg := err.Error()
			for _, secret := range []string{testSecret, want, strings.ToUpper(want), want[:16]} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q contains secret material", msg)
				}
			}
			if len(h) >= 8 && strings.Contains(msg, h[:8]) {
				t.Errorf("error %q echoes the header", msg)
			}
		}
	}
}

// TestVerifierAllocations: a Verifier, keyed once, verifies with no
// allocation, for the first secret and for the second of a rotation.
func TestVerifierAllocations(t *testing.T) {
	body := make([]byte, 1024)
	v, err := NewVerifier("whsec_old00000000000000000000000000", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	sig := Sign(testSecret, body)
	allocs := testing.AllocsPerRun(100, func() {
		if err := v.Verify(body, sig); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 && !raceEnabled {
		t.Errorf("Verifier.Verify allocates %v times per call, want 0", allocs)
	}
}

// TestVerifierAgreesWithVerifyAny: the keyed-once path gives VerifyAny's
// answer for matching, mismatching and malformed headers, under
// concurrency.
func TestVerifierAgreesWithVerifyAny(t *testing.T) {
	secrets := []string{"whsec_a", "whsec_b_longer_than_a_block_" + strings.Repeat("x", 80)}
	v, err := NewVerifier(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewVerifier(); !errors.Is(err, ErrNoSecret) {
		t.Errorf("NewVerifier(): %v", err)
	}
	if _, err := NewVerifier("whsec_a", ""); !errors.Is(err, ErrNoSecret) {
		t.Errorf("NewVerifier with an empty secret: %v", err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := []byte(strings.Repeat("b", g*50+i))
				for _, sig := range []string{Sign(secrets[0], body), Sign(secrets[1], body), Sign("whsec_other", body), "zz", ""} {
					if got, want := v.Verify(body, sig), VerifyAny(secrets, body, sig); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("body %d sig %.8s: Verifier %v, VerifyAny %v", len(body), sig, got, want)
					}
				}
			}
		}()
	}
	wg.Wait()
	if s := fmt.Sprint(v) + fmt.Sprintf("%#v", v); strings.Contains(s, "whsec_a") {
		t.Errorf("a Verifier prints its secret: %s", s)
	}
}
