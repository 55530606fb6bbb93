package rules

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// base is a valid creation body; tests add or override fields.
const base = `"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50`

func mustParse(t *testing.T, body string) *Policy {
	t.Helper()
	p, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse(%s): %v", body, err)
	}
	return p
}

func TestParseDefaults(t *testing.T) {
	p := mustParse(t, `{`+base+`}`)
	if p.DailyLimit() != 500*MicroPerUSDG || p.PerTransactionLimit() != 50*MicroPerUSDG {
		t.Errorf("limits = %d, %d", p.DailyLimit(), p.PerTransactionLimit())
	}
	if got := p.Assets(); !slices.Equal(got, []string{"USDG"}) {
		t.Errorf("assets = %v, want [USDG]", got)
	}
	if p.Recipients() != nil {
		t.Errorf("recipients = %v, want nil (any)", p.Recipients())
	}
	if got := p.ActiveHours().String(); got != "00:00-23:59" {
		t.Errorf("active_hours = %q", got)
	}
	if _, ok := p.Threshold(); ok {
		t.Error("a threshold is set by default")
	}
}

func TestParseAllFields(t *testing.T) {
	p := mustParse(t, `{"daily_limit_usdg": 1000.5, "per_transaction_limit_usdg": 0.000001,
		"allowed_recipients": ["@bob", "@alice/bot", "0x52908400098527886E0F7030069857D2E4169EE7", "api.market", "*.example.com"],
		"assets": ["ETH", "USDG"], "active_hours": "22:00-06:30", "hitl_threshold_usdg": 0}`)
	if p.DailyLimit() != 1000_500_000 || p.PerTransactionLimit() != 1 {
		t.Errorf("limits = %d, %d", p.DailyLimit(), p.PerTransactionLimit())
	}
	if th, ok := p.Threshold(); !ok || th != 0 {
		t.Errorf("threshold = %d, %v; want 0, true", th, ok)
	}
	if got := p.Assets(); !slices.Equal(got, []string{"ETH", "USDG"}) {
		t.Errorf("assets = %v", got)
	}
	if got := p.Recipients(); len(got) != 5 || got[2] != "0x52908400098527886E0F7030069857D2E4169EE7" {
		t.Errorf("recipients = %v", got)
	}
	if h := p.ActiveHours(); h.Start != 22*60 || h.End != 6*60+30 {
		t.Errorf("hours = %+v", h)
	}
}

