package fakeserver

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
)

// Chaos on a seed: API faults and delivery faults drawn at stated rates
// from a generator that is a hash of the seed and of what is drawn for
// (the route, the account, the request's ordinal), never of goroutine
// timing or of the wall clock. docs/fakeserver.md ("Chaos") documents it.

// BasisPoints is an exact probability in ten-thousandths: 0 is never,
// 100 is 1 %, 10,000 (Always) is every time.
type BasisPoints int

// Always is the probability 1.
const Always BasisPoints = 10_000

// ChaosSeedEnv names the environment variable that, when set to an
// unsigned integer, replaces the seed of WithChaos (and of the probability
// of scripted faults): the replay of a failing chaos run.
const ChaosSeedEnv = "CONFPAY_CHAOS_SEED"

// DefaultChaosDelay is how long a chaos delay holds a request unless
// ChaosRates.DelayFor says otherwise.
const DefaultChaosDelay = time.Second

// DefaultMaxChaosFaults is how many drawn faults ChaosFaults keeps (the
// newest).
const DefaultMaxChaosFaults = 10_000

// ChaosRates are the rates at which chaos draws each fault kind. The API
// kinds are exclusive (one draw per request picks at most one), so their
// rates add up to at most Always; so do the delivery kinds' (one draw per
// delivery attempt).
type ChaosRates struct {
	// Error answers the request with an error status (429, 500, 502 or
	// 503, drawn evenly) and a Retry-After of RetryAfter seconds; nothing
	// is executed.
	Error BasisPoints
	// DropAfterCommit executes the request, then closes the connection
	// without an answer (FaultDropAfterCommit).
	DropAfterCommit BasisPoints
	// ResetAfterCommit executes the request, then sends part of the
	// answer and closes (FaultResetAfterCommit).
	ResetAfterCommit BasisPoints
	// Delay holds the request for DelayFor of server time (FaultDelay).
	// With a virtual clock the request waits until the test advances the
	// clock: use a real clock (in a synctest bubble, it costs no time).
	Delay BasisPoints
	// LoseAnswer discards the receiver's answer to a delivery attempt
	// (DeliveryLoseAnswer).
	LoseAnswer BasisPoints
	// Duplicate sends a delivery attempt twice at once
	// (DeliveryDuplicate).
	Duplicate BasisPoints
	// DeliveryDelay holds a delivery attempt for DelayFor of server time
	// (DeliveryDelay).
	DeliveryDelay BasisPoints
	// Reorder holds a delivery attempt until the next attempt to the same
	// subscription falls due, and sends it after that one
	// (DeliveryReorder; at most DefaultReorderHold).
	Reorder BasisPoints
	// RetryAfter is the Retry-After, in whole seconds, of an error
	// answer (default 0: retry at once).
	RetryAfter int
	// DelayFor is how long Delay holds a request (default
	// DefaultChaosDelay).
	DelayFor time.Duration
}

// ChaosFault is one fault chaos drew: what, for which request or delivery
// attempt, and the ordinal the draw was made for.
type ChaosFault struct {
	// Kind is "api" or "delivery".
	Kind string `json:"kind"`
	// Account is the handle of the caller (api) or of the subscription's
	// account (delivery).
	Account string          `json:"account"`
	Network confpay.Network `json:"network,omitempty"`
	// Route is the request's "METHOD pattern" (api) or the event kind
	// (delivery).
	Route string `json:"route"`
	// Ordinal is the request's (attempt's) number, from 1, among those of
	// the same account and route (event kind) that reached chaos.
	Ordinal uint64 `json:"ordinal"`
	// Action is a Fault or DeliveryFault action.
	Action string `json:"action"`
	// Status is the error status of an error action.
	Status int `json:"status,omitempty"`
	// RequestID is the request's X-Request-Id (api).
	RequestID string `json:"request_id,omitempty"`
}

