// Package hooks is the fakeserver's webhook machinery: subscriptions, the
// event log, delivery records, the attempts in flight and the retry
// schedule, for both networks.
//
// It has its own lock, taken by every exported method; it never calls into
// the server, so the server may call it while holding its own lock (the
// lock order is server → hooks → pool), and the delivery attempts never
// wait for the server. It knows accounts only by id.
//
// An event is one thing that happened, as seen from one side: its audience
// is the accounts whose subscriptions receive it. Its payload is built
// lazily, on first delivery, from facts that never change, and those exact
// bytes are what every attempt and every replay sends and signs.
//
// Deliveries: each attempt is a real HTTP POST made outside the lock, on a
// goroutine of its own from the moment it is due. Attempts to one
// subscription are made one at a time, in the order they fall due (a
// scripted delivery fault may hold one back first: faults.go);
// different subscriptions' attempts never wait for each other, so a
// receiver that is slow or never answers delays nobody else's deliveries
// (see pool).
//
// Every attempt is tracked on the clock from the moment it is due until
// its answer is recorded, but for no longer than the delivery timeout plus
// a second, so a virtual-clock test sees each retry at its exact instant
// and a receiver that hangs holds a clock call for at most that long
// (clock.Clock waits for hanging work side by side, so this bounds the
// whole call).
package hooks

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

const (
	// MaxSubscriptions is how many subscriptions one account may hold on
	// one network.
	MaxSubscriptions = 16
	// HistoryWindow is how far back the deliveries list reaches, and how
	// long events and delivery records are kept.
	HistoryWindow = 30 * 24 * time.Hour
	// RetryWindow is how long after its first attempt a delivery is tried.
	RetryWindow = 24 * time.Hour
	// pruneInterval is how often (server time) the log drops what left
	// the history window: often enough that memory stays flat, rarely
	// enough that a pass is spread over many events.
	pruneInterval = time.Hour
	// DefaultMaxPending is how many deliveries of one subscription may
	// be pending at once (Config.MaxPending): in flight, due behind the
	// one in flight, or scheduled for a retry. Enough for any burst a test
	// makes (a settlement of 100,000 transfers at once) to be delivered
	// whole, while a receiver that falls behind an endless stream costs
	// bounded memory.
	DefaultMaxPending = 100_000
	// DefaultMaxPendingPerAccount is how many deliveries may be pending
	// over all the subscriptions of one account on one network
	// (Config.MaxPendingPerAccount). There is no bound over all accounts:
	// one account's deliveries never take another's room.
	DefaultMaxPendingPerAccount = 100_000
	// DefaultMaxEvents is how many events of one account on one network
	// the log keeps (Config.MaxEvents); past it the account's oldest
	// event is forgotten (it can no longer be replayed).
	DefaultMaxEvents = 100_000
	// DefaultMaxRecords is how many finished delivery records (succeeded
	// or failed) one account keeps on one network, over its
	// subscriptions (Config.MaxRecords); past it the account's oldest
	// finished records are dropped. Pending ones are bounded by
	// MaxPendingPerAccount.
	DefaultMaxRecords = 100_000
	// MaxDeletedPerAccount is how many deleted subscription ids one
	// account's book remembers on one network (for an idempotent
	// DELETE); past it the oldest is forgotten.
	MaxDeletedPerAccount = 1_000
	// trackSlack is how much longer than the delivery timeout a clock
	// call waits for an attempt: its answer is recorded just after.
	trackSlack = time.Second
)

// retryIntervals are the waits after attempts 1 to 6.
var retryIntervals = [...]time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
}

// maxAttempts counts the first attempt, the six retries and the last one at
// the 24 h mark.
const maxAttempts = len(retryIntervals) + 2

// Errors of the subscription operations; the server turns them into
// answers.
var (
	ErrTooMany   = errors.New("hooks: the account holds the most subscriptions it may")
	ErrNoWebhook = errors.New("hooks: no such subscription for this account")
	ErrNoEvent   = errors.New("hooks: no such event for this subscription's account")
	// ErrBusy: a replay would pass the bound of pending deliveries of its
	// subscription or account (Config.MaxPending).
	ErrBusy = errors.New("hooks: the subscription or account has the most pending deliveries it may")
)

// Payload builds an event's JSON payload. It is called at most once per
// event (the bytes are kept), outside any lock, so it must read only facts
// that never change.
type Payload interface {
	Build(id, kind string, at time.Time) []byte
}

// Event is one event to record and deliver.
type Event struct {
	ID   string
	Kind string
	At   time.Time
	// Audience is the ids of the accounts whose subscriptions receive
	// the event: one, or two ("" for none).
	Audience [2]string
	Payload  Payload
}

