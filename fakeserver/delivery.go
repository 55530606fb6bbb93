package fakeserver

import (
	"net/http"

	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
)

// Webhook deliveries are internal/hooks' job: subscriptions, the event log,
// the delivery records, the attempts (each on a goroutine of its own, so
// that no receiver waits for another's) and the retry schedule, under
// their own lock. The server hands it events (events.go), the
// handlers of /v1/webhooks call it (webhooks.go), and this file builds it:
// the transport every POST goes through.
//
// Schedule: after the first attempt, retries follow 5 s, 5 min, 30 min,
// 2 h, 5 h and 10 h after the previous attempt, each with ±10 % jitter, and
// a last attempt exactly 24 h after the first. A 2xx answer within the
// delivery timeout (10 s by default, real time) is success; anything else
// (another status, a timeout, a refused connection, a redirect, a dial the
// self-SSRF guard refused: see selfguard.go) is a failure.

// newHooks builds the server's webhook machinery, delivering.
func (s *Server) newHooks() *hooks.Hooks {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil              // never a proxy from the environment
	tr.DialContext = s.dialer() // refuses the server's own listeners (selfguard.go)
	if s.opts.deliveryTLS != nil {
		tr.TLSClientConfig = s.opts.deliveryTLS.Clone()
	}
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 64
	cfg := hooks.Config{
		Clock:     s.clock,
		Timeout:   s.opts.deliveryTimeout,
		Transport: hookTransport(receiverRouter{base: tr, rs: &s.receivers}),
		Log:       s.log,
		Changed:   s.writeHooks,   // persist_hooks.go
		Durable:   s.hooksDurable, // persist.go

		MaxPending:           s.opts.hookBounds.pending,
		MaxPendingPerAccount: s.opts.hookBounds.pendingPerAccount,
		MaxEvents:            s.opts.hookBounds.events,
		MaxRecords:           s.opts.hookBounds.records,
		Chaos:                s.chaos.deliveryFault,
	}
	if s.opts.noDeliveryJitter {
		cfg.Jitter = hooks.NoJitter
	}
	return hooks.New(cfg)
}
