// Package audit is the fakeserver's audit of the code under test: a
// bounded record of the /v1 requests each account made (Log), and the pure
// rule functions that read it, with the server's delivery records and
// transfers, for the integration bugs that cost money in production. The
// rules neither lock nor look anything up: the server gathers their input
// and renders their findings. The Log has its own lock and is taken alone.
//
// A finding never holds an amount, a memo or a key's secret: it names
// requests, deliveries and transfers by id.
package audit

import (
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Rule names, as findings carry them.
const (
	RuleMissingKey        = "missing_idempotency_key"
	RuleKeyReused         = "idempotency_key_reused"
	RuleDoublePayment     = "double_payment"
	RuleRetryTooFast      = "retry_without_backoff"
	RuleRetryTooOften     = "retry_too_often"
	RuleUnacknowledged    = "delivery_not_acknowledged"
	RuleMalformed         = "malformed_request"
	RuleMoneyConserved    = "invariant_money_conserved"
	RuleOneTransferPerKey = "invariant_one_transfer_per_key"
	RulePolicyBounds      = "invariant_policy_bounds"
)

// Defaults of Config.
const (
	// DefaultRetryFloor is the shortest wait between an answer and the
	// next send of the same request under the same key that is not a
	// finding. The SDK's smallest documented test backoff
	// (WithRetryBackoff(time.Millisecond, ...)) waits at least 0.75 ms.
	DefaultRetryFloor = 500 * time.Microsecond
	// DefaultMaxSends is the most sends of one key that are not a
	// finding (the SDK sends at most 3 by default).
	DefaultMaxSends = 10
	// DefaultDoublePaymentWindow is how close (server time) two payments
	// with the same sender, recipient, asset, amount and memo under
	// different keys must be to be reported.
	DefaultDoublePaymentWindow = 10 * time.Minute
	// DefaultMaxRequests is how many requests the Log keeps per account
	// and network.
	DefaultMaxRequests = 10_000
)

// Config holds the rules' thresholds; a zero field takes its default.
type Config struct {
	RetryFloor          time.Duration
	MaxSends            int
	DoublePaymentWindow time.Duration
}

// WithDefaults returns c with every zero field at its default.
func (c Config) WithDefaults() Config {
	if c.RetryFloor == 0 {
		c.RetryFloor = DefaultRetryFloor
	}
	if c.MaxSends == 0 {
		c.MaxSends = DefaultMaxSends
	}
	if c.DoublePaymentWindow == 0 {
		c.DoublePaymentWindow = DefaultDoublePaymentWindow
	}
	return c
}

// Request is one /v1 request an account made, as the audit keeps it.
type Request struct {
	ID     string // the X-Request-Id it was answered with
	Route  string // "POST /v1/transfers": method and route pattern
	Key    string // the Idempotency-Key as sent, "" when none
	Digest [32]byte
	// Arrived and Answered are readings of the wall clock's monotonic
	// time (how a client paces its calls: clock.Mono, 0 for none); At is
	// the server's clock when it arrived.
	Arrived, Answered time.Duration
	At                time.Time
	Status            int
	Code, Param       string
	// RetryAfter is the Retry-After the answer carried, -1 when none.
	RetryAfter time.Duration
	// TransferID is the transfer a 201 payment answered.
	TransferID string
	Replayed   bool
	// Cut: the answer never reached the client in full (a scripted drop
	// or reset), so a transport may resend at once, and may well.
	Cut bool
}

// MoneyMoving reports whether the request's route moves money: a payment,
// an approval or a rejection.
func (r *Request) MoneyMoving() bool {
	switch r.Route {
	case "POST /v1/transfers",
		"POST /v1/agents/transactions/{transaction_id}/approve",
		"POST /v1/agents/transactions/{transaction_id}/reject":
		return true
	}
	return false
}

// Log keeps the most recent requests of each owner (an account on a
// network), at most max per owner: past it, the owner's oldest is dropped.
type Log struct {
	mu     sync.Mutex
	max    int
	owners map[string]*ring
}

// ring holds an owner's requests in chunks of chunkLen, so that a growing
// record copies at most a chunk (a contiguous slice of 10,000 requests,
// copied whole each time it doubled, was most of the audit's cost per
// call).
type ring struct {
	chunks [][]Request
	n      int // requests held, at most the log's max
	next   int // where the next request goes once full
}

const chunkLen = 256

func (rg *ring) at(i int) *Request { return &rg.chunks[i/chunkLen][i%chunkLen] }

// NewLog returns an empty log that keeps max requests per owner.
func NewLog(max int) *Log {
	if max <= 0 {
		max = DefaultMaxRequests
	}
	return &Log{max: max, owners: map[string]*ring{}}
}

// Add records r for owner.
func (l *Log) Add(owner string, r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rg := l.owners[owner]
	if rg == nil {
		rg = &ring{}
		l.owners[owner] = rg
	}
	if rg.n < l.max {
		if rg.n%chunkLen == 0 {
			// The first chunk grows as a slice does (an owner with a few
			// requests holds a few); the others are made whole.
			size := 0
			if rg.n > 0 {
				size = min(chunkLen, l.max-rg.n)
			}
			rg.chunks = append(rg.chunks, make([]Request, 0, size))
		}
		last := &rg.chunks[len(rg.chunks)-1]
		*last = append(*last, r)
		rg.n++
		return
	}
	*rg.at(rg.next) = r
	rg.next = (rg.next + 1) % l.max
}

// Requests returns owner's kept requests, oldest first.
func (l *Log) Requests(owner string) []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	rg := l.owners[owner]
	if rg == nil {
		return nil
	}
	out := make([]Request, 0, rg.n)
	for i := range rg.n {
		out = append(out, *rg.at((rg.next + i) % rg.n))
	}
	return out
}

