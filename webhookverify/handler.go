package webhookverify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
)

// DefaultMaxBodyBytes is the body cap Handler uses when
// HandlerOptions.MaxBodyBytes is zero or negative: 1 MiB, the service's own
// request limit.
const DefaultMaxBodyBytes = 1 << 20

// HandlerOptions configures Handler. It holds secrets, so it does not print
// them: String, GoString, Format and MarshalText show only how many there
// are.
type HandlerOptions struct {
	// Secrets are the subscription secrets; a delivery signed with any of
	// them is accepted (see VerifyAny for rotation). At least one, none
	// empty.
	Secrets []string
	// MaxBodyBytes caps the request body; larger bodies get 400. Zero or
	// negative means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Store, if set, deduplicates deliveries by the verified event_id (see
	// SeenStore). Nil hands every verified delivery to the handler.
	Store SeenStore
	// ErrorLog, if set, receives one line per rejected delivery (its
	// reason, never the body, header values or secrets) and store errors.
	// Nil is silent.
	ErrorLog *slog.Logger
}

// String describes the options without the secrets.
func (o HandlerOptions) String() string {
	return fmt.Sprintf("webhookverify.HandlerOptions{Secrets: [%d redacted], MaxBodyBytes: %d, Store: %t, ErrorLog: %t}",
		len(o.Secrets), o.MaxBodyBytes, o.Store != nil, o.ErrorLog != nil)
}

// GoString is String, so %#v does not print the secrets either.
func (o HandlerOptions) GoString() string { return o.String() }

// Format prints String for every verb, so no verb prints the secrets.
func (o HandlerOptions) Format(f fmt.State, _ rune) { io.WriteString(f, o.String()) }

// MarshalText returns String, so encoding/json and log/slog do not write
// the secrets.
func (o HandlerOptions) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

type bodyKey struct{}

// Body returns the raw, verified request body inside a Handler callback
// (the exact bytes the signature covers), or nil for a request that did not
// come through Handler. The request's Body field can also be read again; it
// yields the same bytes.
func Body(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}

// Handler returns an http.Handler that accepts signed deliveries and calls
// next with each verified event. For each request, in order:
//
//   - a method other than POST gets 405 with "Allow: POST";
//   - the body is read once, up to MaxBodyBytes; a longer body gets 400
//     (the excess is read and discarded up to another MaxBodyBytes so the
//     sender sees the answer, beyond that the connection is closed);
//   - the signature header is checked against the exact bytes read: missing,
//     malformed or wrong gets 401, and nothing else looks at the body first;
//   - the verified body is parsed with ParseEvent; failure gets 400;
//   - with a Store, the event_id from the body (never the unsigned
//     X-Service-Event-Id header) is claimed: an id already processed gets 200
//     without calling next, one being processed by a concurrent delivery gets
//     409 (so the service retries), a store error gets 500;
//   - next is called. Whatever it writes is the response; writing nothing
//     means 200. If it answers 2xx the id is marked processed; any other
//     status, or a panic, releases the claim so a retry is handled again.
//
// Rejections carry only the status text as body, so an attacker learns
// nothing beyond the status. Handler panics if opts has no secrets, an empty
// secret, or next is nil.
func Handler(opts HandlerOptions, next func(w http.ResponseWriter, r *http.Request, ev Event)) http.Handler {
	if next == nil {
		panic("webhookverify: Handler: nil next function")
	}
	if len(opts.Secrets) == 0 {
		panic("webhookverify: Handler: no secrets in HandlerOptions")
	}
	for i, s := range opts.Secrets {
		if s == "" {
			panic(fmt.Sprintf("webhookverify: Handler: HandlerOptions.Secrets[%d] is empty", i))
		}
	}
	v, _ := NewVerifier(opts.Secrets...) // the secrets were checked above
	h := &handler{
		v:     v,
		max:   opts.MaxBodyBytes,
		store: opts.Store,
		log:   opts.ErrorLog,
		next:  next,
	}
	if h.max <= 0 {
		h.max = DefaultMaxBodyBytes
	}
	return h
}

type handler struct {
	v     *Verifier // keyed once from the secrets; never printed (see Format)
	max   int64
	store SeenStore
	log   *slog.Logger
	next  func(http.ResponseWriter, *http.Request, Event)
}

