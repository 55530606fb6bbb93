// Package rules holds the pure rules of an agent's spend policy: the
// Policy value, parsing and validation of a policy body (whole, on agent
// creation, or a PATCH validated as the merged result), recipient patterns,
// active hours, and Judge, the one function that decides an agent payment.
//
// It has no server state and no HTTP. The fakeserver gathers the facts of a
// payment (its USDG-equivalent amount, the recipient's names, the time, the
// agent's rolling-window spend, whether the balance covers it) and asks
// Judge; every path that moves an agent's money (a direct payment and the
// approval of a held one) calls the same function.
//
// Figures are exact: limits and amounts are integers of micro-USDG
// (millionths of a USDG) parsed from the JSON number's text, never through
// a float. A limit is at most MaxLimit (10^12 USDG), which keeps all
// arithmetic in int64; sums saturate instead of wrapping.
//
// Judge checks, in this order, and answers the first failure:
//
//  1. status (the agent must be active; not re-checked on approval)
//  2. asset (one of the policy's assets)
//  3. recipient (any of its names matches an allowed entry)
//  4. active hours (UTC, both minutes inclusive; not re-checked on approval)
//  5. per-transaction limit (an amount greater than the limit fails)
//  6. daily limit (window spend plus the amount greater than the limit fails)
//  7. approval threshold (strictly greater: hold, and the balance is not
//     looked at; not applied on approval)
//  8. balance (the caller says whether it covers the payment), only for a
//     payment submitted now
//
// No answer depends on the balance except the last refusal of a payment
// that would otherwise move money at once: an agent key learns nothing of
// its balance from held payments.
package rules
