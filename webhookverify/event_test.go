package webhookverify

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testTime = time.Date(2026, 7, 2, 14, 23, 9, 0, time.UTC)

// sampleEvents returns one fully populated event of each kind, in Kinds order.
func sampleEvents() []Event {
	transfer := func(kind string) *TransferEvent {
		return &TransferEvent{
			Event:        kind,
			EventID:      "evt_" + strings.ReplaceAll(kind, ".", ""),
			Account:      "@alice/bot",
			Direction:    DirectionReceived,
			Counterparty: "@bob",
			Asset:        "USDG",
			Confidential: true,
			TxHash:       "0x" + strings.Repeat("ab", 32),
			TransferID:   "tr_7f3k2",
			Timestamp:    testTime,
		}
	}
	held := &AgentTransactionEvent{
		Event: KindAgentTransactionPendingApproval, EventID: "evt_p1", Account: "@alice/bot",
		Direction: DirectionSent, Counterparty: "@shop", Asset: "USDG", Confidential: true,
		TransactionID: "atx_9", Agent: "@alice/bot", Timestamp: testTime.Add(time.Second),
	}
	approved := *held
	approved.Event, approved.EventID = KindAgentTransactionApproved, "evt_p2"
	approved.TxHash, approved.TransferID = "0x"+strings.Repeat("cd", 32), "tr_after"
	approved.Timestamp = testTime.Add(1500 * time.Millisecond) // sub-second
	rejected := *held
	rejected.Event, rejected.EventID, rejected.Confidential, rejected.Asset = KindAgentTransactionRejected, "evt_p3", false, "ETH"
	return []Event{
		transfer(KindTransferInitiated),
		transfer(KindTransferConfirmed),
		transfer(KindTransferFailed),
		held,
		&approved,
		&rejected,
		&PolicyUpdatedEvent{
			Event: KindAgentPolicyUpdated, EventID: "evt_pol", Account: "@alice", Agent: "@alice/bot",
			PolicyID: "policy_1", ChangedFields: []string{"daily_limit_usdg", "active_hours"},
			Timestamp: testTime.In(time.FixedZone("CEST", 2*3600)),
		},
	}
}

func TestKinds(t *testing.T) {
	want := []string{
		"transfer.initiated", "transfer.confirmed", "transfer.failed",
		"agent.transaction.pending_approval", "agent.transaction.approved", "agent.transaction.rejected",
		"agent.policy.updated",
	}
	got := Kinds()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Kinds() mismatch (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if Kinds()[0] != KindTransferInitiated {
		t.Fatal("Kinds returns a shared slice")
	}
}

func TestEventRoundTrip(t *testing.T) {
	events := sampleEvents()
	if len(events) != len(Kinds()) {
		t.Fatalf("%d sample events for %d kinds", len(events), len(Kinds()))
	}
	for i, want := range events {
		if want.Kind() != Kinds()[i] {
			t.Fatalf("sample %d has kind %s, want %s", i, want.Kind(), Kinds()[i])
		}
		body, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseEvent(body)
		if err != nil {
			t.Fatalf("%s: ParseEvent: %v", want.Kind(), err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: round trip mismatch (-want +got):\n%s", want.Kind(), diff)
		}
		if got.ID() == "" || got.Kind() != want.Kind() || !got.Time().Equal(want.Time()) {
			t.Errorf("%s: accessors give kind %q id %q time %v", want.Kind(), got.Kind(), got.ID(), got.Time())
		}
	}
}

// TestWireFormat pins the JSON the structs produce: the fakeserver sends
// exactly this, and the field names come from the interface and decisions.
func TestWireFormat(t *testing.T) {
	ev := sampleEvents()
	tests := []struct {
		ev   Event
		want string
	}{
		{ev[1], `{"event":"transfer.confirmed","event_id":"evt_transferconfirmed","account":"@alice/bot","direction":"received","counterparty":"@bob","asset":"USDG","confidential":true,"tx_hash":"0x` + strings.Repeat("ab", 32) + `","transfer_id":"tr_7f3k2","timestamp":"2026-07-02T14:23:09Z"}`},
		{ev[3], `{"event":"agent.transaction.pending_approval","event_id":"evt_p1","account":"@alice/bot","direction":"sent","counterparty":"@shop","asset":"USDG","confidential":true,"transaction_id":"atx_9","agent":"@alice/bot","timestamp":"2026-07-02T14:23:10Z"}`},
		{ev[4], `{"event":"agent.transaction.approved","event_id":"evt_p2","account":"@alice/bot","direction":"sent","counterparty":"@shop","asset":"USDG","confidential":true,"tx_hash":"0x` + strings.Repeat("cd", 32) + `","transaction_id":"atx_9","agent":"@alice/bot","transfer_id":"tr_after","timestamp":"2026-07-02T14:23:10.5Z"}`},
		{ev[6], `{"event":"agent.policy.updated","event_id":"evt_pol","account":"@alice","agent":"@alice/bot","policy_id":"policy_1","changed_fields":["daily_limit_usdg","active_hours"],"timestamp":"2026-07-02T16:23:09+02:00"}`},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s wire format:\n got %s\nwant %s", tc.ev.Kind(), got, tc.want)
		}
		if strings.Contains(string(got), "amount") {
			t.Errorf("%s payload mentions an amount", tc.ev.Kind())
		}
	}
}

func TestParseEventTypes(t *testing.T) {
	for _, kind := range Kinds() {
		ev, err := ParseEvent([]byte(`{"event":"` + kind + `","event_id":"evt_x"}`))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		var ok bool
		switch {
		case strings.HasPrefix(kind, "transfer."):
			_, ok = ev.(*TransferEvent)
		case strings.HasPrefix(kind, "agent.transaction."):
			_, ok = ev.(*AgentTransactionEvent)
		case kind == KindAgentPolicyUpdated:
			_, ok = ev.(*PolicyUpdatedEvent)
		}
		if !ok {
			t.Errorf("%s parsed as %T", kind, ev)
		}
	}
}

func TestParseUnknownKind(t *testing.T) {
	body := []byte(`{"event":"account.kyc.updated","event_id":"evt_new","timestamp":"2026-07-02T14:23:09.123456Z","kyc_status":"verified","nested":{"a":[1,2]}}`)
	ev, err := ParseEvent(body)
	if err != nil {
		t.Fatalf("ParseEvent(unknown kind): %v", err)
	}
	u, ok := ev.(*UnknownEvent)
	if !ok {
		t.Fatalf("unknown kind parsed as %T, want *UnknownEvent", ev)
	}
	want := &UnknownEvent{
		Event:     "account.kyc.updated",
		EventID:   "evt_new",
		Timestamp: testTime.Add(123456 * time.Microsecond),
		Raw:       json.RawMessage(body),
	}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Fatalf("UnknownEvent mismatch (-want +got):\n%s", diff)
	}
	body[2] = 'X'
	if u.Raw[2] == 'X' {
		t.Error("UnknownEvent.Raw aliases the caller's buffer")
	}

	// An unknown kind with an odd timestamp still parses, with a zero time.
	for _, ts := range []string{`"yesterday"`, `12345`, `null`} {
		ev, err := ParseEvent([]byte(`{"event":"future.thing","event_id":"evt_f","timestamp":` + ts + `}`))
		if err != nil {
			t.Fatalf("unknown kind with timestamp %s: %v", ts, err)
		}
		if !ev.Time().IsZero() {
			t.Errorf("timestamp %s gave time %v, want zero", ts, ev.Time())
		}
	}
}