// Owners returns the owners with a kept request, sorted.
func (l *Log) Owners() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.owners))
	for o := range l.owners {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// Reset empties the log.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owners = map[string]*ring{}
}

// Finding is one thing the audit found.
type Finding struct {
	Rule        string
	RequestIDs  []string
	DeliveryIDs []string
	TransferIDs []string
	Param       string
	Message     string
}

// ---- the rules over requests ----

// MissingKey reports every money-moving POST sent without an
// Idempotency-Key.
func MissingKey(reqs []Request) []Finding {
	var out []Finding
	for i := range reqs {
		r := &reqs[i]
		if r.MoneyMoving() && r.Key == "" {
			out = append(out, Finding{Rule: RuleMissingKey, RequestIDs: []string{r.ID},
				Message: r.Route + " was sent without an Idempotency-Key: a retry after a lost answer moves the money twice. " +
					"Generate one key per business operation (an order, a payout), store it with the operation, and send it on every attempt."})
		}
	}
	return out
}

// KeyReused reports every request answered 422 idempotency_key_reused:
// a key sent again with another body, whose answer the caller may have
// swallowed.
func KeyReused(reqs []Request) []Finding {
	var out []Finding
	for i := range reqs {
		r := &reqs[i]
		if r.Code != "idempotency_key_reused" {
			continue
		}
		ids := []string{r.ID}
		for j := range reqs[:i] { // the first use of the key
			if reqs[j].Key == r.Key && reqs[j].Digest != r.Digest && reqs[j].Code != "idempotency_key_reused" {
				ids = []string{reqs[j].ID, r.ID}
				break
			}
		}
		out = append(out, Finding{Rule: RuleKeyReused, RequestIDs: ids,
			Message: "an Idempotency-Key was sent again with another method, path or body (answered 422): " +
				"a key names one operation; derive a new key for a new operation, and resend a retry's body byte for byte."})
	}
	return out
}

// Payment is what the double-payment rule knows of a transfer: its id, a
// digest of (recipient, asset, amount, memo) that never leaves the audit,
// and when it was made (server time).
type Payment struct {
	TransferID string
	Digest     [32]byte
	At         time.Time
}

