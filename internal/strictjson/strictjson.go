// Package strictjson reads JSON request bodies strictly, so that no two
// parsers can disagree on what a body means: one object, nothing after it,
// no unknown member, no member name given twice at any depth, and no member
// whose name differs from a documented one only in letter case
// (encoding/json would match "Amount" to "amount" and let the last of two
// duplicates win).
//
// The body is first checked whole with json.Valid, then walked once,
// driven by the target type's json tags (read once per type and cached).
// Plain strings, booleans and null are set directly; every other value is
// handed to encoding/json for the value itself, so an accepted body decodes
// to exactly what encoding/json makes of it. A failure names the member
// from the walk's own position (its documented name or dotted path), never
// from the text of an encoding/json error, so every answer is the same on
// every Go release.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
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

// ExactString is a string member whose text must reach its reader byte for
// byte. encoding/json replaces invalid UTF-8, and a \u escape of a lone
// surrogate ("\ud800"), with U+FFFD when it decodes a string, so the text
// decoded would not be the text sent: Decode refuses such a value in a
// member of type ExactString or *ExactString, naming the member. A memo
// that a recipient decrypts is one.
type ExactString string

// inexact is the problem of an ExactString value that decoding would alter.
const inexact = `must be valid UTF-8 text: invalid UTF-8 or an escaped lone surrogate (\ud800) is refused, never replaced with U+FFFD`

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
	var seen nameSet
	n := 0
	for it := (objectIter{b: body}); ; n++ {
		q, _, ok := it.next()
		if !ok {
			break
		}
		name := unquote(q)
		if names != nil && !containsBytes(names, name) {
			return nil, unknownMember("", string(name), names)
		}
		if !seen.add(name) {
			return nil, &Error{Path: memberPath("", string(name)), Problem: "appears twice"}
		}
	}
	out := make(map[string]json.RawMessage, n)
	for it := (objectIter{b: body}); ; {
		q, val, ok := it.next()
		if !ok {
			break
		}
		name := string(unquote(q))
		if err := checkNoDuplicates(val, name); err != nil {
			return nil, err
		}
		out[name] = bytes.Clone(val)
	}
	return out, nil
}

// containsBytes reports whether names holds name.
func containsBytes(names []string, name []byte) bool {
	for _, n := range names {
		if n == string(name) {
			return true
		}
	}
	return false
}

// trimJSONSpace trims the white space JSON allows around a value (space,
// tab, line feed, carriage return) and nothing else: bytes.TrimSpace would
// also drop a vertical tab or a form feed, which JSON refuses.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\n\r")
}

// ---- the walk over valid JSON ----
//
// Everything below reads text json.Valid has accepted, so it needs no
// error paths of its own: it only finds where values begin and end.

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that opens at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// valueEnd returns the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}

// objectIter walks the members of one valid JSON object, b.
type objectIter struct {
	b []byte
	i int // 0 before the first member
}

// next returns the next member's name as sent (quoted) and its value, or
// false after the last.
func (it *objectIter) next() (name, val []byte, ok bool) {
	i := it.i
	if i == 0 {
		i = 1 // past '{'
	}
	i = skipSpace(it.b, i)
	if it.b[i] == ',' {
		i = skipSpace(it.b, i+1)
	}
	if it.b[i] == '}' {
		it.i = i
		return nil, nil, false
	}
	e := stringEnd(it.b, i)
	name = it.b[i:e]
	i = skipSpace(it.b, skipSpace(it.b, e)+1) // past ':'
	e = valueEnd(it.b, i)
	it.i = e
	return name, it.b[i:e], true
}

// arrayIter walks the elements of one valid JSON array, b.
type arrayIter struct {
	b []byte
	i int // 0 before the first element
}

// next returns the next element, or false after the last.
func (it *arrayIter) next() ([]byte, bool) {
	i := it.i
	if i == 0 {
		i = 1 // past '['
	}
	i = skipSpace(it.b, i)
	if it.b[i] == ',' {
		i = skipSpace(it.b, i+1)
	}
	if it.b[i] == ']' {
		it.i = i
		return nil, false
	}
	e := valueEnd(it.b, i)
	it.i = e
	return it.b[i:e], true
}

// plainText reports whether the inside of a JSON string reads as itself:
// no escape, and valid UTF-8 (encoding/json replaces invalid bytes).
func plainText(s []byte) bool {
	return bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s)
}

