package fakeserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/audit"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
)

// MaxBodyBytes is the largest request body the server reads (413 above).
const MaxBodyBytes = 1 << 20

// DefaultStart is where a virtual clock starts unless WithStartTime says
// otherwise: a fixed instant, so that tests are reproducible.
var DefaultStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Locking (a maintainer's note, kept out of go doc: users need none of it).
//
// s.mu guards every piece of domain state: accounts, keys, both networks'
// ledgers, transfers, agents, spend policies and held payments. A domain operation (pay.go
// for the money path; the direct API; the few queries of the handlers'
// operations) takes s.mu once, decides and mutates, and lets go;
// check-and-reserve is always one critical section. Webhooks
// (subscriptions, events, deliveries) live in internal/hooks under its own
// lock: the /v1/webhooks handlers call it without s.mu, and its delivery
// workers never take s.mu.
//
// Lock order: a lock may be taken while holding the locks to its left,
// never the other way round.
//
//	clock.run → Server.mu → hooks.mu → {hooks pool.mu, assetBook.mu, clock.mu, clock.busyMu}
//	Server.mu → audit.Log.mu
//	Server.keyed → Server.mu
//
// clock.run is held while timers run, and a timer (a confirmation, an
// expiry, a retry) takes Server.mu or hooks.mu: so Advance, Set and Sync
// are never called with either held. An operation emits its events under
// s.mu (hooks.Emit takes hooks.mu inside), so events are recorded in the
// order they happen. The locks in braces are leaves: nothing is called
// while one is held. The audit's request log is a leaf too (Audit reads
// it under Server.mu; the pipeline adds to it alone). idempotency's is
// taken alone, or under Server.mu by the data directory (persist_hooks.go,
// a leaf there); faultScript.mu and selfAddrs.mu are taken alone, never
// with another lock held. chaosState.mu is a leaf, taken under Server.mu
// (an account learned by SubscribeHandler) and hooks.mu (a delivery's
// draw). The data directory's commit queue lock (commitQueue.mu) is a
// leaf. Server.keyed is held for reading by a request under an
// Idempotency-Key from its handler's start until its answer is kept, for
// writing by Backup around its copy (backup.go): a handler under a key
// never calls Backup.
//
// Nothing but Server.keyed's read side holds a lock across network I/O (deliveries, name lookups),
// cryptography (notes, balance ciphertexts and keys are made outside
// s.mu, on values copied out), logging, or a caller's callback.

// Server is an in-memory confidential payments service. Create one with New
// in a test, or NewServer / NewUnstartedServer elsewhere. All methods are
// safe for concurrent use.
type Server struct {
	opts  options
	clock *clock.Clock
	log   *slog.Logger

	mu       stateMu             // Unlock commits to the data directory (persist.go)
	accounts map[string]*account // by account id
	byHandle map[string]*account // by lower-cased handle ("@alice", "@alice/bot")
	byAddr   map[string]*account // by lower-cased 0x address
	domains  map[string]*account // by lower-cased domain name
	keys     map[[32]byte]*apiKey
	keysByID map[string]*apiKey
	nets     map[confpay.Network]*network

	// transferSeq numbers transfers server-wide (transfer ids sort in
	// creation order); it survives Reset.
	transferSeq uint64
	accountSeq  uint64 // numbers accounts in creation order
	keySeq      uint64 // numbers API keys in issue order

	maxHeld   int   // payments waiting for a decision per agent and network
	maxAgents int   // agents per owner
	seed      *Seed // the last seed Load loaded (seed.go); kept by Reset

	assets     *assetBook   // assets.go; kept by Reset
	hooks      *hooks.Hooks // webhooks, both networks (delivery.go)
	faults     faultScript
	chaos      *chaosState // the seeded generator of chaos and fault probabilities (chaos.go)
	idempotent *idempotency.Store
	audits     *audit.Log // each account's /v1 requests, for the audit (audit.go)

	handler http.Handler
	hs      *loopback // set by Start
	mem     inMemory  // HTTPClient's in-memory transport (inmemory.go)
	// receivers are the in-process webhook receivers (receivers.go).
	receivers receivers
	self      selfAddrs // the server's own listeners (selfguard.go)
	// uiKey signs the dashboard's sessions and CSRF tokens (dashboard.go);
	// drawn once, never changed, so it needs no lock.
	uiKey [32]byte

	// jr is the data directory (persist.go), nil without WithDataDir;
	// dirty is what the critical section in progress changed.
	jr        *journal.Journal
	dirty     dirtySet
	rec       recScratch  // the journal record being made (persist.go)
	dataEmpty bool        // the data directory held no state when opened
	q         commitQueue // records held behind Idempotency-Key requests (persist_hooks.go)
	jrDone    atomic.Bool // Close wrote the last record: nothing more is written
	// keyed is held for reading by each request under an Idempotency-Key
	// while it runs, for writing by Backup (backup.go).
	keyed sync.RWMutex

	closing   chan struct{} // closed by Close: held requests give up
	closeOnce sync.Once
	rewriting sync.WaitGroup // a snapshot rewrite's goroutine (persist_rewrite.go)
	// rewriteHold is the longest a rewrite's section held s.mu, in ns
	// (persist_rewrite.go; a test reads it).
	rewriteHold      atomic.Int64
	rewriteHooksHold atomic.Int64 // the same for hooks.mu (hooks.Dump)

	// testHook, set by tests only (export_test.go), is called at named
	// points: "keyed-ran" (a request under an Idempotency-Key ran, its
	// answer not yet kept) and "backup-gate" (Backup waits for such
	// requests).
	testHook func(point string)
}

// network is the per-network half of the state: everything that moves,
// records or governs money. Identities (accounts, agents, keys) are
// shared.
type network struct {
	name    confpay.Network
	chainID uint64

	ledger    *ledger.Ledger
	transfers transferBook // transfers.go
	held      heldBook     // held.go
	// policies are the agents' spend policies on the network, by agent
	// account id (policy.go).
	policies map[string]*policy
}

// Option configures a Server.
type Option func(*options)

type options struct {
	realClock        bool
	startSet         bool // WithStartTime was given: a real clock starts at start too
	start            time.Time
	blockTime        time.Duration
	approvalWindow   time.Duration
	deliveryTimeout  time.Duration
	noDeliveryJitter bool
	deliveryTLS      *tls.Config
	logger           *slog.Logger
	ethRate          confpay.Limit
	assets           []Asset
	// adminTokenHash is the SHA-256 of the admin token; nil: none.
	adminTokenHash *[32]byte
	// lookup, set only by internal tests (withLookup), replaces name
	// resolution for the self-SSRF checks and the delivery dialer.
	lookup    func(ctx context.Context, host string) ([]netip.Addr, error)
	maxHeld   int
	maxAgents int
	// hookBounds are the webhook machinery's bounds per subscription and
	// account (0: hooks' defaults).
	hookBounds hookBounds
	// maxIdempotencyKeys bounds the Idempotency-Keys kept per account and
	// network.
	maxIdempotencyKeys int
	seed               func(*Server) (any, error) // WithResetSeed (reset.go)
	noListener         bool                       // WithoutListener (inmemory.go)
	audit              AuditConfig                // WithAuditConfig (audit.go)
	dataDir            string                     // WithDataDir (persist.go)
	chaos              *chaosConfig               // WithChaos (chaos.go)
	dataNoSync         bool
	dataRewriteAt      int64 // the journal size for a new snapshot (a test's; journal.DefaultRewriteAt)
	dataRewriteAlways  bool  // a test's: a new snapshot at every commit while none is being written
	dataRewriteChunk   int   // a test's: the things per chunk of a fuzzy snapshot (0: rewriteChunk)
}

// WithRealClock makes the server follow the wall clock (the binary's
// default). Advance and Set still move it.
//
// Inside a testing/synctest bubble the wall clock starts at the bubble's
// epoch, 2000-01-01 00:00 UTC, and so does a real clock: add
// WithStartTime(DefaultStart) (or any instant) to start it there instead,
// for example when an agent's active hours or a transfer list's dates
// assume today.
func WithRealClock() Option { return func(o *options) { o.realClock = true } }

// WithStartTime sets where the clock starts: a virtual clock stands there
// until moved; a real clock (WithRealClock) starts there and follows the
// wall clock from that instant on.
func WithStartTime(t time.Time) Option {
	return func(o *options) { o.start, o.startSet = t.UTC(), true }
}

// WithBlockTime sets how long a transfer stays pending before it confirms
// (default 1 s of server time).
func WithBlockTime(d time.Duration) Option { return func(o *options) { o.blockTime = d } }

// WithApprovalWindow sets how long a held agent payment waits for a
// decision (default 24 h).
func WithApprovalWindow(d time.Duration) Option { return func(o *options) { o.approvalWindow = d } }

// Defaults of the bounds an Option can change.
const (
	// DefaultDeliveryTimeout is how long a webhook receiver has to answer
	// (WithDeliveryTimeout).
	DefaultDeliveryTimeout = 10 * time.Second
	// DefaultMaxIdempotencyKeys is how many Idempotency-Keys the server
	// keeps per account and network (WithMaxIdempotencyKeys).
	DefaultMaxIdempotencyKeys = idempotency.DefaultMaxPerOwner
	// DefaultMaxAgentsPerOwner is how many agents one owner may have
	// (WithMaxAgentsPerOwner).
	DefaultMaxAgentsPerOwner = 1000
	// DefaultMaxPendingDeliveries is how many webhook deliveries may be
	// pending per subscription, and per account and network over its
	// subscriptions (WithMaxPendingDeliveries).
	DefaultMaxPendingDeliveries = hooks.DefaultMaxPending
	// DefaultMaxEvents is how many events the server keeps per account
	// and network (WithMaxEvents).
	DefaultMaxEvents = hooks.DefaultMaxEvents
	// DefaultMaxDeliveryRecords is how many finished webhook delivery
	// records the server keeps per account and network
	// (WithMaxDeliveryRecords).
	DefaultMaxDeliveryRecords = hooks.DefaultMaxRecords
)

// hookBounds are the bounds of the webhook machinery an Option changes.
type hookBounds struct{ pending, pendingPerAccount, events, records int }

// WithMaxAgentsPerOwner sets how many agents one owner may have (default
// DefaultMaxAgentsPerOwner, 1,000); one more answers 409
// agent_limit_reached (agents are never deleted, so no Retry-After).
func WithMaxAgentsPerOwner(n int) Option { return func(o *options) { o.maxAgents = n } }

// WithMaxPendingDeliveries bounds the webhook deliveries pending (in
// flight, due, or waiting for a retry) per subscription and per account
// and network over its subscriptions (defaults
// DefaultMaxPendingDeliveries, 100,000 each). A delivery that would pass
// either is recorded failed at once, with no attempt (replay the event
// later); a replay that would is refused 429 rate_limited. No bound is
// shared between accounts, so one account whose receivers fall behind
// never delays or fails another's deliveries.
func WithMaxPendingDeliveries(perSubscription, perAccount int) Option {
	return func(o *options) {
		o.hookBounds.pending, o.hookBounds.pendingPerAccount = perSubscription, perAccount
	}
}

// WithMaxEvents bounds the events kept per account and network (default
// DefaultMaxEvents, 100,000; they are kept 30 days at most too). Past
// it the account's oldest event is forgotten: it can no longer be
// replayed.
func WithMaxEvents(n int) Option { return func(o *options) { o.hookBounds.events = n } }

// WithMaxDeliveryRecords bounds the finished webhook delivery records
// (succeeded or failed) kept per account and network over its
// subscriptions (default DefaultMaxDeliveryRecords, 100,000; they are
// kept 30 days at most too). Past it by a quarter, the account's oldest
// finished records are dropped down to n.
func WithMaxDeliveryRecords(n int) Option { return func(o *options) { o.hookBounds.records = n } }

// WithDeliveryTimeout sets how long a webhook receiver has to answer
// (default DefaultDeliveryTimeout, 10 s of real time).
func WithDeliveryTimeout(d time.Duration) Option {
	return func(o *options) { o.deliveryTimeout = d }
}

// WithDeliveryTLSConfig sets the TLS configuration webhook deliveries use
// to reach https receivers; by default they trust the system's roots. A
// test with an httptest.NewTLSServer receiver passes its certificate:
//
//	pool := x509.NewCertPool()
//	pool.AddCert(receiver.Certificate())
//	srv := fakeserver.New(t, fakeserver.WithDeliveryTLSConfig(&tls.Config{RootCAs: pool}))
func WithDeliveryTLSConfig(c *tls.Config) Option { return func(o *options) { o.deliveryTLS = c } }

// WithoutDeliveryJitter makes every webhook retry wait exactly its nominal
// interval (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 24 h after the first
// attempt) instead of varying it by up to ±10 %, so that a test can assert
// the instant of each attempt.
func WithoutDeliveryJitter() Option { return func(o *options) { o.noDeliveryJitter = true } }

// WithLogger sets where the server logs (default: nowhere). It never logs
// keys, secrets, proofs or figures.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithETHRate sets the reference rate, in USDG per ETH, at which spend
// policies count ETH payments (default 3000).
func WithETHRate(usdgPerETH confpay.Limit) Option { return func(o *options) { o.ethRate = usdgPerETH } }

// WithAdminToken requires every /_fake admin request to carry
// "Authorization: Bearer <token>" (the scheme in any case); any other
// answers 401 unauthorized. The token is compared in constant time and
// never logged. Without this option the admin interface takes no
// credentials. A token that cannot be sent as a bearer credential (empty,
// or holding a space, tab or comma) matches no request, which closes the
// admin interface over HTTP; the Go API is unaffected. Use at least 16
// random bytes (the binary refuses a shorter token). Whatever the token,
// no webhook delivery reaches /_fake (403 forbidden).
func WithAdminToken(token string) Option {
	h := sha256.Sum256([]byte(token))
	return func(o *options) { o.adminTokenHash = &h }
}

// WithMaxHeldPerAgent sets how many payments may wait for the owner's
// decision per agent and network (default DefaultMaxHeldPerAgent, 1000).
// One more answers 429 rate_limited with Retry-After and is not held, so
// that an agent can never bury its owner's pending list.
func WithMaxHeldPerAgent(n int) Option { return func(o *options) { o.maxHeld = n } }

// WithMaxIdempotencyKeys bounds how many Idempotency-Keys the server keeps
// per account and network (default DefaultMaxIdempotencyKeys, 100,000): a request with one more new
// key, while all are younger than 24 hours, answers 429 rate_limited with
// Retry-After until the oldest expires. It keeps a long-running server's
// memory bounded whatever its callers send.
func WithMaxIdempotencyKeys(n int) Option { return func(o *options) { o.maxIdempotencyKeys = n } }

// NewServer returns a server listening on a loopback port (see URL), as
// httptest.NewServer does. Call Close when done; in a test, New does both.
func NewServer(opts ...Option) *Server {
	s := NewUnstartedServer(opts...)
	s.Start()
	return s
}

// NewUnstartedServer returns a server that is not listening: mount
// Handler yourself (the binary does), or call Start. Call Close when done.
// It panics if WithDataDir's directory cannot be opened; Open returns the
// error instead.
func NewUnstartedServer(opts ...Option) *Server {
	s, err := Open(opts...)
	if err != nil {
		panic(err.Error())
	}
	return s
}

// Open is NewUnstartedServer returning an error (the data directory of
// WithDataDir cannot be opened, is locked by another process, is of an
// unknown format version or is corrupt) instead of panicking.
func Open(opts ...Option) (*Server, error) {
	o := options{
		start:              DefaultStart,
		blockTime:          time.Second,
		approvalWindow:     24 * time.Hour,
		deliveryTimeout:    DefaultDeliveryTimeout,
		ethRate:            confpay.MustParseLimit("3000"),
		maxHeld:            DefaultMaxHeldPerAgent,
		maxAgents:          DefaultMaxAgentsPerOwner,
		maxIdempotencyKeys: DefaultMaxIdempotencyKeys,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.dataDir == "" && testHooks.dataDir != nil {
		o.dataDir, o.dataNoSync = testHooks.dataDir(), true
	}
	s := &Server{opts: o, maxHeld: max(o.maxHeld, 1), maxAgents: max(o.maxAgents, 1), closing: make(chan struct{}), assets: newAssetBook(o.ethRate, o.assets),
		idempotent: idempotency.New(o.maxIdempotencyKeys), audits: audit.NewLog(o.audit.MaxRequests)}
	if o.realClock {
		s.clock = clock.NewReal()
		if o.startSet {
			s.clock.Set(o.start)
		}
	} else {
		s.clock = clock.NewVirtual(o.start)
	}
	chaos, err := newChaos(o.chaos)
	if err != nil {
		s.clock.Close()
		return nil, err
	}
	s.chaos = chaos
	_, _ = rand.Read(s.uiKey[:])
	s.log = o.logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hooks = s.newHooks()
	s.mu.s = s
	s.q.cond = sync.NewCond(&s.q.mu)
	s.resetLocked()
	if o.dataDir != "" {
		empty, err := s.openDataDir(o.dataDir, o.dataNoSync)
		if err != nil {
			s.clock.Close()
			s.hooks.Close()
			return nil, err
		}
		s.dataEmpty = empty
	}
	s.handler = hookHandler(s.routes())
	return s, nil
}

// Tester is the part of *testing.T (or testing.TB) that New and the
// test helpers use. Taking this small interface, not testing.TB, keeps the
// testing package out of programs that import fakeserver, such as the
// binary.
type Tester interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// New starts a server on 127.0.0.1 for the test and closes it when the test
// ends, like miniredis' RunT. It is safe to call from parallel tests:
// servers share nothing.
func New(t Tester, opts ...Option) *Server {
	t.Helper()
	s := NewUnstartedServer(opts...)
	if !s.opts.noListener {
		s.Start()
	}
	t.Cleanup(s.Close)
	s.logSeedOnFailure(t)
	return s
}

// Start makes the server listen on a loopback port (see URL).
func (s *Server) Start() {
	if s.hs == nil {
		s.hs = listenLoopback(s.handler)
		s.self.learnNetAddr(s.hs.addr)
	}
}

// URL is the base URL of a started server, such as http://127.0.0.1:41234.
// A server that does not listen answers InMemoryURL, which only
// HTTPClient and Client reach.
func (s *Server) URL() string {
	if s.hs == nil {
		return InMemoryURL
	}
	return s.hs.url
}

// Handler is the server's HTTP face: the /v1 interface and /_fake admin.
func (s *Server) Handler() http.Handler { return s.handler }

// Now returns the server's current time.
func (s *Server) Now() time.Time { return s.clock.Now() }

// Advance moves the server's clock forward and runs everything that falls
// due, in order, each at its own instant (like miniredis' FastForward).
func (s *Server) Advance(d time.Duration) time.Time {
	t := s.clock.Advance(d)
	s.clockMoved()
	return t
}

// Set moves the server's clock to t and runs whatever is due.
func (s *Server) Set(t time.Time) time.Time {
	t = s.clock.Set(t)
	s.clockMoved()
	return t
}

// Sync waits until all work due at the current time has run, webhook
// deliveries included. Use it instead of sleeping.
func (s *Server) Sync() { s.clock.RunDue() }

// Close stops the server, its clock and its webhook deliveries.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.jr != nil { // key usage rides with the next change: write it now
			s.mu.Lock()
			s.dirty.any = s.dirty.any || len(s.dirty.keys) > 0
			s.mu.Unlock()
			// The last records; stopping the hooks below cancels the
			// pending deliveries, which must come back pending.
			s.mu.Mutex.Lock()
			s.jrDone.Store(true)
			s.mu.Mutex.Unlock()
			s.q.mu.Lock()
			s.q.cond.Broadcast() // a rewrite's barrier stops waiting
			s.q.mu.Unlock()
			s.rewriting.Wait()
		}
		close(s.closing)
		if s.hs != nil {
			s.hs.close()
		}
		s.mem.close()
		s.clock.Close()
		s.hooks.Close()
		s.receivers.close()
		if s.jr != nil {
			s.jr.Close()
		}
	})
}

