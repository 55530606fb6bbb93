package fakeserver

import (
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
)

// Fault actions.
const (
	// FaultError answers the request with Status (default 503), Code and,
	// when RetryAfter is set, a Retry-After header. Nothing is executed.
	FaultError = "error"
	// FaultDropAfterCommit executes the request in full (its idempotency
	// record included) and then closes the connection without answering,
	// as a crash between commit and response would. Go's net/http
	// transport (and others) may then resend the request by itself, without
	// telling its caller, when the request carries an Idempotency-Key and
	// went out on a reused connection: what a real drop looks like, so the
	// number of requests on the wire may exceed Times.
	FaultDropAfterCommit = "drop_after_commit"
	// FaultResetAfterCommit executes the request in full (its idempotency
	// record included), writes part of the answer (the status line and the
	// headers, without the blank line that ends them) and then closes the
	// connection. A client has received bytes, so no transport resends the
	// request silently: every client sees the failure.
	FaultResetAfterCommit = "reset_after_commit"
	// FaultDelay holds the request for Delay of server time once it is
	// under way (its idempotency key, if any, is then in use): real
	// latency with a real clock; with a virtual clock the request waits
	// until the test advances the clock past it, or the client gives up.
	FaultDelay = "delay"
	// FaultFailAtConfirmation lets the request run, and makes the transfer
	// it creates fail when its confirmation comes. With TransferID set, it
	// scripts that pending transfer instead and matches no request.
	FaultFailAtConfirmation = "fail_at_confirmation"
)

