package confpay

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/confpay/confpay-go/webhookverify"
)

// Secret is a secret string: a webhook signing secret, and in fakeserver an
// API key or a decryption key. Use Reveal to read it. Everything else
// shows REDACTED in its place, in every encoding: fmt's verbs, slog's text
// and JSON handlers, encoding/json and encoding/xml (MarshalJSON,
// MarshalText) and encoding/gob, whether the Secret stands alone or sits
// in a struct, a slice or a map value (encoding/json writes a map key of a
// string type as it is: never key a map by a Secret). So a struct holding one can be logged or
// encoded by accident without showing it; to store a secret, store
// Reveal's string. Decoding JSON into a Secret reads the real value (an
// answer's secret).
type Secret string

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

// String returns a redacted placeholder.
func (s Secret) String() string { return "REDACTED" }

// GoString returns a redacted placeholder.
func (s Secret) GoString() string { return "confpay.Secret(REDACTED)" }

// Format prints a redacted placeholder for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("REDACTED")) }

// LogValue keeps the secret out of slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue("REDACTED") }

// MarshalJSON encodes the redacted placeholder, never the secret.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"REDACTED"`), nil }

// MarshalText encodes the redacted placeholder, never the secret
// (encoding/xml and JSON map keys use it).
func (s Secret) MarshalText() ([]byte, error) { return []byte("REDACTED"), nil }

// GobEncode encodes the redacted placeholder, never the secret.
func (s Secret) GobEncode() ([]byte, error) { return []byte("REDACTED"), nil }

// WebhookCreateParams is the body of POST /v1/webhooks.
type WebhookCreateParams struct {
	// URL must be https, or http on a loopback host.
	URL string `json:"url"`
	// Events is a non-empty subset of the seven event kinds.
	Events []EventKind `json:"events"`
}