// WithChaos turns chaos on: every authenticated /v1 request (never
// /_fake) and every webhook delivery attempt may get a fault, drawn at
// rates from a generator seeded with seed (ChaosSeedEnv, when set,
// replaces it). The same seed gives the same faults for the same sequence
// of requests: the n-th request of an account on a route (say the 3rd
// POST /v1/transfers of @market on test) gets the same draw whatever else
// runs, and the n-th delivery attempt of an event kind to an account's
// subscriptions likewise. In a test started with New, a failing test logs
// the seed and how to replay it. Scripted faults (AddFault,
// AddDeliveryFault) go first: chaos draws for what none matched.
// Invalid rates make New and NewUnstartedServer panic, and Open fail.
func WithChaos(seed uint64, rates ChaosRates) Option {
	return func(o *options) { o.chaos = &chaosConfig{seed: seed, rates: rates} }
}

type chaosConfig struct {
	seed  uint64
	rates ChaosRates
}

// chaosRate is one rate of ChaosRates with its -chaos name, and whether
// it is a delivery fault's (drawn apart from the API faults').
type chaosRate struct {
	name     string
	delivery bool
	v        *BasisPoints
}

// rateTable is r's rates in the order -chaos lists them: the one place
// that names them (check, String, ParseChaos).
func (r *ChaosRates) rateTable() []chaosRate {
	return []chaosRate{
		{"error", false, &r.Error}, {"drop", false, &r.DropAfterCommit}, {"reset", false, &r.ResetAfterCommit}, {"delay", false, &r.Delay},
		{"lose_answer", true, &r.LoseAnswer}, {"duplicate", true, &r.Duplicate}, {"delivery_delay", true, &r.DeliveryDelay}, {"reorder", true, &r.Reorder},
	}
}

// check validates the rates, naming the rate at fault.
func (r ChaosRates) check() error {
	for _, delivery := range []bool{false, true} {
		sum, names := 0, []string(nil)
		for _, x := range r.rateTable() {
			if x.delivery != delivery {
				continue
			}
			if *x.v < 0 || *x.v > Always {
				return fmt.Errorf("chaos rate %s must be 0 to 10000 basis points", x.name)
			}
			sum += int(*x.v)
			names = append(names, x.name)
		}
		if sum > int(Always) {
			return fmt.Errorf("chaos rates %s add up to more than 10000 basis points", strings.Join(names, ", "))
		}
	}
	if r.RetryAfter < 0 {
		return errors.New("chaos retry_after must be at least 0 seconds")
	}
	if r.DelayFor < 0 {
		return errors.New("chaos delay_for must be at least 0")
	}
	return nil
}

// String is the rates in the form ParseChaos reads, without the seed.
func (r ChaosRates) String() string {
	var parts []string
	for _, x := range r.rateTable() {
		if *x.v != 0 {
			parts = append(parts, x.name+"="+strconv.Itoa(int(*x.v))+"bp")
		}
	}
	if r.RetryAfter != 0 {
		parts = append(parts, "retry_after="+strconv.Itoa(r.RetryAfter))
	}
	if r.DelayFor != 0 {
		parts = append(parts, "delay_for="+r.DelayFor.String())
	}
	return strings.Join(parts, ",")
}

// ParseChaos reads a chaos spec, the -chaos flag of confpay-fakeserver:
// comma-separated name=value pairs, seed=N (required) and any of error,
// drop, reset, delay, lose_answer, duplicate, delivery_delay and reorder
// with a rate written as
// basis points ("250bp") or a percentage with at most two decimals
// ("2.5%"), retry_after=SECONDS and delay_for=DURATION. Example:
// "seed=42,error=200bp,drop=1%,lose_answer=5%".
func ParseChaos(spec string) (seed uint64, rates ChaosRates, err error) {
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || value == "" {
			return 0, ChaosRates{}, fmt.Errorf("chaos: %q is not name=value", part)
		}
		if seen[name] {
			return 0, ChaosRates{}, fmt.Errorf("chaos: %s given twice", name)
		}
		seen[name] = true
		var rate *BasisPoints
		for _, x := range rates.rateTable() {
			if x.name == name {
				rate = x.v
			}
		}
		switch {
		case rate != nil:
			if *rate, err = parseRate(value); err != nil {
				return 0, ChaosRates{}, fmt.Errorf("chaos: %s: %w", name, err)
			}
		case name == "seed":
			if seed, err = strconv.ParseUint(value, 10, 64); err != nil {
				return 0, ChaosRates{}, fmt.Errorf("chaos: seed must be an unsigned integer")
			}
		case name == "retry_after":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return 0, ChaosRates{}, fmt.Errorf("chaos: retry_after must be whole seconds, at least 0")
			}
			rates.RetryAfter = n
		case name == "delay_for":
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return 0, ChaosRates{}, fmt.Errorf("chaos: delay_for must be a positive Go duration such as \"2s\"")
			}
			rates.DelayFor = d
		default:
			names := []string{"seed"}
			for _, x := range rates.rateTable() {
				names = append(names, x.name)
			}
			return 0, ChaosRates{}, fmt.Errorf("chaos: unknown name %q (%s, retry_after, delay_for)", name, strings.Join(names, ", "))
		}
	}
	if !seen["seed"] {
		return 0, ChaosRates{}, errors.New("chaos: seed=N is required")
	}
	return seed, rates, rates.check()
}

