// Package marketplace is a small marketplace payout service built on
// confpay-go, written as a new user would write it, with its tests on the
// fakeserver (marketplace_test.go). It pays sellers for their orders exactly
// once, lets a purchasing agent buy from suppliers under a spend policy with
// an operator's approvals, applies webhook events exactly once, reads
// balances through decryption proofs, and draws a monthly statement.
//
// It uses only the public API of the SDK (package confpay), decrypt and
// webhookverify; its tests add fakeserver.
package marketplace

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// Order is a sale whose proceeds go to a seller.
type Order struct {
	ID     string
	Seller string // the seller's @handle
	Amount confpay.Amount
	Memo   string
}

// PayoutStatus is where a payout stands in the service's own books.
type PayoutStatus string

// Payout statuses: submitted until the transfer's webhook settles it.
const (
	PayoutSubmitted PayoutStatus = "submitted"
	PayoutPaid      PayoutStatus = "paid"
	PayoutFailed    PayoutStatus = "failed"
)

// Payout is an order's payout as the service records it.
type Payout struct {
	OrderID    string
	Seller     string
	Amount     confpay.Amount
	TransferID string
	Status     PayoutStatus
}

// Payouts pays sellers from the marketplace's account. Each order is paid at
// most once: the Idempotency-Key is derived from the order id, so a retry
// after any failure (a 503, a dropped connection, a crash and restart) asks
// the service for the same payment, never a second one.
type Payouts struct {
	client *confpay.Client
	// Attempts is how many times Pay calls the service for one order when
	// the answer is lost or transient (each call itself retried by the
	// SDK); 0 means 3.
	Attempts int
	// Wait is how long Pay waits before calling again after a transient
	// failure, doubled each time; 0 means 1 s. The SDK has already
	// backed off inside the call that failed: calling again at once would
	// hammer a service that is struggling (the fakeserver's audit reports
	// it as retry_without_backoff).
	Wait time.Duration

	mu         sync.Mutex
	byOrder    map[string]*Payout
	byTransfer map[string]*Payout
}

// NewPayouts returns a payout service acting with the marketplace's client.
func NewPayouts(client *confpay.Client) *Payouts {
	return &Payouts{client: client, byOrder: map[string]*Payout{}, byTransfer: map[string]*Payout{}}
}

// IdempotencyKey is the key under which an order's payout is sent.
func IdempotencyKey(orderID string) string { return "payout-" + orderID }

// Pay pays an order's seller, exactly once whatever happens on the way.
func (p *Payouts) Pay(ctx context.Context, o Order) (*Payout, error) {
	params := &confpay.TransferCreateParams{To: o.Seller, Amount: o.Amount, Memo: o.Memo}
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	wait := p.Wait
	if wait <= 0 {
		wait = time.Second
	}
	var tr *confpay.Transfer
	var err error
	for i := range attempts {
		if i > 0 {
			if werr := sleep(ctx, wait); werr != nil {
				break // err is the last call's
			}
			wait *= 2
		}
		tr, err = p.client.Transfers.Create(ctx, params, confpay.WithIdempotencyKey(IdempotencyKey(o.ID)))
		if err == nil || !transient(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	po := p.byOrder[o.ID]
	if po == nil {
		po = &Payout{OrderID: o.ID, Seller: o.Seller, Amount: o.Amount, TransferID: tr.TransferID, Status: PayoutSubmitted}
		p.byOrder[o.ID] = po
		p.byTransfer[tr.TransferID] = po
	}
	cp := *po
	return &cp, nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Get returns an order's payout, or nil when it was never paid.
func (p *Payouts) Get(orderID string) *Payout {
	p.mu.Lock()
	defer p.mu.Unlock()
	if po := p.byOrder[orderID]; po != nil {
		cp := *po
		return &cp
	}
	return nil
}

// settle records the outcome of a payout's transfer and returns the payout,
// or nil when the transfer is not a payout of this service.
func (p *Payouts) settle(transferID string, s PayoutStatus) *Payout {
	p.mu.Lock()
	defer p.mu.Unlock()
	po := p.byTransfer[transferID]
	if po == nil {
		return nil
	}
	po.Status = s
	cp := *po
	return &cp
}

// transient reports whether a failed call may succeed if sent again: no
// complete answer, or a 429 or 5xx.
func transient(err error) bool {
	var te *confpay.TransportError
	if errors.As(err, &te) {
		return true
	}
	var ae *confpay.APIError
	return errors.As(err, &ae) && (ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500)
}
