package strictjson

// The strict decoder as it was before the single-pass walk of 2026-11-23,
// kept word for word (names prefixed "old") as the oracle of the
// differential tests (oracle_diff_test.go): the new decoder must accept and
// refuse exactly the same bodies, with the same Error, and decode them to
// the same values.

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

// oldErrBody is the error for a body that is not one valid JSON object.
var oldErrBody = &Error{Problem: "must be one valid JSON object"}

// oldDecode decodes body, one JSON object, into v, a non-nil pointer to a
// struct. An empty body (only white space) is an empty object. Member
// names are matched exactly against the json tags of v's fields (the
// field's Go name when it has no tag); nested structs, pointers, slices
// and string-keyed maps that hold structs are read the same way, and every
// other value is checked for repeated names and then decoded by
// encoding/json (with UseNumber). An accepted body decodes to exactly what
// encoding/json would make of it.
func oldDecode(body []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic("strictjson: oldDecode needs a non-nil pointer to a struct")
	}
	body = oldTrimJSONSpace(body)
	if len(body) == 0 {
		body = []byte("{}")
	}
	if body[0] != '{' || !json.Valid(body) {
		return oldErrBody
	}
	return oldDecodeValue(body, "", rv.Elem())
}

// oldMembers reads body, one JSON object, into its members, keeping each
// value's text, for a reader that interprets the values itself. names are
// the documented member names: any other name is refused, and so is a
// name given twice, at any depth.
func oldMembers(body []byte, names []string) (map[string]json.RawMessage, error) {
	body = oldTrimJSONSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return nil, oldErrBody
	}
	ms, err := oldReadMembers(body)
	if err != nil {
		return nil, err
	}
	if err := oldCheckNames("", ms, names); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		if err := oldCheckNoDuplicates(m.raw, m.name); err != nil {
			return nil, err
		}
		out[m.name] = m.raw
	}
	return out, nil
}

// oldTrimJSONSpace trims the white space JSON allows around a value (space,
// tab, line feed, carriage return) and nothing else: bytes.TrimSpace would
// also drop a vertical tab or a form feed, which JSON refuses.
func oldTrimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\n\r")
}

// oldMember is one member of an object as sent.
type oldMember struct {
	name string
	raw  json.RawMessage
}

// oldReadMembers reads raw, one valid JSON object, into its members in order.
func oldReadMembers(raw []byte) ([]oldMember, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, oldErrBody
	}
	var ms []oldMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, oldErrBody
		}
		name, ok := tok.(string)
		if !ok {
			return nil, oldErrBody
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, oldErrBody
		}
		ms = append(ms, oldMember{name, val})
	}
	return ms, nil
}

// oldCheckNames checks an object's member names in order: each must be one of
// names exactly (unless names is nil: any name) and appear once.
func oldCheckNames(path string, ms []oldMember, names []string) error {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if names != nil && !slices.Contains(names, m.name) {
			return oldUnknownMember(path, m.name, names)
		}
		if seen[m.name] {
			return &Error{Path: oldMemberPath(path, m.name), Problem: "appears twice"}
		}
		seen[m.name] = true
	}
	return nil
}