// parseRate reads "250bp" or "2.5%" exactly.
func parseRate(v string) (BasisPoints, error) {
	bad := errors.New("a rate is basis points (\"250bp\") or a percentage with at most two decimals (\"2.5%\"), 0 to 10000bp")
	var n int
	switch {
	case strings.HasSuffix(v, "bp"):
		x, err := strconv.Atoi(strings.TrimSuffix(v, "bp"))
		if err != nil {
			return 0, bad
		}
		n = x
	case strings.HasSuffix(v, "%"):
		whole, frac, _ := strings.Cut(strings.TrimSuffix(v, "%"), ".")
		if len(frac) > 2 || whole == "" || strings.HasPrefix(whole, "-") || strings.HasPrefix(whole, "+") {
			return 0, bad
		}
		w, err := strconv.Atoi(whole)
		if err != nil || w > 100 {
			return 0, bad
		}
		f := 0
		if frac != "" {
			if f, err = strconv.Atoi(frac + strings.Repeat("0", 2-len(frac))); err != nil || f < 0 || strings.HasPrefix(frac, "+") {
				return 0, bad
			}
		}
		n = w*100 + f
	default:
		return 0, bad
	}
	if n < 0 || n > int(Always) {
		return 0, bad
	}
	return BasisPoints(n), nil
}

// chaosState is the server's generator: the seed, the ordinals drawn for
// so far, and the faults drawn. Its lock is a leaf.
type chaosState struct {
	on    bool // WithChaos
	seed  uint64
	rates ChaosRates

	mu       sync.Mutex
	ordinals map[string]uint64
	handles  map[string]string // account id → handle, for deliveries
	drawn    []ChaosFault      // the newest DefaultMaxChaosFaults
	used     bool              // a draw was made (a seed worth printing)
}

// newChaos sets the generator up from the options and the environment.
func newChaos(cfg *chaosConfig) (*chaosState, error) {
	c := &chaosState{ordinals: map[string]uint64{}, handles: map[string]string{}}
	if cfg != nil {
		if err := cfg.rates.check(); err != nil {
			return nil, err
		}
		c.on, c.seed, c.rates = true, cfg.seed, cfg.rates
	}
	if v := os.Getenv(ChaosSeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s must be an unsigned integer", ChaosSeedEnv)
		}
		c.seed = seed
	}
	return c, nil
}

// reset forgets the ordinals and the faults drawn: a Reset starts the
// sequence again.
func (c *chaosState) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.ordinals)
	clear(c.handles)
	c.drawn = nil
}

// learn records an account's handle, for the delivery draws (which know
// the account by id only): each /v1 caller's (a subscription made over
// /v1 has called first) and each SubscribeHandler account's. c.mu is a
// leaf.
func (c *chaosState) learn(id, handle string) {
	if !c.on {
		return
	}
	c.mu.Lock()
	c.handles[id] = handle
	c.mu.Unlock()
}

