package fakeserver

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
	"github.com/confpay/confpay-go/webhookverify"
)

// The /v1/webhooks handlers: subscriptions, deliveries and replay.

const (
	// maxSubscriptions is how many subscriptions one account may hold on
	// one network.
	maxSubscriptions = 16
	// maxURLBytes bounds a subscription URL.
	maxURLBytes = 2048
)

// subscription is one account's webhook endpoint on one network. Guarded
// by s.mu.
type subscription struct {
	id        string
	net       *network
	acct      *account
	url       string
	events    []string // as given, in order
	secret    confpay.Secret
	createdAt time.Time
	// deliveries in creation order (the list shows them newest first).
	deliveries []*delivery
	// inFlight is set while an attempt to this subscription is queued or
	// under way; waiting holds the attempts due meanwhile, in order.
	inFlight bool
	waiting  []deliveryJob
}

// wants reports whether sub subscribed to kind.
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
	return &confpay.Webhook{
		WebhookID: sub.id,
		URL:       sub.url,
		Events:    events,
		CreatedAt: sub.createdAt,
	}
}

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

// subscriptionLocked finds the caller's live subscription on the caller's
// network: anything else is 404, exactly like an unknown id.
func (s *Server) subscriptionLocked(c *call) (*subscription, *apiError) {
	sub, ok := c.net.hooks.subs[c.r.PathValue("webhook_id")]
	if !ok || sub.acct != c.acct {
		return nil, errNotFound("no such webhook")
	}
	return sub, nil
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
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &c.net.hooks
	if len(b.byAcct[c.acct.id]) >= maxSubscriptions {
		return 0, nil, newError(http.StatusBadRequest, confpay.CodeInvalidRequest,
			"an account may have at most "+strconv.Itoa(maxSubscriptions)+" webhook subscriptions per network; delete one first")
	}
	sub := &subscription{
		id:        names.NewID("wh_"),
		net:       c.net,
		acct:      c.acct,
		url:       req.url,
		events:    req.events,
		secret:    confpay.Secret("whsec_" + names.Random(names.Base62, 32)),
		createdAt: s.clock.Now(),
	}
	b.subs[sub.id] = sub
	b.byAcct[c.acct.id] = append(b.byAcct[c.acct.id], sub)
	w := sub.view()
	w.Secret = sub.secret
	return http.StatusCreated, w, nil
}

// handleListWebhooks answers GET /v1/webhooks
func (s *Server) handleListWebhooks(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	subs := c.net.hooks.byAcct[c.acct.id]
	out := confpay.WebhookList{Webhooks: make([]*confpay.Webhook, 0, len(subs))}
	for _, sub := range subs {
		out.Webhooks = append(out.Webhooks, sub.view())
	}
	return http.StatusOK, out, nil
}

// handleDeleteWebhook answers DELETE /v1/webhooks/{webhook_id}
func (s *Server) handleDeleteWebhook(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &c.net.hooks
	if owner, ok := b.deleted[c.r.PathValue("webhook_id")]; ok && owner == c.acct {
		return http.StatusNoContent, nil, nil // deleted before, by this account
	}
	sub, apiErr := s.subscriptionLocked(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	delete(b.subs, sub.id)
	b.deleted[sub.id] = sub.acct
	list := b.byAcct[sub.acct.id]
	for i, x := range list {
		if x == sub {
			b.byAcct[sub.acct.id] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	sub.dropWaitingLocked()
	for _, d := range sub.deliveries {
		if d.status == confpay.DeliveryPending {
			d.cancelLocked()
		}
	}
	return http.StatusNoContent, nil, nil
}

// handleDeliveries answers GET /v1/webhooks/{webhook_id}/deliveries
func (s *Server) handleDeliveries(c *call) (int, any, error) {
	limit, offset, apiErr := parsePageQuery(c.r.URL.Query())
	if apiErr != nil {
		return 0, nil, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, apiErr := s.subscriptionLocked(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	// Newest first, the last 30 days: limit items after skipping offset.
	since := s.clock.Now().Add(-historyWindow)
	out := confpay.DeliveryList{Deliveries: []*confpay.Delivery{}}
	skipped := 0
	for i := len(sub.deliveries) - 1; i >= 0; i-- {
		d := sub.deliveries[i]
		if d.createdAt.Before(since) {
			continue
		}
		if skipped < offset {
			skipped++
			continue
		}
		if len(out.Deliveries) == limit {
			out.HasMore = true
			break
		}
		out.Deliveries = append(out.Deliveries, d.view())
	}
	return http.StatusOK, out, nil
}

// handleReplay answers POST /v1/webhooks/{webhook_id}/replay/{event_id}
func (s *Server) handleReplay(c *call) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, apiErr := s.subscriptionLocked(c)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	e, ok := c.net.hooks.events[c.r.PathValue("event_id")]
	if !ok || !e.concerns(sub.acct) {
		return 0, nil, errNotFound("no such event for this webhook's account")
	}
	d := s.startDeliveryLocked(c.net, sub, e, triggerReplay)
	return http.StatusAccepted, &confpay.Replay{
		DeliveryID: d.id,
		EventID:    e.id,
		WebhookID:  sub.id,
		Status:     confpay.DeliveryPending,
	}, nil
}
