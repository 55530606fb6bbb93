package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The single-pass decoder must give every answer the decoder before it
// gave (oracle_test.go keeps that one): the same refusal with the same
// Error, or the same decoded value. These tests and FuzzDecodeOracle
// compare the two on the types of the package's tests and on shapes the
// fast paths must hand back to encoding/json.

// Named is a string type with a method of its own.
type Named string

// Hello gives Named a method set.
func (n Named) Hello() string { return "hello " + string(n) }

// NamedPtr is a named pointer type.
type NamedPtr *string

// Text decodes itself from text.
type Text struct{ S string }

// UnmarshalText keeps the text upper-cased.
func (t *Text) UnmarshalText(b []byte) error {
	if string(b) == "bad" {
		return errors.New("bad text")
	}
	t.S = strings.ToUpper(string(b))
	return nil
}

// Embedded is promoted through a pointer.
type Embedded struct {
	E string `json:"e"`
}

// shapes holds every kind of value the walk reads, fast or not.
type shapes struct {
	*Embedded
	S     string              `json:"s"`
	B     bool                `json:"b"`
	PB    *bool               `json:"pb"`
	PS    *string             `json:"ps"`
	PPS   **string            `json:"pps"`
	N     Named               `json:"n"`
	PN    *Named              `json:"pn"`
	NP    NamedPtr            `json:"np"`
	Num   json.Number         `json:"num"`
	PNum  *json.Number        `json:"pnum"`
	I     int64               `json:"i"`
	U     uint8               `json:"u"`
	M     map[string]string   `json:"m"`
	MN    map[Named]Inner     `json:"mn"`
	MI    map[int]Inner       `json:"mi"`
	L     []string            `json:"l"`
	LP    []*Inner            `json:"lp"`
	LL    [][]Inner           `json:"ll"`
	A     [2]Inner            `json:"a"`
	T     Text                `json:"t"`
	PT    *Text               `json:"pt"`
	Any   any                 `json:"any"`
	Bytes []byte              `json:"bytes"`
	Str   fmt.Stringer        `json:"str"`
	MM    map[string][]string `json:"mm"`
	Ptr   *Inner              `json:"ptr"`
	Hid   string              `json:"-"`
	NoTag string
}

// prefilled is a shapes whose pointers, maps and slices are already set,
// so that decoding into existing values is compared too.
func prefilled() *shapes {
	s, b, n, num := "old", true, Named("old"), json.Number("7")
	ps := &s
	return &shapes{
		Embedded: &Embedded{E: "old"}, S: "old", B: true, PB: &b, PS: &s, PPS: &ps,
		N: n, PN: &n, NP: NamedPtr(&s), Num: num, PNum: &num, I: 1, U: 2,
		M: map[string]string{"k": "v"}, L: []string{"x"}, Any: map[string]any{"a": 1},
		Ptr: &Inner{Names: []string{"x"}}, PT: &Text{S: "OLD"},
	}
}

// wideType is a struct of 40 string members f0..f39 (past the walk's
// small table of seen members).
var wideType = func() reflect.Type {
	var fs []reflect.StructField
	for i := range 40 {
		fs = append(fs, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[*string](), Tag: reflect.StructTag(fmt.Sprintf(`json:"f%d"`, i))})
	}
	return reflect.StructOf(fs)
}()