// uniform draws an integer in [0, n) from the seed and parts, exactly
// uniform: a draw that would bias the result is made again (with a
// counter), as rejection sampling does.
func (c *chaosState) uniform(n uint64, parts ...string) uint64 {
	limit := math.MaxUint64 - math.MaxUint64%n // [0, limit) maps evenly
	for try := uint64(0); ; try++ {
		h := sha256.New()
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], c.seed)
		h.Write(b[:])
		binary.BigEndian.PutUint64(b[:], try)
		h.Write(b[:])
		for _, p := range parts {
			binary.BigEndian.PutUint64(b[:], uint64(len(p)))
			h.Write(b[:])
			h.Write([]byte(p))
		}
		u := binary.BigEndian.Uint64(h.Sum(nil))
		if u < limit {
			return u % n
		}
	}
}

// next counts one more draw for key and returns its ordinal (from 1).
func (c *chaosState) next(key string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used = true
	c.ordinals[key]++
	return c.ordinals[key]
}

// hit reports whether a draw at probability p, for parts, succeeds.
func (c *chaosState) hit(p BasisPoints, parts ...string) bool {
	c.mu.Lock()
	c.used = true
	c.mu.Unlock()
	return c.uniform(uint64(Always), parts...) < uint64(p)
}

func (c *chaosState) record(f ChaosFault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.drawn) >= DefaultMaxChaosFaults {
		c.drawn = slices.Delete(c.drawn, 0, len(c.drawn)-DefaultMaxChaosFaults+1)
	}
	c.drawn = append(c.drawn, f)
}

// pick maps a uniform draw u in [0, Always) to the first kind whose
// cumulative rate is above it, or "" for none.
func pick(u uint64, kinds []string, rates []BasisPoints) string {
	var acc uint64
	for i, k := range kinds {
		acc += uint64(rates[i])
		if u < acc {
			return k
		}
	}
	return ""
}

// chaosErrorStatuses are the statuses of a chaos error, drawn evenly.
var chaosErrorStatuses = []int{429, 500, 502, 503}

// apiFault draws chaos's fault for an authenticated /v1 call, or nil.
func (c *chaosState) apiFault(call *call) *fault {
	if !c.on {
		return nil
	}
	acct, net := call.acct.handle, string(call.net.name)
	ord := c.next("api\x00" + net + "\x00" + acct + "\x00" + call.route)
	o := strconv.FormatUint(ord, 10)
	r := c.rates
	action := pick(c.uniform(uint64(Always), "api", net, acct, call.route, o),
		[]string{FaultError, FaultDropAfterCommit, FaultResetAfterCommit, FaultDelay},
		[]BasisPoints{r.Error, r.DropAfterCommit, r.ResetAfterCommit, r.Delay})
	if action == "" {
		return nil
	}
	f := &fault{Action: action}
	switch action {
	case FaultError:
		f.Status = chaosErrorStatuses[c.uniform(uint64(len(chaosErrorStatuses)), "status", net, acct, call.route, o)]
		f.Code = defaultFaultCode(f.Status)
		f.RetryAfter = &r.RetryAfter
	case FaultDelay:
		f.Delay = cmp.Or(r.DelayFor, DefaultChaosDelay)
	}
	c.record(ChaosFault{Kind: "api", Account: acct, Network: call.net.name, Route: call.route, Ordinal: ord,
		Action: action, Status: f.Status, RequestID: call.reqID})
	return f
}

// deliveryFaultKinds are the delivery faults chaos draws, in the order
// their rates are cumulated; deliveryRates gives their rates. A new
// delivery fault kind joins both.
var deliveryFaultKinds = []string{DeliveryLoseAnswer, DeliveryDuplicate, DeliveryDelay, DeliveryReorder}

func (r ChaosRates) deliveryRates() []BasisPoints {
	return []BasisPoints{r.LoseAnswer, r.Duplicate, r.DeliveryDelay, r.Reorder}
}

