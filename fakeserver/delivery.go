package fakeserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// Webhook deliveries: the worker pool, the retry schedule and the records.
//
// A delivery is one event sent to one subscription: the first delivery of
// an event (trigger event) or a replay (trigger replay). Each attempt is a
// real HTTP POST made by one of a bounded pool of workers, outside s.mu:
// the worker copies what it needs under s.mu, sends, then records the
// answer under s.mu and, on failure, schedules the next attempt on the
// server's clock. The delivery record itself is domain state under s.mu.
//
// Attempts to one subscription are made one at a time, in the order they
// fall due (first attempts in the order the events happened, retries when
// their timer fires), so a receiver that answers at once sees events in
// order; attempts to different subscriptions run in parallel. A retry
// never holds back later events: it queues behind what is due when it is.
//
// Every attempt is tracked on the clock (Clock.Track) from the moment it is
// queued until its answer is recorded and its retry scheduled, so Advance,
// Set, RunDue (Server.Sync) and WaitIdle wait for it: a virtual-clock test
// sees each retry at its exact scheduled instant. The first attempt is
// queued when the event is emitted (or the replay asked for), with no need
// for the clock to move.
//
// Schedule: after the first attempt, retries follow 5 s, 5 min, 30 min,
// 2 h, 5 h and 10 h after the previous attempt, each with ±10 % jitter, and
// a last attempt exactly 24 h after the first. No attempt is ever later
// than that 24 h mark; after it the delivery is failed. A 2xx answer within
// the delivery timeout (10 s by default, real time) is success; anything
// else (another status, a timeout, a refused connection, a redirect, a
// dial the self-SSRF guard refused: see selfguard.go) is a failure. The
// client follows no redirect.
//
// Deleting a subscription cancels its pending retries and in-flight
// requests at once. stopDeliveries (Close, Reset) cancels everything.

// retryIntervals are the waits after attempts 1 to 6.
var retryIntervals = [...]time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
}

const (
	// maxAttempts counts the first attempt, the six retries above and the
	// last one at the 24 h mark.
	maxAttempts = len(retryIntervals) + 2
	// retryWindow is how long after its first attempt a delivery is tried.
	retryWindow = 24 * time.Hour
	// historyWindow is how far back the deliveries list reaches.
	historyWindow = 30 * 24 * time.Hour
	// maxDrainBytes is how much of a receiver's answer is read (and
	// discarded) so that its connection can be reused.
	maxDrainBytes = 64 << 10

	triggerEvent  = confpay.TriggerEvent
	triggerReplay = confpay.TriggerReplay
)

// defaultJitter moves d by a uniformly random amount within ±10 %.
func defaultJitter(d time.Duration) time.Duration {
	span := int64(d) / 10
	if span <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(2*span+1)-span)
}

// retryAt says when the attempt after attempt number done (which started at
// last; the first started at first) is due, or false when done was the
// last. jitter turns a nominal wait into the actual one.
func retryAt(first, last time.Time, done int, jitter func(time.Duration) time.Duration) (time.Time, bool) {
	deadline := first.Add(retryWindow)
	if done >= maxAttempts || !last.Before(deadline) {
		return time.Time{}, false
	}
	if done > len(retryIntervals) {
		return deadline, true
	}
	next := last.Add(jitter(retryIntervals[done-1]))
	if next.Before(last) {
		next = last
	}
	if next.After(deadline) {
		next = deadline
	}
	return next, true
}

// delivery is the record of one event's delivery to one subscription.
// Guarded by s.mu.
type delivery struct {
	id        string
	sub       *subscription
	ev        *event
	trigger   confpay.DeliveryTrigger
	createdAt time.Time

	status         confpay.DeliveryStatus // confpay.DeliveryPending, Succeeded or Failed
	attempts       int                    // attempts started
	responseStatus int                    // last HTTP status, 0 for none
	firstAttemptAt time.Time
	lastAttemptAt  time.Time
	nextAttemptAt  *time.Time

	timer     *clock.Timer       // the scheduled retry, if any
	abort     context.CancelFunc // cancels the attempt in flight, if any
	cancelled bool               // subscription deleted or server stopped
}