// Fault is one scripted fault on the /v1 interface: the next Times requests
// matching Method, Path, Account, KeyID and IdempotencyKey get Action, each
// with probability Probability. Faults are tried in the order they were
// added; the first one that matches, is not used up and whose draw
// succeeds applies.
type Fault struct {
	// ID is set by AddFault.
	ID string `json:"fault_id"`
	// Method is an HTTP method, or "" for any.
	Method string `json:"method,omitempty"`
	// Path is a path.Match pattern over the request path, such as
	// "/v1/transfers" or "/v1/transfers/*"; "" or "*" matches every /v1
	// path (the catch-all).
	Path string `json:"path,omitempty"`
	// Account is the calling account, a handle ("@alice", "@acme/bot")
	// or an account id, or "" for any: the account of the request's API
	// key.
	Account string `json:"account,omitempty"`
	// KeyID is the id of the request's API key ("key_…", as the key
	// listing shows it; never the secret), or "" for any.
	KeyID string `json:"key_id,omitempty"`
	// IdempotencyKey is the request's Idempotency-Key, or "" for any
	// request, with a key or without.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Probability is the chance that a matching request gets the fault,
	// in basis points (1 to 10,000); 0 means always. The draw comes from
	// the server's seeded generator (see WithChaos and ChaosSeedEnv): the
	// n-th request the fault matches gets the same draw on every run with
	// the same seed.
	Probability BasisPoints `json:"probability_bp,omitempty"`
	// Times is how many requests the fault applies to; 0 means every
	// matching request until the faults are cleared.
	Times int `json:"times,omitempty"`
	// Action is FaultError, FaultDropAfterCommit, FaultResetAfterCommit,
	// FaultDelay or FaultFailAtConfirmation.
	Action string `json:"action"`
	// Status and Code are the error answer of FaultError (default 503 and
	// a code that fits the status).
	Status int    `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
	// RetryAfter, when not nil, is sent as Retry-After (whole seconds). A
	// 429 or 503 without it carries Retry-After: 1.
	RetryAfter *int `json:"retry_after,omitempty"`
	// Delay is how long FaultDelay holds a request.
	Delay time.Duration `json:"-"`
	// TransferID is the pending transfer a FaultFailAtConfirmation with no
	// request to match applies to.
	TransferID string `json:"transfer_id,omitempty"`
	// Used is how many requests the fault has applied to so far.
	Used int `json:"used"`
}

// faultScript holds the scripted faults. It has its own lock, so that a
// request can be faulted without touching the server's state.
type faultScript struct {
	mu   sync.Mutex
	list []*scriptedFault
	seq  uint64 // numbers the faults in the order they were added
	// any is whether list has a fault (set under mu): a request when none
	// is scripted, nearly every one, does not take mu.
	any atomic.Bool
}

// scriptedFault is a fault in the script with what its draws need: its
// number in the script and how many requests it matched.
type scriptedFault struct {
	Fault
	seq     uint64
	matched uint64
}

// fault is a matched fault: a copy taken when it applied.
type fault = Fault

// faultTarget is what a fault matches of a request.
type faultTarget struct {
	method, path string
	handle, id   string // the caller's account
	keyID        string
	idemKey      string
	hasIdemKey   bool
}

func (f *faultScript) reset() {
	f.mu.Lock()
	f.list = nil
	f.seq = 0
	f.any.Store(false)
	f.mu.Unlock()
}

// match returns the first fault that applies to the request and counts the
// use, or nil. A fault with a probability draws from g for the n-th request
// it matches.
func (f *faultScript) match(r faultTarget, g *chaosState) *fault {
	if !f.any.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.list {
		if x.Times > 0 && x.Used >= x.Times {
			continue
		}
		if !x.matches(r) {
			continue
		}
		if x.Probability > 0 && x.Probability < Always {
			x.matched++
			if !g.hit(x.Probability, "fault", strconv.FormatUint(x.seq, 10), strconv.FormatUint(x.matched, 10)) {
				continue
			}
		}
		x.Used++
		cp := x.Fault
		return &cp
	}
	return nil
}

// matches reports whether the request is one x is scripted for.
func (x *Fault) matches(r faultTarget) bool {
	if x.Method != "" && x.Method != r.method {
		return false
	}
	if x.Path != "" && x.Path != "*" {
		if ok, _ := path.Match(x.Path, r.path); !ok {
			return false
		}
	}
	if x.Account != "" && !strings.EqualFold(x.Account, r.handle) && x.Account != r.id {
		return false
	}
	if x.KeyID != "" && x.KeyID != r.keyID {
		return false
	}
	if x.IdempotencyKey != "" && (!r.hasIdemKey || x.IdempotencyKey != r.idemKey) {
		return false
	}
	return true
}

// validate checks a fault before it is added.
func (x *Fault) validate() *apiError {
	switch x.Action {
	case FaultError:
		if x.Status == 0 {
			x.Status = http.StatusServiceUnavailable
		}
		if x.Status < 400 || x.Status > 599 {
			return errInvalid("status", "status must be an HTTP error status, 400 to 599")
		}
		if x.Code == "" {
			x.Code = defaultFaultCode(x.Status)
		}
	case FaultDelay:
		if x.Delay <= 0 {
			return errInvalid("delay", "delay must be a positive Go duration such as \"2s\"")
		}
	case FaultDropAfterCommit, FaultResetAfterCommit, FaultFailAtConfirmation:
	default:
		return errInvalid("action", "action must be error, drop_after_commit, reset_after_commit, delay or fail_at_confirmation")
	}
	if x.Times < 0 {
		return errInvalid("times", "times must be at least 0 (0: until cleared)")
	}
	if x.RetryAfter != nil && *x.RetryAfter < 0 {
		return errInvalid("retry_after", "retry_after must be at least 0 seconds")
	}
	if x.Path != "" {
		if _, err := path.Match(x.Path, "/"); err != nil {
			return errInvalid("path", "path is not a valid pattern")
		}
	}
	if x.TransferID != "" && x.Action != FaultFailAtConfirmation {
		return errInvalid("transfer_id", "transfer_id goes with the fail_at_confirmation action only")
	}
	if x.Account != "" && !strings.HasPrefix(x.Account, "@") && !strings.HasPrefix(x.Account, "acct_") {
		return errInvalid("account", "account must be a handle such as @alice or an account id (acct_…)")
	}
	if x.KeyID != "" && !strings.HasPrefix(x.KeyID, "key_") {
		return errInvalid("key_id", "key_id must be an API key id (key_…), never the key itself")
	}
	if len(x.IdempotencyKey) > 255 {
		return errInvalid("idempotency_key", "idempotency_key is at most 255 characters, as the header is")
	}
	if x.Probability < 0 || x.Probability > Always {
		return errInvalid("probability_bp", "probability_bp must be 0 (always) to 10000 basis points")
	}
	if x.TransferID != "" && (x.Account != "" || x.KeyID != "" || x.IdempotencyKey != "" || x.Probability != 0) {
		return errInvalid("transfer_id", "a fault with transfer_id matches no request: no account, key_id, idempotency_key or probability_bp")
	}
	return nil
}

func defaultFaultCode(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return string(confpay.CodeRateLimited)
	case http.StatusServiceUnavailable:
		return "service_unavailable"
	case http.StatusBadGateway:
		return "bad_gateway"
	case http.StatusGatewayTimeout:
		return "gateway_timeout"
	}
	if status >= 500 {
		return string(confpay.CodeInternal)
	}
	return "injected_fault"
}

// AddFault scripts a fault and returns its id. See Fault for the actions.
// A fail_at_confirmation fault with a TransferID marks that pending
// transfer at once and is not kept in the script.
func (s *Server) AddFault(f Fault) (string, error) {
	if apiErr := f.validate(); apiErr != nil {
		return "", apiErr
	}
	f.ID = names.NewID("flt_")
	f.Used = 0
	if f.TransferID != "" {
		if err := s.FailTransferAtConfirmation(f.TransferID); err != nil {
			return "", err
		}
		return f.ID, nil
	}
	s.faults.mu.Lock()
	s.faults.seq++
	s.faults.list = append(s.faults.list, &scriptedFault{Fault: f, seq: s.faults.seq})
	s.faults.any.Store(true)
	s.faults.mu.Unlock()
	return f.ID, nil
}

// Faults returns the scripted faults with their use counts, in order.
func (s *Server) Faults() []Fault {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := make([]Fault, 0, len(s.faults.list))
	for _, f := range s.faults.list {
		out = append(out, f.Fault)
	}
	return out
}

// ClearFaults removes every scripted fault.
func (s *Server) ClearFaults() { s.faults.reset() }

// pickFault is the fault for an authenticated /v1 call: the first
// scripted fault that applies, else chaos's draw, else nil.
func (s *Server) pickFault(c *call) *fault {
	s.chaos.learn(c.acct.id, c.acct.handle) // a /v1 subscription's account is a caller first
	r := faultTarget{method: c.r.Method, path: c.r.URL.Path, handle: c.acct.handle, id: c.acct.id, keyID: c.key.id}
	if keys := c.r.Header.Values("Idempotency-Key"); len(keys) == 1 {
		r.idemKey, r.hasIdemKey = keys[0], true
	}
	if f := s.faults.match(r, s.chaos); f != nil {
		return f
	}
	return s.chaos.apiFault(c)
}

// applyFault applies f to the call; it reports whether the call is answered.
func (s *Server) applyFault(c *call, f *fault, rt *route) bool {
	switch f.Action {
	case FaultError:
		e := newError(f.Status, confpay.ErrorCode(f.Code), "injected fault")
		switch {
		case f.RetryAfter != nil:
			e.retryAfter = strconv.Itoa(*f.RetryAfter)
		case f.Status == http.StatusTooManyRequests, f.Status == http.StatusServiceUnavailable:
			e.retryAfter = "1"
		}
		s.writeError(c, e)
		return true
	case FaultDelay:
		c.delay = f.Delay
	case FaultDropAfterCommit:
		c.drop = true
	case FaultResetAfterCommit:
		c.reset = true
	case FaultFailAtConfirmation:
		c.failAtConfirm = true
	}
	return false
}

// hold waits out a delay fault: until the server clock has moved d past
// now. It reports false when the client gave up or the server is closing
// first.
func (s *Server) hold(c *call, d time.Duration) bool {
	liftWriteTimeout(c) // the test asked for the wait (httpserver.go)
	done := make(chan struct{})
	t := s.clock.At(s.clock.Now().Add(d), func(time.Time) { close(done) })
	select {
	case <-done:
		return true
	case <-c.r.Context().Done():
	case <-s.closing:
	}
	t.Stop()
	return false
}

// Delivery fault actions (DeliveryFault).
const (
	// DeliveryLoseAnswer lets the receiver run, then discards its answer:
	// the attempt counts as unanswered (response status 0) and the
	// delivery is retried on its schedule. It exposes a handler that is
	// not idempotent: it does its work again on the retry.
	DeliveryLoseAnswer = hooks.FaultLoseAnswer
	// DeliveryDuplicate sends the attempt twice at once: the same event
	// id, signature and attempt number, concurrently. It exposes a
	// handler that checks "seen before?" and records "seen" in two steps.
	DeliveryDuplicate = hooks.FaultDuplicate
	// DeliveryDelay holds the attempt for Delay of the server's clock
	// before it is made (with a virtual clock, until the test advances
	// past it). Meanwhile the subscription's other attempts go ahead of
	// it. It exposes a service that takes a webhook not yet arrived for
	// a payment that did not happen.
	DeliveryDelay = hooks.FaultDelay
	// DeliveryReorder holds the attempt back until another attempt to the
	// same subscription falls due, and sends it right after that one: the
	// two swap places (a transfer.initiated held this way reaches the
	// handler after its transfer.confirmed). If none falls due within
	// Delay of the server's clock (DefaultReorderHold when 0), it goes
	// then. While one attempt is held, the fault does not hold the
	// subscription's next one, which releases it: with Times 0 the
	// attempts swap in pairs. It exposes a handler that assumes order.
	DeliveryReorder = hooks.FaultReorder
)

// DefaultReorderHold is the longest DeliveryReorder holds an attempt
// back when its fault sets no Delay.
const DefaultReorderHold = hooks.DefaultReorderHold

// MaxDeliveryFaultDelay bounds DeliveryFault.Delay: 24 h, the retry
// window.
const MaxDeliveryFaultDelay = hooks.MaxFaultDelay

// DeliveryFault is one scripted fault on webhook deliveries: the next
// Times attempts of deliveries matching WebhookID and Event get Action.
// Faults are tried in the order they were added, when an attempt falls
// due (its first, a retry, or a replay's); the first one that matches
// and is not used up applies. An attempt a fault held (delay, reorder)
// is not matched again when it goes.
type DeliveryFault struct {
	// ID is set by AddDeliveryFault.
	ID string `json:"fault_id"`
	// WebhookID is the subscription, or "" for every one.
	WebhookID string `json:"webhook_id,omitempty"`
	// Event is an event kind, or "" for every kind.
	Event confpay.EventKind `json:"event,omitempty"`
	// Times is how many attempts the fault applies to; 0 means every
	// matching attempt until the faults are cleared.
	Times int `json:"times,omitempty"`
	// Action is DeliveryLoseAnswer, DeliveryDuplicate, DeliveryDelay or
	// DeliveryReorder.
	Action string `json:"action"`
	// Delay is how long DeliveryDelay holds an attempt (required), and
	// the longest DeliveryReorder does (0: DefaultReorderHold); at most
	// MaxDeliveryFaultDelay. The other actions take none. Over HTTP it
	// is a Go duration string such as "2m".
	Delay time.Duration `json:"-"`
	// Used is how many attempts the fault has applied to so far.
	Used int `json:"used"`
}

// validate checks a delivery fault before it is added.
func (f *DeliveryFault) validate() *apiError {
	switch f.Action {
	case DeliveryLoseAnswer, DeliveryDuplicate:
		if f.Delay != 0 {
			return errInvalid("delay", "delay goes with the delay and reorder actions only")
		}
	case DeliveryDelay:
		if f.Delay <= 0 {
			return errInvalid("delay", "delay is required with the delay action: a positive Go duration such as \"2m\"")
		}
	case DeliveryReorder:
		if f.Delay < 0 {
			return errInvalid("delay", "delay must be a positive Go duration such as \"2m\", or absent")
		}
	case "":
		return errInvalid("action", "action is required: lose_answer, duplicate, delay or reorder")
	default:
		return errInvalid("action", "action must be lose_answer, duplicate, delay or reorder")
	}
	if f.Delay > MaxDeliveryFaultDelay {
		return errInvalid("delay", "delay must be at most 24h")
	}
	if f.Times < 0 {
		return errInvalid("times", "times must be at least 0 (0: until cleared)")
	}
	if f.Event != "" && !slices.Contains(confpay.EventKinds(), f.Event) {
		return errInvalid("event", "event must be an event kind such as transfer.confirmed")
	}
	return nil
}

// AddDeliveryFault scripts a delivery fault and returns its id. Bad input
// is an error naming the field, and scripts nothing.
func (s *Server) AddDeliveryFault(f DeliveryFault) (string, error) {
	if apiErr := f.validate(); apiErr != nil {
		return "", apiErr
	}
	f.ID = names.NewID("dft_")
	s.hooks.AddFault(hooks.Fault{ID: f.ID, WebhookID: f.WebhookID, Event: string(f.Event), Times: f.Times, Action: f.Action, Delay: f.Delay})
	return f.ID, nil
}

// DeliveryFaults returns the scripted delivery faults with their use
// counts, in order.
func (s *Server) DeliveryFaults() []DeliveryFault {
	fs := s.hooks.Faults()
	out := make([]DeliveryFault, 0, len(fs))
	for _, f := range fs {
		out = append(out, DeliveryFault{ID: f.ID, WebhookID: f.WebhookID, Event: confpay.EventKind(f.Event), Times: f.Times, Action: f.Action, Delay: f.Delay, Used: f.Used})
	}
	return out
}

// ClearDeliveryFaults removes every scripted delivery fault. Attempts a
// fault already holds (delay, reorder) go when their hold ends.
func (s *Server) ClearDeliveryFaults() { s.hooks.ClearFaults() }
