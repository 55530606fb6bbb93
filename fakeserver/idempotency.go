package fakeserver

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// idempotencyTTL is how long a first answer is kept for replay.
const idempotencyTTL = 24 * time.Hour

// idempotencyStore keeps first answers by (account, network, key), for
// every POST, PATCH and DELETE that carries an Idempotency-Key:
//
//   - the same key with the same method, path and body replays the stored
//     status and body, with Idempotent-Replayed: true;
//   - the same key with another method, path or body is 422
//     idempotency_key_reused;
//   - the same key while the first request still runs is 409
//     idempotency_key_in_use.
//
// Only answers of requests that ran against the state are kept (see
// keepAnswer); any other answer forgets the key, so that the caller can fix
// its body and send again with the same key. Entries expire 24 hours (server time) after the first request. The store
// has its own lock; it never holds it while a handler runs.
type idempotencyStore struct {
	mu      sync.Mutex
	entries map[string]*idemEntry
	order   []*idemEntry // oldest first, for expiry
}

type idemEntry struct {
	scope    string
	method   string
	path     string
	bodyHash [32]byte
	created  time.Time

	done   bool
	status int
	body   []byte
}

func (st *idempotencyStore) reset() {
	st.mu.Lock()
	st.entries = map[string]*idemEntry{}
	st.order = nil
	st.mu.Unlock()
}

// expireLocked drops entries older than the TTL. st.mu must be held.
func (st *idempotencyStore) expireLocked(now time.Time) {
	i := 0
	for ; i < len(st.order); i++ {
		e := st.order[i]
		if now.Sub(e.created) < idempotencyTTL {
			break
		}
		if st.entries[e.scope] == e {
			delete(st.entries, e.scope)
		}
	}
	if i > 0 {
		st.order = append(st.order[:0:0], st.order[i:]...)
	}
}

// serveIdempotent runs a mutating call under its Idempotency-Key, if any.
func (s *Server) serveIdempotent(c *call, rt *route) {
	keys := c.r.Header.Values("Idempotency-Key")
	if len(keys) == 0 {
		s.finish(c, rt.h)
		return
	}
	if len(keys) > 1 || !confpay.ValidIdempotencyKey(keys[0]) {
		s.writeError(c, errInvalid("Idempotency-Key", "Idempotency-Key must be one header of 1 to 255 printable ASCII characters"))
		return
	}
	st := &s.idempotent
	scope := c.acct.id + "\x00" + string(c.net.name) + "\x00" + keys[0]
	target := c.r.URL.EscapedPath()
	if c.r.URL.RawQuery != "" {
		target += "?" + c.r.URL.RawQuery
	}
	sum := sha256.Sum256(c.body)
	now := s.clock.Now()

	st.mu.Lock()
	st.expireLocked(now)
	if e := st.entries[scope]; e != nil && now.Sub(e.created) >= idempotencyTTL {
		// Expired, though expireLocked stopped at a younger entry before
		// it in the order (the clock was set back in between).
		delete(st.entries, scope)
	}
	if e := st.entries[scope]; e != nil {
		switch {
		case e.method != c.r.Method || e.path != target || e.bodyHash != sum:
			st.mu.Unlock()
			s.writeError(c, newError(http.StatusUnprocessableEntity, confpay.CodeIdempotencyKeyReused,
				"this Idempotency-Key was used with another method, path or body").withParam("Idempotency-Key"))
		case !e.done:
			st.mu.Unlock()
			e := newError(http.StatusConflict, confpay.CodeIdempotencyKeyInUse,
				"a request with this Idempotency-Key is still being processed").withParam("Idempotency-Key")
			e.retryAfter = "1"
			s.writeError(c, e)
		default:
			status, body := e.status, e.body
			st.mu.Unlock()
			c.header.Set("Idempotent-Replayed", "true")
			s.writeRaw(c, status, body)
		}
		return
	}
	e := &idemEntry{scope: scope, method: c.r.Method, path: target, bodyHash: sum, created: now}
	st.entries[scope] = e
	st.order = append(st.order, e)
	st.mu.Unlock()

	kept := false
	defer func() {
		if !kept { // not kept, or a panic: forget the key so that a retry runs
			st.mu.Lock()
			if st.entries[scope] == e {
				delete(st.entries, scope)
			}
			st.mu.Unlock()
		}
	}()
	var status int
	var body []byte
	var errCode confpay.ErrorCode
	code, v, err := s.run(c, rt.h)
	if err != nil {
		sc, eb := errorAnswer(c.reqID, err)
		status, body = render(sc, eb)
		var ae *apiError
		if errors.As(err, &ae) {
			errCode = ae.body.Code
			if ae.retryAfter != "" {
				c.header.Set("Retry-After", ae.retryAfter)
			}
		}
	} else {
		status, body = render(code, v)
	}
	if keepAnswer(status, errCode) {
		st.mu.Lock()
		e.done, e.status, e.body = true, status, body
		st.mu.Unlock()
		kept = true
	}
	s.writeRaw(c, status, body)
}

// keepAnswer is the store rule of decisions.md: keep the answer of a
// request that got past validation and ran against the state (2xx and 202,
// and refusals decided on the state such as 402, 403 policy_violation, 404
// recipient_not_found, 422 recipient_not_confidential_ready). Not kept: 400
// and 413 (the request never ran; the caller may fix its body and send
// again with the same key), 401, 409 idempotency_key_in_use, 429 (a retry
// with the same key must run again) and every 5xx.
func keepAnswer(status int, code confpay.ErrorCode) bool {
	switch {
	case status >= 500:
		return false
	case status == http.StatusBadRequest, status == http.StatusRequestEntityTooLarge,
		status == http.StatusUnauthorized, status == http.StatusTooManyRequests:
		return false
	case status == http.StatusConflict && code == confpay.CodeIdempotencyKeyInUse:
		return false
	}
	return true
}