// sameAnswer decodes body with the decoder and with the oracle into fresh
// values from mk, and fails when they differ in any way.
func sameAnswer(t *testing.T, body []byte, mk func() any) {
	t.Helper()
	got, want := mk(), mk()
	gotErr, wantErr := Decode(body, got), oldDecode(body, want)
	if !sameError(gotErr, wantErr) {
		t.Fatalf("Decode(%q) into %T: got %#v, the oracle %#v", body, got, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if !reflect.DeepEqual(want, got) { // cmp.Diff alone takes minutes on a value nested 10,000 deep
		t.Fatalf("Decode(%q) into %T differs from the oracle (-oracle +got):\n%s", body, got,
			cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
}

// sameMembers compares Members with the oracle's.
func sameMembers(t *testing.T, body []byte, names []string) {
	t.Helper()
	got, gotErr := Members(body, names)
	want, wantErr := oldMembers(body, names)
	if !sameError(gotErr, wantErr) {
		t.Fatalf("Members(%q, %q): got %#v, the oracle %#v", body, names, gotErr, wantErr)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("Members(%q, %q) differs from the oracle (-oracle +got):\n%s", body, names, cmp.Diff(want, got))
	}
}

// sameError reports whether two refusals are the same: both nil, both an
// *Error with the same path and problem, or the same other error text.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *Error
	if errors.As(a, &ea) != errors.As(b, &eb) {
		return false
	}
	if ea != nil {
		return *ea == *eb
	}
	return a.Error() == b.Error()
}

// oracleTargets are the types every body is decoded into.
var oracleTargets = []func() any{
	func() any { return new(target) },
	func() any { return new(shapes) },
	func() any { return prefilled() },
	func() any { return reflect.New(wideType).Interface() },
}

// oracleBodies are bodies chosen for the fast paths' edges.
var oracleBodies = []string{
	``, `{}`, ` { } `, "\t{\"s\":\"x\"}\n", `null`, `[]`, `"x"`, `{`, `{} {}`, `{}x`, "\v{}",
	`{"s":"plain","b":true,"pb":false,"ps":"x","pps":"y","n":"m","pn":"p","np":"q"}`,
	`{"s":null,"b":null,"pb":null,"ps":null,"pps":null,"n":null,"pn":null,"np":null,"num":null,"pnum":null}`,
	`{"s":"\u00e9\n\"","ps":"tab\t","pn":"\ud800","n":"a\u0000b"}`,
	"{\"s\":\"\xff\xfe\",\"ps\":\"\xc3\"}", "{\"ps\":\"caf\xc3\xa9\"}",
	`{"s":1}`, `{"b":"true"}`, `{"pb":1}`, `{"ps":true}`, `{"pps":1}`, `{"n":[]}`, `{"pn":{}}`,
	`{"num":1.5e3,"pnum":-0}`, `{"num":"12"}`, `{"pnum":"x"}`, `{"num":"1e400"}`,
	`{"i":1,"u":256}`, `{"i":1.5}`, `{"i":"1"}`, `{"u":-1}`,
	`{"m":{"a":"1","b":"2"}}`, `{"m":{"a":"1","a":"2"}}`, `{"m":{"a":1}}`, `{"m":null}`,
	`{"mn":{"k":{"names":["a"]}}}`, `{"mn":{"k":{"Names":[]}}}`, `{"mn":{"k":{},"k":{}}}`, `{"mn":[]}`,
	`{"mi":{"1":{"names":[]}}}`, `{"mi":{"x":{}}}`, `{"mi":{"1":{"a":1,"a":2}}}`,
	`{"l":["a","b"]}`, `{"l":[1]}`, `{"l":{}}`, `{"l":null}`,
	`{"lp":[null,{"names":[]},{}]}`, `{"lp":[{"names":[1]}]}`, `{"lp":[{"x":1}]}`,
	`{"ll":[[{}],[{"names":null},{"NAMES":1}]]}`, `{"ll":[[],[{"a":{"b":1,"b":2}}]]}`,
	`{"a":[{},{"names":[]}]}`, `{"a":[{"names":[],"names":[]}]}`, `{"a":[{"x":1}]}`,
	`{"t":"abc","pt":"def"}`, `{"t":"bad"}`, `{"t":1}`, `{"pt":null}`, `{"t":null}`,
	`{"any":{"a":[1,{"b":null}],"c":1e400}}`, `{"any":{"a":1,"a":2}}`, `{"any":[[{"x":{"y":1,"y":1}}]]}`,
	`{"bytes":"aGVsbG8="}`, `{"bytes":"!"}`, `{"str":null}`, `{"str":"x"}`,
	`{"mm":{"a":["x"],"b":null}}`, `{"ptr":{"names":["x"],"daily_limit_usdg":"5"}}`, `{"ptr":null}`,
	`{"e":"promoted"}`, `{"E":"x"}`, `{"NoTag":"x"}`, `{"notag":"x"}`, `{"Hid":"x"}`,
	`{"s":"a","s":"b"}`, `{"s":"a","\u0073":"b"}`, `{"S":"a"}`, `{"\u017f":"a"}`, `{"x":1,"s":"a","s":"b"}`,
	`{"s":"a","s":"b","x":1}`, `{"ptr":{"x":1},"zz":1}`, `{"ptr":{"names":[],"names":[]},"ptr":null}`,
	`{"any":{"a":{"x":1,"x":1}},"any":1}`,
	"{\"\xff\":1}", "{\"a\\u0000b\":1}", `{"` + strings.Repeat("k", 65) + `":1}`, `{"":1}`,
	`{"f0":"a","f39":"b","f39":"c"}`, `{"f1":"a","F1":"b"}`, `{"f38":null,"f2":"x"}`,
	`{"to":"@shop","amount":"1","confidential":false,"amount":"90"}`,
	`{"balances":{"test":{"USDG":"1","usdg":"2"},"live":null}}`, `{"by_name":{"x":{"Names":[]}}}`,
	`{"raw":{"a":1,"a":2}}`, `{"raw":[1, 2 ,{"b":[]}]}`, `{"items":[{},{"NAMES":[]}]}`,
	`{"spend_policy":{"daily_limit_usdg":1,"daily_limit_usdg":2}}`, `{"spend_policy":[]}`,
	` {"to" : "@shop" , "amount" : "1.5" , "confidential" : true } `,
	"{\"any\":[ 1 ,\t2 ,\n{ \"a\" : [ ] , \"b\" : { } } ]}",
}

func TestDecodeMatchesOracle(t *testing.T) {
	for _, b := range oracleBodies {
		for _, mk := range oracleTargets {
			sameAnswer(t, []byte(b), mk)
		}
		sameMembers(t, []byte(b), nil)
		sameMembers(t, []byte(b), []string{"s", "any", "m", "to"})
	}
}

// TestDecodeDeepNesting: json.Valid's depth limit (10,000) is the
// decoder's, and a body nested that deep is read in one pass.
func TestDecodeDeepNesting(t *testing.T) {
	for _, depth := range []int{9998, 9999, 10000} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			body := `{"any":` + strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth) + "}"
			sameAnswer(t, []byte(body), func() any { return new(target) })
			sameMembers(t, []byte(body), nil)
		}
	}
	deepDup := `{"any":` + strings.Repeat(`{"a":`, 5000) + `{"b":1,"b":2}` + strings.Repeat("}", 5000) + "}"
	sameAnswer(t, []byte(deepDup), func() any { return new(target) })
	var v target
	var se *Error
	if err := Decode([]byte(deepDup), &v); !errors.As(err, &se) || se.Path != "any"+strings.Repeat(".a", 5000)+".b" {
		t.Fatalf("got %v", err)
	}
}

// FuzzDecodeOracle compares the decoder with the oracle on any body, for
// every target type and for Members.
func FuzzDecodeOracle(f *testing.F) {
	for _, b := range oracleBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, mk := range oracleTargets {
			sameAnswer(t, body, mk)
		}
		sameMembers(t, body, nil)
		sameMembers(t, body, []string{"s", "any", "m", "to"})
	})
}
