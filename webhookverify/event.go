package webhookverify

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event kinds, in the order the interface lists them.
const (
	KindTransferInitiated               = "transfer.initiated"
	KindTransferConfirmed               = "transfer.confirmed"
	KindTransferFailed                  = "transfer.failed"
	KindAgentTransactionPendingApproval = "agent.transaction.pending_approval"
	KindAgentTransactionApproved        = "agent.transaction.approved"
	KindAgentTransactionRejected        = "agent.transaction.rejected"
	KindAgentPolicyUpdated              = "agent.policy.updated"
)

// Values of the direction field.
const (
	// DirectionSent marks a delivery for the paying side.
	DirectionSent = "sent"
	// DirectionReceived marks a delivery for the receiving side.
	DirectionReceived = "received"
)

// Kinds returns the seven event kinds in the interface's order. The slice is
// a fresh copy on each call.
func Kinds() []string {
	return []string{
		KindTransferInitiated,
		KindTransferConfirmed,
		KindTransferFailed,
		KindAgentTransactionPendingApproval,
		KindAgentTransactionApproved,
		KindAgentTransactionRejected,
		KindAgentPolicyUpdated,
	}
}

// ErrMalformedEvent is matched (errors.Is) by every ParseEvent error: the
// body is not a JSON object, a field has the wrong type, or a required
// field is missing.
var ErrMalformedEvent = errors.New("webhookverify: malformed event payload")

// Event is a parsed event. The concrete type is one of *TransferEvent,
// *AgentTransactionEvent, *PolicyUpdatedEvent, or *UnknownEvent for a kind
// this package does not know yet, so a new kind never breaks a receiver.
type Event interface {
	// Kind returns the event kind, for example KindTransferConfirmed.
	Kind() string
	// ID returns the event id (evt_...). Retries and replays of one event
	// share it, so it is the key for deduplication.
	ID() string
	// Time returns the event's timestamp.
	Time() time.Time
}

// TransferEvent is the payload of transfer.initiated, transfer.confirmed and
// transfer.failed. The struct is the wire format: the fakeserver encodes it
// with encoding/json, so field order and tags define the payload. No amount
// is ever part of it.
type TransferEvent struct {
	Event        string    `json:"event"`
	EventID      string    `json:"event_id"`
	Account      string    `json:"account"`      // handle of the side this delivery is for (may be an agent handle)
	Direction    string    `json:"direction"`    // DirectionSent or DirectionReceived
	Counterparty string    `json:"counterparty"` // the other side
	Asset        string    `json:"asset"`
	Confidential bool      `json:"confidential"`
	TxHash       string    `json:"tx_hash"`
	TransferID   string    `json:"transfer_id"`
	Timestamp    time.Time `json:"timestamp"`
}

// AgentTransactionEvent is the payload of agent.transaction.pending_approval,
// agent.transaction.approved and agent.transaction.rejected, delivered to the
// owner's subscriptions. It is the wire format, like TransferEvent.
type AgentTransactionEvent struct {
	Event         string    `json:"event"`
	EventID       string    `json:"event_id"`
	Account       string    `json:"account"`      // the agent handle: the account the payment concerns
	Direction     string    `json:"direction"`    // DirectionSent
	Counterparty  string    `json:"counterparty"` // the recipient
	Asset         string    `json:"asset"`
	Confidential  bool      `json:"confidential"`
	TxHash        string    `json:"tx_hash,omitempty"`     // set once approved and submitted
	TransactionID string    `json:"transaction_id"`        // atx_...
	Agent         string    `json:"agent"`                 // agent handle
	TransferID    string    `json:"transfer_id,omitempty"` // set on approved
	Timestamp     time.Time `json:"timestamp"`
}

// PolicyUpdatedEvent is the payload of agent.policy.updated, delivered to the
// owner's subscriptions. It is the wire format, like TransferEvent.
type PolicyUpdatedEvent struct {
	Event         string    `json:"event"`
	EventID       string    `json:"event_id"`
	Account       string    `json:"account"` // owner handle
	Agent         string    `json:"agent"`   // agent handle
	PolicyID      string    `json:"policy_id"`
	ChangedFields []string  `json:"changed_fields"` // spend-policy field names, e.g. "daily_limit_usdg"
	Timestamp     time.Time `json:"timestamp"`
}