// Config is how a Hooks delivers.
type Config struct {
	Clock   *clock.Clock
	Timeout time.Duration // how long a receiver has to answer
	// Jitter turns a nominal retry wait into the actual one (nil: ±10 %).
	Jitter func(time.Duration) time.Duration
	// Transport makes the POSTs (it dials, guards and holds TLS config).
	Transport http.RoundTripper
	Log       *slog.Logger
	// MaxPending bounds the pending deliveries of a subscription (0:
	// DefaultMaxPending), MaxPendingPerAccount those of an account on a
	// network over its subscriptions (0: DefaultMaxPendingPerAccount). A
	// delivery that would pass either is recorded failed at once, with no
	// attempt (the event can be replayed later); a replay is refused
	// (ErrBusy). A delivery once pending is attempted and retried on its
	// schedule: nothing any account does later refuses it.
	MaxPending, MaxPendingPerAccount int
	// Changed, if set, is called after a delivery attempt's answer is
	// recorded, outside the lock, while changes are being noted (Track):
	// the server writes them to its data directory.
	Changed func()
	// Durable, if set, is called before an attempt sends its event,
	// outside the lock: the server waits there until everything it
	// committed (the event among it) is durable, so that no receiver is
	// told of an event a crash could take back.
	Durable func()
	// MaxEvents bounds the events kept per account and network (0:
	// DefaultMaxEvents); MaxRecords the finished delivery records (0:
	// DefaultMaxRecords). Past either, that account's oldest go.
	MaxEvents, MaxRecords int
	// Chaos, when set, is asked for a fault for an attempt falling due
	// that no scripted fault matched (the subscription's account id and
	// the event kind); nil for none. It is called with Hooks.mu held.
	Chaos func(acct, kind string) *Fault
}

// Hooks holds both networks' subscriptions, events and deliveries.
type Hooks struct {
	cfg Config

	mu     sync.Mutex
	books  map[confpay.Network]*book
	pool   *pool // nil while stopped
	closed bool  // Close was called: no pool starts again
	faults []*Fault
	// chg is the changes not yet taken (persist.go), nil unless Track;
	// seq numbers subscriptions, events and deliveries in creation order,
	// delSeq the deletions of subscriptions in deletion order (the order
	// deletedBy forgets them in, which a restart must keep).
	chg    *changeSet
	seq    uint64
	delSeq uint64
}

// book is one network's share.
type book struct {
	subs   map[string]*subscription   // live subscriptions by id
	byAcct map[string][]*subscription // live subscriptions by account id, in creation order
	// events indexes the events of order[:indexed] by id, for Replay
	// alone. It is built when a replay needs it (indexLocked), not as
	// events are recorded: an event costs no map insert (nor the map's
	// growth) unless some replay comes after it, and each event is
	// indexed once at most.
	events  map[string]*event
	indexed int
	// order is the events in the order they were recorded, for pruning
	// (it may hold events already forgotten: gone counts them until the
	// next compaction); lastPrune is when the book was last pruned
	// (server time).
	order     []*event
	gone      int
	lastPrune time.Time
	// history is each account's events in the order they were recorded,
	// for the bound per account (Config.MaxEvents).
	history map[string][]*event
	// deleted maps the id of a deleted subscription to its account and
	// when it was deleted, so that the same account deleting it again
	// succeeds; it is forgotten after HistoryWindow (pruneLocked) or
	// when the account deletes MaxDeletedPerAccount more (deletedBy).
	deleted   map[string]deletion
	deletedBy map[string][]string
	// audiences holds each audience its events had once, shared by them
	// (event.aud): one per account (itself, and its owner for an agent).
	audiences map[[2]string]*[2]string
	// h and net say where changes are noted (persist.go).
	h   *Hooks
	net confpay.Network
}

// newBook returns an empty book of net.
func (h *Hooks) newBook(net confpay.Network) *book {
	return &book{
		h:         h,
		net:       net,
		subs:      map[string]*subscription{},
		byAcct:    map[string][]*subscription{},
		events:    map[string]*event{},
		history:   map[string][]*event{},
		deleted:   map[string]deletion{},
		deletedBy: map[string][]string{},
		audiences: map[[2]string]*[2]string{},
	}
}

// audienceLocked is a, shared with every event of b that has it.
func (b *book) audienceLocked(a [2]string) *[2]string {
	p := b.audiences[a]
	if p == nil {
		p = new([2]string) // not &a: a would escape, an allocation a call
		*p = a
		b.audiences[a] = p
	}
	return p
}

// deletion is a deleted subscription's account and when it was deleted.
type deletion struct {
	acct  string
	at    time.Time
	seq   uint64 // the subscription's
	order uint64 // the deletion's (Hooks.delSeq)
}

