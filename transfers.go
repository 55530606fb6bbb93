package confpay

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/confpay/confpay-go/decrypt"
)

// TransferStatus is the state of a transfer. A status the SDK does not
// know decodes as its own value. A payment held for an owner's approval is
// not a transfer: Transfers.Create answers it with a *HeldError.
type TransferStatus string

// Transfer statuses.
const (
	StatusPending   TransferStatus = "pending"   // submitted, the amount reserved
	StatusConfirmed TransferStatus = "confirmed" // settled, the recipient credited
	StatusFailed    TransferStatus = "failed"    // nothing moved
)

// TransferCreateParams is the body of POST /v1/transfers.
type TransferCreateParams struct {
	// To is the recipient: an @handle, an @owner/agent handle, a 0x address
	// or a registered domain name.
	To     string `json:"to"`
	Amount Amount `json:"amount"`
	// Asset defaults to USDG on the server when empty.
	Asset string `json:"asset,omitempty"`
	// Confidential defaults to true when nil; set it to Ptr(false) only for
	// a recipient wallet without confidential token support.
	Confidential *bool `json:"confidential,omitempty"`
	// Memo is sealed with the amount; only sender and recipient can read it.
	// It is UTF-8 text of at most 1024 bytes, kept byte for byte: Create
	// refuses a longer memo, or one that is not valid UTF-8, before sending.
	Memo string `json:"memo,omitempty"`
}

// String describes the payment without its figure and memo ("REDACTED"
// when set), so that parameters printed or logged by accident reveal
// neither; read the fields instead. JSON encoding is the wire format and
// carries both.
func (p TransferCreateParams) String() string {
	redact := func(set bool) string {
		if set {
			return "REDACTED"
		}
		return `""`
	}
	conf := "default"
	if p.Confidential != nil {
		conf = strconv.FormatBool(*p.Confidential)
	}
	return fmt.Sprintf("confpay.TransferCreateParams{To:%q Amount:%s Asset:%q Confidential:%s Memo:%s}",
		p.To, redact(p.Amount != Amount{}), p.Asset, conf, redact(p.Memo != ""))
}

// GoString is String.
func (p TransferCreateParams) GoString() string { return p.String() }

// Format prints String for every verb.
func (p TransferCreateParams) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

// LogValue is String, for log/slog (text and JSON handlers alike).
func (p TransferCreateParams) LogValue() slog.Value { return slog.StringValue(p.String()) }

// Transfer is a payment as the service reports it. The amount is never part
// of it: open EncryptedNote with the account's decryption key to read it.
// An agent's payment held for approval is not a Transfer (see HeldError).
type Transfer struct {
	TransferID   string         `json:"transfer_id,omitempty"`
	Status       TransferStatus `json:"status"`
	From         string         `json:"from,omitempty"`
	To           string         `json:"to"`
	Asset        string         `json:"asset,omitempty"`
	Confidential bool           `json:"confidential"`
	TxHash       string         `json:"tx_hash,omitempty"`
	CreatedAt    time.Time      `json:"created_at,omitzero"`
	ConfirmedAt  *time.Time     `json:"confirmed_at,omitempty"`
	FailedAt     *time.Time     `json:"failed_at,omitempty"`
	// EncryptedNote is the amount and memo sealed to the sender and the
	// recipient (base64url, no padding); NoteReaders lists the readers'
	// encryption keys (hex) in the order the note was sealed.
	EncryptedNote string   `json:"encrypted_note,omitempty"`
	NoteReaders   []string `json:"note_readers,omitempty"`
}

// TransferListParams filters GET /v1/transfers. Zero fields are not sent.
type TransferListParams struct {
	Limit  int            // page size 1..100; 0 means the server default (20)
	Offset int            // items to skip
	Status TransferStatus // only this status
	From   time.Time      // only transfers created strictly after this instant (exclusive)
	To     time.Time      // only transfers created strictly before this instant (exclusive)
}

// TransferList is one page of transfers, newest first.
type TransferList struct {
	Transfers []*Transfer `json:"transfers"`
	HasMore   bool        `json:"has_more"`
}