// Reset empties the server: no accounts, keys, balances, transfers, faults
// or subscriptions. The clock keeps its time.
func (s *Server) Reset() {
	s.hooks.Stop() // outside s.mu: it waits for the workers
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
	if s.jr != nil {
		s.dirty = dirtySet{reset: true, any: true}
	}
	if s.testHook != nil {
		s.testHook("reset")
	}
}

func (s *Server) resetLocked() {
	for _, n := range s.nets { // the old state's timers must not fire
		for t := range n.transfers.pending.all {
			t.timer.Stop()
		}
		for _, h := range n.held.byID {
			h.timer.Stop()
		}
	}
	s.accounts = map[string]*account{}
	s.byHandle = map[string]*account{}
	s.byAddr = map[string]*account{}
	s.domains = map[string]*account{}
	s.keys = map[[32]byte]*apiKey{}
	s.keysByID = map[string]*apiKey{}
	s.nets = map[confpay.Network]*network{
		confpay.NetworkTest: {name: confpay.NetworkTest, chainID: confpay.ChainIDTest},
		confpay.NetworkLive: {name: confpay.NetworkLive, chainID: confpay.ChainIDLive},
	}
	for _, n := range s.nets {
		n.ledger = ledger.New()
		n.transfers.init()
		n.held.init()
		n.policies = map[string]*policy{}
	}
	s.faults.reset()
	s.chaos.reset()
	s.idempotent.Reset()
	s.audits.Reset()
	s.hooks.Reset() // a closed server's hooks start no workers again
}
