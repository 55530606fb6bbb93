// Package confpay is the Go client for the confidential payments service:
// accounts and balances, transfers, agent accounts with spend policies, and
// webhooks.
//
// # Getting started
//
// Create one Client per API key and share it; it is safe for concurrent
// use. Every endpoint is a method on one of its services, takes a
// context.Context first and per-call options last:
//
//	client, err := confpay.NewClient(os.Getenv("CONFPAY_API_KEY"))
//	...
//	t, err := client.Transfers.Create(ctx, &confpay.TransferCreateParams{
//		To:     "@bob",
//		Amount: confpay.MustParseAmount("12.50"),
//	})
//
// The services are Client.Accounts (Me, Balances, ReadBalances),
// Client.Transfers (Create, Get, List, All), Client.Agents
// (List, Create, GetPolicy, UpdatePolicy, ListPending, Approve, Reject) and
// Client.Webhooks (Create, List, Delete, Replay, Deliveries).
//
// # Networks
//
// The key's prefix selects the network: hc_test_ keys act on the test
// network (chain 46630, no real funds), hc_live_ keys on the live network
// (chain 4663), where a key can move real money. Client.Network and
// Client.ChainID report which. Identities are shared between the networks;
// balances, transfers, held payments and webhooks are not.
//
// # Amounts
//
// Money is exact: Amount is a decimal that never goes through a float, a
// JSON string on the wire ("12.5"); Limit is the same for spend-policy
// limits, a JSON number on the wire. ParseAmount accepts what the service
// accepts and nothing else. Transfers are checked before sending: a
// recipient, an amount above zero, and no more decimals than the asset has
// (USDG 6, ETH 18).
//
// # Confidentiality
//
// Amounts are encrypted on-chain and the service holds no decryption key,
// so no answer ever carries a transfer's amount, and balances come back as
// ciphertexts. Figures are read on the client with the account's own
// decryption key, using package decrypt:
//
//   - Accounts.ReadBalances opens the balances locally and proves them to
//     the service, which then answers the figures;
//   - OpenTransferNote and OpenAgentTransactionNote open the amount and
//     memo sealed to a transfer's sender and recipient (or to the owner of
//     an agent's held payment), and NoteAmount converts the amount.
//
// The key never leaves the process. Proofs travel in request bodies, never
// in URLs, logs or error messages.
//
// # Agents
//
// An account can own agent accounts, each with its own wallet and a spend
// policy: daily and per-payment limits, allowed recipients and assets,
// active hours, and an approval threshold. An agent pays with its own key
// through Transfers.Create; a payment above the threshold is held (the
// answer's Held reports it) until the owner calls Agents.Approve or
// Agents.Reject. Agents.UpdatePolicy sends only the fields that are set.
//
// # Webhooks
//
// Webhooks.Create subscribes an HTTPS endpoint to event kinds and returns
// the signing secret once (as a Secret, which prints redacted). Verify
// deliveries with package webhookverify.
//
// # Errors
//
// A non-2xx answer is an *APIError carrying the status, the code, the
// message, and where they help the field (Param), the policy rule (Rule)
// and the proof failure (Reason), plus the request id to quote in support
// requests. Test codes with errors.Is against the Err sentinels:
//
//	switch {
//	case errors.Is(err, confpay.ErrInsufficientBalance):
//	case errors.Is(err, confpay.ErrPolicyViolation):
//	}
//
// A request refused by the client before sending is a *ParamError naming
// the field, which also matches ErrInvalidRequest. A call that received no
// answer at all is a *TransportError wrapping the cause (so
// errors.Is(err, context.Canceled) works). No error string ever contains the
// API key, a proof or a figure.
//
// # Retries and timeouts
//
// Failed attempts are retried (2 retries by default, WithMaxRetries):
// connection errors, 408, 429, 500, 502, 503, 504, and 409
// idempotency_key_in_use. The wait is 0.5 s·2^n with ±25 % jitter, capped at
// 8 s, or the answer's Retry-After. A Retry-After longer than 30 s, or a
// wait that would outlast the context's deadline, is not started: the
// answer is returned at once. Cancelling the context stops the call at
// once. WithTimeout bounds each attempt (30 s by default);
// WithCallTimeout or a context deadline bounds a whole call. When retries
// run out, the last answer is returned as its *APIError.
//
// # Idempotency
//
// Every POST, PATCH and DELETE carries an Idempotency-Key generated once per
// call and reused on each of its retries, so a retried payment is never made
// twice. Pass WithIdempotencyKey to reuse a key of your own across calls
// (after a crash, say): the service replays the first answer, and
// WithResponse reports it in Response.IdempotentReplayed.
//
// # Logging
//
// The client is silent unless given a logger with WithLogger; it then writes
// one debug line per attempt with the method, path, status, attempt, request
// id and duration, never the key, a body, a query string or a figure.
package confpay