// TestParseInvalid is the validation table: every way a policy field can
// be wrong gives a FieldError naming that field.
func TestParseInvalid(t *testing.T) {
	long := make([]string, MaxRecipients+1)
	for i := range long {
		long[i] = `"@user` + strings.Repeat("x", 3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `"`
	}
	tests := []struct {
		name, body, field string
	}{
		{"not an object", `[1]`, ""},
		{"trailing data", `{` + base + `} {}`, ""},
		{"bad json", `{"daily_limit_usdg": }`, ""},
		{"unknown field", `{` + base + `, "policy_id": "x"}`, "policy_id"},
		{"repeated field", `{` + base + `, "daily_limit_usdg": 600}`, "daily_limit_usdg"},
		{"daily missing", `{"per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"per-tx missing", `{"daily_limit_usdg": 5}`, "per_transaction_limit_usdg"},
		{"empty body", ``, "daily_limit_usdg"},
		{"daily negative", `{"daily_limit_usdg": -1, "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily zero", `{"daily_limit_usdg": 0, "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily zero with fraction", `{"daily_limit_usdg": 0.000000, "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily null", `{"daily_limit_usdg": null, "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily string", `{"daily_limit_usdg": "500", "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily bool", `{"daily_limit_usdg": true, "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily exponent", `{"daily_limit_usdg": 5e2, "per_transaction_limit_usdg": 5}`, "daily_limit_usdg"},
		{"daily 7 decimals", `{"daily_limit_usdg": 1.0000001, "per_transaction_limit_usdg": 1}`, "daily_limit_usdg"},
		{"daily 7 decimals zero", `{"daily_limit_usdg": 1.0000000, "per_transaction_limit_usdg": 1}`, "daily_limit_usdg"},
		{"daily too large", `{"daily_limit_usdg": 1000000000000.000001, "per_transaction_limit_usdg": 1}`, "daily_limit_usdg"},
		{"daily huge", `{"daily_limit_usdg": 123456789012345678901234567890, "per_transaction_limit_usdg": 1}`, "daily_limit_usdg"},
		{"per-tx negative", `{"daily_limit_usdg": 5, "per_transaction_limit_usdg": -0.5}`, "per_transaction_limit_usdg"},
		{"per-tx zero", `{"daily_limit_usdg": 5, "per_transaction_limit_usdg": 0}`, "per_transaction_limit_usdg"},
		{"per-tx above daily", `{"daily_limit_usdg": 5, "per_transaction_limit_usdg": 5.000001}`, "per_transaction_limit_usdg"},
		{"per-tx 7 decimals", `{"daily_limit_usdg": 5, "per_transaction_limit_usdg": 0.0000001}`, "per_transaction_limit_usdg"},
		{"threshold negative", `{` + base + `, "hitl_threshold_usdg": -1}`, "hitl_threshold_usdg"},
		{"threshold 7 decimals", `{` + base + `, "hitl_threshold_usdg": 0.1234567}`, "hitl_threshold_usdg"},
		{"threshold string", `{` + base + `, "hitl_threshold_usdg": "1"}`, "hitl_threshold_usdg"},
		{"assets empty", `{` + base + `, "assets": []}`, "assets"},
		{"assets null", `{` + base + `, "assets": null}`, "assets"},
		{"assets not array", `{` + base + `, "assets": "USDG"}`, "assets"},
		{"asset not a code", `{` + base + `, "assets": ["USDG", "BT-C"]}`, "assets[1]"},
		{"asset empty string", `{` + base + `, "assets": [""]}`, "assets[0]"},
		{"asset lower case", `{` + base + `, "assets": ["usdg"]}`, "assets[0]"},
		{"asset repeated", `{` + base + `, "assets": ["USDG", "USDG"]}`, "assets[1]"},
		{"asset number", `{` + base + `, "assets": [1]}`, "assets[0]"},
		{"recipients empty", `{` + base + `, "allowed_recipients": []}`, "allowed_recipients"},
		{"recipients too many", `{` + base + `, "allowed_recipients": [` + strings.Join(long, ",") + `]}`, "allowed_recipients"},
		{"recipient empty", `{` + base + `, "allowed_recipients": [""]}`, "allowed_recipients[0]"},
		{"recipient handle short", `{` + base + `, "allowed_recipients": ["@ab"]}`, "allowed_recipients[0]"},
		{"recipient handle bad char", `{` + base + `, "allowed_recipients": ["@bob!"]}`, "allowed_recipients[0]"},
		{"recipient bare @", `{` + base + `, "allowed_recipients": ["@"]}`, "allowed_recipients[0]"},
		{"recipient agent empty name", `{` + base + `, "allowed_recipients": ["@alice/"]}`, "allowed_recipients[0]"},
		{"recipient address short", `{` + base + `, "allowed_recipients": ["0x1234"]}`, "allowed_recipients[0]"},
		{"recipient address not hex", `{` + base + `, "allowed_recipients": ["0xZZ908400098527886E0F7030069857D2E4169EE7"]}`, "allowed_recipients[0]"},
		{"recipient address bad checksum", `{` + base + `, "allowed_recipients": ["0x52908400098527886E0F7030069857D2E4169Ee7"]}`, "allowed_recipients[0]"},
		{"recipient address 0X", `{` + base + `, "allowed_recipients": ["0X52908400098527886E0F7030069857D2E4169EE7"]}`, "allowed_recipients[0]"},
		{"recipient single label", `{` + base + `, "allowed_recipients": ["localhost"]}`, "allowed_recipients[0]"},
		{"recipient domain bad", `{` + base + `, "allowed_recipients": ["-bad.example.com"]}`, "allowed_recipients[0]"},
		{"recipient domain space", `{` + base + `, "allowed_recipients": ["a b.com"]}`, "allowed_recipients[0]"},
		{"wildcard bare", `{` + base + `, "allowed_recipients": ["*"]}`, "allowed_recipients[0]"},
		{"wildcard dot", `{` + base + `, "allowed_recipients": ["*."]}`, "allowed_recipients[0]"},
		{"wildcard tld", `{` + base + `, "allowed_recipients": ["*.com"]}`, "allowed_recipients[0]"},
		{"wildcard no dot", `{` + base + `, "allowed_recipients": ["*example.com"]}`, "allowed_recipients[0]"},
		{"wildcard double", `{` + base + `, "allowed_recipients": ["**.example.com"]}`, "allowed_recipients[0]"},
		{"wildcard twice", `{` + base + `, "allowed_recipients": ["*.*.example.com"]}`, "allowed_recipients[0]"},
		{"wildcard inside", `{` + base + `, "allowed_recipients": ["api.*.com"]}`, "allowed_recipients[0]"},
		{"wildcard at end", `{` + base + `, "allowed_recipients": ["example.*"]}`, "allowed_recipients[0]"},
		{"recipient repeated ignoring case", `{` + base + `, "allowed_recipients": ["@Bob", "@bob"]}`, "allowed_recipients[1]"},
		{"recipient not string", `{` + base + `, "allowed_recipients": [null]}`, "allowed_recipients[0]"},
		{"hours empty", `{` + base + `, "active_hours": ""}`, "active_hours"},
		{"hours null", `{` + base + `, "active_hours": null}`, "active_hours"},
		{"hours equal", `{` + base + `, "active_hours": "09:00-09:00"}`, "active_hours"},
		{"hours one digit", `{` + base + `, "active_hours": "9:00-17:00"}`, "active_hours"},
		{"hours 24", `{` + base + `, "active_hours": "24:00-17:00"}`, "active_hours"},
		{"hours minute 60", `{` + base + `, "active_hours": "09:60-17:00"}`, "active_hours"},
		{"hours no dash", `{` + base + `, "active_hours": "09:00 17:00"}`, "active_hours"},
		{"hours spaces", `{` + base + `, "active_hours": "09:00 - 17:00"}`, "active_hours"},
		{"hours seconds", `{` + base + `, "active_hours": "09:00:00-17:00:00"}`, "active_hours"},
		{"hours number", `{` + base + `, "active_hours": 9}`, "active_hours"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.body))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse = %v, %v; want a FieldError", p, err)
			}
			if fe.Field != tt.field {
				t.Errorf("field = %q, want %q (%v)", fe.Field, tt.field, err)
			}
			if fe.Problem == "" {
				t.Error("no problem described")
			}
		})
	}
}

// TestParseLimitsExact checks the boundaries of limits: the exact micro
// figure, equal limits, the largest limit.
func TestParseLimitsExact(t *testing.T) {
	tests := []struct {
		text string
		want int64
	}{
		{"0.000001", 1},
		{"1", MicroPerUSDG},
		{"1.5", 1_500_000},
		{"1.500000", 1_500_000},
		{"123456.654321", 123456_654321},
		{"1000000000000", MaxLimit},
	}
	for _, tt := range tests {
		p := mustParse(t, `{"daily_limit_usdg": `+tt.text+`, "per_transaction_limit_usdg": `+tt.text+`}`)
		if p.DailyLimit() != tt.want || p.PerTransactionLimit() != tt.want {
			t.Errorf("%s: limits %d, %d; want %d", tt.text, p.DailyLimit(), p.PerTransactionLimit(), tt.want)
		}
		if back, err := ParseMicro(FormatMicro(tt.want)); err != nil || back != tt.want {
			t.Errorf("FormatMicro(%d) does not parse back: %d, %v", tt.want, back, err)
		}
	}
}

func TestFormatMicro(t *testing.T) {
	for v, want := range map[int64]string{
		0: "0", -5: "0", 1: "0.000001", 10: "0.00001", 1_000_000: "1", 1_500_000: "1.5",
		12_340_000: "12.34", 1_000_001: "1.000001", MaxLimit: "1000000000000",
	} {
		if got := FormatMicro(v); got != want {
			t.Errorf("FormatMicro(%d) = %q, want %q", v, got, want)
		}
		if v > 0 {
			back, err := ParseMicro(want)
			if err != nil || back != v {
				t.Errorf("ParseMicro(%q) = %d, %v; want %d", want, back, err, v)
			}
		}
	}
}

func TestPatch(t *testing.T) {
	p := mustParse(t, `{`+base+`, "allowed_recipients": ["@bob"], "hitl_threshold_usdg": 20}`)

	q, changed, err := p.Patch([]byte(`{"daily_limit_usdg": 300}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.DailyLimit() != 300*MicroPerUSDG || q.PerTransactionLimit() != 50*MicroPerUSDG {
		t.Errorf("merged limits = %d, %d", q.DailyLimit(), q.PerTransactionLimit())
	}
	if !slices.Equal(changed, []string{FieldDailyLimit}) {
		t.Errorf("changed = %v", changed)
	}
	if p.DailyLimit() != 500*MicroPerUSDG {
		t.Error("Patch modified the original policy")
	}
	if !slices.Equal(q.Recipients(), []string{"@bob"}) {
		t.Errorf("recipients not kept: %v", q.Recipients())
	}

	// Nulls remove the recipient restriction and the threshold.
	q, changed, err = p.Patch([]byte(`{"allowed_recipients": null, "hitl_threshold_usdg": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.Recipients() != nil {
		t.Errorf("recipients = %v, want any", q.Recipients())
	}
	if _, ok := q.Threshold(); ok {
		t.Error("threshold still set")
	}
	if !slices.Equal(changed, []string{FieldAllowedRecipients, FieldHITLThreshold}) {
		t.Errorf("changed = %v", changed)
	}

	// Sending the same values changes nothing.
	_, changed, err = p.Patch([]byte(`{"daily_limit_usdg": 500.000, "assets": ["USDG"], "allowed_recipients": ["@bob"]}`))
	if err != nil || len(changed) != 0 {
		t.Errorf("same values: changed = %v, err = %v", changed, err)
	}
	_, changed, err = p.Patch(nil)
	if err != nil || len(changed) != 0 {
		t.Errorf("empty patch: changed = %v, err = %v", changed, err)
	}

	// The merged result is validated, naming the field that was sent.
	for body, field := range map[string]string{
		`{"daily_limit_usdg": 49}`:                                     FieldDailyLimit,
		`{"per_transaction_limit_usdg": 501}`:                          FieldPerTransactionLimit,
		`{"daily_limit_usdg": 10, "per_transaction_limit_usdg": 11}`:   FieldPerTransactionLimit,
		`{"daily_limit_usdg": null}`:                                   FieldDailyLimit,
		`{"per_transaction_limit_usdg": 0}`:                            FieldPerTransactionLimit,
		`{"allowed_recipients": []}`:                                   FieldAllowedRecipients,
		`{"assets": []}`:                                               FieldAssets,
		`{"active_hours": "10:00-10:00"}`:                              FieldActiveHours,
		`{"hitl_threshold_usdg": -1}`:                                  FieldHITLThreshold,
		`{"updated_at": "2026-01-01T00:00:00Z"}`:                       "updated_at",
		`{"daily_limit_usdg": 400, "per_transaction_limit_usdg": 40}x`: "",
	} {
		_, _, err := p.Patch([]byte(body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("Patch(%s) = %v; want a FieldError for %q", body, err, field)
		}
	}
	// Lowering both limits together is fine.
	if _, _, err := p.Patch([]byte(`{"daily_limit_usdg": 10, "per_transaction_limit_usdg": 10}`)); err != nil {
		t.Errorf("lowering both: %v", err)
	}
}

func TestNew(t *testing.T) {
	p, err := New(500*MicroPerUSDG, 50*MicroPerUSDG, []string{"*.example.com"}, nil, "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Threshold(); ok || p.ActiveHours() != AllDay || !slices.Equal(p.Assets(), []string{"USDG"}) {
		t.Errorf("New defaults wrong: %+v", p)
	}
	for _, bad := range []func() (*Policy, error){
		func() (*Policy, error) { return New(0, 1, nil, nil, "", -1) },
		func() (*Policy, error) { return New(1, 2, nil, nil, "", -1) },
		func() (*Policy, error) { return New(2, 1, []string{}, nil, "", -1) },
		func() (*Policy, error) { return New(2, 1, nil, []string{"xrp"}, "", -1) },
		func() (*Policy, error) { return New(2, 1, nil, nil, "1:00-2:00", -1) },
		func() (*Policy, error) { return New(2, 1, nil, nil, "", MaxLimit+1) },
	} {
		if _, err := bad(); err == nil {
			t.Error("New accepted an invalid policy")
		}
	}
}

// TestBodyMustBeAnObject: null, and an object wrapped in white space JSON
// does not know, are refused by creation and by a PATCH alike.
func TestBodyMustBeAnObject(t *testing.T) {
	p, err := Parse([]byte(`{"daily_limit_usdg": 10, "per_transaction_limit_usdg": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`null`, " null ", "\v{}", "{}\f", "\u00a0{}"} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("Parse(%q) accepted", body)
		}
		if _, _, err := p.Patch([]byte(body)); err == nil {
			t.Errorf("Patch(%q) accepted", body)
		}
	}
	if _, _, err := p.Patch([]byte(" \t\r\n{}\n")); err != nil {
		t.Errorf("Patch of {} in JSON white space: %v", err)
	}
}

// TestClosed: the policy of a network where none was set allows nothing,
// and a change of it must set both limits (the merged result is
// validated).
func TestClosed(t *testing.T) {
	c := Closed()
	if c.DailyLimit() != 0 || c.PerTransactionLimit() != 0 || c.Recipients() != nil ||
		!slices.Equal(c.Assets(), []string{"USDG"}) || c.ActiveHours() != AllDay {
		t.Fatalf("Closed() = %+v", c)
	}
	if _, ok := c.Threshold(); ok {
		t.Error("Closed() holds payments")
	}
	smallest := Facts{Active: true, Asset: "USDG", Amount: 1, To: Recipient{Handle: "@bob"}, Now: noon, Funded: true}
	for _, mode := range []Mode{Payment, Approval} {
		if o := c.Judge(&smallest, mode); o != PerTransactionLimit {
			t.Errorf("Closed judges 1 micro-USDG (mode %v): %v, want per_transaction_limit", mode, o)
		}
	}
	for body, field := range map[string]string{
		`{"daily_limit_usdg": 200}`:          FieldPerTransactionLimit,
		`{"per_transaction_limit_usdg": 20}`: FieldDailyLimit,
		`{"assets": ["USDG", "ETH"]}`:        FieldDailyLimit,
		`{}`:                                 FieldDailyLimit,
		`{"daily_limit_usdg": 0}`:            FieldDailyLimit,
		`{"daily_limit_usdg": 200, "hitl_threshold_usdg": 5}`: FieldPerTransactionLimit,
	} {
		_, _, err := c.Patch([]byte(body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field || fe.Malformed {
			t.Errorf("Closed().Patch(%s) = %v, want a FieldError on %s", body, err, field)
		}
	}
	q, changed, err := c.Patch([]byte(`{"daily_limit_usdg": 200, "per_transaction_limit_usdg": 20}`))
	if err != nil || q.DailyLimit() != 200*MicroPerUSDG || q.PerTransactionLimit() != 20*MicroPerUSDG ||
		!slices.Equal(changed, []string{FieldDailyLimit, FieldPerTransactionLimit}) {
		t.Errorf("Closed().Patch(both limits) = %+v, %v, %v", q, changed, err)
	}
	if c.DailyLimit() != 0 {
		t.Error("Patch modified Closed()")
	}
}