// deliveryFault draws chaos's fault for a delivery attempt to a
// subscription of account acct (an id) for an event of kind, or nil. It
// is the one function that picks a delivery fault kind. Called with
// hooks.mu held: c.mu is a leaf.
func (c *chaosState) deliveryFault(acct, kind string) *hooks.Fault {
	if !c.on {
		return nil
	}
	c.mu.Lock()
	handle := c.handles[acct]
	c.mu.Unlock()
	if handle == "" {
		handle = acct
	}
	ord := c.next("delivery\x00" + handle + "\x00" + kind)
	action := pick(c.uniform(uint64(Always), "delivery", handle, kind, strconv.FormatUint(ord, 10)),
		deliveryFaultKinds, c.rates.deliveryRates())
	if action == "" {
		return nil
	}
	c.record(ChaosFault{Kind: "delivery", Account: handle, Route: kind, Ordinal: ord, Action: action})
	f := &hooks.Fault{Action: action}
	if action == DeliveryDelay {
		f.Delay = cmp.Or(c.rates.DelayFor, DefaultChaosDelay)
	}
	return f
}

// ChaosFaults returns the faults chaos drew since the server started (or
// was last Reset), oldest first, at most DefaultMaxChaosFaults.
func (s *Server) ChaosFaults() []ChaosFault {
	s.chaos.mu.Lock()
	defer s.chaos.mu.Unlock()
	return slices.Clone(s.chaos.drawn)
}

// ChaosSeed returns the seed of the server's generator: WithChaos's, or
// ChaosSeedEnv's when set, else 0.
func (s *Server) ChaosSeed() uint64 { return s.chaos.seed }

// failureLogger is the part of *testing.T that reports the seed of a
// failing test.
type failureLogger interface {
	Failed() bool
	Logf(format string, args ...any)
	Name() string
}

// logSeedOnFailure makes a failing test say how to replay its chaos: the
// seed, the rates, and the environment variable that sets the seed.
func (s *Server) logSeedOnFailure(t Tester) {
	ft, ok := t.(failureLogger)
	if !ok {
		return
	}
	t.Cleanup(func() {
		s.chaos.mu.Lock()
		used := s.chaos.used
		s.chaos.mu.Unlock()
		if !ft.Failed() || (!s.chaos.on && !used) {
			return
		}
		ft.Logf("%s", chaosReplayMessage(ft.Name(), s.chaos.seed, s.chaos.rates, s.chaos.on))
	})
}

// chaosReplayMessage is what a failing test logs.
func chaosReplayMessage(test string, seed uint64, rates ChaosRates, on bool) string {
	what := "fault probabilities drew"
	if on {
		what = "chaos (" + rates.String() + ") drew"
	}
	return fmt.Sprintf("fakeserver: %s from seed %d; replay with %s=%d go test -run '^%s$'",
		what, seed, ChaosSeedEnv, seed, strings.ReplaceAll(test, "/", "$/^"))
}

// chaosView is the answer of GET /_fake/chaos.
type chaosView struct {
	// Enabled is whether chaos is on (WithChaos, -chaos).
	Enabled bool `json:"enabled"`
	// Seed is ChaosSeed in decimal: a string, so that a 64-bit seed
	// survives a JSON reader whose numbers are float64.
	Seed string `json:"seed"`
	// Rates are the rates in the form ParseChaos reads, without the seed
	// ("" when chaos is off).
	Rates  string       `json:"rates"`
	Faults []ChaosFault `json:"faults"`
}

// adminChaos answers GET /_fake/chaos?account=: chaos's seed, its rates
// and the faults it drew (ChaosFaults), only those of one account (id or
// handle) when account is given. It is how a test in another language
// against the binary's -chaos learns what chaos did.
func (s *Server) adminChaos(c *call) (int, any, error) {
	fs := s.ChaosFaults()
	if ref := c.r.URL.Query().Get("account"); ref != "" {
		a, err := s.Account(ref)
		if err != nil {
			return 0, nil, err
		}
		// A delivery draw names an account by id when it never learned
		// its handle.
		fs = slices.DeleteFunc(fs, func(f ChaosFault) bool { return f.Account != a.Handle && f.Account != a.AccountID })
	}
	if fs == nil {
		fs = []ChaosFault{}
	}
	v := chaosView{Enabled: s.chaos.on, Seed: strconv.FormatUint(s.chaos.seed, 10), Faults: fs}
	if s.chaos.on {
		v.Rates = s.chaos.rates.String()
	}
	return http.StatusOK, v, nil
}
