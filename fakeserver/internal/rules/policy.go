package rules

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Spend-policy field names, as on the wire.
const (
	FieldDailyLimit          = "daily_limit_usdg"
	FieldPerTransactionLimit = "per_transaction_limit_usdg"
	FieldAllowedRecipients   = "allowed_recipients"
	FieldAssets              = "assets"
	FieldActiveHours         = "active_hours"
	FieldHITLThreshold       = "hitl_threshold_usdg"
)

// fieldOrder is the order fields are validated and reported in.
var fieldOrder = []string{
	FieldDailyLimit, FieldPerTransactionLimit, FieldAllowedRecipients,
	FieldAssets, FieldActiveHours, FieldHITLThreshold,
}

// Policy is one agent's spend policy: an immutable value. A change makes a
// new Policy (see Patch), so a payment judged under one policy is never
// affected by a later amendment.
type Policy struct {
	daily, perTx int64 // micro-USDG, > 0 (both 0 only in Closed), perTx <= daily
	threshold    int64 // micro-USDG, >= 0; meaningful when hasThreshold
	hasThreshold bool
	assets       []string    // non-empty, known, no repeats
	rcpt         *recipients // nil: any recipient
	hours        Hours
}

// FieldError is a policy body that fails validation. Field names the field
// at fault as on the wire, with an index for a list entry
// ("allowed_recipients[2]"); it is empty when the body as a whole is wrong.
// Problem says what is wrong; it never repeats the value.
type FieldError struct {
	Field   string
	Problem string
	// Malformed marks a body that is not strict JSON (a member given twice,
	// or in another letter case than documented) rather than a policy that
	// breaks a rule: the server answers it as invalid_request, as it does
	// for every strict-JSON refusal.
	Malformed bool
}

// Error names the field and the problem.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return "policy: the spend policy " + e.Problem
	}
	return "policy: " + e.Field + " " + e.Problem
}

func fieldErr(field string, problem string) *FieldError {
	return &FieldError{Field: field, Problem: problem}
}

func fieldErrf(field string, err error) *FieldError {
	return &FieldError{Field: field, Problem: err.Error()}
}

// New builds a policy from values, with the same validation as Parse. It is
// for tests and examples; recipients nil means any recipient, threshold
// negative means none.
func New(daily, perTx int64, recipients, assets []string, hours string, threshold int64) (*Policy, error) {
	p := &Policy{daily: daily, perTx: perTx, threshold: threshold, hasThreshold: threshold >= 0}
	if !p.hasThreshold {
		p.threshold = 0
	}
	if daily <= 0 || daily > MaxLimit {
		return nil, fieldErr(FieldDailyLimit, "must be greater than 0 and at most the largest limit")
	}
	if perTx <= 0 || perTx > MaxLimit {
		return nil, fieldErr(FieldPerTransactionLimit, "must be greater than 0 and at most the largest limit")
	}
	if p.hasThreshold && threshold > MaxLimit {
		return nil, fieldErrf(FieldHITLThreshold, errLimitTooLarge)
	}
	if assets == nil {
		assets = []string{"USDG"}
	}
	if err := p.setAssets(assets); err != nil {
		return nil, err
	}
	if recipients != nil {
		if err := p.setRecipients(recipients); err != nil {
			return nil, err
		}
	}
	if hours == "" {
		p.hours = AllDay
	} else {
		h, err := ParseHours(hours)
		if err != nil {
			return nil, fieldErrf(FieldActiveHours, err)
		}
		p.hours = h
	}
	if err := p.checkLimits(false, false); err != nil {
		return nil, err
	}
	return p, nil
}

// Closed is the policy that allows nothing: both limits 0, so every
// payment in an allowed asset fails the per-transaction limit; the other
// fields have their defaults (USDG, the whole day, any recipient, nothing
// held). An agent has it on a network where no key of that network has set
// its policy yet. Parse never answers it, and a Patch of it must set both
// limits, since the merged result is validated.
func Closed() *Policy { return &Policy{assets: []string{"USDG"}, hours: AllDay} }

