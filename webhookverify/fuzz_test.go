package webhookverify

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzVerify checks Verify against crypto/hmac on arbitrary secrets, bodies
// and headers: it never panics, accepts its own signatures, and accepts a
// header only if it decodes to the crypto/hmac result.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_1"}`)
	sig := Sign(testSecret, body)
	f.Add(testSecret, body, sig)
	f.Add(testSecret, body, strings.ToUpper(sig))
	f.Add(testSecret, body, " "+sig+"\t")
	f.Add(testSecret, body, sig[:63])
	f.Add(testSecret, body, sig+"0")
	f.Add(testSecret, []byte{}, "")
	f.Add("", []byte("x"), sig)
	f.Add(strings.Repeat("k", 65), []byte("long key"), strings.Repeat("g", 64))
	f.Add("k", []byte("\x00\xff"), "sha256="+sig)
	f.Fuzz(func(t *testing.T, secret string, body []byte, header string) {
		err := Verify(secret, body, header)
		if secret == "" {
			if !errors.Is(err, ErrNoSecret) {
				t.Fatalf("empty secret: Verify = %v, want ErrNoSecret", err)
			}
			return
		}
		want := refMAC(secret, body)
		if own := Sign(secret, body); own != want {
			t.Fatalf("Sign = %s, crypto/hmac = %s", own, want)
		}
		if e := Verify(secret, body, want); e != nil {
			t.Fatalf("Verify(Sign(...)) = %v", e)
		}
		if e := VerifyAny([]string{secret + "x", secret}, body, want); e != nil {
			t.Fatalf("VerifyAny(second secret) = %v", e)
		}
		trimmed := strings.Trim(header, " \t")
		decoded, decErr := hex.DecodeString(trimmed)
		accepted := decErr == nil && len(decoded) == macSize && hex.EncodeToString(decoded) == want
		if accepted != (err == nil) {
			t.Fatalf("Verify(header of %d chars) = %v, but independent check says accepted=%v", len(header), err, accepted)
		}
		if err != nil && !errors.Is(err, ErrMissingSignature) && !errors.Is(err, ErrMalformedSignature) && !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

// FuzzParseEvent checks that ParseEvent never panics, that anything it
// accepts has a kind and an id, and that known kinds survive a
// marshal/parse round trip.
func FuzzParseEvent(f *testing.F) {
	for _, ev := range sampleEvents() {
		b, err := json.Marshal(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"event":"x"}`, `{"event_id":"e"}`,
		`{"event":"future.kind","event_id":"evt_1","timestamp":"bad"}`,
		`{"event":"transfer.confirmed","event_id":"evt_1","timestamp":123}`,
		`{"event":"agent.policy.updated","event_id":"evt_1","changed_fields":[1]}`,
		`{"EVENT":"transfer.failed","Event_Id":"evt_1"}`,
		`{"event":"transfer.failed","event_id":"evt_1","event":"agent.policy.updated"}`,
		"{\"event\":\"transfer.failed\",\"event_id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := ParseEvent(body)
		if err != nil {
			if ev != nil {
				t.Fatalf("ParseEvent returned both %T and %v", ev, err)
			}
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("error %v does not match ErrMalformedEvent", err)
			}
			return
		}
		if ev.Kind() == "" || ev.ID() == "" {
			t.Fatalf("accepted event with kind %q id %q", ev.Kind(), ev.ID())
		}
		if u, ok := ev.(*UnknownEvent); ok {
			if string(u.Raw) != string(body) {
				t.Fatal("UnknownEvent.Raw differs from the body")
			}
			return
		}
		again, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("re-marshal %T: %v", ev, err)
		}
		ev2, err := ParseEvent(again)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", again, err)
		}
		if diff := cmp.Diff(ev, ev2); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}
