// Package strictjson reads JSON request bodies strictly, so that no two
// parsers can disagree on what a body means: one object, nothing after it,
// no unknown member, no member name given twice at any depth, and no member
// whose name differs from a documented one only in letter case
// (encoding/json would match "Amount" to "amount" and let the last of two
// duplicates win).
//
// It is a pass over encoding/json's Decoder.Token, driven by the target
// type's json tags, that hands every accepted member value to
// encoding/json for the value itself. A failure names the member from the
// walk's own position (its documented name or dotted path), never from the
// text of an encoding/json error, so every answer is the same on every Go
// release.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Error is a body that is not strict JSON for its type. Path names the
// member at fault as documented: the member's name, or a dotted path for a
// nested member ("spend_policy.daily_limit_usdg", "accounts[0].handle");
// it is empty when the body as a whole is at fault. Problem says what is
// wrong and never repeats a value.
type Error struct {
	Path    string
	Problem string
}

// Error names the member and the problem.
func (e *Error) Error() string {
	if e.Path == "" {
		return "the body " + e.Problem
	}
	return e.Path + " " + e.Problem
}

// errBody is the error for a body that is not one valid JSON object.
var errBody = &Error{Problem: "must be one valid JSON object"}

// Decode decodes body, one JSON object, into v, a non-nil pointer to a
// struct. An empty body (only white space) is an empty object. Member
// names are matched exactly against the json tags of v's fields (the
// field's Go name when it has no tag); nested structs, pointers, slices
// and string-keyed maps that hold structs are read the same way, and every
// other value is checked for repeated names and then decoded by
// encoding/json (with UseNumber). An accepted body decodes to exactly what
// encoding/json would make of it.
func Decode(body []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic("strictjson: Decode needs a non-nil pointer to a struct")
	}
	body = trimJSONSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	if body[0] != '{' || !json.Valid(body) {
		return errBody
	}
	return decodeValue(body, "", rv.Elem())
}

// Members reads body, one JSON object, into its members, keeping each
// value's text, for a reader that interprets the values itself. names are
// the documented member names: any other name is refused, and so is a
// name given twice, at any depth.
func Members(body []byte, names []string) (map[string]json.RawMessage, error) {
	body = trimJSONSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return nil, errBody
	}
	ms, err := readMembers(body)
	if err != nil {
		return nil, err
	}
	if err := checkNames("", ms, names); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		if err := checkNoDuplicates(m.raw, m.name); err != nil {
			return nil, err
		}
		out[m.name] = m.raw
	}
	return out, nil
}

// trimJSONSpace trims the white space JSON allows around a value (space,
// tab, line feed, carriage return) and nothing else: bytes.TrimSpace would
// also drop a vertical tab or a form feed, which JSON refuses.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\n\r")
}

// member is one member of an object as sent.
type member struct {
	name string
	raw  json.RawMessage
}

// readMembers reads raw, one valid JSON object, into its members in order.
func readMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errBody
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errBody
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errBody
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, errBody
		}
		ms = append(ms, member{name, val})
	}
	return ms, nil
}

// checkNames checks an object's member names in order: each must be one of
// names exactly (unless names is nil: any name) and appear once.
func checkNames(path string, ms []member, names []string) error {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if names != nil && !slices.Contains(names, m.name) {
			return unknownMember(path, m.name, names)
		}
		if seen[m.name] {
			return &Error{Path: memberPath(path, m.name), Problem: "appears twice"}
		}
		seen[m.name] = true
	}
	return nil
}

