package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// memoBody has exact members, by value and through a pointer.
type memoBody struct {
	Memo  *ExactString `json:"memo"`
	Note  ExactString  `json:"note"`
	Plain string       `json:"plain"`
}

func TestExactString(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       string // the memo decoded; "" with path set for a refusal
		path       string
	}{
		{"plain", `{"memo":"rent for flat 3"}`, "rent for flat 3", ""},
		{"multi-byte", `{"memo":"coffee ☕ 𝄞"}`, "coffee ☕ 𝄞", ""},
		{"escapes", `{"memo":"a\"b\\c\/d\n\u00e9\u20AC"}`, "a\"b\\c/d\né€", ""},
		{"escaped pair", `{"memo":"\ud834\udd1e"}`, "𝄞", ""},
		{"escaped pair upper case", `{"memo":"\uD834\uDD1E"}`, "𝄞", ""},
		{"U+FFFD sent as such", `{"memo":"\ufffd` + "\uFFFD" + `"}`, "\uFFFD\uFFFD", ""},
		{"NUL", `{"memo":"\u0000"}`, "\x00", ""},
		{"empty", `{"memo":""}`, "", ""},
		{"lone high surrogate", `{"memo":"\ud800"}`, "", "memo"},
		{"lone low surrogate", `{"memo":"x\udc00y"}`, "", "memo"},
		{"high then a letter", `{"memo":"\ud834\u0041"}`, "", "memo"},
		{"high then high", `{"memo":"\ud834\ud834\udd1e"}`, "", "memo"},
		{"low then high", `{"memo":"\udd1e\ud834"}`, "", "memo"},
		{"high at the end", `{"memo":"ab\ud834"}`, "", "memo"},
		{"high then an escaped backslash", `{"memo":"\ud834\\udd1e"}`, "", "memo"},
		{"invalid byte", "{\"memo\":\"a\xffb\"}", "", "memo"},
		{"truncated sequence", "{\"memo\":\"\xe2\x82\"}", "", "memo"},
		{"overlong", "{\"memo\":\"\xc0\xaf\"}", "", "memo"},
		{"raw surrogate", "{\"memo\":\"\xed\xa0\x80\"}", "", "memo"},
		{"invalid byte beside an escape", "{\"memo\":\"\\n\xff\"}", "", "memo"},
		{"by value", `{"note":"\udfff"}`, "", "note"},
	} {
		var v memoBody
		err := Decode([]byte(c.body), &v)
		if c.path != "" {
			var se *Error
			if !errors.As(err, &se) || se.Path != c.path || !strings.Contains(se.Error(), "UTF-8") {
				t.Errorf("%s: got %v, want a refusal of %s", c.name, err, c.path)
			}
			continue
		}
		if err != nil || v.Memo == nil || string(*v.Memo) != c.want {
			t.Errorf("%s: got %v, %v; want %q", c.name, err, v.Memo, c.want)
		}
	}
	// A plain string member is decoded as encoding/json does, U+FFFD and all.
	var v memoBody
	if err := Decode([]byte(`{"plain":"\ud800"}`), &v); err != nil || v.Plain != "\uFFFD" {
		t.Errorf("plain string: %v, %q", err, v.Plain)
	}
	// A wrong type is still a wrong type.
	if err := Decode([]byte(`{"memo":5}`), &v); err == nil || !strings.Contains(err.Error(), "wrong type") {
		t.Errorf("memo 5: %v", err)
	}
}

// FuzzExactText checks exactText against an oracle that knows nothing of
// escapes or UTF-8 rules: a string decodes exactly when encoding/json's
// reading holds no more U+FFFD than the sender wrote (as the character or
// as \ufffd), since every alteration is a U+FFFD that was not sent.
func FuzzExactText(f *testing.F) {
	for _, s := range []string{
		`""`, `"abc"`, `"\ud800"`, `"\ud834\udd1e"`, `"\ufffd"`, "\"\xef\xbf\xbd\"",
		"\"\xff\"", `"\\ud800"`, `"\ud834\u0041"`, "\"\xe0\xef\xbf\xbd\"", `"\uDBFF\uDFFF"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		if len(q) < 2 || q[0] != '"' || !json.Valid(q) {
			return
		}
		var s string
		if err := json.Unmarshal(q, &s); err != nil {
			t.Fatal(err)
		}
		sent := sentReplacements(q[1 : len(q)-1])
		got, want := exactText(q), strings.Count(s, "\uFFFD") == sent
		if got != want {
			t.Fatalf("exactText(%q) = %v; encoding/json reads %q (%d U+FFFD sent)", q, got, s, sent)
		}
		if got && !utf8.ValidString(s) {
			t.Fatalf("exact but decoded to invalid UTF-8: %q", s)
		}
		// Decode agrees with exactText for an ExactString member.
		var v memoBody
		err := Decode(append(append([]byte(`{"memo":`), q...), '}'), &v)
		if (err == nil) != got || got && string(*v.Memo) != s {
			t.Fatalf("Decode of %q: %v, want exact=%v", q, err, got)
		}
	})
}

// sentReplacements counts the U+FFFD a JSON string's inside spells: the
// three bytes EF BF BD, or an escape \ufffd in either case.
func sentReplacements(s []byte) int {
	n := 0
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && s[i+1] == 'u':
			if strings.EqualFold(string(s[i+2:i+6]), "fffd") {
				n++
			}
			i += 6
		case s[i] == '\\':
			i += 2
		case bytes.HasPrefix(s[i:], []byte("\uFFFD")):
			n++
			i += 3
		default:
			i++
		}
	}
	return n
}
