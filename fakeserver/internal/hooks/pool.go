package hooks

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
	"github.com/confpay/confpay-go/webhookverify"
)

// maxDrainBytes is how much of a receiver's answer is read (and
// discarded) so that its connection can be reused.
const maxDrainBytes = 64 << 10

// UserAgent is the User-Agent of every delivery attempt. The fakeserver's
// admin interface refuses any request that carries it (or a signature
// header), on this server and on any other, so that no delivery, however
// it is routed, ever acts on /_fake.
const UserAgent = "confpay-fakeserver-webhooks"

// job is one attempt handed on: at is when it was due (the instant its
// record shows); fault is the delivery fault it was matched with when it
// fell due ("" for none); work is its tracking on the clock, which the
// request's context carries (clock.WithWork) so that an in-process
// receiver's clock calls never wait for their own delivery.
type job struct {
	d     *delivery
	at    time.Time
	fault string
	work  *clock.Work
}

// pool makes the attempts, each on a goroutine of its own from the moment
// it is due: nothing is queued behind another subscription's attempt, so
// a receiver that is slow or never answers occupies exactly one
// goroutine (and one connection) and delays no other subscription's
// deliveries, whatever the number of such receivers. Each subscription
// has at most one attempt in flight (Hooks.dispatchLocked), so the
// attempts in flight are at most the live subscriptions (MaxSubscriptions
// per account and network).
type pool struct {
	client *http.Client
	// ctx is cancelled when the pool stops; every request derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex // a leaf: nothing is called while it is held
	stopped bool
	wg      sync.WaitGroup
}

// startPool starts a new pool.
func (h *Hooks) startPool() *pool {
	p := &pool{
		client: &http.Client{
			Transport: h.cfg.Transport,
			// A redirect is an answer like any other: not 2xx, a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// enqueue starts j's attempt without blocking. A stopped pool drops it.
func (p *pool) enqueue(h *Hooks, j job) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		j.work.Done()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		h.attempt(p, j)
	}()
}

// stop waits for the attempts in flight (p.ctx must already be
// cancelled, which aborts their requests).
func (p *pool) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
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
	req.Header.Set("User-Agent", UserAgent)
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