// exactText reports whether q, one valid JSON string, decodes to exactly
// the text it spells: every byte outside an escape is part of valid UTF-8,
// and every \u escape of a surrogate is the high half of a pair whose low
// half is the next escape. encoding/json replaces anything else with
// U+FFFD. This is the one place that rule is written.
func exactText(q []byte) bool {
	s := q[1 : len(q)-1]
	if plainText(s) {
		return true
	}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\' && s[i+1] == 'u':
			r := hex4(s[i+2 : i+6])
			i += 6
			switch {
			case r < 0xD800 || r > 0xDFFF:
			case r <= 0xDBFF && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' && isLowSurrogate(hex4(s[i+2:i+6])):
				i += 6 // a pair
			default:
				return false // a lone half
			}
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return false
			}
			i += n
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape, which json.Valid checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// isLowSurrogate reports whether r is the low (second) half of a UTF-16
// surrogate pair.
func isLowSurrogate(r rune) bool { return r >= 0xDC00 && r <= 0xDFFF }

// unquote returns the text of q, one valid JSON string, as encoding/json
// reads it: the bytes themselves when they are plain, else encoding/json's
// own reading (escapes, and U+FFFD for invalid UTF-8).
func unquote(q []byte) []byte {
	if s := q[1 : len(q)-1]; plainText(s) {
		return s
	}
	var s string
	_ = json.Unmarshal(q, &s) // cannot fail: q is a valid JSON string
	return []byte(s)
}

// nameSet is the set of member names an object has given so far.
type nameSet struct {
	few  [8][]byte
	n    int
	many map[string]struct{}
}