func TestParseToleratesAdditiveFields(t *testing.T) {
	body := []byte(`{"event":"transfer.confirmed","event_id":"evt_a","account":"@a","new_field":{"x":1},"confirmed_at":"2026-07-02T14:23:09Z","timestamp":"2026-07-02T14:23:09Z"}`)
	ev, err := ParseEvent(body)
	if err != nil {
		t.Fatalf("ParseEvent with an additive field: %v", err)
	}
	want := &TransferEvent{Event: KindTransferConfirmed, EventID: "evt_a", Account: "@a", Timestamp: testTime}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEventErrors(t *testing.T) {
	tests := []struct {
		name, body, mention string
	}{
		{"empty", ``, "unexpected end"},
		{"not JSON", `event=transfer.confirmed`, "invalid character"},
		{"array", `[{"event":"transfer.confirmed","event_id":"evt_1"}]`, "array"},
		{"null", `null`, `"event"`},
		{"empty object", `{}`, `missing "event"`},
		{"empty event", `{"event":"","event_id":"evt_1"}`, `missing "event"`},
		{"missing event_id", `{"event":"transfer.confirmed"}`, `missing "event_id"`},
		{"empty event_id", `{"event":"future.kind","event_id":""}`, `missing "event_id"`},
		{"event not a string", `{"event":7,"event_id":"evt_1"}`, `"event"`},
		{"event_id not a string", `{"event":"transfer.failed","event_id":["x"]}`, `"event_id"`},
		{"confidential not a bool", `{"event":"transfer.confirmed","event_id":"evt_1","confidential":"yes"}`, `"confidential"`},
		{"changed_fields not a list", `{"event":"agent.policy.updated","event_id":"evt_1","changed_fields":"daily_limit_usdg"}`, `"changed_fields"`},
		{"bad timestamp", `{"event":"transfer.confirmed","event_id":"evt_1","timestamp":"2026-07-02 14:23"}`, `"timestamp"`},
		{"timestamp not a string", `{"event":"transfer.confirmed","event_id":"evt_1","timestamp":1751466189}`, `timestamp`},
		{"trailing data", `{"event":"transfer.confirmed","event_id":"evt_1"} {}`, "invalid character"},
		{"truncated", `{"event":"transfer.confirmed","event_id":"evt_1"`, "unexpected end"},
	}
	for _, tc := range tests {
		ev, err := ParseEvent([]byte(tc.body))
		if err == nil {
			t.Errorf("%s: ParseEvent = %#v, want an error", tc.name, ev)
			continue
		}
		if !errors.Is(err, ErrMalformedEvent) {
			t.Errorf("%s: error %v does not match ErrMalformedEvent", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: error %q does not mention %s", tc.name, err, tc.mention)
		}
	}
}

func TestConstructEvent(t *testing.T) {
	want := sampleEvents()[2]
	body, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ConstructEvent(body, Sign(testSecret, body), "whsec_old", testSecret)
	if err != nil {
		t.Fatalf("ConstructEvent: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	if _, err := ConstructEvent(body, Sign("whsec_other", body), testSecret); !errors.Is(err, ErrSignatureMismatch) {
		t.Errorf("wrong secret: %v, want ErrSignatureMismatch", err)
	}
	if _, err := ConstructEvent(body, Sign(testSecret, body)); !errors.Is(err, ErrNoSecret) {
		t.Errorf("no secrets: %v, want ErrNoSecret", err)
	}
	garbage := []byte(`not json`)
	if _, err := ConstructEvent(garbage, Sign(testSecret, garbage), testSecret); !errors.Is(err, ErrMalformedEvent) {
		t.Errorf("signed garbage: %v, want ErrMalformedEvent", err)
	}
	// Verification comes first: unsigned garbage is a signature error.
	if _, err := ConstructEvent(garbage, "", testSecret); !errors.Is(err, ErrMissingSignature) {
		t.Errorf("unsigned garbage: %v, want ErrMissingSignature", err)
	}
}