// event is a recorded event: Event's fields, its audience shared with
// the book's other events of the same audience. The log keeps every event
// (a transfer makes two, then two more when it settles), so an event is
// kept small: 96 bytes, every byte of them heap the server grows into.
type event struct {
	ID      string
	kind    *string // Event.Kind, shared (internKind)
	At      time.Time
	Payload Payload
	aud     *[2]string // Event.Audience (book.audienceLocked)
	// body is the payload, built on first delivery (or read): nil until
	// then. A pointer: most events are never built.
	body *[]byte
	// forgotten[i] is set when Audience[i]'s history dropped the event
	// (Config.MaxEvents); gone when the log no longer holds it.
	forgotten [2]bool
	gone      bool
	seq       uint64
}

// Kind is the event's kind.
func (e *event) Kind() string { return *e.kind }

// knownKinds are the event kinds an event's kind points into.
var knownKinds = webhookverify.Kinds()

// internKind is kind as an event keeps it: a pointer into knownKinds
// (8 bytes where the string is 16), or to a copy of its own for a kind
// not known.
func internKind(kind string) *string {
	for i := range knownKinds {
		if knownKinds[i] == kind {
			return &knownKinds[i]
		}
	}
	p := new(string) // not &kind: that would put every call's kind on the heap
	*p = kind
	return p
}

func (e *event) concerns(acct string) bool {
	return acct != "" && !e.gone && ((e.aud[0] == acct && !e.forgotten[0]) || (e.aud[1] == acct && !e.forgotten[1]))
}

// built is e's payload if it was built, nil if not.
func (e *event) built() []byte {
	if e.body == nil {
		return nil
	}
	return *e.body
}

// audience is e's distinct accounts ("" where none).
func (e *event) audience() [2]string {
	a := *e.aud
	if a[1] == a[0] {
		a[1] = ""
	}
	return a
}

// subscription is one account's endpoint on one network.
type subscription struct {
	id        string
	acct      string
	url       string
	events    []string
	secret    confpay.Secret
	createdAt time.Time
	// deliveries in creation order (the list shows them newest first).
	deliveries []*delivery
	// inFlight is set while an attempt to this subscription is queued or
	// under way; waiting holds the attempts due meanwhile, in order.
	inFlight bool
	waiting  []job
	// pending counts its deliveries not yet finished (Config.MaxPending).
	pending int
	// held is the deliveries whose attempt a reorder fault holds back
	// until the subscription's next attempt falls due (faults.go).
	held []*delivery
	seq  uint64
	net  confpay.Network
	// deletedAt is set when it is deleted (for the data directory), and
	// delSeq, its place in the order of deletions (Hooks.delSeq).
	deletedAt *time.Time
	delSeq    uint64
	h         *Hooks
}

func (sub *subscription) wants(kind string) bool {
	for _, k := range sub.events {
		if k == kind {
			return true
		}
	}
	return false
}

func (sub *subscription) view() *confpay.Webhook {
	events := make([]confpay.EventKind, len(sub.events))
	for i, e := range sub.events {
		events[i] = confpay.EventKind(e)
	}
	return &confpay.Webhook{WebhookID: sub.id, URL: sub.url, Events: events, CreatedAt: sub.createdAt}
}

// delivery is the record of one event's delivery to one subscription.
type delivery struct {
	id        string
	sub       *subscription
	ev        *event
	trigger   confpay.DeliveryTrigger
	createdAt time.Time

	status         confpay.DeliveryStatus
	attempts       int // attempts started
	responseStatus int // last HTTP status, 0 for none
	firstAttemptAt time.Time
	lastAttemptAt  time.Time
	nextAttemptAt  *time.Time
	// log is every attempt made, oldest first: one per attempt, so at
	// most maxAttempts.
	log []Attempt

	timer     *clock.Timer       // the scheduled retry or fault's hold, if any
	abort     context.CancelFunc // cancels the attempt in flight, if any
	cancelled bool               // subscription deleted or hooks stopped
	seq       uint64
	dropped   bool // trimmed or pruned (for the data directory)
}

func (d *delivery) view() *confpay.Delivery {
	v := &confpay.Delivery{
		DeliveryID:     d.id,
		EventID:        d.ev.ID,
		Event:          confpay.EventKind(d.ev.Kind()),
		Status:         d.status,
		Attempts:       d.attempts,
		RetryCount:     max(0, d.attempts-1),
		ResponseStatus: d.responseStatus,
		Trigger:        d.trigger,
	}
	if d.attempts > 0 {
		t := d.lastAttemptAt
		v.LastAttemptAt = &t
	}
	if d.nextAttemptAt != nil {
		t := *d.nextAttemptAt
		v.NextAttemptAt = &t
	}
	return v
}