// add adds name, reporting false when it was there already.
func (s *nameSet) add(name []byte) bool {
	if s.many != nil {
		if _, ok := s.many[string(name)]; ok {
			return false
		}
		s.many[string(name)] = struct{}{}
		return true
	}
	for _, n := range s.few[:s.n] {
		if bytes.Equal(n, name) {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = name
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 2*len(s.few))
	for _, n := range s.few {
		s.many[string(n)] = struct{}{}
	}
	s.many[string(name)] = struct{}{}
	return true
}

// ---- decoding into the target ----

// decodeValue decodes raw, one valid JSON value, into dst (settable).
func decodeValue(raw []byte, path string, dst reflect.Value) error {
	t := dst.Type()
	ti := infoOf(t)
	if ti.custom || isNull(raw) {
		return leaf(raw, path, dst, ti)
	}
	switch t.Kind() {
	case reflect.Struct:
		if raw[0] != '{' {
			return wrongType(path)
		}
		return decodeStruct(raw, path, dst)
	case reflect.Pointer:
		if !ti.deep {
			break
		}
		v := reflect.New(t.Elem())
		if err := decodeValue(raw, path, v.Elem()); err != nil {
			return err
		}
		dst.Set(v)
		return nil
	case reflect.Slice:
		if !ti.deep {
			break
		}
		if raw[0] != '[' {
			return wrongType(path)
		}
		n := 0
		for it := (arrayIter{b: raw}); ; n++ {
			if _, ok := it.next(); !ok {
				break
			}
		}
		s := reflect.MakeSlice(t, n, n)
		it := arrayIter{b: raw}
		for i := range n {
			item, _ := it.next()
			if err := decodeValue(item, path+"["+strconv.Itoa(i)+"]", s.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Map:
		if !ti.deep || !ti.stringKey {
			break
		}
		if raw[0] != '{' {
			return wrongType(path)
		}
		var seen nameSet
		n := 0
		for it := (objectIter{b: raw}); ; n++ {
			q, _, ok := it.next()
			if !ok {
				break
			}
			if name := unquote(q); !seen.add(name) {
				return &Error{Path: memberPath(path, string(name)), Problem: "appears twice"}
			}
		}
		m := reflect.MakeMapWithSize(t, n)
		for it := (objectIter{b: raw}); ; {
			q, val, ok := it.next()
			if !ok {
				break
			}
			name := string(unquote(q))
			v := reflect.New(t.Elem()).Elem()
			if err := decodeValue(val, memberPath(path, name), v); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(name).Convert(t.Key()), v)
		}
		dst.Set(m)
		return nil
	}
	return leaf(raw, path, dst, ti)
}

// isNull reports whether raw is the literal null.
func isNull(raw []byte) bool { return string(raw) == "null" }

// decodeStruct reads raw, one JSON object, into the struct dst: every
// member name is checked first, in order, then every value decoded.
func decodeStruct(raw []byte, path string, dst reflect.Value) error {
	fs := fieldsOf(dst.Type())
	var few [32]bool
	var seen []bool
	if n := len(fs.names); n <= len(few) {
		seen = few[:n]
	} else {
		seen = make([]bool, n)
	}
	for it := (objectIter{b: raw}); ; {
		q, _, ok := it.next()
		if !ok {
			break
		}
		name := unquote(q)
		f, ok := fs.byName[string(name)]
		if !ok {
			return unknownMember(path, string(name), fs.names)
		}
		if seen[f.pos] {
			return &Error{Path: memberPath(path, string(name)), Problem: "appears twice"}
		}
		seen[f.pos] = true
	}
	for it := (objectIter{b: raw}); ; {
		q, val, ok := it.next()
		if !ok {
			break
		}
		f := fs.byName[string(unquote(q))]
		fv, err := fieldByIndex(dst, f.index)
		if err != nil {
			return err
		}
		// The name as sent is exactly the documented one.
		if err := decodeValue(val, join(path, fs.names[f.pos]), fv); err != nil {
			return err
		}
	}
	return nil
}

// leaf decodes a value encoding/json reads as a whole, after checking that
// no object inside it repeats a name. Any failure names path.
func leaf(raw []byte, path string, dst reflect.Value, ti *typeInfo) error {
	if err := checkNoDuplicates(raw, path); err != nil {
		return err
	}
	if ti.exact && raw[0] == '"' && !exactText(raw) {
		return &Error{Path: path, Problem: inexact}
	}
	if setDirect(raw, dst, ti) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst.Addr().Interface()); err != nil {
		// A type that decodes itself strictly (with Decode) names the
		// place inside it: the path continues from here.
		var inner *Error
		if errors.As(err, &inner) {
			return &Error{Path: joinPath(path, inner.Path), Problem: inner.Problem}
		}
		return wrongType(path)
	}
	return nil
}

// joinPath appends a dotted path (with [i] indexes) found inside a value to
// the value's own path.
func joinPath(path, inner string) string {
	switch {
	case inner == "":
		return path
	case path == "" || strings.HasPrefix(inner, "["):
		return path + inner
	}
	return path + "." + inner
}

// setDirect sets dst from raw where the result is plainly what
// encoding/json would make of it, reporting false (dst untouched) for
// anything else: null into a value of a kind without custom decoding, a
// plain string into a string, true or false into a bool, and those through
// an unnamed pointer.
func setDirect(raw []byte, dst reflect.Value, ti *typeInfo) bool {
	if ti.custom || !dst.CanSet() {
		return false
	}
	if isNull(raw) {
		switch ti.kind {
		case reflect.String, reflect.Bool:
			return true // encoding/json leaves the value as it is
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if ti.kind == reflect.Pointer && ti.named {
				return false
			}
			dst.SetZero()
			return true
		}
		return false
	}
	switch ti.kind {
	case reflect.String, reflect.Bool:
		return setScalar(raw, dst, ti)
	case reflect.Pointer:
		if ti.named || ti.elem == nil {
			return false
		}
		if !dst.IsNil() {
			return setScalar(raw, dst.Elem(), ti.elem)
		}
		v := reflect.New(dst.Type().Elem())
		if !setScalar(raw, v.Elem(), ti.elem) {
			return false
		}
		dst.Set(v)
		return true
	}
	return false
}

// setScalar sets dst, a string or a bool without custom decoding (not a
// json.Number), from raw when it is a plain string or a boolean literal of
// the matching kind.
func setScalar(raw []byte, dst reflect.Value, ti *typeInfo) bool {
	switch ti.kind {
	case reflect.String:
		if ti.number || raw[0] != '"' {
			return false
		}
		s := raw[1 : len(raw)-1]
		if !plainText(s) {
			return false
		}
		dst.SetString(string(s))
		return true
	case reflect.Bool:
		switch string(raw) {
		case "true":
			dst.SetBool(true)
			return true
		case "false":
			dst.SetBool(false)
			return true
		}
	}
	return false
}

// wrongType is the error for a value of the wrong JSON type at path.
func wrongType(path string) *Error {
	if path == "" {
		return errBody
	}
	return &Error{Path: path, Problem: "has the wrong type or an invalid value"}
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
// a member name twice, naming the member's path. It reads the value once,
// in order, each name checked before its value is entered.
func checkNoDuplicates(raw []byte, path string) error {
	if raw[0] != '{' && raw[0] != '[' {
		return nil
	}
	_, err := scanDuplicates(raw, 0, &pathNode{base: path, index: -1})
	return err
}

// scanDuplicates reads the value at b[i], refusing repeated names in any
// object, and returns the index just past it.
func scanDuplicates(b []byte, i int, at *pathNode) (int, error) {
	switch b[i] {
	case '{':
		var seen nameSet
		i = skipSpace(b, i+1)
		for b[i] != '}' {
			e := stringEnd(b, i)
			name := unquote(b[i:e])
			if !seen.add(name) {
				return 0, &Error{Path: (&pathNode{parent: at, name: name, index: -1}).String(), Problem: "appears twice"}
			}
			i = skipSpace(b, skipSpace(b, e)+1) // past ':'
			var err error
			if i, err = scanInside(b, i, at, name, -1); err != nil {
				return 0, err
			}
			if i = skipSpace(b, i); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return i + 1, nil
	case '[':
		i = skipSpace(b, i+1)
		for n := 0; b[i] != ']'; n++ {
			var err error
			if i, err = scanInside(b, i, at, nil, n); err != nil {
				return 0, err
			}
			if i = skipSpace(b, i); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return i + 1, nil
	}
	return valueEnd(b, i), nil
}

// scanInside is scanDuplicates for the member name (index -1) or the
// element index of at that starts at b[i]; a plain value is stepped over
// without a place of its own.
func scanInside(b []byte, i int, at *pathNode, name []byte, index int) (int, error) {
	if b[i] != '{' && b[i] != '[' {
		return valueEnd(b, i), nil
	}
	return scanDuplicates(b, i, &pathNode{parent: at, name: name, index: index})
}

// pathNode is a place inside a value, spelt out only when an error names
// it: the value's own path at the root, else a member (name) or an element
// (index) of its parent.
type pathNode struct {
	parent *pathNode
	base   string
	name   []byte
	index  int // -1 for a member
}

// String is the path of the place, as memberPath and "[i]" spell it.
func (p *pathNode) String() string {
	if p.parent == nil {
		return p.base
	}
	s := p.parent.String()
	if p.index >= 0 {
		return s + "[" + strconv.Itoa(p.index) + "]"
	}
	return memberPath(s, string(p.name))
}

// ---- the target types ----

// typeInfo is what the walk needs to know of a type, worked out once.
type typeInfo struct {
	custom    bool         // decodes itself (json.Unmarshaler, encoding.TextUnmarshaler)
	deep      bool         // holds a struct read member by member
	stringKey bool         // a map whose key is a string kind without custom decoding
	kind      reflect.Kind // the type's kind
	named     bool         // the type has a name
	number    bool         // json.Number
	exact     bool         // ExactString, or an unnamed pointer to one
	elem      *typeInfo    // an unnamed pointer's element, when a string or bool kind
}

var infoCache sync.Map // reflect.Type -> *typeInfo

// infoOf returns what the walk needs to know of t.
func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := infoCache.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{
		custom: custom(t),
		deep:   deep(t, nil),
		kind:   t.Kind(),
		named:  t.Name() != "",
		number: t == numberType,
		exact:  t == exactStringType || t.Kind() == reflect.Pointer && t.Name() == "" && t.Elem() == exactStringType,
	}
	if t.Kind() == reflect.Map {
		ti.stringKey = t.Key().Kind() == reflect.String && !custom(t.Key())
	}
	if t.Kind() == reflect.Pointer && !ti.named {
		if e := t.Elem(); (e.Kind() == reflect.String || e.Kind() == reflect.Bool) && !custom(e) {
			ti.elem = infoOf(e)
		}
	}
	got, _ := infoCache.LoadOrStore(t, ti)
	return got.(*typeInfo)
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

// field is a struct field a member decodes into.
type field struct {
	index []int
	pos   int // the member's place in fields.names
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
		pos := len(fs.names)
		if _, ok := depth[name]; ok {
			pos = fs.byName[name].pos
		} else {
			fs.names = append(fs.names, name)
		}
		depth[name] = len(sf.Index)
		fs.byName[name] = field{index: sf.Index, pos: pos}
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
	numberType          = reflect.TypeFor[json.Number]()
	exactStringType     = reflect.TypeFor[ExactString]()
)

// custom reports whether t decodes itself (json.RawMessage included).
func custom(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}
