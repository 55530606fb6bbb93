package hooks

import (
	"cmp"
	"errors"
	"slices"
	"sort"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// Persistence (the server's data directory): once Track is called, every
// change to a subscription, an event or a delivery record is noted under
// the lock, and the server takes the notes (TakeChangesInto) when it writes a
// journal record, under its own lock (server → hooks, the lock order), so
// that they reach the journal in the order they happened. Dump is the
// whole state, Restore builds it back and reschedules every pending
// delivery on the clock. The records are the whole new state of each
// changed thing; a later one replaces an earlier one.

// SubRecord is a subscription, live or deleted.
type SubRecord struct {
	Network   confpay.Network `json:"n"`
	ID        string          `json:"id"`
	Acct      string          `json:"acct"`
	URL       string          `json:"url,omitempty"`
	Events    []string        `json:"events,omitempty"`
	Secret    string          `json:"secret,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	Seq       uint64          `json:"seq"`
	// Deleted is when it was deleted (nil while live); a deleted one is
	// kept only to answer its second DELETE. DeletedSeq is its place in
	// the order of deletions (0 in a record written before it was kept:
	// then the deletion time, and the creation order, stand for it).
	Deleted    *time.Time `json:"deleted,omitempty"`
	DeletedSeq uint64     `json:"deleted_seq,omitempty"`
}

// EventRecordP is a recorded event as stored.
type EventRecordP struct {
	Network   confpay.Network `json:"n"`
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	At        time.Time       `json:"at"`
	Audience  [2]string       `json:"aud"`
	Seq       uint64          `json:"seq"`
	Forgotten [2]bool         `json:"forgot,omitempty"`
	Gone      bool            `json:"gone,omitempty"`
	// Payload is the event's payload as the server stores it
	// (Config.EncodePayload).
	Payload []byte `json:"p,omitempty"`
}

// DeliveryRecordP is a delivery record as stored.
type DeliveryRecordP struct {
	Network        confpay.Network         `json:"n"`
	ID             string                  `json:"id"`
	Sub            string                  `json:"sub"`
	Event          string                  `json:"ev"`
	Seq            uint64                  `json:"seq"`
	Trigger        confpay.DeliveryTrigger `json:"trigger"`
	CreatedAt      time.Time               `json:"created_at"`
	Status         confpay.DeliveryStatus  `json:"status"`
	Attempts       int                     `json:"attempts,omitempty"`
	ResponseStatus int                     `json:"code,omitempty"`
	FirstAttemptAt time.Time               `json:"first,omitzero"`
	LastAttemptAt  time.Time               `json:"last,omitzero"`
	NextAttemptAt  *time.Time              `json:"next,omitempty"`
	Dropped        bool                    `json:"dropped,omitempty"`
	// Log is every attempt made, oldest first.
	Log []Attempt `json:"log,omitempty"`
}

// SubGone is a deleted subscription's id the book forgot (past
// HistoryWindow or MaxDeletedPerAccount): its second DELETE is 404 from
// then on, whatever the clock does after.
type SubGone struct {
	Network confpay.Network
	ID      string
}

// Pruned is when a network's book last ran its pruning pass (at most one
// an hour of server time; zero: never), so that a restored book runs its
// next one when memory would have.
type Pruned struct {
	Network confpay.Network
	At      time.Time
}

// Changes are the notes taken since the last TakeChangesInto.
type Changes struct {
	Subs       []SubRecord
	SubsGone   []SubGone
	Events     []EventRecordP
	Deliveries []DeliveryRecordP
	Pruned     []Pruned
}

// Empty reports whether c holds nothing.
func (c *Changes) Empty() bool {
	return len(c.Subs) == 0 && len(c.SubsGone) == 0 && len(c.Events) == 0 && len(c.Deliveries) == 0 && len(c.Pruned) == 0
}

// changeSet is the notes, by thing (a thing noted twice is written once,
// in its latest state).
type changeSet struct {
	subs       map[*subscription]confpay.Network
	subsGone   []SubGone
	events     map[*event]confpay.Network
	deliveries map[*delivery]confpay.Network
	pruned     []Pruned
}

func (c *changeSet) empty() bool {
	return len(c.subs) == 0 && len(c.subsGone) == 0 && len(c.events) == 0 && len(c.deliveries) == 0 && len(c.pruned) == 0
}

// Track starts noting changes (the server has a data directory).
func (h *Hooks) Track() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chg = &changeSet{}
}

func (h *Hooks) noteSub(net confpay.Network, sub *subscription) {
	if h.chg == nil {
		return
	}
	if h.chg.subs == nil {
		h.chg.subs = map[*subscription]confpay.Network{}
	}
	h.chg.subs[sub] = net
}

// noteSubGone notes that b forgot the deleted subscription id.
func (b *book) noteSubGone(id string) {
	if c := b.h.chg; c != nil {
		c.subsGone = append(c.subsGone, SubGone{Network: b.net, ID: id})
	}
}

// notePruned notes that b ran its pruning pass at b.lastPrune.
func (b *book) notePruned() {
	if c := b.h.chg; c != nil {
		c.pruned = append(c.pruned, Pruned{Network: b.net, At: b.lastPrune})
	}
}

func (h *Hooks) noteEvent(net confpay.Network, e *event) {
	if h.chg == nil {
		return
	}
	if h.chg.events == nil {
		h.chg.events = map[*event]confpay.Network{}
	}
	h.chg.events[e] = net
}

func (d *delivery) noteLocked() {
	h := d.sub.h
	if h.chg == nil {
		return
	}
	if h.chg.deliveries == nil {
		h.chg.deliveries = map[*delivery]confpay.Network{}
	}
	h.chg.deliveries[d] = d.sub.net
}

// Dirty reports whether changes wait to be taken.
func (h *Hooks) Dirty() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chg != nil && !h.chg.empty()
}

// TakeChangesInto puts in c the changes noted since the last call, each
// thing once in its current state (events and deliveries in creation
// order), and forgets them; enc encodes an event's payload. It reuses c's
// slices: the journal keeps one Changes from record to record.
func (h *Hooks) TakeChangesInto(c *Changes, enc func(Payload) []byte) {
	c.Subs, c.SubsGone, c.Events, c.Deliveries, c.Pruned = c.Subs[:0], c.SubsGone[:0], c.Events[:0], c.Deliveries[:0], c.Pruned[:0]
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chg == nil || h.chg.empty() {
		return
	}
	// Gone after the subscription's own record (its deletion), which an
	// encoder writes first.
	c.SubsGone = append(c.SubsGone, h.chg.subsGone...)
	c.Pruned = append(c.Pruned, h.chg.pruned...)
	h.chg.subsGone, h.chg.pruned = h.chg.subsGone[:0], h.chg.pruned[:0]
	for sub, net := range h.chg.subs {
		c.Subs = append(c.Subs, subRecord(net, sub))
	}
	for e, net := range h.chg.events {
		c.Events = append(c.Events, eventRecord(net, eventState{e: e, forgotten: e.forgotten, gone: e.gone}, enc))
	}
	for d := range h.chg.deliveries {
		c.Deliveries = append(c.Deliveries, deliveryRecord(d))
	}
	slices.SortFunc(c.Events, func(a, b EventRecordP) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortFunc(c.Deliveries, func(a, b DeliveryRecordP) int { return cmp.Compare(a.Seq, b.Seq) })
	// The maps are kept for the next notes: one per record made them anew.
	clear(h.chg.subs)
	clear(h.chg.events)
	clear(h.chg.deliveries)
}

func subRecord(net confpay.Network, sub *subscription) SubRecord {
	return SubRecord{Network: net, ID: sub.id, Acct: sub.acct, URL: sub.url, Events: sub.events, Secret: sub.secret.Reveal(),
		CreatedAt: sub.createdAt, Seq: sub.seq, Deleted: sub.deletedAt, DeletedSeq: sub.delSeq}
}

// eventRecord is the record of an event in state s. It reads of s.e only
// what never changes once the event is shared (eventState), so it may run
// without h.mu, and so may enc.
func eventRecord(net confpay.Network, s eventState, enc func(Payload) []byte) EventRecordP {
	e := s.e
	return EventRecordP{Network: net, ID: e.ID, Kind: e.Kind(), At: e.At, Audience: *e.aud, Seq: e.seq,
		Forgotten: s.forgotten, Gone: s.gone, Payload: enc(e.Payload)}
}

func deliveryRecord(d *delivery) DeliveryRecordP {
	r := DeliveryRecordP{Network: d.sub.net, ID: d.id, Sub: d.sub.id, Event: d.ev.ID, Seq: d.seq, Trigger: d.trigger,
		CreatedAt: d.createdAt, Status: d.status, Attempts: d.attempts, ResponseStatus: d.responseStatus,
		FirstAttemptAt: d.firstAttemptAt, LastAttemptAt: d.lastAttemptAt, Dropped: d.dropped, Log: slices.Clone(d.log)}
	if d.nextAttemptAt != nil {
		t := *d.nextAttemptAt
		r.NextAttemptAt = &t
	}
	return r
}

// Dump returns the whole state of net: live subscriptions and the
// deleted ones still remembered, the events (those the log holds, and
// those gone that a delivery record still names) and the delivery
// records, each in creation order, and when the book last pruned (one
// Pruned, its time zero when the book never did); and how long it held
// h.mu. The state is as of one instant, under h.mu, which it holds only
// to copy what may change after (dumpLocked); it encodes the payloads
// (enc) and sorts after letting go. enc runs without h.mu: it may read
// only what an event's payload holds from its creation on.
func (h *Hooks) Dump(net confpay.Network, enc func(Payload) []byte) (Changes, time.Duration) {
	h.mu.Lock()
	t0 := time.Now()
	c, evs := h.dumpLocked(net)
	held := time.Since(t0)
	h.mu.Unlock()
	c.Events = make([]EventRecordP, 0, len(evs))
	var seen map[*event]bool // the gone ones, which several deliveries may name
	for _, s := range evs {
		if s.gone {
			if seen[s.e] {
				continue
			}
			if seen == nil {
				seen = map[*event]bool{}
			}
			seen[s.e] = true
		}
		c.Events = append(c.Events, eventRecord(net, s, enc))
	}
	slices.SortFunc(c.Events, func(a, b EventRecordP) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortStableFunc(c.Subs, func(a, b SubRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortFunc(c.Deliveries, func(a, b DeliveryRecordP) int { return cmp.Compare(a.Seq, b.Seq) })
	return c, held
}

// eventState is an event as Dump found it under h.mu: the event (whose
// id, kind, time, audience, sequence number and payload are set before
// it is shared and never change) and the fields that change after.
type eventState struct {
	e         *event
	forgotten [2]bool
	gone      bool
}

// dumpLocked is Dump's part under h.mu: the subscription, deletion,
// delivery and pass records (copies: a delivery's status and attempt log
// change, a subscription is marked deleted), and the events by pointer
// with their changing fields, the log's in its order, then each gone one
// a delivery names (once per delivery). Nothing is sorted or encoded.
func (h *Hooks) dumpLocked(net confpay.Network) (Changes, []eventState) {
	b := h.books[net]
	var c Changes
	evs := make([]eventState, 0, len(b.order)-b.gone)
	for _, e := range b.order {
		if !e.gone {
			evs = append(evs, eventState{e: e, forgotten: e.forgotten})
		}
	}
	for _, list := range b.byAcct {
		for _, sub := range list {
			c.Subs = append(c.Subs, subRecord(net, sub))
			for _, d := range sub.deliveries {
				if d.ev.gone { // not in the log: a live event is
					evs = append(evs, eventState{e: d.ev, forgotten: d.ev.forgotten, gone: true})
				}
				c.Deliveries = append(c.Deliveries, deliveryRecord(d))
			}
		}
	}
	for id, del := range b.deleted {
		at := del.at
		c.Subs = append(c.Subs, SubRecord{Network: net, ID: id, Acct: del.acct, CreatedAt: at, Seq: del.seq, Deleted: &at, DeletedSeq: del.order})
	}
	c.Pruned = []Pruned{{Network: net, At: b.lastPrune}}
	return c, evs
}

// ErrInconsistent is returned by Restore when the records do not fit
// together.
var ErrInconsistent = errors.New("hooks: the stored webhook records are inconsistent")

// Restore replaces net's state by the records (the latest of each thing,
// any order) and schedules each pending delivery: at its next attempt
// time, or now when that has passed or an attempt was under way. The
// deleted subscriptions are those the records hold (a forgotten one is
// not in them: SubGone), whatever the clock says, and the book's last
// pruning pass is the latest of c.Pruned (a zero one: it never ran).
// Records without any Pruned are of a build that kept neither (it forgot
// a deleted id past HistoryWindow without a record): as that build did,
// the deleted ones past HistoryWindow on the clock are dropped and the
// pass counts as run now. dec turns a stored payload back into a
// Payload. Deliveries start only once the server answers (the pool is
// running already).
func (h *Hooks) Restore(net confpay.Network, c Changes, dec func(EventRecordP) (Payload, error)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.newBook(net)
	subs := append([]SubRecord(nil), c.Subs...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Seq < subs[j].Seq })
	byID := map[string]*subscription{}
	var deleted []SubRecord
	now := h.cfg.Clock.Now()
	older := !slices.ContainsFunc(c.Pruned, func(p Pruned) bool { return p.Network == net })
	for _, r := range subs {
		if r.Seq > h.seq {
			h.seq = r.Seq
		}
		if r.Deleted != nil {
			h.delSeq = max(h.delSeq, r.DeletedSeq)
			if !older || !r.Deleted.Before(now.Add(-HistoryWindow)) {
				deleted = append(deleted, r)
			}
			continue
		}
		sub := &subscription{id: r.ID, acct: r.Acct, url: r.URL, events: r.Events, secret: confpay.Secret(r.Secret), createdAt: r.CreatedAt, seq: r.Seq, net: net, h: h}
		if r.Acct == "" || r.URL == "" || len(b.byAcct[r.Acct]) >= MaxSubscriptions {
			return ErrInconsistent
		}
		b.subs[sub.id] = sub
		b.byAcct[sub.acct] = append(b.byAcct[sub.acct], sub)
		byID[sub.id] = sub
	}
	// The deleted ones in the order they were deleted, as memory
	// remembered them: past MaxDeletedPerAccount the same ones are
	// forgotten. (A record without its place, from before it was kept,
	// comes first, by its deletion time, then its creation: a deletion
	// with a place came after it.)
	slices.SortStableFunc(deleted, func(a, b SubRecord) int {
		return cmp.Or(cmp.Compare(a.DeletedSeq, b.DeletedSeq), a.Deleted.Compare(*b.Deleted), cmp.Compare(a.Seq, b.Seq))
	})
	// Only the last MaxDeletedPerAccount of an account's are remembered
	// (more: a build that forgot the older ones without a record), so
	// that none is noted as forgotten by the restore itself.
	later := map[string]int{} // by account: how many are deleted after
	skip := make([]bool, len(deleted))
	for i := len(deleted) - 1; i >= 0; i-- {
		skip[i] = later[deleted[i].Acct] >= MaxDeletedPerAccount
		later[deleted[i].Acct]++
	}
	for i, r := range deleted {
		if skip[i] {
			continue
		}
		b.rememberDeletedLocked(r.Acct, r.ID, deletion{acct: r.Acct, at: *r.Deleted, seq: r.Seq, order: r.DeletedSeq})
	}
	evs := append([]EventRecordP(nil), c.Events...)
	sort.Slice(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
	events := map[string]*event{}
	for _, r := range evs {
		if r.Seq > h.seq {
			h.seq = r.Seq
		}
		p, err := dec(r)
		if err != nil {
			return err
		}
		e := &event{ID: r.ID, kind: internKind(r.Kind), At: r.At, Payload: p, aud: b.audienceLocked(r.Audience), forgotten: r.Forgotten, gone: r.Gone, seq: r.Seq}
		events[e.ID] = e
		if e.gone {
			continue
		}
		b.order = append(b.order, e) // indexed by id when a replay needs it
		for i, acct := range e.audience() {
			if acct != "" && !e.forgotten[i] {
				b.history[acct] = append(b.history[acct], e)
			}
		}
	}
	ds := append([]DeliveryRecordP(nil), c.Deliveries...)
	sort.Slice(ds, func(i, j int) bool { return ds[i].Seq < ds[j].Seq })
	for _, r := range ds {
		if r.Seq > h.seq {
			h.seq = r.Seq
		}
		if r.Dropped {
			continue
		}
		sub := byID[r.Sub]
		if sub == nil {
			continue // its subscription was deleted: its records went with it
		}
		e := events[r.Event]
		if e == nil {
			return ErrInconsistent
		}
		d := &delivery{id: r.ID, sub: sub, ev: e, trigger: r.Trigger, createdAt: r.CreatedAt, status: r.Status, attempts: r.Attempts,
			responseStatus: r.ResponseStatus, firstAttemptAt: r.FirstAttemptAt, lastAttemptAt: r.LastAttemptAt, seq: r.Seq,
			log: slices.Clone(r.Log)}
		if len(d.log) > maxAttempts {
			return ErrInconsistent
		}
		sub.deliveries = append(sub.deliveries, d)
		switch r.Status {
		case confpay.DeliverySucceeded, confpay.DeliveryFailed:
			continue
		case confpay.DeliveryPending:
		default:
			return ErrInconsistent
		}
		sub.pending++
		if r.NextAttemptAt != nil && r.NextAttemptAt.After(now) {
			next := *r.NextAttemptAt
			d.nextAttemptAt = &next
			d.timer = h.cfg.Clock.At(next, func(time.Time) {
				h.mu.Lock()
				defer h.mu.Unlock()
				d.timer = nil
				h.dispatchLocked(d)
			})
			continue
		}
		// Due, or an attempt was under way when the server stopped: it
		// is made again now (at least once).
		d.nextAttemptAt = &now
		h.dispatchLocked(d)
	}
	for _, sub := range byID {
		sort.SliceStable(sub.deliveries, func(i, j int) bool { return sub.deliveries[i].seq < sub.deliveries[j].seq })
	}
	for _, p := range c.Pruned {
		if p.Network == net && p.At.After(b.lastPrune) {
			b.lastPrune = p.At
		}
	}
	if older {
		b.lastPrune = now
	}
	h.books[net] = b
	return nil
}
