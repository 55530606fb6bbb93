package rules

import "time"

// Window is the length of the rolling window the daily limit counts over.
const Window = 24 * time.Hour

// Facts are what Judge needs to know about one agent payment.
type Facts struct {
	// Active reports whether the agent's status is active.
	Active bool
	// Asset is the asset code of the payment.
	Asset string
	// Amount is the payment in micro-USDG, or its USDG equivalent rounded
	// up (see Equivalent).
	Amount int64
	// To is every name of the recipient.
	To Recipient
	// Now is the server's time.
	Now time.Time
	// Spent is the agent's spend in the rolling window: the micro-USDG
	// equivalents of its pending and confirmed payments of the last 24 h.
	Spent int64
	// Funded reports whether the agent's available balance of Asset covers
	// the payment. Judge reads it last, only for a payment it would submit
	// now.
	Funded bool
}

// Mode says which checks Judge runs.
type Mode uint8

const (
	// Payment is an agent paying: every check, then the threshold.
	Payment Mode = iota
	// Approval is the owner approving a held payment: asset, recipient,
	// per-transaction limit, daily limit and balance against the policy in
	// force now. Status, active hours and the threshold are not checked: the
	// owner's decision stands for them.
	Approval
)

// Outcome is Judge's answer.
type Outcome uint8

// Outcomes, in the order the checks run.
const (
	// Submit: every check passed; submit the payment now.
	Submit Outcome = iota
	// Hold: every policy check passed and the amount is above the
	// approval threshold; hold it for the owner (Payment mode only). The
	// balance is not looked at.
	Hold
	// NotActive: the agent is paused or disabled (403 agent_not_active).
	NotActive
	// AssetNotAllowed: the asset is not in the policy (403
	// policy_violation, rule asset_not_allowed).
	AssetNotAllowed
	// RecipientNotAllowed: no name of the recipient matches
	// (rule recipient_not_allowed).
	RecipientNotAllowed
	// OutsideActiveHours: now is outside active_hours
	// (rule outside_active_hours).
	OutsideActiveHours
	// PerTransactionLimit: the amount is greater than the per-transaction
	// limit (rule per_transaction_limit).
	PerTransactionLimit
	// DailyLimit: the window spend plus the amount is greater than the
	// daily limit (rule daily_limit).
	DailyLimit
	// InsufficientBalance: the balance does not cover it (402).
	InsufficientBalance
)

// Rule is the policy_violation rule of the outcome, or "" when the outcome
// is not a policy violation.
func (o Outcome) Rule() string {
	switch o {
	case AssetNotAllowed:
		return "asset_not_allowed"
	case RecipientNotAllowed:
		return "recipient_not_allowed"
	case OutsideActiveHours:
		return "outside_active_hours"
	case PerTransactionLimit:
		return "per_transaction_limit"
	case DailyLimit:
		return "daily_limit"
	}
	return ""
}

// Refused reports whether the outcome refuses the payment.
func (o Outcome) Refused() bool { return o != Submit && o != Hold }

// String names the outcome, for test failures.
func (o Outcome) String() string {
	switch o {
	case Submit:
		return "submit"
	case Hold:
		return "hold"
	case NotActive:
		return "agent_not_active"
	case InsufficientBalance:
		return "insufficient_balance"
	}
	if r := o.Rule(); r != "" {
		return r
	}
	return "outcome(?)"
}

// Judge decides an agent payment under p: the first check that fails, in
// the order of the package documentation, or Submit or Hold. It is the one
// place every rule is enforced, for a payment and for an approval alike.
func (p *Policy) Judge(f *Facts, mode Mode) Outcome {
	approval := mode == Approval
	if !approval && !f.Active {
		return NotActive
	}
	if !p.allowsAsset(f.Asset) {
		return AssetNotAllowed
	}
	if p.rcpt != nil && !p.rcpt.match(&f.To) {
		return RecipientNotAllowed
	}
	if !approval && !p.hours.Contains(f.Now) {
		return OutsideActiveHours
	}
	if f.Amount > p.perTx {
		return PerTransactionLimit
	}
	if addSat(f.Spent, f.Amount) > p.daily {
		return DailyLimit
	}
	// The threshold comes before the balance: a held payment's answer must
	// not depend on the balance, or an agent key could learn its balance
	// by binary search over held payments (decisions.md, "No balance
	// oracle").
	if !approval && p.hasThreshold && f.Amount > p.threshold {
		return Hold
	}
	if !f.Funded {
		return InsufficientBalance
	}
	return Submit
}

func (p *Policy) allowsAsset(a string) bool {
	for _, x := range p.assets {
		if x == a {
			return true
		}
	}
	return false
}