// DoublePayment reports pairs of payments by one sender with the same
// recipient, asset, amount and memo, made under different keys (or
// none) within window of each other: a retry that minted a new key.
// payments maps the transfer ids of reqs' 201 payments to what the server
// knows of them; a transfer it no longer knows is skipped.
func DoublePayment(reqs []Request, payments map[string]Payment, window time.Duration) []Finding {
	type made struct {
		req *Request
		p   Payment
	}
	var list []made
	for i := range reqs {
		r := &reqs[i]
		if r.Route != "POST /v1/transfers" || r.TransferID == "" || r.Replayed {
			continue
		}
		if p, ok := payments[r.TransferID]; ok {
			list = append(list, made{r, p})
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].p.At.Before(list[j].p.At) })
	var out []Finding
	reported := map[string]bool{}
	for i := range list {
		for j := i + 1; j < len(list) && list[j].p.At.Sub(list[i].p.At) <= window; j++ {
			a, b := list[i], list[j]
			if a.p.Digest != b.p.Digest || (a.req.Key == b.req.Key && a.req.Key != "") || a.p.TransferID == b.p.TransferID {
				continue
			}
			if reported[b.p.TransferID] {
				continue
			}
			reported[b.p.TransferID] = true
			out = append(out, Finding{Rule: RuleDoublePayment, RequestIDs: []string{a.req.ID, b.req.ID},
				TransferIDs: []string{a.p.TransferID, b.p.TransferID},
				Message: "two payments with the same recipient, asset, amount and memo were made " + roundDur(b.p.At.Sub(a.p.At)) +
					" apart under different Idempotency-Keys: a retry that minted a new key pays twice. " +
					"Derive the key from the business operation (the order id), not per attempt."})
		}
	}
	return out
}

