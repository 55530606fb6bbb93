package fakeserver

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
)

// Idempotency-Key (internal/idempotency keeps the answers): for every
// POST, PATCH and DELETE that carries one,
//
//   - the same key with the same method, path, query and body replays the
//     stored status and body, with Idempotent-Replayed: true;
//   - the same key with another method, path, query or body is 422
//     idempotency_key_reused;
//   - the same key while the first request still runs is 409
//     idempotency_key_in_use;
//   - a new key when the account already holds the most keys the store
//     keeps per account and network (100,000 unless WithMaxIdempotencyKeys
//     says otherwise) is 429 rate_limited, with Retry-After the time until
//     its oldest key expires.
//
// Only answers of requests that ran against the state are kept (see
// keepAnswer); any other answer forgets the key, so that the caller can fix
// its body and send again with the same key. Keys expire 24 hours (server
// time) after the first request.

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
	st := s.idempotent
	now := s.clock.Now()
	e, verdict, stored, retry := st.Begin(c.owner(), keys[0], c.fingerprint(), now)
	switch verdict {
	case idempotency.Reused:
		s.sawOutside(c) // the key's first request may not be durable yet
		s.writeError(c, newError(http.StatusUnprocessableEntity, confpay.CodeIdempotencyKeyReused,
			"this Idempotency-Key was used with another method, path or body").withParam("Idempotency-Key"))
		return
	case idempotency.InUse:
		e := newError(http.StatusConflict, confpay.CodeIdempotencyKeyInUse,
			"a request with this Idempotency-Key is still being processed").withParam("Idempotency-Key")
		e.retryAfter = "1"
		s.writeError(c, e)
		return
	case idempotency.Full:
		e := newError(http.StatusTooManyRequests, confpay.CodeRateLimited,
			"this account holds the most Idempotency-Keys the server keeps; retry when the oldest expires")
		e.retryAfter = strconv.FormatInt(max(1, int64(math.Ceil(retry.Sub(now).Seconds()))), 10)
		s.writeError(c, e)
		return
	case idempotency.Replay:
		s.sawOutside(c) // kept once its record was in the commit order (below)
		c.setHeader("Idempotent-Replayed", "true")
		c.replayed = true
		body := stored.Bytes()
		c.transferID = replayedTransfer(stored.Status, body)
		s.writeRaw(c, stored.Status, body)
		return
	}

	// From its handler's start until its answer is kept (or the key
	// forgotten) the request holds the read side of s.keyed, so that a
	// backup never holds its effect without its answer (backup.go). With
	// a data directory it also has a slot in the commit order, which
	// enters with its first record (or before it changes the webhook
	// state), so that the answer is in the same journal record as its
	// effect (persist_hooks.go).
	settled, gated := false, false
	settle := func(rec *idempotency.Record, a idempotency.Answer) {
		settled = true
		if rec != nil {
			s.closeSlot(c, e, rec) // first: a replay that sees it kept waits for its record
			if s.testHook != nil {
				s.testHook("keyed-closed") // its answer appended, not yet kept
			}
			st.Keep(e, a)
			s.keptSlot(c)
		} else { // not kept, or a panic: forget the key so that a retry runs
			st.Forget(e)
			s.closeSlot(c, e, nil)
		}
		if gated {
			gated = false
			s.keyed.RUnlock()
		}
	}
	defer func() {
		if !settled {
			settle(nil, idempotency.Answer{})
		}
	}()
	var status int
	var body []byte
	var errCode confpay.ErrorCode
	code, v, err := s.run(c, func(c *call) (int, any, error) {
		s.keyed.RLock()
		gated = true
		s.openSlot(c)
		if s.testHook != nil {
			s.testHook("keyed-start")
		}
		return rt.h(c)
	})
	if err != nil {
		sc, eb := errorAnswer(c.reqID, err)
		status, body = render(sc, eb)
		var ae *apiError
		if errors.As(err, &ae) {
			errCode = ae.body.Code
			c.code, c.param = ae.body.Code, ae.body.Param
			if ae.retryAfter != "" {
				c.setHeader("Retry-After", ae.retryAfter)
			}
		}
	} else {
		status, body = render(code, v)
	}
	if s.testHook != nil {
		s.testHook("keyed-ran")
	}
	if keepAnswer(status, errCode) {
		a := idempotency.Answer{Status: status, Body: body}
		rec := idempotency.RecordOf(e, a)
		if src := keptCreateAnswer(c, status, v, err); src != nil {
			a = idempotency.Answer{Status: status, Source: src} // the store keeps no copy of the body
		}
		settle(&rec, a)
	} else {
		settle(nil, idempotency.Answer{})
	}
	s.writeRaw(c, status, body)
}

// fingerprint is the request's idempotency fingerprint (method, target
// and body), computed once a call for the store and the audit.
func (c *call) fingerprint() [32]byte {
	if !c.hasDigest {
		target := c.r.URL.EscapedPath()
		if c.r.URL.RawQuery != "" {
			target += "?" + c.r.URL.RawQuery
		}
		c.digest, c.hasDigest = idempotency.Fingerprint(c.r.Method, target, c.body), true
	}
	return c.digest
}

// owner names the caller's account on its network, as the idempotency
// store and the audit key their records.
func (c *call) owner() string {
	if c.ownerKey == "" {
		c.ownerKey = c.key.ownerKey()
	}
	return c.ownerKey
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

// createAnswer is the kept answer of a created transfer (201): the store
// keeps the transfer, not the 224 bytes of its answer, and a replay
// renders them again. What the answer shows of a transfer (createView) is
// fixed when it is created, its status aside, which the answer gives as
// pending: so AnswerBody reads no field that changes later and needs no
// lock, and renders the first answer's bytes (TestReplayAfterConfirm).
type createAnswer struct{ t *transfer }

// AnswerBody renders the create answer as render did the first time.
func (a createAnswer) AnswerBody() []byte {
	v := createView(a.t, confpay.StatusPending)
	_, b := render(http.StatusCreated, v)
	return b
}

// keptCreateAnswer is the Source to keep for the answer of c when it is
// the create answer of c.created as createAnswer renders it again; else
// nil (the body is kept).
func keptCreateAnswer(c *call, status int, v any, err error) idempotency.Source {
	t := c.created
	if err != nil || status != http.StatusCreated || t == nil {
		return nil
	}
	if tv, ok := v.(*confpay.Transfer); !ok || tv.Status != confpay.StatusPending || tv.TransferID != t.id {
		return nil
	}
	return createAnswer{t}
}