// String describes the handler without its keys.
func (h *handler) String() string {
	return fmt.Sprintf("webhookverify.Handler{Secrets: [%d redacted], MaxBodyBytes: %d}", len(h.v.keys), h.max)
}

// GoString is String.
func (h *handler) GoString() string { return h.String() }

// Format prints String for every verb.
func (h *handler) Format(f fmt.State, _ rune) { io.WriteString(f, h.String()) }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reject(w, r, http.StatusMethodNotAllowed, "method not allowed")
		return
	}

	body, tooLarge, err := h.readBody(w, r)
	if tooLarge {
		h.reject(w, r, http.StatusBadRequest, "body too large")
		return
	}
	if err != nil {
		h.reject(w, r, http.StatusBadRequest, "reading body failed")
		return
	}

	if err := h.verify(body, r.Header.Get(SignatureHeader)); err != nil {
		h.reject(w, r, http.StatusUnauthorized, err.Error())
		return
	}

	ev, err := ParseEvent(body)
	if err != nil {
		h.reject(w, r, http.StatusBadRequest, err.Error())
		return
	}

	ctx := context.WithValue(r.Context(), bodyKey{}, body)
	r2 := r.WithContext(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))

	if h.store == nil {
		h.next(w, r2, ev)
		return
	}

	claim, err := h.store.Claim(ctx, ev.ID())
	if err != nil {
		h.logError(r, "seen store claim failed", ev.ID(), err)
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	switch claim {
	case ClaimDone:
		w.WriteHeader(http.StatusOK)
		return
	case ClaimBusy:
		h.reject(w, r, http.StatusConflict, "delivery of this event already in progress")
		return
	case ClaimNew:
	default:
		h.logError(r, "seen store returned an invalid claim", ev.ID(), fmt.Errorf("claim %d", int(claim)))
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}

	sw := &statusWriter{ResponseWriter: w}
	ok := false
	defer func() {
		// Runs on panic too, with ok false: the claim is released.
		// The claim must end even if the client has gone away.
		if err := h.store.Finish(context.WithoutCancel(ctx), ev.ID(), ok); err != nil {
			h.logError(r, "seen store finish failed", ev.ID(), err)
		}
	}()
	h.next(sw, r2, ev)
	ok = sw.status() >= 200 && sw.status() < 300
}

// readBody reads at most h.max bytes. For a longer body it reads and
// discards up to h.max more, so the sender can read the answer on a healthy
// connection, and asks for the connection to be closed when the body is
// longer than that.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) (body []byte, tooLarge bool, err error) {
	if r.Body == nil {
		return nil, false, nil
	}
	budget := 2*h.max + 1 // the most we read from one request
	switch {
	case r.ContentLength > budget:
		w.Header().Set("Connection", "close")
		return nil, true, nil
	case r.ContentLength > h.max:
		// Known to be too large: nothing read yet, the whole budget left.
	default:
		body, err = io.ReadAll(io.LimitReader(r.Body, h.max+1))
		if err != nil {
			return nil, false, err
		}
		if int64(len(body)) <= h.max {
			return body, false, nil
		}
		budget -= int64(len(body))
	}
	if _, err := io.CopyN(io.Discard, r.Body, budget); err != io.EOF {
		// Read the whole budget without reaching the end (or failed).
		w.Header().Set("Connection", "close")
	}
	return nil, true, nil
}

// verify is VerifyAny with the keys derived once in Handler.
func (h *handler) verify(body []byte, header string) error { return h.v.Verify(body, header) }

// reject answers with the bare status text and logs the reason.
func (h *handler) reject(w http.ResponseWriter, r *http.Request, code int, reason string) {
	if h.log != nil {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "webhookverify: delivery rejected",
			slog.Int("status", code),
			slog.String("reason", reason),
			slog.String("remote_addr", r.RemoteAddr))
	}
	http.Error(w, http.StatusText(code), code)
}

func (h *handler) logError(r *http.Request, msg, eventID string, err error) {
	if h.log != nil {
		h.log.LogAttrs(r.Context(), slog.LevelError, "webhookverify: "+msg,
			slog.String("event_id", eventID),
			slog.String("error", err.Error()))
	}
}

// statusWriter records the status the handler answers with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 && code >= 200 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush forwards to the underlying writer when it can flush.
func (s *statusWriter) Flush() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// status is the answered status; nothing written means net/http sends 200.
func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}