// decodeValue decodes raw, one valid JSON value, into dst (settable).
func decodeValue(raw []byte, path string, dst reflect.Value) error {
	t := dst.Type()
	if string(raw) == "null" || custom(t) {
		return leaf(raw, path, dst)
	}
	switch t.Kind() {
	case reflect.Struct:
		if raw[0] != '{' {
			return wrongType(path)
		}
		return decodeStruct(raw, path, dst)
	case reflect.Pointer:
		if !deep(t, nil) {
			break
		}
		v := reflect.New(t.Elem())
		if err := decodeValue(raw, path, v.Elem()); err != nil {
			return err
		}
		dst.Set(v)
		return nil
	case reflect.Slice:
		if !deep(t, nil) {
			break
		}
		if raw[0] != '[' {
			return wrongType(path)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return errBody
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, it := range items {
			if err := decodeValue(it, path+"["+strconv.Itoa(i)+"]", s.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Map:
		if !deep(t, nil) || t.Key().Kind() != reflect.String || custom(t.Key()) {
			break
		}
		if raw[0] != '{' {
			return wrongType(path)
		}
		ms, err := readMembers(raw)
		if err != nil {
			return err
		}
		if err := checkNames(path, ms, nil); err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(t, len(ms))
		for _, mb := range ms {
			v := reflect.New(t.Elem()).Elem()
			if err := decodeValue(mb.raw, memberPath(path, mb.name), v); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(mb.name).Convert(t.Key()), v)
		}
		dst.Set(m)
		return nil
	}
	return leaf(raw, path, dst)
}

// deep reports whether values of t hold a struct that is read member by
// member (so encoding/json must not read them as a whole).
func deep(t reflect.Type, seen map[reflect.Type]bool) bool {
	if custom(t) || seen[t] {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if seen == nil {
			seen = map[reflect.Type]bool{}
		}
		seen[t] = true
		return deep(t.Elem(), seen)
	}
	return false
}

// leaf decodes a value encoding/json reads as a whole, after checking that
// no object inside it repeats a name. Any failure names path.
func leaf(raw []byte, path string, dst reflect.Value) error {
	if err := checkNoDuplicates(raw, path); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst.Addr().Interface()); err != nil {
		return wrongType(path)
	}
	return nil
}

// wrongType is the error for a value of the wrong JSON type at path.
func wrongType(path string) *Error {
	if path == "" {
		return errBody
	}
	return &Error{Path: path, Problem: "has the wrong type or an invalid value"}
}

// decodeStruct reads raw, one JSON object, into the struct dst.
func decodeStruct(raw []byte, path string, dst reflect.Value) error {
	fs := fieldsOf(dst.Type())
	ms, err := readMembers(raw)
	if err != nil {
		return err
	}
	if err := checkNames(path, ms, fs.names); err != nil {
		return err
	}
	for _, m := range ms {
		fv, err := fieldByIndex(dst, fs.byName[m.name].index)
		if err != nil {
			return err
		}
		if err := decodeValue(m.raw, join(path, m.name), fv); err != nil {
			return err
		}
	}
	return nil
}

// unknownMember is the error for a member name that is not documented: a
// case variant of a documented name is reported under the documented name.
func unknownMember(path, name string, names []string) *Error {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return &Error{Path: join(path, n), Problem: "must be spelt exactly " + strconv.Quote(n) + " (member names are case-sensitive)"}
		}
	}
	if !plainName(name) {
		return &Error{Path: path, Problem: "has a member that is not documented"}
	}
	return &Error{Path: join(path, name), Problem: "is not a documented member"}
}

// plainName reports whether a member name can be echoed in a path: short
// printable text.
func plainName(name string) bool {
	if name == "" || len(name) > 64 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// memberPath is the path of member name inside path, echoing the name only
// when it is plain.
func memberPath(path, name string) string {
	if !plainName(name) {
		return path
	}
	return join(path, name)
}

// join appends a member name to a dotted path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkNoDuplicates refuses a valid JSON value in which some object gives
// a member name twice, naming the member's path.
func checkNoDuplicates(raw []byte, path string) error {
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // Token would parse numbers as float64, and fail on 1e400
	return scanValue(dec, path)
}

// scanValue reads one value from dec, refusing repeated names in any
// object.
func scanValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return errBody
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return errBody
			}
			name, ok := k.(string)
			if !ok {
				return errBody
			}
			if seen[name] {
				return &Error{Path: memberPath(path, name), Problem: "appears twice"}
			}
			seen[name] = true
			if err := scanValue(dec, memberPath(path, name)); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := scanValue(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errBody
	}
	return nil
}

// ---- the target types ----

// field is a struct field a member decodes into.
type field struct {
	index []int
}

// fields are a struct type's members by exact name, and the names in
// declaration order.
type fields struct {
	byName map[string]field
	names  []string
}

var fieldCache sync.Map // reflect.Type -> *fields

// fieldsOf lists the members of struct type t as encoding/json names them:
// exported fields, the json tag's name or else the Go name, "-" skipped,
// fields of embedded structs without a tag promoted (the shallowest wins).
func fieldsOf(t reflect.Type) *fields {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fields)
	}
	fs := &fields{byName: map[string]field{}}
	depth := map[string]int{}
	for _, sf := range reflect.VisibleFields(t) {
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			panic("strictjson: the ,string option is not supported (" + t.String() + "." + sf.Name + ")")
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			continue // promoted: VisibleFields lists its fields
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if d, ok := depth[name]; ok && d <= len(sf.Index) {
			continue
		}
		if _, ok := depth[name]; !ok {
			fs.names = append(fs.names, name)
		}
		depth[name] = len(sf.Index)
		fs.byName[name] = field{index: sf.Index}
	}
	got, _ := fieldCache.LoadOrStore(t, fs)
	return got.(*fields)
}

// fieldByIndex returns the field at index, allocating embedded pointers.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, errors.New("strictjson: unexported embedded pointer")
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// custom reports whether t decodes itself (json.RawMessage included).
func custom(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}
