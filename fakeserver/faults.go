package fakeserver

import (
	"net/http"
	"path"
	"slices"
	"strconv"
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
// matching Method and Path get Action. Faults are tried in the order they
// were added; the first one that matches and is not used up applies.
type Fault struct {
	// ID is set by AddFault.
	ID string `json:"fault_id"`
	// Method is an HTTP method, or "" for any.
	Method string `json:"method,omitempty"`
	// Path is a path.Match pattern over the request path, such as
	// "/v1/transfers" or "/v1/transfers/*"; "" or "*" matches every /v1
	// path (the catch-all).
	Path string `json:"path,omitempty"`
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
	list []*Fault
	// any is whether list has a fault (set under mu): a request when none
	// is scripted, nearly every one, does not take mu.
	any atomic.Bool
}

// fault is a matched fault: a copy taken when it applied.
type fault = Fault

func (f *faultScript) reset() {
	f.mu.Lock()
	f.list = nil
	f.any.Store(false)
	f.mu.Unlock()
}

// match returns the first fault that applies to the request and counts the
// use, or nil.
func (f *faultScript) match(method, p string) *fault {
	if !f.any.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.list {
		if x.Times > 0 && x.Used >= x.Times {
			continue
		}
		if x.Method != "" && x.Method != method {
			continue
		}
		if x.Path != "" && x.Path != "*" {
			if ok, _ := path.Match(x.Path, p); !ok {
				continue
			}
		}
		x.Used++
		cp := *x
		return &cp
	}
	return nil
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
	s.faults.list = append(s.faults.list, &f)
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
		out = append(out, *f)
	}
	return out
}

// ClearFaults removes every scripted fault.
func (s *Server) ClearFaults() { s.faults.reset() }

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
)

// DeliveryFault is one scripted fault on webhook deliveries: the next
// Times attempts of deliveries matching WebhookID and Event get Action.
// Faults are tried in the order they were added; the first one that
// matches and is not used up applies.
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
	// Action is DeliveryLoseAnswer or DeliveryDuplicate.
	Action string `json:"action"`
	// Used is how many attempts the fault has applied to so far.
	Used int `json:"used"`
}

// AddDeliveryFault scripts a delivery fault and returns its id.
func (s *Server) AddDeliveryFault(f DeliveryFault) (string, error) {
	switch f.Action {
	case DeliveryLoseAnswer, DeliveryDuplicate:
	case "":
		return "", errInvalid("action", "action is required: lose_answer or duplicate")
	default:
		return "", errInvalid("action", "action must be lose_answer or duplicate")
	}
	if f.Times < 0 {
		return "", errInvalid("times", "times must be at least 0 (0: until cleared)")
	}
	if f.Event != "" && !slices.Contains(confpay.EventKinds(), f.Event) {
		return "", errInvalid("event", "event must be an event kind such as transfer.confirmed")
	}
	f.ID = names.NewID("dft_")
	s.hooks.AddFault(hooks.Fault{ID: f.ID, WebhookID: f.WebhookID, Event: string(f.Event), Times: f.Times, Action: f.Action})
	return f.ID, nil
}

// DeliveryFaults returns the scripted delivery faults with their use
// counts, in order.
func (s *Server) DeliveryFaults() []DeliveryFault {
	fs := s.hooks.Faults()
	out := make([]DeliveryFault, 0, len(fs))
	for _, f := range fs {
		out = append(out, DeliveryFault{ID: f.ID, WebhookID: f.WebhookID, Event: confpay.EventKind(f.Event), Times: f.Times, Action: f.Action, Used: f.Used})
	}
	return out
}

// ClearDeliveryFaults removes every scripted delivery fault.
func (s *Server) ClearDeliveryFaults() { s.hooks.ClearFaults() }