// UnknownEvent is an event of a kind this package does not know. Raw holds
// a copy of the whole payload for the receiver to decode itself.
type UnknownEvent struct {
	Event     string          `json:"event"`
	EventID   string          `json:"event_id"`
	Timestamp time.Time       `json:"timestamp"` // zero if absent or not RFC 3339
	Raw       json.RawMessage `json:"-"`
}

// Kind returns the event kind.
func (e *TransferEvent) Kind() string { return e.Event }

// ID returns the event id.
func (e *TransferEvent) ID() string { return e.EventID }

// Time returns the event timestamp.
func (e *TransferEvent) Time() time.Time { return e.Timestamp }

// Kind returns the event kind.
func (e *AgentTransactionEvent) Kind() string { return e.Event }

// ID returns the event id.
func (e *AgentTransactionEvent) ID() string { return e.EventID }

// Time returns the event timestamp.
func (e *AgentTransactionEvent) Time() time.Time { return e.Timestamp }

// Kind returns the event kind.
func (e *PolicyUpdatedEvent) Kind() string { return e.Event }

// ID returns the event id.
func (e *PolicyUpdatedEvent) ID() string { return e.EventID }

// Time returns the event timestamp.
func (e *PolicyUpdatedEvent) Time() time.Time { return e.Timestamp }

// Kind returns the event kind.
func (e *UnknownEvent) Kind() string { return e.Event }

// ID returns the event id.
func (e *UnknownEvent) ID() string { return e.EventID }

// Time returns the event timestamp, or the zero time.
func (e *UnknownEvent) Time() time.Time { return e.Timestamp }

// ParseEvent decodes an event payload without verifying it; use
// ConstructEvent (or Handler) for anything received over the network.
//
// The body must be one JSON object with non-empty string fields "event" and
// "event_id". Fields this package does not know are ignored, since the
// interface may add fields; a known field of the wrong type (or a timestamp
// that is not RFC 3339) is an error for the known kinds. Every error
// matches ErrMalformedEvent and names the offending field where it can.
func ParseEvent(body []byte) (Event, error) {
	var env struct {
		Event     *string         `json:"event"`
		EventID   *string         `json:"event_id"`
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, malformed(err)
	}
	switch {
	case env.Event == nil || *env.Event == "":
		return nil, fmt.Errorf(`%w: missing "event" field`, ErrMalformedEvent)
	case env.EventID == nil || *env.EventID == "":
		return nil, fmt.Errorf(`%w: missing "event_id" field`, ErrMalformedEvent)
	}

	var ev Event
	switch *env.Event {
	case KindTransferInitiated, KindTransferConfirmed, KindTransferFailed:
		ev = new(TransferEvent)
	case KindAgentTransactionPendingApproval, KindAgentTransactionApproved, KindAgentTransactionRejected:
		ev = new(AgentTransactionEvent)
	case KindAgentPolicyUpdated:
		ev = new(PolicyUpdatedEvent)
	default:
		u := &UnknownEvent{
			Event:   *env.Event,
			EventID: *env.EventID,
			Raw:     json.RawMessage(append([]byte(nil), body...)),
		}
		if len(env.Timestamp) > 0 {
			var t time.Time
			if json.Unmarshal(env.Timestamp, &t) == nil {
				u.Timestamp = t
			}
		}
		return u, nil
	}
	if len(env.Timestamp) > 0 {
		var t time.Time
		if err := json.Unmarshal(env.Timestamp, &t); err != nil {
			return nil, fmt.Errorf(`%w: field "timestamp": want an RFC 3339 time string`, ErrMalformedEvent)
		}
	}
	if err := json.Unmarshal(body, ev); err != nil {
		return nil, malformed(err)
	}
	return ev, nil
}

// malformed wraps a decoding error, naming the field for type errors. The
// messages of encoding/json quote at most one character of the input.
func malformed(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%w: field %q: want %s, got JSON %s", ErrMalformedEvent, te.Field, te.Type, te.Value)
	}
	return fmt.Errorf("%w: %v", ErrMalformedEvent, err)
}

// ConstructEvent verifies signatureHeader over body with any of secrets (see
// VerifyAny) and then parses the event (see ParseEvent). Nothing from the
// body is looked at before the signature checks out. Signature errors match
// ErrNoSecret, ErrMissingSignature, ErrMalformedSignature or
// ErrSignatureMismatch; payload errors match ErrMalformedEvent.
func ConstructEvent(body []byte, signatureHeader string, secrets ...string) (Event, error) {
	if err := VerifyAny(secrets, body, signatureHeader); err != nil {
		return nil, err
	}
	return ParseEvent(body)
}