func (d *delivery) view() *confpay.Delivery {
	v := &confpay.Delivery{
		DeliveryID:     d.id,
		EventID:        d.ev.id,
		Event:          confpay.EventKind(d.ev.kind),
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

// cancelLocked stops every further attempt of d: its scheduled retry and
// the request in flight.
func (d *delivery) cancelLocked() {
	d.cancelled = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.abort != nil {
		d.abort()
	}
	if d.status == confpay.DeliveryPending {
		d.status = confpay.DeliveryFailed
	}
	d.nextAttemptAt = nil
}

// deliveryJob is one attempt waiting for a worker; done ends its tracking
// on the clock.
type deliveryJob struct {
	d    *delivery
	done func()
}

// deliveryPool is the server's bounded set of delivery workers, fed by an
// unbounded queue (so that queueing under s.mu never blocks).
type deliveryPool struct {
	client  *http.Client
	timeout time.Duration
	// jitter turns a nominal retry wait into the actual one; tests replace
	// it (under s.mu) to assert exact times.
	jitter func(time.Duration) time.Duration
	// ctx is cancelled (under s.mu) when the pool stops; every request
	// derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []deliveryJob
	stopped bool
	wg      sync.WaitGroup
}

func newDeliveryPool(timeout time.Duration, tlsConfig *tls.Config, dial func(context.Context, string, string) (net.Conn, error)) *deliveryPool {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil        // never a proxy from the environment
	tr.DialContext = dial // refuses the server's own listeners (selfguard.go)
	if tlsConfig != nil {
		tr.TLSClientConfig = tlsConfig.Clone()
	}
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 64
	p := &deliveryPool{
		client: &http.Client{
			Transport: hookTransport(tr),
			// A redirect is an answer like any other: not 2xx, so a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		timeout: timeout,
		jitter:  defaultJitter,
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.cond = sync.NewCond(&p.mu)
	return p
}

// startDeliveries starts the delivery workers. It is called by resetLocked
// (from NewServer and Reset) and does not take s.mu.
func (s *Server) startDeliveries() {
	p := newDeliveryPool(s.opts.deliveryTimeout, s.opts.deliveryTLS, s.dialer())
	if s.opts.noDeliveryJitter {
		p.jitter = func(d time.Duration) time.Duration { return d }
	}
	for _, n := range s.nets {
		n.hooks.pool = p
	}
	workers := max(1, s.opts.deliveryWorkers)
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				j, ok := p.next()
				if !ok {
					return
				}
				s.attempt(p, j)
			}
		}()
	}
}

// stopDeliveries cancels every pending retry and in-flight request and
// waits for the workers to exit. It takes s.mu, so callers must not hold
// it. Calling it twice is harmless.
func (s *Server) stopDeliveries() {
	s.mu.Lock()
	var p *deliveryPool
	for _, n := range s.nets {
		if n.hooks.pool != nil {
			p = n.hooks.pool
		}
		n.hooks.pool = nil
		for _, sub := range n.hooks.subs {
			sub.dropWaitingLocked()
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
	s.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// next waits for a job; false means the pool stopped.
func (p *deliveryPool) next() (deliveryJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) == 0 && !p.stopped {
		p.cond.Wait()
	}
	if p.stopped {
		return deliveryJob{}, false
	}
	j := p.queue[0]
	p.queue[0] = deliveryJob{}
	p.queue = p.queue[1:]
	return j, true
}

// enqueue hands a job to the workers without blocking. A stopped pool
// drops it.
func (p *deliveryPool) enqueue(j deliveryJob) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		j.done()
		return
	}
	p.queue = append(p.queue, j)
	p.mu.Unlock()
	p.cond.Signal()
}

// stop ends the workers (p.ctx must already be cancelled, which aborts the
// requests in flight), drops the queued jobs and waits.
func (p *deliveryPool) stop() {
	p.mu.Lock()
	p.stopped = true
	rest := p.queue
	p.queue = nil
	p.mu.Unlock()
	p.cond.Broadcast()
	for _, j := range rest {
		j.done()
	}
	p.wg.Wait()
	p.client.CloseIdleConnections()
}

// startDeliveryLocked records a new delivery of e to sub and queues its
// first attempt at once.
func (s *Server) startDeliveryLocked(n *network, sub *subscription, e *event, trigger confpay.DeliveryTrigger) *delivery {
	now := s.clock.Now()
	d := &delivery{
		id:            names.NewID("dlv_"),
		sub:           sub,
		ev:            e,
		trigger:       trigger,
		createdAt:     now,
		status:        confpay.DeliveryPending,
		nextAttemptAt: &now,
	}
	sub.deliveries = append(sub.deliveries, d)
	s.dispatchLocked(n, d)
	return d
}

// dispatchLocked makes d's next attempt due now. The attempt is tracked on
// the clock from here until its answer is recorded. Attempts to one
// subscription are made one at a time, in the order they fall due, so a
// receiver that answers at once sees events in the order they happened; an
// attempt due while another to the same subscription is in flight waits
// for it.
func (s *Server) dispatchLocked(n *network, d *delivery) {
	p := n.hooks.pool
	if p == nil || d.cancelled {
		return
	}
	j := deliveryJob{d: d, done: s.clock.Track()}
	sub := d.sub
	if sub.inFlight {
		sub.waiting = append(sub.waiting, j)
		return
	}
	sub.inFlight = true
	p.enqueue(j)
}

// handOnLocked passes sub's turn to its next waiting attempt, if any.
func (s *Server) handOnLocked(p *deliveryPool, sub *subscription) {
	if p.ctx.Err() != nil {
		sub.dropWaitingLocked()
	}
	if len(sub.waiting) == 0 {
		sub.inFlight = false
		return
	}
	j := sub.waiting[0]
	sub.waiting[0] = deliveryJob{}
	sub.waiting = sub.waiting[1:]
	p.enqueue(j)
}

// dropWaitingLocked forgets sub's waiting attempts (the subscription is
// deleted or the pool stopped).
func (sub *subscription) dropWaitingLocked() {
	for _, j := range sub.waiting {
		j.done()
	}
	sub.waiting = nil
}

// outgoing is what one attempt sends, copied out from under s.mu.
type outgoing struct {
	url     string
	body    []byte
	secret  confpay.Secret
	eventID string
	attempt int
}

// attempt makes one delivery attempt: bookkeeping under s.mu, the POST
// outside it, then the answer, the next step and the subscription's next
// waiting attempt under s.mu.
func (s *Server) attempt(p *deliveryPool, j deliveryJob) {
	defer j.done()
	d := j.d
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.handOnLocked(p, d.sub)
	if d.cancelled || p.ctx.Err() != nil {
		return
	}
	start := s.clock.Now()
	d.attempts++
	if d.attempts == 1 {
		d.firstAttemptAt = start
	}
	d.lastAttemptAt = start
	d.nextAttemptAt = nil
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	d.abort = cancel
	out := outgoing{url: d.sub.url, body: d.ev.payload(), secret: d.sub.secret, eventID: d.ev.id, attempt: d.attempts}

	subID, deliveryID := d.sub.id, d.id
	s.mu.Unlock()
	code := p.post(ctx, &out)
	cancel()
	s.log.Debug("webhook delivery attempt",
		"webhook_id", subID, "event_id", out.eventID, "delivery_id", deliveryID,
		"attempt", out.attempt, "response_status", code)
	s.mu.Lock()

	d.abort = nil
	d.responseStatus = code
	if d.cancelled || p.ctx.Err() != nil {
		return
	}
	if code >= 200 && code < 300 {
		d.status = confpay.DeliverySucceeded
		return
	}
	next, ok := retryAt(d.firstAttemptAt, start, d.attempts, p.jitter)
	if !ok {
		d.status = confpay.DeliveryFailed
		return
	}
	d.nextAttemptAt = &next
	n := d.sub.net
	d.timer = s.clock.At(next, func(time.Time) {
		s.mu.Lock()
		defer s.mu.Unlock()
		d.timer = nil
		s.dispatchLocked(n, d)
	})
}

// post sends one signed attempt and returns the HTTP status, or 0 when no
// answer came (timeout, refused connection, cancelled).
func (p *deliveryPool) post(ctx context.Context, out *outgoing) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, out.url, bytes.NewReader(out.body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "confpay-fakeserver-webhooks")
	req.Header.Set(webhookverify.SignatureHeader, webhookverify.Sign(out.secret.Reveal(), out.body))
	req.Header.Set(webhookverify.EventIDHeader, out.eventID)
	req.Header.Set(webhookverify.AttemptHeader, strconv.Itoa(out.attempt))
	resp, err := p.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
	_ = resp.Body.Close()
	return resp.StatusCode
}