// cancelLocked stops every further attempt of d.
func (d *delivery) cancelLocked() {
	d.cancelled = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.abort != nil {
		d.abort()
	}
	d.finishLocked(confpay.DeliveryFailed)
}

// finishLocked ends d with status, if it is still pending: the one place
// a delivery stops being pending.
func (d *delivery) finishLocked(status confpay.DeliveryStatus) {
	if d.status != confpay.DeliveryPending {
		return
	}
	d.status = status
	d.nextAttemptAt = nil
	d.sub.pending--
	d.noteLocked()
}

// New returns hooks with empty books and a running pool.
func New(cfg Config) *Hooks {
	if cfg.Jitter == nil {
		cfg.Jitter = defaultJitter
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	for _, b := range []struct {
		v   *int
		def int
	}{{&cfg.MaxPending, DefaultMaxPending}, {&cfg.MaxPendingPerAccount, DefaultMaxPendingPerAccount},
		{&cfg.MaxEvents, DefaultMaxEvents}, {&cfg.MaxRecords, DefaultMaxRecords}} {
		if *b.v <= 0 {
			*b.v = b.def
		}
	}
	h := &Hooks{cfg: cfg}
	h.books = map[confpay.Network]*book{confpay.NetworkTest: h.newBook(confpay.NetworkTest), confpay.NetworkLive: h.newBook(confpay.NetworkLive)}
	h.pool = h.startPool()
	return h
}

// Subscribe adds a subscription of acct on net to url for the kinds in
// events, signed with secret.
func (h *Hooks) Subscribe(net confpay.Network, acct, url string, events []string, secret confpay.Secret) (*confpay.Webhook, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.books[net]
	if len(b.byAcct[acct]) >= MaxSubscriptions {
		return nil, ErrTooMany
	}
	sub := &subscription{
		id:        names.NewID("wh_"),
		acct:      acct,
		url:       url,
		events:    append([]string(nil), events...),
		secret:    secret,
		createdAt: h.cfg.Clock.Now(),
		net:       net,
		h:         h,
	}
	h.seq++
	sub.seq = h.seq
	h.noteSub(net, sub)
	b.subs[sub.id] = sub
	b.byAcct[acct] = append(b.byAcct[acct], sub)
	return sub.view(), nil
}

// Subscriptions lists acct's live subscriptions on net, oldest first.
func (h *Hooks) Subscriptions(net confpay.Network, acct string) []*confpay.Webhook {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.books[net].byAcct[acct]
	out := make([]*confpay.Webhook, 0, len(subs))
	for _, sub := range subs {
		out = append(out, sub.view())
	}
	return out
}

// AllSubscriptions returns every live subscription on net by id.
func (h *Hooks) AllSubscriptions(net confpay.Network) map[string]confpay.Webhook {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]confpay.Webhook{}
	for id, sub := range h.books[net].subs {
		out[id] = *sub.view()
	}
	return out
}

