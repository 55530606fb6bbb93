// Package fakeserver is an in-memory reference implementation of the
// confidential payments service, for tests: the whole /v1 interface with
// real state and real rules, a simulated chain, a virtual clock, scripted
// faults, and a direct state API for assertions.
//
// # One line in a test
//
//	srv := fakeserver.New(t) // listens on 127.0.0.1:0, closed when the test ends
//	alice := srv.AddAccount(t, fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
//	srv.AddAccount(t, fakeserver.AccountParams{Handle: "@bob"})
//	srv.AddFunds(t, "@alice", "USDG", "100")
//	srv.Inject(t, fakeserver.Fault{Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultError})
//	// ... your code pays @bob with alice.Client, through the 503 ...
//	srv.Advance(time.Second) // one block: the transfer confirms
//	srv.CheckBalance(t, "@bob", "USDG", "30")
//
// A server made WithoutListener needs no socket: HTTPClient and
// Client reach it in memory, and a test runs inside testing/synctest with
// the SDK's real backoff and the caller's timeouts in no wall time.
// Record subscribes a webhook recorder that verifies every delivery's
// signature; AddWebhook subscribes your own handler with a known secret.
// Seeds (Seed, ParseSeed, Load, ResetToSeed) create accounts, agents with
// their policies and keys, and balances from one JSON document.
//
// Servers share nothing: New is safe in parallel tests. Outside tests,
// NewServer returns a started server (as httptest.NewServer does) and
// NewUnstartedServer one whose Handler you mount in your own http.Server;
// the command confpay-fakeserver runs it standalone.
//
// # What is real and what is simulated
//
// Real: HTTP (routing, 401/404/405/413, the flat error body, X-Request-Id on
// every answer), authentication with hashed keys and immediate revocation,
// per-key usage, networks selected by the key prefix with fully separate
// state, KYC gating, recipients, exact amounts, reservations, idempotency,
// pagination, spend policies and held payments (held.go, pay.go),
// webhook subscriptions, signing and retries (internal/hooks), and
// the confidentiality protocol: balance ciphertexts, decryption-proof
// verification and sealed notes (package decrypt).
//
// Simulated: the chain. Balances live in an in-memory ledger; a transfer
// is "mined" one block time (WithBlockTime, default 1 s) after it is
// submitted, on the server's clock; tx hashes are keccak-256 of the
// transfer's canonical encoding, never on any real chain; a transfer fails
// only when a test says so (FailTransfer, or a fault).
//
// # Layout
//
// The HTTP pipeline (routes, request id, body limit, authentication,
// faults, idempotency, strict JSON, error rendering) is http.go, the
// listener's settings httpserver.go. Handlers (api_*.go for /v1, admin.go
// for /_fake) parse, call one domain operation and render; they never lock
// (TestHandlersNeverLock). The domain files, lowest first, each referring
// only to the ones before it and to Server (TestDomainFilesAreLayered):
//
//	assets.go     the asset table
//	policy.go     an agent's spend-policy value (rules in internal/rules)
//	identity.go   accounts, agents, API keys, KYC, lookups, authentication
//	ledger.go     the books per network (internal/ledger), funding
//	transfers.go  transfers, their records, notes and listing
//	held.go       an agent's spend window and its held payments
//	events.go     what operations announce to internal/hooks
//	views.go      the domain as wire types, and the /v1 reads
//	balances.go   balances and decryption proofs
//	pay.go        the money path: pay, approve, reject, confirm, fail
//	agents.go     an owner's agent operations: create, change the policy
//
// Above them: the direct state API a test calls, direct.go (seeds in
// seed.go, test helpers that take t in testing.go, the webhook recorder in
// recorder.go, faults in faults.go). Under internal/: clock, ledger, hooks
// (webhooks, with their own lock), idempotency, names, rules and memhttp
// (the in-memory transport of HTTPClient, which calls the handler as
// net/http would over a socket). No
// internal package imports fakeserver (TestLayout).
//
// # Support matrix
//
//	GET    /v1/accounts/me                                the key's account, with encryption_key
//	GET    /v1/accounts/me/balances                       both shapes: nonzero + ciphertext + version, or figures from a proof
//	GET    /v1/accounts/me/agents                         api_agents.go
//	POST   /v1/accounts/me/agents                         api_agents.go
//	GET    /v1/agents/{account_id}/spend-policy           api_agents.go
//	PATCH  /v1/agents/{account_id}/spend-policy           api_agents.go
//	GET    /v1/agents/transactions/pending                api_agents.go
//	POST   /v1/agents/transactions/{id}/approve           api_agents.go
//	POST   /v1/agents/transactions/{id}/reject            api_agents.go
//	POST   /v1/transfers                                  201 pending, or 202 held for an agent above its threshold
//	GET    /v1/transfers/{transfer_id}                    sender, recipient, or the owner of an agent party
//	GET    /v1/transfers                                  limit, offset, status, from, to; newest first; has_more
//	POST   /v1/webhooks, GET /v1/webhooks                 api_webhooks.go → internal/hooks
//	DELETE /v1/webhooks/{webhook_id}                      api_webhooks.go
//	POST   /v1/webhooks/{webhook_id}/replay/{event_id}    api_webhooks.go
//	GET    /v1/webhooks/{webhook_id}/deliveries           api_webhooks.go
//	       /_fake/...                                     the admin interface (admin.go, docs/fakeserver.md);
//	                                                      403 forbidden to any webhook delivery (selfguard.go)
//
// Behaviour, all as docs/interface.md decides:
//
//   - Errors: every code of the interface's table and of the decisions, in
//     the flat body {code, message, request_id, param, rule, reason};
//     malformed input is 400 invalid_request naming the field in param;
//     bodies are strict JSON (no unknown, repeated or case-variant member),
//     unknown or repeated query parameters and unparseable query strings
//     are refused on every route (checkQuery), and unclean paths (//, .,
//     ..) too, never redirected (checkPath); bodies over 1 MiB are 413.
//   - Authentication: every /v1 endpoint answers 401 without a valid,
//     unrevoked key; the key's prefix selects the network, and a test key
//     never sees live state (404 not_found, as for an unknown id).
//   - Transfers: recipients by @handle (any case), @owner/agent, 0x address
//     (EIP-55 checked when mixed case; an unknown address is an external
//     wallet) or a registered domain; self-payment is 400; KYC unverified or
//     pending is 403; confidential:true to a recipient without an encryption
//     key, or to an external wallet, is 422 recipient_not_confidential_ready;
//     the amount is reserved at submit (402 insufficient_balance when it is
//     not available), so concurrent payments never overdraw.
//   - Idempotency: POST, PATCH and DELETE with Idempotency-Key replay the
//     first answer for 24 hours (Idempotent-Replayed: true); another body,
//     method or path is 422, a request still running is 409 with
//     Retry-After. Only answers of requests that ran are kept: 400, 401,
//     413, 429, 409 and 5xx are not, so a corrected body may reuse the key.
//   - Confidentiality: the ledger keeps one balance ciphertext per
//     (account, network, asset), versioned; it is produced when first read
//     and cached for its version. Proofs are verified against the current
//     ciphertexts; every figure returned comes from the proof, with
//     Cache-Control: no-store. Transfers carry encrypted_note, sealed to the
//     sender's and the recipient's keys (an agent's is its owner's). No
//     answer ever carries a plaintext amount.
//
// # The direct state API
//
// Beside the wire, tests drive and inspect the server directly:
// CreateAccount, IssueKey, RevokeKey, Keys, SetKYC, SetAgentStatus,
// RegisterDomain, Fund, Books (plaintext balances), Transfer and Transfers
// (records with amounts), Settle, FailTransfer, FailTransferAtConfirmation,
// AddFault, Faults, ClearFaults, Account, Accounts, CreateAgent,
// HeldPayment and HeldPayments (held agent payments with their status,
// expired included), Load and ResetToSeed (a Seed: accounts, agents, keys
// and balances in one value, the binary's -seed JSON), SubscribeHandler
// (an in-process webhook receiver with a known secret), Events and
// Deliveries (an account's events and delivery records), Snapshot and
// Reset.
// Most have an HTTP twin under /_fake for tests in other languages.
//
// # Test helpers
//
// A method whose first parameter is t is a test helper: it returns no
// error and fails the test instead, so that a test reads as a story. Each
// is the twin of a direct-API method: Seed (Load), Reseed (ResetToSeed),
// AddAccount (CreateAccount), AddAgent (CreateAgent), AddFunds (Fund),
// Balance, BalanceOn and CheckBalance (Books: the spendable figure,
// exact), Held (HeldPayment), Inject (AddFault), AddWebhook
// (SubscribeHandler) and Record (a WebhookRecorder on SubscribeHandler).
// An AccountInfo or AgentInfo carries Client, an SDK client with its test
// key (Client: in memory, with a retry backoff of milliseconds).
//
// # Time
//
// Each server has its own clock. In tests it is virtual: it starts at
// DefaultStart and moves only with Advance or Set, which run every timer
// that falls due (confirmations, approval expiry, webhook retries) at its
// own instant and wait for the work those timers start. Sync waits until
// everything due now has run: tests never sleep. WithRealClock follows the
// wall clock (the binary's default).
//
// # Faults
//
// AddFault scripts the /v1 interface: the next Times requests matching a
// method and a path pattern answer an error (with Retry-After), are held
// for a delay, are executed and then lose their answer (drop_after_commit,
// or reset_after_commit, which no transport resends silently: to prove a
// client's retries are exactly-once), or create a transfer that fails at
// confirmation. The admin interface is never faulted.
//
// # Concurrency
//
// Every method is safe for concurrent use, and every check-and-move of
// money is atomic: concurrent payments can never overdraw or pass a
// policy limit. (The lock order, for maintainers, is a comment at the top
// of server.go.)
package fakeserver