// Webhook is a subscription. Secret is set only in the create answer.
type Webhook struct {
	WebhookID string      `json:"webhook_id"`
	URL       string      `json:"url"`
	Events    []EventKind `json:"events"`
	Secret    Secret      `json:"secret,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// LogValue keeps the secret out of log/slog output: slog's JSON handler
// would otherwise encode the struct, secret included.
func (w Webhook) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("webhook_id", w.WebhookID),
		slog.String("url", w.URL),
		slog.Any("events", w.Events),
		slog.Any("secret", w.Secret),
		slog.Time("created_at", w.CreatedAt),
	)
}

// WebhookList is the answer of GET /v1/webhooks.
type WebhookList struct {
	Webhooks []*Webhook `json:"webhooks"`
}

// EventKind is the kind of a webhook event. The values are defined once,
// by package webhookverify (which receivers use without the SDK); the
// constants below name the same values. A kind the SDK does not know
// decodes as its own value.
type EventKind string

// Event kinds, in the order the interface lists them.
const (
	EventTransferInitiated               EventKind = webhookverify.KindTransferInitiated               // "transfer.initiated"
	EventTransferConfirmed               EventKind = webhookverify.KindTransferConfirmed               // "transfer.confirmed"
	EventTransferFailed                  EventKind = webhookverify.KindTransferFailed                  // "transfer.failed"
	EventAgentTransactionPendingApproval EventKind = webhookverify.KindAgentTransactionPendingApproval // "agent.transaction.pending_approval"
	EventAgentTransactionApproved        EventKind = webhookverify.KindAgentTransactionApproved        // "agent.transaction.approved"
	EventAgentTransactionRejected        EventKind = webhookverify.KindAgentTransactionRejected        // "agent.transaction.rejected"
	EventAgentPolicyUpdated              EventKind = webhookverify.KindAgentPolicyUpdated              // "agent.policy.updated"
)

// DeliveryStatus is the state of a webhook delivery.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending   DeliveryStatus = "pending"   // an attempt is scheduled
	DeliverySucceeded DeliveryStatus = "succeeded" // the endpoint answered 2xx
	DeliveryFailed    DeliveryStatus = "failed"    // every attempt failed
)

// DeliveryTrigger is what caused a delivery.
type DeliveryTrigger string

// Delivery triggers.
const (
	TriggerEvent  DeliveryTrigger = "event"  // the event happened
	TriggerReplay DeliveryTrigger = "replay" // Webhooks.Replay asked for it
)

// Delivery is the record of one event's delivery to one subscription.
type Delivery struct {
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
	// Event is the event kind.
	Event EventKind `json:"event"`
	// Status is pending, succeeded or failed.
	Status     DeliveryStatus `json:"status"`
	Attempts   int            `json:"attempts"`
	RetryCount int            `json:"retry_count"`
	// ResponseStatus is the last HTTP status received, 0 when none.
	ResponseStatus int        `json:"response_status"`
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	// Trigger is event or replay.
	Trigger DeliveryTrigger `json:"trigger"`
}

// DeliveryList is the answer of GET /v1/webhooks/{id}/deliveries.
type DeliveryList struct {
	Deliveries []*Delivery `json:"deliveries"`
	HasMore    bool        `json:"has_more"`
}

// DeliveryListParams pages GET /v1/webhooks/{webhook_id}/deliveries.
type DeliveryListParams struct {
	Limit  int // page size 1..100; 0 means the server default (20)
	Offset int // items to skip
}

// Replay is the answer of POST /v1/webhooks/{id}/replay/{event_id}.
type Replay struct {
	DeliveryID string         `json:"delivery_id"`
	EventID    string         `json:"event_id"`
	WebhookID  string         `json:"webhook_id"`
	Status     DeliveryStatus `json:"status"`
}

// Create subscribes an endpoint to events (POST /v1/webhooks). The answer's
// Secret is shown only here: store it to verify deliveries.
func (s *WebhooksService) Create(ctx context.Context, params *WebhookCreateParams, opts ...CallOption) (*Webhook, error) {
	switch {
	case params == nil:
		return nil, &ParamError{Param: "params", Problem: "is nil"}
	case params.URL == "":
		return nil, &ParamError{Param: "url", Problem: "is required"}
	case len(params.Events) == 0:
		return nil, &ParamError{Param: "events", Problem: "is required"}
	}
	var w Webhook
	if err := s.client.do(ctx, http.MethodPost, "/v1/webhooks", "", params, &w, opts); err != nil {
		return nil, err
	}
	return &w, nil
}

// List returns the account's subscriptions on the client's network
// (GET /v1/webhooks). Secrets are not part of it.
func (s *WebhooksService) List(ctx context.Context, opts ...CallOption) ([]*Webhook, error) {
	var l WebhookList
	if err := s.client.do(ctx, http.MethodGet, "/v1/webhooks", "", nil, &l, opts); err != nil {
		return nil, err
	}
	return l.Webhooks, nil
}

// Delete removes a subscription at once (DELETE /v1/webhooks/{webhook_id});
// pending retries are cancelled.
func (s *WebhooksService) Delete(ctx context.Context, webhookID string, opts ...CallOption) error {
	id, err := pathID("webhookID", webhookID)
	if err != nil {
		return err
	}
	return s.client.do(ctx, http.MethodDelete, "/v1/webhooks/"+id, "", nil, nil, opts)
}

// Replay sends one event to the subscription again
// (POST /v1/webhooks/{webhook_id}/replay/{event_id}), with a fresh
// signature.
func (s *WebhooksService) Replay(ctx context.Context, webhookID, eventID string, opts ...CallOption) (*Replay, error) {
	wid, err := pathID("webhookID", webhookID)
	if err != nil {
		return nil, err
	}
	eid, err := pathID("eventID", eventID)
	if err != nil {
		return nil, err
	}
	var r Replay
	if err := s.client.do(ctx, http.MethodPost, "/v1/webhooks/"+wid+"/replay/"+eid, "", nil, &r, opts); err != nil {
		return nil, err
	}
	return &r, nil
}

// Deliveries returns one page of the subscription's deliveries of the
// last 30 days, newest first (GET /v1/webhooks/{webhook_id}/deliveries).
// params may be nil (the first page of 20). AllDeliveries walks every page.
func (s *WebhooksService) Deliveries(ctx context.Context, webhookID string, params *DeliveryListParams, opts ...CallOption) (*DeliveryList, error) {
	id, err := pathID("webhookID", webhookID)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if params != nil {
		if err := pageQuery(q, params.Limit, params.Offset); err != nil {
			return nil, err
		}
	}
	var l DeliveryList
	if err := s.client.do(ctx, http.MethodGet, "/v1/webhooks/"+id+"/deliveries", q.Encode(), nil, &l, opts); err != nil {
		return nil, err
	}
	return &l, nil
}

// AllDeliveries iterates over the subscription's deliveries of the last 30
// days, newest first, fetching pages of 100 (or params.Limit) as it goes.
// An error ends the iteration after it is yielded.
func (s *WebhooksService) AllDeliveries(ctx context.Context, webhookID string, params *DeliveryListParams, opts ...CallOption) iter.Seq2[*Delivery, error] {
	return func(yield func(*Delivery, error) bool) {
		var p DeliveryListParams
		if params != nil {
			p = *params
		}
		if p.Limit == 0 {
			p.Limit = MaxPageSize
		}
		for {
			page, err := s.Deliveries(ctx, webhookID, &p, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, d := range page.Deliveries {
				if !yield(d, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Deliveries) == 0 {
				return
			}
			p.Offset += len(page.Deliveries)
		}
	}
}

// EventKinds returns the seven event kinds in the interface's order, as
// webhookverify.Kinds lists them; the slice is a fresh copy on each call.
// Subscribing to all of them: WebhookCreateParams{Events: EventKinds()}.
func EventKinds() []EventKind {
	kinds := webhookverify.Kinds()
	out := make([]EventKind, len(kinds))
	for i, k := range kinds {
		out[i] = EventKind(k)
	}
	return out
}