// Unsubscribe deletes acct's subscription id on net and cancels its
// pending deliveries. Deleting it again succeeds; any other id is
// ErrNoWebhook.
func (h *Hooks) Unsubscribe(net confpay.Network, acct, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.books[net]
	if del, ok := b.deleted[id]; ok && del.acct == acct {
		return nil
	}
	sub, ok := b.subs[id]
	if !ok || sub.acct != acct {
		return ErrNoWebhook
	}
	delete(b.subs, id)
	now := h.cfg.Clock.Now()
	sub.deletedAt = &now
	h.delSeq++
	sub.delSeq = h.delSeq
	h.noteSub(net, sub)
	b.rememberDeletedLocked(acct, id, deletion{acct: acct, at: now, seq: sub.seq, order: sub.delSeq})
	list := b.byAcct[acct]
	for i, x := range list {
		if x == sub {
			b.byAcct[acct] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	h.dropWaitingLocked(sub)
	for _, d := range sub.deliveries {
		if d.status == confpay.DeliveryPending {
			d.cancelLocked()
		}
	}
	return nil
}

// Deliveries lists the delivery records of acct's subscription id on net
// from the history window, newest first: limit of them after skipping
// offset, and whether more follow. The records are kept in creation order,
// so the window is a tail of them (found by binary search) and the page a
// range of it: the work is the page's, whatever the offset.
func (h *Hooks) Deliveries(net confpay.Network, acct, id string, limit, offset int) (confpay.DeliveryList, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := confpay.DeliveryList{Deliveries: []*confpay.Delivery{}}
	sub, ok := h.books[net].subs[id]
	if !ok || sub.acct != acct {
		return out, ErrNoWebhook
	}
	since := h.cfg.Clock.Now().Add(-HistoryWindow)
	all := sub.deliveries
	offset, limit = max(offset, 0), max(limit, 0)
	first := sort.Search(len(all), func(i int) bool { return !all[i].createdAt.Before(since) })
	inWindow := len(all) - first
	if offset >= inWindow {
		return out, nil
	}
	// Newest first: the page is all[lo:hi] read backwards.
	hi := len(all) - offset
	lo := max(first, hi-limit)
	for i := hi - 1; i >= lo; i-- {
		out.Deliveries = append(out.Deliveries, all[i].view())
	}
	out.HasMore = lo > first
	return out, nil
}

// Replay sends event eventID again to acct's subscription id on net, as a
// new delivery.
func (h *Hooks) Replay(net confpay.Network, acct, id, eventID string) (*confpay.Replay, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.books[net]
	sub, ok := b.subs[id]
	if !ok || sub.acct != acct {
		return nil, ErrNoWebhook
	}
	b.indexLocked()
	e, ok := b.events[eventID]
	if !ok || !e.concerns(acct) {
		return nil, ErrNoEvent
	}
	if h.fullLocked(b, sub) {
		return nil, ErrBusy
	}
	d := h.startDeliveryLocked(b, sub, e, confpay.TriggerReplay)
	return &confpay.Replay{DeliveryID: d.id, EventID: e.ID, WebhookID: sub.id, Status: confpay.DeliveryPending}, nil
}

// Emit records es on net, in order, and starts a delivery of each to every
// live subscription of its audience that subscribed to its kind. (The
// events of one operation, such as a transfer's two sides, come in one
// call: one lock.)
func (h *Hooks) Emit(net confpay.Network, es ...Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.books[net]
	for i := range es {
		h.emitLocked(b, &es[i])
	}
}

// emitLocked records e in b and starts its deliveries.
func (h *Hooks) emitLocked(b *book, e *Event) {
	b.pruneLocked(e.At)
	ev := &event{ID: e.ID, kind: internKind(e.Kind), At: e.At, Payload: e.Payload, aud: b.audienceLocked(e.Audience)}
	h.seq++
	ev.seq = h.seq
	h.noteEvent(b.net, ev)
	b.order = append(b.order, ev) // indexed by id when a replay needs it
	for _, acct := range ev.audience() {
		if acct == "" {
			continue
		}
		b.historyLocked(acct, ev, h.cfg.MaxEvents)
		for _, sub := range b.byAcct[acct] {
			if sub.wants(e.Kind) {
				h.startDeliveryLocked(b, sub, ev, confpay.TriggerEvent)
			}
		}
	}
}

// historyLocked adds ev to acct's history and, past max events, forgets
// acct's oldest: it can no longer be replayed or read by acct, and the
// log drops it once no account of its audience keeps it.
func (b *book) historyLocked(acct string, ev *event, max int) {
	hist := append(b.history[acct], ev)
	for len(hist) > max {
		old := hist[0]
		hist[0] = nil
		hist = hist[1:]
		b.forgetLocked(old, acct)
	}
	b.history[acct] = hist
}

// forgetLocked drops e from acct's view, and from the log when no account
// of its audience still sees it.
func (b *book) forgetLocked(e *event, acct string) {
	aud := e.audience()
	kept := false
	for i, a := range aud {
		if a == acct {
			e.forgotten[i] = true
		}
		kept = kept || (a != "" && !e.forgotten[i])
	}
	b.h.noteEvent(b.net, e)
	if kept || e.gone {
		return
	}
	e.gone = true
	delete(b.events, e.ID)
	b.gone++
	if b.gone > len(b.order)/2 {
		b.compactLocked()
	}
}

// compactLocked drops the forgotten events from the log's order (the
// indexed ones stay its prefix).
func (b *book) compactLocked() {
	live := b.order[:0]
	indexed := 0
	for i, e := range b.order {
		if !e.gone {
			if i < b.indexed {
				indexed++
			}
			live = append(live, e)
		}
	}
	clear(b.order[len(live):])
	b.order = append(b.order[:0:0], live...)
	b.gone = 0
	b.indexed = indexed
}

// indexLocked adds the events recorded since the last replay to the index
// by id. (An event gone meanwhile is left out: the log no longer holds it.)
func (b *book) indexLocked() {
	for _, e := range b.order[b.indexed:] {
		if !e.gone {
			b.events[e.ID] = e
		}
	}
	b.indexed = len(b.order)
}

// rememberDeletedLocked notes that acct deleted subscription id (del),
// forgetting acct's oldest such note past MaxDeletedPerAccount: the one
// deleted first, whenever it was created.
func (b *book) rememberDeletedLocked(acct, id string, del deletion) {
	b.deleted[id] = del
	ids := append(b.deletedBy[acct], id)
	for len(ids) > MaxDeletedPerAccount {
		b.forgetDeletedLocked(ids[0])
		ids = ids[1:]
	}
	b.deletedBy[acct] = ids
}

// forgetDeletedLocked forgets the deleted subscription id: its second
// DELETE is 404 from now on. The data directory writes it (SubGone), so
// that a restart does not bring it back.
func (b *book) forgetDeletedLocked(id string) {
	delete(b.deleted, id)
	b.noteSubGone(id)
}

// fullLocked reports whether sub, or its account on b, has the most
// pending deliveries it may.
func (h *Hooks) fullLocked(b *book, sub *subscription) bool {
	if sub.pending >= h.cfg.MaxPending {
		return true
	}
	n := 0
	for _, s := range b.byAcct[sub.acct] {
		n += s.pending
	}
	return n >= h.cfg.MaxPendingPerAccount
}

// EventCount is how many events net's log holds.
func (h *Hooks) EventCount(net confpay.Network) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.books[net]
	return len(b.order) - b.gone
}

// Stop cancels every pending retry and in-flight attempt and waits for
// the attempts to end; the records stay. Close also keeps Reset from
// starting deliveries again. Neither may be called with a lock held that
// a timer takes.
func (h *Hooks) Stop() { h.stop(false) }

// Close stops the hooks for good.
func (h *Hooks) Close() { h.stop(true) }

func (h *Hooks) stop(final bool) {
	h.mu.Lock()
	if final {
		h.closed = true
	}
	p := h.pool
	h.pool = nil
	for _, b := range h.books {
		for _, sub := range b.subs {
			h.dropWaitingLocked(sub)
			for _, d := range sub.deliveries {
				if d.status == confpay.DeliveryPending {
					d.cancelLocked()
				}
			}
		}
	}
	if p != nil {
		p.cancel()
	}
	h.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Reset empties both books and starts delivering again (unless closed).
// Call Stop first so that no attempt of the old state is in flight.
func (h *Hooks) Reset() {
	h.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.books = map[confpay.Network]*book{confpay.NetworkTest: h.newBook(confpay.NetworkTest), confpay.NetworkLive: h.newBook(confpay.NetworkLive)}
	h.faults = nil
	if h.chg != nil { // the server writes the reset itself
		h.chg = &changeSet{}
	}
	if !h.closed {
		h.pool = h.startPool()
	}
}

// startDeliveryLocked records a new delivery of e to sub (on book b) and
// makes its first attempt due now; when sub or its account has the most
// pending deliveries it may, the delivery is recorded failed at once,
// with no attempt. Either way, past the bound of finished records the
// account's oldest go.
func (h *Hooks) startDeliveryLocked(b *book, sub *subscription, e *event, trigger confpay.DeliveryTrigger) *delivery {
	now := h.cfg.Clock.Now()
	created := now
	if n := len(sub.deliveries); n > 0 && created.Before(sub.deliveries[n-1].createdAt) {
		// The clock was set back: the records stay in creation order
		// by createdAt (only the history window reads it).
		created = sub.deliveries[n-1].createdAt
	}
	d := &delivery{
		id:            names.NewID("dlv_"),
		sub:           sub,
		ev:            e,
		trigger:       trigger,
		createdAt:     created,
		status:        confpay.DeliveryPending,
		nextAttemptAt: &now,
	}
	h.seq++
	d.seq = h.seq
	d.noteLocked()
	sub.deliveries = append(sub.deliveries, d)
	if h.fullLocked(b, sub) {
		d.status = confpay.DeliveryFailed // this account's receivers are too far behind
		d.nextAttemptAt = nil
	} else {
		sub.pending++
		h.dispatchLocked(d)
	}
	b.trimRecordsLocked(sub.acct, h.cfg.MaxRecords)
	return d
}

// trimRecordsLocked drops acct's oldest finished delivery records, over
// its subscriptions, down to max once they pass max by a quarter (so
// that the work is spread over many deliveries). Pending records stay:
// they are bounded by Config.MaxPendingPerAccount.
func (b *book) trimRecordsLocked(acct string, max int) {
	subs := b.byAcct[acct]
	finished := 0
	for _, sub := range subs {
		finished += len(sub.deliveries) - sub.pending
	}
	if finished <= max+max/4 {
		return
	}
	// Merge the subscriptions' records (each in creation order),
	// dropping the oldest finished ones first.
	next := make([]int, len(subs))
	drop := make([][]bool, len(subs))
	for i, sub := range subs {
		drop[i] = make([]bool, len(sub.deliveries))
	}
	for excess := finished - max; excess > 0; excess-- {
		best := -1
		for i, sub := range subs {
			for next[i] < len(sub.deliveries) && sub.deliveries[next[i]].status == confpay.DeliveryPending {
				next[i]++
			}
			if next[i] < len(sub.deliveries) && (best < 0 || sub.deliveries[next[i]].createdAt.Before(subs[best].deliveries[next[best]].createdAt)) {
				best = i
			}
		}
		drop[best][next[best]] = true
		next[best]++
	}
	for i, sub := range subs {
		kept := make([]*delivery, 0, len(sub.deliveries))
		for j, d := range sub.deliveries {
			if !drop[i][j] {
				kept = append(kept, d)
			} else {
				d.dropped = true
				d.noteLocked()
			}
		}
		sub.deliveries = kept
	}
}

// queueLocked makes d's next attempt, under fault (a delivery fault
// action, or ""), go now: to the pool, or behind the attempts to the same
// subscription under way or waiting. dispatchLocked (faults.go) is where
// an attempt falls due; this is where it is queued.
func (h *Hooks) queueLocked(d *delivery, fault string) {
	if h.pool == nil || d.cancelled {
		return
	}
	sub := d.sub
	// The key is the subscription: its attempts go one after another,
	// so a receiver's clock call waits for none of them (clock.Work.Inside).
	j := job{d: d, fault: fault, work: h.cfg.Clock.TrackWork(h.cfg.Timeout+trackSlack, sub)}
	if sub.inFlight {
		sub.waiting = append(sub.waiting, j) // at most sub.pending
		return
	}
	sub.inFlight = true
	j.at = h.cfg.Clock.Now()
	h.pool.enqueue(h, j)
}

// handOnLocked passes sub's turn to its next waiting attempt, if any.
func (h *Hooks) handOnLocked(sub *subscription) {
	if h.pool == nil {
		h.dropWaitingLocked(sub)
	}
	if len(sub.waiting) == 0 {
		sub.inFlight = false
		return
	}
	j := sub.waiting[0]
	sub.waiting[0] = job{}
	sub.waiting = sub.waiting[1:]
	j.at = h.cfg.Clock.Now()
	h.pool.enqueue(h, j)
}

// dropWaitingLocked forgets sub's waiting attempts, and those a fault
// holds back (their deliveries are cancelled by the caller).
func (h *Hooks) dropWaitingLocked(sub *subscription) {
	for _, j := range sub.waiting {
		j.work.Done()
	}
	sub.waiting = nil
	sub.held = nil
}

// attempt makes one delivery attempt: bookkeeping under the lock, the POST
// outside it, then the answer, the next step and the subscription's next
// waiting attempt under the lock.
func (h *Hooks) attempt(p *pool, j job) {
	d := j.d
	h.mu.Lock()
	if d.cancelled || h.pool != p {
		h.handOnLocked(d.sub)
		h.mu.Unlock()
		j.work.Done()
		return
	}
	start := j.at
	d.attempts++
	if d.attempts == 1 {
		d.firstAttemptAt = start
	}
	d.lastAttemptAt = start
	d.nextAttemptAt = nil
	d.noteLocked()
	ctx, cancel := context.WithTimeout(clock.WithWork(p.ctx, j.work), h.cfg.Timeout)
	d.abort = cancel
	body := d.ev.built()
	out := outgoing{url: d.sub.url, secret: d.sub.secret, eventID: d.ev.ID, attempt: d.attempts}
	payload, kind, at := d.ev.Payload, d.ev.Kind(), d.ev.At
	subID, deliveryID := d.sub.id, d.id
	h.mu.Unlock()

	if h.cfg.Durable != nil {
		h.cfg.Durable()
	}
	if body == nil {
		body = payload.Build(out.eventID, kind, at)
	}
	out.body = body
	began := clock.Mono()
	code := p.postFaulted(ctx, &out, j.fault)
	took := clock.Mono() - began
	cancel()
	h.cfg.Log.Debug("webhook delivery attempt",
		"webhook_id", subID, "event_id", out.eventID, "delivery_id", deliveryID,
		"attempt", out.attempt, "response_status", code)

	h.mu.Lock()
	if d.ev.body == nil {
		d.ev.body = &body
	}
	d.abort = nil
	d.responseStatus = code
	d.log = append(d.log, Attempt{At: start, Status: code, Duration: took, Fault: j.fault})
	d.noteLocked()
	h.recordLocked(p, d, start, code)
	h.handOnLocked(d.sub)
	changed := h.chg != nil
	h.mu.Unlock()
	if changed && h.cfg.Changed != nil {
		h.cfg.Changed() // the server writes the record (before the clock call that waits for it returns)
	}
	j.work.Done()
}

// recordLocked applies an attempt's answer: success, failure, or the next
// attempt on the clock.
func (h *Hooks) recordLocked(p *pool, d *delivery, start time.Time, code int) {
	if d.cancelled || h.pool != p {
		return
	}
	if code >= 200 && code < 300 {
		d.finishLocked(confpay.DeliverySucceeded)
		return
	}
	next, ok := retryAt(d.firstAttemptAt, start, d.attempts, h.cfg.Jitter)
	if !ok {
		d.finishLocked(confpay.DeliveryFailed)
		return
	}
	d.nextAttemptAt = &next
	d.noteLocked()
	d.timer = h.cfg.Clock.At(next, func(time.Time) {
		h.mu.Lock()
		defer h.mu.Unlock()
		d.timer = nil
		h.dispatchLocked(d)
	})
}

// pruneLocked drops the events, delivery records and deleted
// subscriptions' ids older than the history window at now, at most once
// per pruneInterval. A delivery still pending is kept, and so is its
// event.
func (b *book) pruneLocked(now time.Time) {
	if now.Sub(b.lastPrune) < pruneInterval && !now.Before(b.lastPrune) {
		return
	}
	b.lastPrune = now
	b.notePruned()
	cutoff := now.Add(-HistoryWindow)
	keep := map[*event]bool{}
	for _, sub := range b.subs {
		// The records are in creation order: the old ones are a
		// prefix, of which only the pending ones stay (wherever they
		// are: one that waits behind a receiver that never answers
		// must not keep those behind it).
		old := sort.Search(len(sub.deliveries), func(i int) bool { return !sub.deliveries[i].createdAt.Before(cutoff) })
		kept := 0
		for _, d := range sub.deliveries[:old] {
			if d.status == confpay.DeliveryPending {
				sub.deliveries[kept] = d
				kept++
			} else {
				d.dropped = true
				d.noteLocked()
			}
		}
		if kept < old {
			n := copy(sub.deliveries[kept:], sub.deliveries[old:])
			clear(sub.deliveries[kept+n:])
			sub.deliveries = append(sub.deliveries[:0:0], sub.deliveries[:kept+n]...)
		}
		for _, d := range sub.deliveries {
			if d.status == confpay.DeliveryPending {
				keep[d.ev] = true
			}
		}
	}
	// Events in the order they were recorded: the old ones (a prefix,
	// ending at the first young one) go, but for those a pending
	// delivery still needs; then the order and each account's history
	// lose every event gone (here or by the bound per account).
	for _, e := range b.order {
		if !e.At.Before(cutoff) {
			break
		}
		if !keep[e] && !e.gone {
			e.gone = true
			b.h.noteEvent(b.net, e)
			delete(b.events, e.ID)
		}
	}
	b.compactLocked()
	for acct, hist := range b.history {
		live := hist[:0]
		for _, e := range hist {
			if e.concerns(acct) {
				live = append(live, e)
			}
		}
		clear(hist[len(live):])
		if len(live) == 0 {
			delete(b.history, acct)
		} else {
			b.history[acct] = append(hist[:0:0], live...)
		}
	}
	for id, del := range b.deleted {
		if del.at.Before(cutoff) {
			b.forgetDeletedLocked(id)
		}
	}
	for acct, ids := range b.deletedBy {
		live := ids[:0]
		for _, id := range ids {
			if del, ok := b.deleted[id]; ok && del.acct == acct {
				live = append(live, id)
			}
		}
		if len(live) == 0 {
			delete(b.deletedBy, acct)
		} else {
			b.deletedBy[acct] = append(ids[:0:0], live...)
		}
	}
}

// defaultJitter moves d by a uniformly random amount within ±10 %.
func defaultJitter(d time.Duration) time.Duration {
	span := int64(d) / 10
	if span <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(2*span+1)-span)
}

// NoJitter is a Jitter that keeps every wait at its nominal length.
func NoJitter(d time.Duration) time.Duration { return d }

// retryAt says when the attempt after attempt number done (which started
// at last; the first started at first) is due, or false when done was the
// last. jitter turns a nominal wait into the actual one.
func retryAt(first, last time.Time, done int, jitter func(time.Duration) time.Duration) (time.Time, bool) {
	deadline := first.Add(RetryWindow)
	if done >= maxAttempts || !last.Before(deadline) {
		return time.Time{}, false
	}
	if done > len(retryIntervals) {
		return deadline, true
	}
	// Truncated as every instant the server answers is (a jittered
	// interval has nanoseconds, and next_attempt_at carried them).
	next := last.Add(jitter(retryIntervals[done-1])).Truncate(clock.Resolution)
	if next.Before(last) {
		next = last
	}
	if next.After(deadline) {
		next = deadline
	}
	return next, true
}
