package marketplace

import (
	"context"
	"errors"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// PurchaseOrder is something the purchasing agent buys from a supplier.
type PurchaseOrder struct {
	ID       string
	Supplier string // the supplier's @handle
	Amount   confpay.Amount
	Memo     string
}

// Purchase is what became of a purchase order: paid (Transfer), or held for
// the operator's approval (Held).
type Purchase struct {
	Transfer *confpay.Transfer
	Held     *confpay.AgentTransaction
}

// Purchasing is the marketplace's purchasing agent: an agent account whose
// spend policy the operator sets. The service enforces nothing itself; the
// policy does, and a refusal comes back as an error that matches
// confpay.ErrPolicyViolation, with the rule in the *confpay.APIError.
type Purchasing struct {
	agent *confpay.Client
}

// NewPurchasing returns the purchasing agent acting with the agent's client.
func NewPurchasing(agent *confpay.Client) *Purchasing { return &Purchasing{agent: agent} }

// Buy pays a purchase order, once per order id. A payment above the policy's
// approval threshold is not an error: it comes back held.
func (p *Purchasing) Buy(ctx context.Context, po PurchaseOrder) (*Purchase, error) {
	tr, err := p.agent.Transfers.Create(ctx,
		&confpay.TransferCreateParams{To: po.Supplier, Amount: po.Amount, Memo: po.Memo},
		confpay.WithIdempotencyKey("po-"+po.ID))
	var held *confpay.HeldError
	switch {
	case errors.As(err, &held):
		return &Purchase{Held: held.Payment}, nil
	case err != nil:
		return nil, err
	}
	return &Purchase{Transfer: tr}, nil
}

// ApprovalRequest is a held purchase as the operator sees it: the amount and
// memo come from the sealed note, opened with the operator's own key.
type ApprovalRequest struct {
	ID        string
	Agent     string
	To        string
	Asset     string
	Amount    confpay.Amount
	Memo      string
	ExpiresAt time.Time
}

// Approvals is the operator's desk: the owner of the purchasing agent, with
// the owner's decryption key, which never leaves this process.
type Approvals struct {
	owner *confpay.Client
	key   *decrypt.PrivateKey
}

// NewApprovals returns the operator's desk.
func NewApprovals(owner *confpay.Client, key *decrypt.PrivateKey) *Approvals {
	return &Approvals{owner: owner, key: key}
}

// Pending lists the purchases waiting for a decision, with their amounts.
// An expired one is no longer listed.
func (a *Approvals) Pending(ctx context.Context) ([]ApprovalRequest, error) {
	list, err := a.owner.Agents.ListPending(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ApprovalRequest, 0, len(list))
	for _, p := range list {
		note, err := confpay.OpenAgentTransactionNote(a.key, a.owner.ChainID(), p)
		if err != nil {
			return nil, err
		}
		amount, err := confpay.NoteAmount(note)
		if err != nil {
			return nil, err
		}
		out = append(out, ApprovalRequest{ID: p.TransactionID, Agent: p.Agent, To: p.To, Asset: p.Asset,
			Amount: amount, Memo: note.Memo, ExpiresAt: p.ExpiresAt})
	}
	return out, nil
}

// Approve approves a held purchase and returns the transfer it submitted. A
// purchase whose window has passed answers an error matching
// confpay.ErrTransactionExpired.
func (a *Approvals) Approve(ctx context.Context, id string) (string, error) {
	d, err := a.owner.Agents.Approve(ctx, id, confpay.WithIdempotencyKey("approve-"+id))
	if err != nil {
		return "", err
	}
	return d.TransferID, nil
}

// ApproveUpTo approves every pending purchase of at most limit (in its own
// asset) and leaves the others for a person to look at. It returns the ids it
// approved.
func (a *Approvals) ApproveUpTo(ctx context.Context, limit confpay.Amount) ([]string, error) {
	pending, err := a.Pending(ctx)
	if err != nil {
		return nil, err
	}
	var approved []string
	for _, r := range pending {
		if r.Amount.Cmp(limit) > 0 {
			continue
		}
		if _, err := a.Approve(ctx, r.ID); err != nil {
			return approved, err
		}
		approved = append(approved, r.ID)
	}
	return approved, nil
}