// Retries reports keys resent too soon or too often. A retry is a send
// of the same request under the same key after an answer that was not
// 2xx; a send after a 2xx is the operation run again (a job that runs
// twice), not a retry, and a send after an answer cut short (Cut) may be
// the transport's own resend. A retry closer than floor to the answer
// before it (or to its arrival, while it still ran) is a finding; an
// answer's Retry-After replaces floor. A run of more than maxSends sends,
// each but the first a retry, is a finding too.
func Retries(reqs []Request, floor time.Duration, maxSends int) []Finding {
	byKey := map[string][]*Request{}
	var keys []string
	for i := range reqs {
		r := &reqs[i]
		if r.Key == "" {
			continue
		}
		if byKey[r.Key] == nil {
			keys = append(keys, r.Key)
		}
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	var out []Finding
	for _, k := range keys {
		sends := byKey[k]
		sort.SliceStable(sends, func(i, j int) bool { return sends[i].Arrived < sends[j].Arrived })
		fast := false
		run := []*Request{sends[0]}
		longest := run
		for i := 1; i < len(sends); i++ {
			prev, next := sends[i-1], sends[i]
			failed := prev.Status < 200 || prev.Status > 299 || prev.Cut
			if prev.Digest != next.Digest || !failed {
				run = []*Request{next} // another body (KeyReused's), or the operation run again
				continue
			}
			run = append(run, next)
			if len(run) > len(longest) {
				longest = run
			}
			if prev.Cut || fast {
				continue
			}
			from := prev.Answered
			if from == 0 || from > next.Arrived {
				from = prev.Arrived
			}
			want := floor
			if prev.RetryAfter >= 0 {
				want = prev.RetryAfter
			}
			if gap := next.Arrived - from; gap < want {
				fast = true
				out = append(out, Finding{Rule: RuleRetryTooFast, RequestIDs: []string{prev.ID, next.ID},
					Message: "a request was retried under its Idempotency-Key " + roundDur(gap) + " after a " + strconv.Itoa(prev.Status) +
						" answer, under the floor of " + roundDur(want) + ": wait before each retry, with exponential backoff and jitter, and honour Retry-After."})
			}
		}
		if len(longest) > maxSends {
			ids := make([]string, len(longest))
			for i, r := range longest {
				ids[i] = r.ID
			}
			out = append(out, Finding{Rule: RuleRetryTooOften, RequestIDs: ids,
				Message: "one request was sent " + strconv.Itoa(len(longest)) + " times in a row under its Idempotency-Key, each after a failure, more than " +
					strconv.Itoa(maxSends) + ": bound the retries (the SDK's default is 2) and give up with the error."})
		}
	}
	return out
}

// Malformed reports requests refused as malformed, 400 or 422 (except a
// reused key, which KeyReused reports, and a recipient not ready for
// confidential payments, a refusal decided on the state), with the
// parameter the answer named.
func Malformed(reqs []Request) []Finding {
	var out []Finding
	for i := range reqs {
		r := &reqs[i]
		if (r.Status != 400 && r.Status != 422) || r.Replayed || r.Code == "idempotency_key_reused" || r.Code == "recipient_not_confidential_ready" {
			continue
		}
		what := "the request"
		if r.Param != "" {
			what = strconv.Quote(r.Param)
		}
		out = append(out, Finding{Rule: RuleMalformed, RequestIDs: []string{r.ID}, Param: r.Param,
			Message: r.Route + " was refused " + strconv.Itoa(r.Status) + " " + r.Code + ": fix " + what +
				" as the error's message says; a client that sends it again unchanged is refused again."})
	}
	return out
}

// OneTransferPerKey reports a key whose sends were answered with two
// different transfers: the fake's own invariant.
func OneTransferPerKey(reqs []Request) []Finding {
	first := map[string]*Request{}
	var out []Finding
	for i := range reqs {
		r := &reqs[i]
		if r.Key == "" || r.TransferID == "" {
			continue
		}
		if f := first[r.Key]; f == nil || r.At.Sub(f.At) >= idempotency.TTL {
			first[r.Key] = r // a key past its TTL may be used afresh
		} else if f.TransferID != r.TransferID {
			out = append(out, Finding{Rule: RuleOneTransferPerKey, RequestIDs: []string{f.ID, r.ID},
				TransferIDs: []string{f.TransferID, r.TransferID},
				Message:     "the fakeserver answered one Idempotency-Key with two transfers: a bug in the fake, not in your code; please report it."})
		}
	}
	return out
}

// ---- deliveries ----

// Delivery is what the delivery rule knows of a webhook delivery.
type Delivery struct {
	ID, WebhookID, EventID, Event string
	Status                        string // pending, succeeded, failed
	Attempts                      int
	ResponseStatus                int // the last, 0 when none (timed out or unreachable)
}

// Unacknowledged reports deliveries a subscription never acknowledged:
// failed, or pending after an attempt that was not answered 2xx.
func Unacknowledged(ds []Delivery) []Finding {
	var out []Finding
	for _, d := range ds {
		ok2xx := d.ResponseStatus >= 200 && d.ResponseStatus < 300
		var state string
		switch {
		case d.Status == "failed":
			state = "failed"
		case d.Status == "pending" && d.Attempts > 0 && !ok2xx:
			state = "still being retried"
		default:
			continue
		}
		answer := "no answer (timed out or unreachable)"
		if d.ResponseStatus != 0 {
			answer = "HTTP " + strconv.Itoa(d.ResponseStatus)
		}
		out = append(out, Finding{Rule: RuleUnacknowledged, DeliveryIDs: []string{d.ID},
			Message: "the " + d.Event + " delivery of event " + d.EventID + " to webhook " + d.WebhookID + " is " + state +
				" after " + strconv.Itoa(d.Attempts) + " attempt(s), last " + answer +
				": answer 2xx within the timeout once the event is stored, even for an event you have seen before; do slow work after answering."})
	}
	return out
}

// roundDur prints d briefly: microseconds below a millisecond, else
// milliseconds.
func roundDur(d time.Duration) string {
	if d < time.Millisecond && d > -time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
