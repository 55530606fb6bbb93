// Package webhookverify lets a receiver trust webhook deliveries from the
// confidential payments service: it checks the signature, parses the event
// and, optionally, drops repeated deliveries of one event.
//
// # The scheme
//
// Each delivery is a POST with a JSON body and these headers:
//
//	X-Service-Signature:        hex(HMAC-SHA256(key = secret's bytes, message = raw body))
//	X-Service-Event-Id:         evt_...   (not signed)
//	X-Service-Delivery-Attempt: 1, 2, ... (not signed)
//	Content-Type:               application/json
//
// The secret (whsec_...) is shown once, when the subscription is created.
// The signature covers the exact body bytes, so verify before decoding, and
// never re-encode the JSON to check it. Verify decodes the 64 hex digits
// (either case; surrounding spaces and tabs are trimmed, nothing else is
// tolerated) and compares the 32 bytes with hmac.Equal, in constant time.
// Errors never contain the secret, the expected MAC or the header value.
// An empty secret is refused with ErrNoSecret rather than "verified".
//
// Only the body is signed: the event id and attempt headers are hints, and
// everything this package trusts (the event id used for deduplication
// included) comes from the verified body.
//
// # Rotation
//
// VerifyAny, ConstructEvent and HandlerOptions.Secrets take several
// secrets and accept a delivery signed with any of them. To rotate, create
// the new subscription or secret, configure both secrets, and drop the old
// one once no delivery signed with it can still arrive: the service retries
// a failed delivery for up to 24 hours.
//
// # Events
//
// ParseEvent returns an Event whose concrete type is *TransferEvent,
// *AgentTransactionEvent or *PolicyUpdatedEvent for the seven kinds listed
// by Kinds, and *UnknownEvent for any other kind, so a kind added by the
// service later does not break a receiver. Unknown fields are ignored, as
// the interface may add fields. No payload ever carries an amount: amounts
// are encrypted and only the account's decryption key can read them.
//
// # Retries and deduplication
//
// The service counts any 2xx answer within 10 seconds as delivered and
// retries anything else, with backoff, for 24 hours; a replay re-sends the
// same event with the same event_id. So one event can arrive more than once,
// even concurrently. With HandlerOptions.Store set, Handler claims the
// event_id before calling the handler:
//
//   - already processed: answer 200, handler not called;
//   - being processed by another request right now: answer 409, so the
//     service tries again later;
//   - new: call the handler. If it answers 2xx (or writes nothing) the id
//     is marked processed; if it answers anything else or panics, the claim
//     is released and the next retry is processed afresh.
//
// Marking after success rather than before means a failed handler never
// loses an event. The price is small: if the process dies between the
// handler's success and the mark, the retry is handled again, so handlers
// should still be idempotent where they can. A handler slower than the
// service's 10 seconds is retried while still running; the retry gets 409
// and a later one gets 200 once the first attempt has finished. MemoryStore keeps processed ids for at least
// 25 hours (the retry window plus a margin) and then forgets them, so its
// memory is bounded. It lives in one process; implement SeenStore over a
// shared database when several replicas receive deliveries.
package webhookverify
