package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode checks the strict decoder on any input: it never panics, a
// refusal is always an *Error, and an accepted body holds no repeated
// member name and no case variant of a documented one, and decodes to
// exactly what encoding/json makes of it.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"to":"@shop","amount":"1","confidential":false,"amount":"90"}`,
		`{"TO":"@shop","Amount":"1"}`, `{"handle":"@a","type":"business"}`,
		`{"spend_policy":{"daily_limit_usdg":10.5,"names":["x"]}}`,
		`{"items":[{"names":null},{}],"balances":{"test":{"USDG":"1"}}}`,
		`{"by_name":{"A":{"names":[]}}}`, `{"raw":{"a":1},"any":[1,{"b":2e400}]}`,
		`{"a\u006dount":"1"}`, "{\"\u017fpend_policy\":{}}", `{"amount":"1"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got target
		err := Decode(body, &got)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("refusal %T %v is not an *Error", err, err)
			}
			return
		}
		var want target
		if err := reference(body, &want); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("differs from encoding/json (-want +got):\n%s", d)
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			t.Fatal(err)
		}
		if sent, kept := memberTokens(body), keys(tree); sent != kept {
			t.Fatalf("accepted %d members of which encoding/json kept %d: a repeated name", sent, kept)
		}
		exact(t, tree, fieldsOf(reflect.TypeFor[target]()).names, "")
	})
}

// exact checks that every member of obj, and of the documented objects
// inside it, is spelt exactly as documented.
func exact(t *testing.T, obj any, names []string, path string) {
	m, ok := obj.(map[string]any)
	if !ok {
		return
	}
	inner := fieldsOf(reflect.TypeFor[Inner]()).names
	for k, v := range m {
		if !slices.Contains(names, k) {
			t.Fatalf("accepted member %q at %q", k, path)
		}
		switch k {
		case "spend_policy":
			exact(t, v, inner, k)
		case "items":
			if list, ok := v.([]any); ok {
				for _, it := range list {
					exact(t, it, inner, k)
				}
			}
		case "by_name":
			if mm, ok := v.(map[string]any); ok {
				for _, it := range mm {
					exact(t, it, inner, k)
				}
			}
		}
	}
}

// keys counts the members encoding/json kept, at every depth.
func keys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + keys(x)
		}
	case []any:
		for _, x := range v {
			n += keys(x)
		}
	}
	return n
}

// memberTokens counts the member names in body's token stream, at every
// depth, independently of the decoder under test.
func memberTokens(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct{ object, wantName bool }
	var stack []frame
	done := func() { // a value ended: in an object, a name comes next
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantName = true
		}
	}
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		if len(stack) > 0 && stack[len(stack)-1].wantName {
			if _, ok := tok.(string); ok {
				n++
				stack[len(stack)-1].wantName = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, wantName: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}