// MaxPageSize is the largest page GET /v1/transfers answers.
const MaxPageSize = 100

// Create sends a payment (POST /v1/transfers) and returns the submitted
// transfer. The answer never carries the amount.
//
// When the key is an agent's and the payment is above its approval
// threshold, the service holds the payment for the owner's decision (202
// Accepted) and nothing moves yet: Create then returns a nil Transfer and a
// *HeldError carrying the held payment. Read it with errors.As; a retry with
// the same idempotency key answers the same HeldError, a new key holds a
// second payment.
//
// The call carries an Idempotency-Key, generated once and reused on every
// retry; pass WithIdempotencyKey to make a retry of your own safe too.
//
// Webhook events can arrive before Create returns: transfer.initiated is
// sent when the payment commits, which may be before the answer reaches
// you, or when Create returned a transport error although the payment went
// through. Correlate on something you chose before the call, not on the
// transfer id Create returns: record the business operation and its
// idempotency key first, pass the key with WithIdempotencyKey, and have the
// webhook handler look the transfer up by id (Get) and match it to the
// operation, or retry Create with the same key, which answers the same
// transfer.
func (s *TransfersService) Create(ctx context.Context, params *TransferCreateParams, opts ...CallOption) (*Transfer, error) {
	if err := params.validate(); err != nil {
		return nil, err
	}
	var a createAnswer
	if err := s.client.do(ctx, http.MethodPost, "/v1/transfers", "", params, &a, opts); err != nil {
		return nil, err
	}
	if a.held != nil {
		return nil, &HeldError{Payment: a.held}
	}
	return &a.t, nil
}

// createAnswer receives the answer of POST /v1/transfers: a transfer, or
// (202) a payment held for approval.
type createAnswer struct {
	t    Transfer
	held *AgentTransaction
}

// target is where an answer with the given HTTP status decodes.
func (a *createAnswer) target(status int) any {
	if status == http.StatusAccepted {
		a.held = new(AgentTransaction)
		return a.held
	}
	return &a.t
}

// HeldError is what Transfers.Create returns when the service held an
// agent's payment for the owner's approval (202 Accepted) instead of
// submitting it: nothing has moved, and no transfer exists until the owner
// approves (Agents.Approve) before Payment.ExpiresAt.
//
//	var held *confpay.HeldError
//	if errors.As(err, &held) {
//		log.Printf("waiting for approval: %s", held.Payment.TransactionID)
//	}
type HeldError struct {
	// Payment is the held payment: TransactionID, To, Asset,
	// Confidential, Status DecisionPending, RequestedAt and ExpiresAt.
	Payment *AgentTransaction
}

// Error names the held transaction and its deadline; never the amount.
func (e *HeldError) Error() string {
	return "confpay: payment held for the owner's approval as " + e.Payment.TransactionID +
		" until " + e.Payment.ExpiresAt.UTC().Format(time.RFC3339)
}

// validate checks what the service would refuse, without sending anything.
func (p *TransferCreateParams) validate() error {
	if p == nil {
		return &ParamError{Param: "params", Problem: "is nil"}
	}
	if p.To == "" {
		return &ParamError{Param: "to", Problem: "is required"}
	}
	if !p.Amount.IsSet() {
		return &ParamError{Param: "amount", Problem: "is required"}
	}
	if p.Amount.IsZero() {
		return &ParamError{Param: "amount", Problem: "must be greater than zero"}
	}
	asset := p.Asset
	if asset == "" {
		asset = AssetUSDG
	}
	if dec, ok := AssetDecimals(asset); ok {
		if _, err := p.Amount.Units(dec); err != nil {
			return &ParamError{Param: "amount", Problem: fmt.Sprintf("has more than %d decimals, the most %s allows", dec, asset)}
		}
	}
	if len(p.Memo) > decrypt.MaxMemoBytes {
		return &ParamError{Param: "memo", Problem: "is longer than 1024 bytes"}
	}
	// encoding/json would send invalid UTF-8 as U+FFFD, so the recipient
	// would read other bytes than the memo holds (a Go string can hold any
	// bytes; one that is valid UTF-8 holds no surrogate).
	if !utf8.ValidString(p.Memo) {
		return &ParamError{Param: "memo", Problem: "is not valid UTF-8 text (it would not reach the recipient as written)"}
	}
	return nil
}

