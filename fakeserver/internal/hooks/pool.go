package hooks

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// maxDrainBytes is how much of a receiver's answer is read (and
// discarded) so that its connection can be reused.
const maxDrainBytes = 64 << 10

// job is one attempt waiting for a worker; done ends its tracking on the
// clock.
type job struct {
	d    *delivery
	done func()
}

// pool is the bounded set of delivery workers. Its queue is one lane per
// account: workers take from the lanes in turn, and never give one account
// more than half the workers (at least one), so a receiver that never
// answers occupies at most its account's share. Each subscription has at
// most one job in the pool (Hooks.dispatchLocked), so within a lane the
// subscriptions take turns too.
type pool struct {
	client     *http.Client
	perAccount int
	// ctx is cancelled when the pool stops; every request derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex // a leaf: nothing is called while it is held
	cond    *sync.Cond
	lanes   map[string]*lane // accounts with jobs queued or running
	ring    []*lane          // lanes with jobs queued, in turn order
	stopped bool
	wg      sync.WaitGroup
}

// lane is one account's queued jobs and how many of its jobs run.
type lane struct {
	acct   string
	queued []job
	busy   int
	inRing bool
}

// startPool starts the workers of a new pool.
func (h *Hooks) startPool() *pool {
	p := &pool{
		client: &http.Client{
			Transport: h.cfg.Transport,
			// A redirect is an answer like any other: not 2xx, a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		perAccount: max(1, h.cfg.Workers/2),
		lanes:      map[string]*lane{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.cond = sync.NewCond(&p.mu)
	for range h.cfg.Workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				acct, j, ok := p.next()
				if !ok {
					return
				}
				h.attempt(p, j)
				p.finish(acct)
			}
		}()
	}
	return p
}

// enqueue hands a job to the workers without blocking. A stopped pool
// drops it.
func (p *pool) enqueue(acct string, j job) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		j.done()
		return
	}
	l := p.lanes[acct]
	if l == nil {
		l = &lane{acct: acct}
		p.lanes[acct] = l
	}
	l.queued = append(l.queued, j)
	if !l.inRing {
		l.inRing = true
		p.ring = append(p.ring, l)
	}
	p.mu.Unlock()
	p.cond.Broadcast()
}

// next waits for a job whose account is under its share of the workers,
// taking the lanes in turn; false means the pool stopped.
func (p *pool) next() (string, job, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.stopped {
			return "", job{}, false
		}
		for i, l := range p.ring {
			if l.busy >= p.perAccount {
				continue
			}
			j := l.queued[0]
			l.queued[0] = job{}
			l.queued = l.queued[1:]
			l.busy++
			// The lane goes to the back of the turn order, or leaves
			// it when it has nothing more queued.
			p.ring = append(p.ring[:i:i], p.ring[i+1:]...)
			if len(l.queued) > 0 {
				p.ring = append(p.ring, l)
			} else {
				l.inRing = false
			}
			return l.acct, j, true
		}
		p.cond.Wait()
	}
}

// finish ends a job of acct: its worker is free for any account.
func (p *pool) finish(acct string) {
	p.mu.Lock()
	if l := p.lanes[acct]; l != nil {
		l.busy--
		if l.busy == 0 && !l.inRing {
			delete(p.lanes, acct)
		}
	}
	p.mu.Unlock()
	p.cond.Broadcast()
}

// stop ends the workers (p.ctx must already be cancelled, which aborts the
// requests in flight), drops the queued jobs and waits.
func (p *pool) stop() {
	p.mu.Lock()
	p.stopped = true
	var rest []job
	for _, l := range p.ring {
		rest = append(rest, l.queued...)
		l.queued = nil
	}
	p.ring = nil
	p.mu.Unlock()
	p.cond.Broadcast()
	for _, j := range rest {
		j.done()
	}
	p.wg.Wait()
	p.client.CloseIdleConnections()
}

// outgoing is what one attempt sends, copied out from under the lock.
type outgoing struct {
	url     string
	body    []byte
	secret  confpay.Secret
	eventID string
	attempt int
}

// post sends one signed attempt and returns the HTTP status, or 0 when no
// answer came (timeout, refused connection, cancelled).
func (p *pool) post(ctx context.Context, out *outgoing) int {
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