// oldDecodeValue decodes raw, one valid JSON value, into dst (settable).
func oldDecodeValue(raw []byte, path string, dst reflect.Value) error {
	t := dst.Type()
	if string(raw) == "null" || oldCustom(t) {
		return oldLeaf(raw, path, dst)
	}
	switch t.Kind() {
	case reflect.Struct:
		if raw[0] != '{' {
			return oldWrongType(path)
		}
		return oldDecodeStruct(raw, path, dst)
	case reflect.Pointer:
		if !oldDeep(t, nil) {
			break
		}
		v := reflect.New(t.Elem())
		if err := oldDecodeValue(raw, path, v.Elem()); err != nil {
			return err
		}
		dst.Set(v)
		return nil
	case reflect.Slice:
		if !oldDeep(t, nil) {
			break
		}
		if raw[0] != '[' {
			return oldWrongType(path)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return oldErrBody
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, it := range items {
			if err := oldDecodeValue(it, path+"["+strconv.Itoa(i)+"]", s.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Map:
		if !oldDeep(t, nil) || t.Key().Kind() != reflect.String || oldCustom(t.Key()) {
			break
		}
		if raw[0] != '{' {
			return oldWrongType(path)
		}
		ms, err := oldReadMembers(raw)
		if err != nil {
			return err
		}
		if err := oldCheckNames(path, ms, nil); err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(t, len(ms))
		for _, mb := range ms {
			v := reflect.New(t.Elem()).Elem()
			if err := oldDecodeValue(mb.raw, oldMemberPath(path, mb.name), v); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(mb.name).Convert(t.Key()), v)
		}
		dst.Set(m)
		return nil
	}
	return oldLeaf(raw, path, dst)
}

// oldDeep reports whether values of t hold a struct that is read member by
// member (so encoding/json must not read them as a whole).
func oldDeep(t reflect.Type, seen map[reflect.Type]bool) bool {
	if oldCustom(t) || seen[t] {
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
		return oldDeep(t.Elem(), seen)
	}
	return false
}

// oldLeaf decodes a value encoding/json reads as a whole, after checking that
// no object inside it repeats a name. Any failure names path.
func oldLeaf(raw []byte, path string, dst reflect.Value) error {
	if err := oldCheckNoDuplicates(raw, path); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst.Addr().Interface()); err != nil {
		return oldWrongType(path)
	}
	return nil
}

// oldWrongType is the error for a value of the wrong JSON type at path.
func oldWrongType(path string) *Error {
	if path == "" {
		return oldErrBody
	}
	return &Error{Path: path, Problem: "has the wrong type or an invalid value"}
}

// oldDecodeStruct reads raw, one JSON object, into the struct dst.
func oldDecodeStruct(raw []byte, path string, dst reflect.Value) error {
	fs := oldFieldsOf(dst.Type())
	ms, err := oldReadMembers(raw)
	if err != nil {
		return err
	}
	if err := oldCheckNames(path, ms, fs.names); err != nil {
		return err
	}
	for _, m := range ms {
		fv, err := oldFieldByIndex(dst, fs.byName[m.name].index)
		if err != nil {
			return err
		}
		if err := oldDecodeValue(m.raw, oldJoin(path, m.name), fv); err != nil {
			return err
		}
	}
	return nil
}

// oldUnknownMember is the error for a member name that is not documented: a
// case variant of a documented name is reported under the documented name.
func oldUnknownMember(path, name string, names []string) *Error {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return &Error{Path: oldJoin(path, n), Problem: "must be spelt exactly " + strconv.Quote(n) + " (member names are case-sensitive)"}
		}
	}
	if !oldPlainName(name) {
		return &Error{Path: path, Problem: "has a member that is not documented"}
	}
	return &Error{Path: oldJoin(path, name), Problem: "is not a documented member"}
}

// oldPlainName reports whether a member name can be echoed in a path: short
// printable text.
func oldPlainName(name string) bool {
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

// oldMemberPath is the path of member name inside path, echoing the name only
// when it is plain.
func oldMemberPath(path, name string) string {
	if !oldPlainName(name) {
		return path
	}
	return oldJoin(path, name)
}

// oldJoin appends a member name to a dotted path.
func oldJoin(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// oldCheckNoDuplicates refuses a valid JSON value in which some object gives
// a member name twice, naming the member's path.
func oldCheckNoDuplicates(raw []byte, path string) error {
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // Token would parse numbers as float64, and fail on 1e400
	return oldScanValue(dec, path)
}

// oldScanValue reads one value from dec, refusing repeated names in any
// object.
func oldScanValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return oldErrBody
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return oldErrBody
			}
			name, ok := k.(string)
			if !ok {
				return oldErrBody
			}
			if seen[name] {
				return &Error{Path: oldMemberPath(path, name), Problem: "appears twice"}
			}
			seen[name] = true
			if err := oldScanValue(dec, oldMemberPath(path, name)); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := oldScanValue(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return oldErrBody
	}
	return nil
}

// ---- the target types ----

// oldField is a struct field a member decodes into.
type oldField struct {
	index []int
}

// oldFields are a struct type's members by exact name, and the names in
// declaration order.
type oldFields struct {
	byName map[string]oldField
	names  []string
}

var oldFieldCache sync.Map // reflect.Type -> *oldFields

// oldFieldsOf lists the members of struct type t as encoding/json names them:
// exported fields, the json tag's name or else the Go name, "-" skipped,
// fields of embedded structs without a tag promoted (the shallowest wins).
func oldFieldsOf(t reflect.Type) *oldFields {
	if fs, ok := oldFieldCache.Load(t); ok {
		return fs.(*oldFields)
	}
	fs := &oldFields{byName: map[string]oldField{}}
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
			continue // promoted: VisibleFields lists its oldFields
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
		fs.byName[name] = oldField{index: sf.Index}
	}
	got, _ := oldFieldCache.LoadOrStore(t, fs)
	return got.(*oldFields)
}

// oldFieldByIndex returns the field at index, allocating embedded pointers.
func oldFieldByIndex(v reflect.Value, index []int) (reflect.Value, error) {
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
	oldUnmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	oldTextUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// oldCustom reports whether t decodes itself (json.RawMessage included).
func oldCustom(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(oldUnmarshalerType) || pt.Implements(oldUnmarshalerType) ||
		t.Implements(oldTextUnmarshalerType) || pt.Implements(oldTextUnmarshalerType)
}