// Parse reads the spend_policy object of an agent creation. The two limits
// are required; assets default to ["USDG"], active_hours to "00:00-23:59";
// allowed_recipients absent or null means any recipient, and
// hitl_threshold_usdg absent or null means nothing is held. An empty
// body is an empty object; null is refused.
func Parse(body []byte) (*Policy, error) {
	fields, err := readObject(body)
	if err != nil {
		return nil, err
	}
	p := &Policy{assets: []string{"USDG"}, hours: AllDay}
	for _, name := range fieldOrder {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		if err := p.set(name, raw); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{FieldDailyLimit, FieldPerTransactionLimit} {
		if _, ok := fields[name]; !ok {
			return nil, fieldErr(name, "is required")
		}
	}
	if err := p.checkLimits(false, false); err != nil {
		return nil, err
	}
	return p, nil
}

// Patch returns a new policy with the fields in body (a JSON object)
// replaced, validated as the merged result, and the names of the fields
// whose value changed, in wire order. p itself is not modified. Only
// allowed_recipients and hitl_threshold_usdg may be null (any recipient;
// nothing held).
func (p *Policy) Patch(body []byte) (*Policy, []string, error) {
	fields, err := readObject(body)
	if err != nil {
		return nil, nil, err
	}
	q := *p
	for _, name := range fieldOrder {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		if err := q.set(name, raw); err != nil {
			return nil, nil, err
		}
	}
	_, dailySent := fields[FieldDailyLimit]
	_, perTxSent := fields[FieldPerTransactionLimit]
	// The merged result of a Closed policy keeps a limit of 0 unless the
	// body sets it.
	for _, l := range []struct {
		name string
		v    int64
	}{{FieldDailyLimit, q.daily}, {FieldPerTransactionLimit, q.perTx}} {
		if l.v == 0 {
			return nil, nil, fieldErr(l.name, "is required: the policy allows nothing on this network until a change sets both limits")
		}
	}
	if err := q.checkLimits(dailySent, perTxSent); err != nil {
		return nil, nil, err
	}
	return &q, p.diff(&q), nil
}

// checkLimits checks the per-transaction limit against the daily one,
// naming the field that was sent when only one of them was.
func (p *Policy) checkLimits(dailySent, perTxSent bool) error {
	if p.perTx <= p.daily {
		return nil
	}
	if dailySent && !perTxSent {
		return fieldErr(FieldDailyLimit, "must be at least per_transaction_limit_usdg")
	}
	return fieldErr(FieldPerTransactionLimit, "must not be above daily_limit_usdg")
}

// set validates one field's JSON value and stores it in p.
func (p *Policy) set(name string, raw json.RawMessage) error {
	switch name {
	case FieldDailyLimit, FieldPerTransactionLimit:
		v, null, err := readLimit(name, raw)
		if err != nil {
			return err
		}
		if null {
			return fieldErr(name, "must not be null")
		}
		if v == 0 {
			return fieldErr(name, "must be greater than 0")
		}
		if name == FieldDailyLimit {
			p.daily = v
		} else {
			p.perTx = v
		}
	case FieldHITLThreshold:
		v, null, err := readLimit(name, raw)
		if err != nil {
			return err
		}
		p.threshold, p.hasThreshold = v, !null
	case FieldAssets:
		list, null, err := readStrings(name, raw)
		if err != nil {
			return err
		}
		if null {
			return fieldErr(name, "must not be null")
		}
		return p.setAssets(list)
	case FieldAllowedRecipients:
		list, null, err := readStrings(name, raw)
		if err != nil {
			return err
		}
		if null {
			p.rcpt = nil
			return nil
		}
		return p.setRecipients(list)
	case FieldActiveHours:
		s, err := readString(name, raw)
		if err != nil {
			return err
		}
		h, err := ParseHours(s)
		if err != nil {
			return fieldErrf(name, err)
		}
		p.hours = h
	}
	return nil
}

func (p *Policy) setAssets(list []string) error {
	if len(list) == 0 {
		return fieldErr(FieldAssets, "must name at least one asset")
	}
	assets := make([]string, 0, len(list))
	for i, a := range list {
		field := FieldAssets + "[" + strconv.Itoa(i) + "]"
		if !ValidAssetCode(a) {
			return fieldErr(field, "is not an asset code (upper-case letters and digits, such as USDG)")
		}
		if slices.Contains(assets, a) {
			return fieldErr(field, "repeats an earlier entry")
		}
		assets = append(assets, a)
	}
	p.assets = assets
	return nil
}

func (p *Policy) setRecipients(list []string) error {
	if len(list) == 0 {
		return fieldErr(FieldAllowedRecipients, "must not be empty: omit it (or send null) to allow any recipient")
	}
	if len(list) > MaxRecipients {
		return fieldErr(FieldAllowedRecipients, "has more than 100 entries")
	}
	r := &recipients{
		handles: map[string]struct{}{},
		addrs:   map[[20]byte]struct{}{},
		domains: map[string]struct{}{},
	}
	for i, e := range list {
		field := FieldAllowedRecipients + "[" + strconv.Itoa(i) + "]"
		dup, err := r.add(e)
		if err != nil {
			return fieldErrf(field, err)
		}
		if dup {
			return fieldErr(field, "repeats an earlier entry")
		}
	}
	p.rcpt = r
	return nil
}

// diff lists the fields whose value differs between p and q, in wire order.
func (p *Policy) diff(q *Policy) []string {
	var changed []string
	if p.daily != q.daily {
		changed = append(changed, FieldDailyLimit)
	}
	if p.perTx != q.perTx {
		changed = append(changed, FieldPerTransactionLimit)
	}
	if !slices.Equal(p.Recipients(), q.Recipients()) || (p.rcpt == nil) != (q.rcpt == nil) {
		changed = append(changed, FieldAllowedRecipients)
	}
	if !slices.Equal(p.assets, q.assets) {
		changed = append(changed, FieldAssets)
	}
	if p.hours != q.hours {
		changed = append(changed, FieldActiveHours)
	}
	if p.hasThreshold != q.hasThreshold || p.threshold != q.threshold {
		changed = append(changed, FieldHITLThreshold)
	}
	return changed
}

// DailyLimit is the daily limit in micro-USDG.
func (p *Policy) DailyLimit() int64 { return p.daily }

// PerTransactionLimit is the per-transaction limit in micro-USDG.
func (p *Policy) PerTransactionLimit() int64 { return p.perTx }

// Threshold is the approval threshold in micro-USDG, and whether there is
// one.
func (p *Policy) Threshold() (int64, bool) { return p.threshold, p.hasThreshold }

// Assets lists the allowed assets (a fresh copy).
func (p *Policy) Assets() []string { return slices.Clone(p.assets) }

// Recipients lists the allowed recipients as written (a fresh copy), or
// nil when any recipient is allowed.
func (p *Policy) Recipients() []string {
	if p.rcpt == nil {
		return nil
	}
	return slices.Clone(p.rcpt.list)
}

// ActiveHours is the daily window in UTC.
func (p *Policy) ActiveHours() Hours { return p.hours }

// ---- reading JSON values exactly ----

// readObject reads a JSON object into its members, keeping each value's
// text. Repeated names, trailing data and anything but an object (null
// included) are refused. An empty body is an empty object. Only JSON's
// own white space is trimmed around it.
func readObject(body []byte) (map[string]json.RawMessage, error) {
	body = bytes.Trim(body, " \t\r\n")
	if len(body) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	notObject := fieldErr("", "must be one JSON object")
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, notObject
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, notObject
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		name, ok := tok.(string)
		if !ok {
			return nil, notObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject
		}
		if !slices.Contains(fieldOrder, name) {
			for _, f := range fieldOrder {
				if strings.EqualFold(f, name) {
					return nil, &FieldError{Field: f, Problem: "must be spelt exactly " + strconv.Quote(f) + " (member names are case-sensitive)", Malformed: true}
				}
			}
			if len(name) > 64 {
				return nil, fieldErr("", "has a field that is not a spend-policy field")
			}
			return nil, fieldErr(name, "is not a spend-policy field")
		}
		if _, dup := fields[name]; dup {
			return nil, &FieldError{Field: name, Problem: "appears twice", Malformed: true}
		}
		fields[name] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject
	}
	return fields, nil
}

// readLimit reads a limit from a JSON number's text; null is reported.
func readLimit(name string, raw json.RawMessage) (v int64, null bool, err error) {
	s := string(bytes.TrimSpace(raw))
	switch {
	case s == "null":
		return 0, true, nil
	case s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9'):
		return 0, false, fieldErr(name, "must be a JSON number")
	}
	v, err = parseMicro(s)
	if err != nil {
		return 0, false, fieldErrf(name, err)
	}
	return v, false, nil
}

// readStrings reads a JSON array of strings; null is reported.
func readStrings(name string, raw json.RawMessage) (list []string, null bool, err error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil, true, nil
	}
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, false, fieldErr(name, "must be an array of strings")
	}
	list = make([]string, len(items))
	for i, it := range items {
		s, err := readString(name+"["+strconv.Itoa(i)+"]", it)
		if err != nil {
			return nil, false, err
		}
		list[i] = s
	}
	return list, false, nil
}

// readString reads a JSON string.
func readString(name string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fieldErr(name, "must be a string")
	}
	return s, nil
}
