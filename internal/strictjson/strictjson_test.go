package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Inner is a nested object.
type Inner struct {
	Limit json.Number `json:"daily_limit_usdg"`
	Names []string    `json:"names"`
}

// Base is embedded without a tag: its members are promoted.
type Base struct {
	Handle string `json:"handle"`
	Kind   string `json:"type,omitempty"`
}

// target exercises every shape Decode reads member by member.
type target struct {
	Base
	To       *string                      `json:"to"`
	Amount   string                       `json:"amount"`
	Flag     *bool                        `json:"confidential"`
	Policy   *Inner                       `json:"spend_policy"`
	Items    []Inner                      `json:"items"`
	Balances map[string]map[string]string `json:"balances"`
	ByName   map[string]Inner             `json:"by_name"`
	Raw      json.RawMessage              `json:"raw"`
	Any      any                          `json:"any"`
	Skipped  string                       `json:"-"`
}

func TestDecodeRefusals(t *testing.T) {
	cases := []struct {
		name, body, path string
	}{
		{"duplicate", `{"to":"@shop","amount":"1","confidential":false,"amount":"90"}`, "amount"},
		{"duplicate by escape", `{"amount":"1","a\u006dount":"90"}`, "amount"},
		{"case variant", `{"TO":"@shop","Amount":"1"}`, "to"},
		{"case variant of a later member", `{"to":"@shop","Amount":"1"}`, "amount"},
		{"case variant repeated", `{"Amount":"1","Amount":"2"}`, "amount"},
		{"long s folds to s", "{\"\u017fpend_policy\":{}}", "spend_policy"},
		{"promoted case variant", `{"Handle":"@a"}`, "handle"},
		{"unknown", `{"amout":"1"}`, "amout"},
		{"unknown empty name", `{"":"1"}`, ""},
		{"unknown long name", `{"` + string(bytes.Repeat([]byte("a"), 65)) + `":1}`, ""},
		{"skipped field is unknown", `{"Skipped":"x"}`, "Skipped"},
		{"nested duplicate", `{"spend_policy":{"daily_limit_usdg":1,"daily_limit_usdg":2}}`, "spend_policy.daily_limit_usdg"},
		{"nested case variant", `{"spend_policy":{"Daily_Limit_USDG":1}}`, "spend_policy.daily_limit_usdg"},
		{"nested unknown", `{"spend_policy":{"weekly":1}}`, "spend_policy.weekly"},
		{"nested wrong type", `{"spend_policy":{"names":[1]}}`, "spend_policy.names"},
		{"nested not an object", `{"spend_policy":[]}`, "spend_policy"},
		{"slice element case variant", `{"items":[{},{"NAMES":[]}]}`, "items[1].names"},
		{"map duplicate", `{"balances":{"test":{"USDG":"1","USDG":"2"}}}`, "balances.test.USDG"},
		{"map duplicate key", `{"balances":{"test":{},"test":{}}}`, "balances.test"},
		{"map of structs case variant", `{"by_name":{"x":{"Names":[]}}}`, "by_name.x.names"},
		{"duplicate inside raw", `{"raw":{"a":1,"a":2}}`, "raw.a"},
		{"duplicate inside any", `{"any":[{"a":{"b":1,"b":1}}]}`, "any[0].a.b"},
		{"wrong type", `{"amount":1}`, "amount"},
		{"wrong element type", `{"spend_policy":{"names":["a",2]}}`, "spend_policy.names"},
		{"bad syntax", `{"amount":"1"`, ""},
		{"trailing data", `{"amount":"1"} {}`, ""},
		{"trailing garbage", `{"amount":"1"}x`, ""},
		{"null", `null`, ""},
		{"array", `[]`, ""},
		{"string", `"x"`, ""},
	}
	for _, c := range cases {
		var v target
		err := Decode([]byte(c.body), &v)
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want an *Error", c.name, err)
			continue
		}
		if se.Path != c.path {
			t.Errorf("%s: path %q (%v), want %q", c.name, se.Path, se, c.path)
		}
	}
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	bodies := []string{
		``,
		`{}`,
		` {"to":"@shop","amount":"1.5","confidential":true} `,
		`{"to":null,"spend_policy":null,"items":null,"balances":null}`,
		`{"handle":"@a","type":"business","spend_policy":{"daily_limit_usdg":10.5,"names":["x"]}}`,
		`{"items":[],"balances":{}}`,
		`{"items":[{"names":null},{}],"balances":{"test":{"USDG":"1","usdg":"2"},"live":null}}`,
		`{"by_name":{"A":{"names":[]},"a":{}}}`,
		`{"raw":{"A":1,"a":2},"any":{"n":1e400}}`,
	}
	for _, b := range bodies {
		var got, want target
		if err := Decode([]byte(b), &got); err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		if err := reference([]byte(b), &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", b, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: differs from encoding/json (-want +got):\n%s", b, d)
		}
	}
}

func TestMembers(t *testing.T) {
	names := []string{"daily_limit_usdg", "assets"}
	got, err := Members([]byte(`{"assets":["USDG"],"daily_limit_usdg":1}`), names)
	if err != nil || string(got["assets"]) != `["USDG"]` || string(got["daily_limit_usdg"]) != "1" || len(got) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
	for body, path := range map[string]string{
		`{"assets":[],"assets":[]}`:       "assets",
		`{"Assets":[]}`:                   "assets",
		`{"weekly":1}`:                    "weekly",
		`{"assets":[{"a":1,"a":1}]}`:      "assets[0].a",
		`{"daily_limit_usdg":1} {}`:       "",
		`null`:                            "",
		`{"daily_limit_usdg":1`:           "",
		`{"daily_limit_usdg":1,"":2}`:     "",
		"{\"daily_limit_uſdg\":1}":        "daily_limit_usdg", // ſ folds to s
		`{"ASSETS":[],"daily_limit_usdg"`: "",
	} {
		var se *Error
		if _, err := Members([]byte(body), names); !errors.As(err, &se) || se.Path != path {
			t.Errorf("%s: got %v, want path %q", body, err, path)
		}
	}
}

// reference decodes body the way the server did before strict JSON:
// encoding/json, unknown fields refused, numbers kept as text.
func reference(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// TestOnlyJSONWhiteSpace: a body wrapped in a vertical tab or a form feed
// is not JSON, so it is refused (bytes.TrimSpace would have let it in).
func TestOnlyJSONWhiteSpace(t *testing.T) {
	for _, body := range []string{"\v{}", "{}\f", "\u00a0{}"} {
		var v target
		if err := Decode([]byte(body), &v); err == nil {
			t.Errorf("Decode(%q) accepted", body)
		}
		if _, err := Members([]byte(body), nil); err == nil {
			t.Errorf("Members(%q) accepted", body)
		}
	}
	var v target
	if err := Decode([]byte(" \t\r\n{}\n"), &v); err != nil {
		t.Errorf("JSON white space refused: %v", err)
	}
}