// Get returns one transfer (GET /v1/transfers/{transfer_id}).
func (s *TransfersService) Get(ctx context.Context, transferID string, opts ...CallOption) (*Transfer, error) {
	id, err := pathID("transferID", transferID)
	if err != nil {
		return nil, err
	}
	var t Transfer
	if err := s.client.do(ctx, http.MethodGet, "/v1/transfers/"+id, "", nil, &t, opts); err != nil {
		return nil, err
	}
	return &t, nil
}

// List returns one page of transfers, newest first (GET /v1/transfers).
// params may be nil. Use HasMore and Offset to page, or All to walk them all.
//
// The list holds the transfers the key's own account sent or received. An
// owner's list does not hold its agents' payments (an agent's key lists
// those): the owner learns every agent payment from its webhooks, whose
// events cover the account and every agent under it, and may Get any of
// them by id.
//
// From and To are exclusive. To tile periods without a gap or an overlap,
// pass the previous period's end minus one millisecond as From: for
// November, From 2026-10-31T23:59:59.999Z and To 2026-12-01T00:00:00Z.
func (s *TransfersService) List(ctx context.Context, params *TransferListParams, opts ...CallOption) (*TransferList, error) {
	q, err := params.query()
	if err != nil {
		return nil, err
	}
	var l TransferList
	if err := s.client.do(ctx, http.MethodGet, "/v1/transfers", q, nil, &l, opts); err != nil {
		return nil, err
	}
	return &l, nil
}

// pageQuery checks the paging parameters every list shares and sets the
// ones that are not the default.
func pageQuery(v url.Values, limit, offset int) error {
	if limit < 0 || limit > MaxPageSize {
		return &ParamError{Param: "limit", Problem: "must be between 1 and 100 (0 for the default)"}
	}
	if offset < 0 {
		return &ParamError{Param: "offset", Problem: "must be at least 0"}
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	return nil
}

// query encodes the parameters that are set.
func (p *TransferListParams) query() (string, error) {
	if p == nil {
		return "", nil
	}
	v := url.Values{}
	if err := pageQuery(v, p.Limit, p.Offset); err != nil {
		return "", err
	}
	if p.Status != "" {
		v.Set("status", string(p.Status))
	}
	if !p.From.IsZero() {
		v.Set("from", p.From.UTC().Format(time.RFC3339Nano))
	}
	if !p.To.IsZero() {
		v.Set("to", p.To.UTC().Format(time.RFC3339Nano))
	}
	return v.Encode(), nil
}

// All walks every transfer matching params, newest first, fetching pages
// lazily as the loop advances (100 a page unless params.Limit says
// otherwise); breaking out of the loop stops it. On an error it yields the
// error once and stops. A transfer created while the walk runs can push
// older ones onto the next page; All skips those repeats.
//
//	for t, err := range client.Transfers.All(ctx, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(t.TransferID, t.Status)
//	}
func (s *TransfersService) All(ctx context.Context, params *TransferListParams, opts ...CallOption) iter.Seq2[*Transfer, error] {
	return func(yield func(*Transfer, error) bool) {
		var p TransferListParams
		if params != nil {
			p = *params
		}
		if p.Limit == 0 {
			p.Limit = MaxPageSize
		}
		var prev map[string]bool // ids of the previous page
		for {
			page, err := s.List(ctx, &p, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			seen := make(map[string]bool, len(page.Transfers))
			for _, t := range page.Transfers {
				seen[t.TransferID] = true
				if prev[t.TransferID] {
					continue
				}
				if !yield(t, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Transfers) == 0 {
				return
			}
			p.Offset += len(page.Transfers)
			prev = seen
		}
	}
}
