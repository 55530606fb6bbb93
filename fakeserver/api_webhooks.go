package fakeserver

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// The /v1/webhooks handlers: subscriptions, deliveries and replay.

const (
	// maxURLBytes bounds a subscription URL.
	maxURLBytes = 2048
)

// webhookCreate is a validated POST /v1/webhooks body.
type webhookCreate struct {
	url    string
	events []string
}

// parseWebhookCreate decodes and validates a POST /v1/webhooks body.
func parseWebhookCreate(body []byte) (*webhookCreate, *apiError) {
	var req struct {
		URL    *string  `json:"url"`
		Events []string `json:"events"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if req.URL == nil {
		return nil, errInvalid("url", "url is required")
	}
	if err := checkWebhookURL(*req.URL); err != nil {
		return nil, err
	}
	if err := checkEventKinds(req.Events); err != nil {
		return nil, err
	}
	return &webhookCreate{url: *req.URL, events: append([]string(nil), req.Events...)}, nil
}

// checkWebhookURL accepts an absolute https URL, or http on a loopback host
// (127.0.0.0/8, ::1, localhost) so that local receivers work in tests; on
// a port in 1–65535; on a host that is a name or a standard IP address,
// never an unspecified, link-local or metadata one (see selfguard.go).
// Whether it reaches the server itself is Server.checkNotSelf's question.
func checkWebhookURL(raw string) *apiError {
	if raw == "" {
		return errInvalid("url", "url is required")
	}
	if len(raw) > maxURLBytes {
		return errInvalid("url", "url is longer than "+strconv.Itoa(maxURLBytes)+" bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return errInvalid("url", "url is not a valid absolute URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errInvalid("url", "url must be an https URL")
	}
	if u.Hostname() == "" {
		return errInvalid("url", "url must name a host")
	}
	if u.User != nil {
		return errInvalid("url", "url must not carry a user name or password")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errInvalid("url", "url port must be between 1 and 65535")
		}
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := forbiddenAddr(a); why != "" {
			return errInvalid("url", "url host is "+why+"; no receiver lives there")
		}
	} else if numericHost(u.Hostname()) {
		return errInvalid("url", "url host is not a standard IP address; write IPv4 as four decimal numbers (127.0.0.1) and IPv6 in brackets")
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return errInvalid("url", "url must use https; http is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost)")
	}
	return nil
}

// loopbackHost reports whether host is localhost or a loopback IP address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// checkEventKinds accepts a non-empty list of distinct event kinds.
func checkEventKinds(events []string) *apiError {
	if len(events) == 0 {
		return errInvalid("events", "events must list at least one event kind")
	}
	known := webhookverify.Kinds()
	for i, e := range events {
		ok := false
		for _, k := range known {
			if e == k {
				ok = true
				break
			}
		}
		if !ok {
			return errInvalid("events", "events["+strconv.Itoa(i)+"] is not an event kind; the kinds are "+strings.Join(known, ", "))
		}
		for _, prev := range events[:i] {
			if prev == e {
				return errInvalid("events", "events["+strconv.Itoa(i)+"] repeats an event kind")
			}
		}
	}
	return nil
}

// busyRetryAfter is the Retry-After of a replay refused by the bound of
// pending deliveries: room comes back as attempts succeed, or fail for
// good after their last retry.
const busyRetryAfter = "60"

// hooksError turns an error of internal/hooks into the answer. A
// subscription of another account is exactly like an unknown id.
func hooksError(err error) error {
	switch err {
	case hooks.ErrTooMany:
		return newError(http.StatusBadRequest, confpay.CodeInvalidRequest,
			"an account may have at most "+strconv.Itoa(hooks.MaxSubscriptions)+" webhook subscriptions per network; delete one first")
	case hooks.ErrNoWebhook:
		return errNotFound("no such webhook")
	case hooks.ErrNoEvent:
		return errNotFound("no such event for this webhook's account")
	case hooks.ErrBusy:
		e := newError(http.StatusTooManyRequests, confpay.CodeRateLimited,
			"the webhook or its account has the most deliveries pending it may; retry once some are delivered")
		e.retryAfter = busyRetryAfter
		return e
	}
	return err
}

// handleCreateWebhook answers POST /v1/webhooks
func (s *Server) handleCreateWebhook(c *call) (int, any, error) {
	req, apiErr := parseWebhookCreate(c.body)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	u, _ := url.Parse(req.url) // parseWebhookCreate parsed it
	if apiErr := s.checkNotSelf(c.r.Context(), u, c.r); apiErr != nil {
		return 0, nil, apiErr
	}
	secret := confpay.Secret("whsec_" + names.Random(names.Base62, 32))
	defer s.sawOutside(c) // the webhook state is read outside s.mu (persist.go)
	s.enterSlot(c)        // it is changed outside s.mu too (persist_hooks.go)
	w, err := s.hooks.Subscribe(c.net.name, c.acct.id, req.url, req.events, secret)
	if err != nil {
		return 0, nil, hooksError(err)
	}
	if s.testHook != nil {
		s.testHook("webhook-subscribed")
	}
	w.Secret = secret
	return http.StatusCreated, webhookAnswer(w), nil
}

// webhookJSON is a subscription as POST /v1/webhooks answers it, with its
// secret, shown this once.
type webhookJSON struct {
	*confpay.Webhook
	Secret string `json:"secret,omitempty"`
}

func webhookAnswer(w *confpay.Webhook) webhookJSON { return webhookJSON{w, w.Secret.Reveal()} }

// handleListWebhooks answers GET /v1/webhooks
func (s *Server) handleListWebhooks(c *call) (int, any, error) {
	defer s.sawOutside(c) // the webhook state is read outside s.mu (persist.go)
	return http.StatusOK, confpay.WebhookList{Webhooks: s.hooks.Subscriptions(c.net.name, c.acct.id)}, nil
}

// handleDeleteWebhook answers DELETE /v1/webhooks/{webhook_id}
func (s *Server) handleDeleteWebhook(c *call) (int, any, error) {
	defer s.sawOutside(c) // the webhook state is read outside s.mu (persist.go)
	s.enterSlot(c)        // it is changed outside s.mu too (persist_hooks.go)
	if err := s.hooks.Unsubscribe(c.net.name, c.acct.id, c.r.PathValue("webhook_id")); err != nil {
		return 0, nil, hooksError(err)
	}
	return http.StatusNoContent, nil, nil
}

// handleDeliveries answers GET /v1/webhooks/{webhook_id}/deliveries
func (s *Server) handleDeliveries(c *call) (int, any, error) {
	defer s.sawOutside(c) // the webhook state is read outside s.mu (persist.go)
	limit, offset, apiErr := parsePageQuery(c.r.URL.Query())
	if apiErr != nil {
		return 0, nil, apiErr
	}
	list, err := s.hooks.Deliveries(c.net.name, c.acct.id, c.r.PathValue("webhook_id"), limit, offset)
	if err != nil {
		return 0, nil, hooksError(err)
	}
	return http.StatusOK, list, nil
}

// handleReplay answers POST /v1/webhooks/{webhook_id}/replay/{event_id}
func (s *Server) handleReplay(c *call) (int, any, error) {
	defer s.sawOutside(c) // the webhook state is read outside s.mu (persist.go)
	s.enterSlot(c)        // it is changed outside s.mu too (persist_hooks.go)
	r, err := s.hooks.Replay(c.net.name, c.acct.id, c.r.PathValue("webhook_id"), c.r.PathValue("event_id"))
	if err != nil {
		return 0, nil, hooksError(err)
	}
	return http.StatusAccepted, r, nil
}
