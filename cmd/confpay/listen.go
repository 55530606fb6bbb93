package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

func (a *app) listenCmd() *cobra.Command {
	var (
		events                     []string
		forwardTo, addr, publicURL string
	)
	cmd := &cobra.Command{
		Use:   "listen",
		Short: "Receive webhook deliveries here: verify, print, and optionally forward them",
		Long: `Start a local receiver, subscribe it to events, and print each delivery as
it arrives, once its signature is verified. Ctrl-C deletes the subscription
and stops.

With --forward-to, each verified delivery is also sent on to that URL,
re-signed with a new secret printed once at start (configure your receiver
with it); the service is answered with the forward target's status, so
its retries reach your receiver too.

Against a fakeserver the receiver's loopback address is subscribed
directly. The real service needs a public https URL: give it with --url
(a tunnel to --addr, for instance).`,
		Args: exactArgs(),
		Example: `  confpay --fake listen
  confpay listen --events transfer.confirmed,transfer.failed --forward-to http://localhost:8080/hooks
  confpay listen --addr 127.0.0.1:9000 --url https://my-tunnel.example.com/`,
		RunE: func(cmd *cobra.Command, _ []string) error {

			if forwardTo != "" {
				u, err := url.Parse(forwardTo)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usagef("--forward-to must be an http or https URL")
				}
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			return a.listen(cmd.Context(), c, events, forwardTo, addr, publicURL)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&events, "events", nil, "event kinds to receive (default: all)")
	f.StringVar(&forwardTo, "forward-to", "", "forward each verified delivery to this URL, re-signed")
	f.StringVar(&addr, "addr", "127.0.0.1:0", "where the local receiver listens")
	f.StringVar(&publicURL, "url", "", "the public URL that reaches --addr, to subscribe instead of the local address")
	return cmd
}

// listen runs the receiver until ctx is done.
func (a *app) listen(ctx context.Context, c *confpay.Client, events []string, forwardTo, addr, publicURL string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	defer ln.Close()
	hookURL := publicURL
	if hookURL == "" {
		hookURL = "http://" + ln.Addr().String() + "/"
	}
	what := strings.Join(events, ",")
	if len(events) == 0 {
		events, what = webhookverify.Kinds(), "all events"
	}
	w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: hookURL, Events: eventKinds(events)})
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.Webhooks.Delete(dctx, w.WebhookID); err != nil {
			fmt.Fprintf(a.stderr, "Could not delete webhook %s: %s\n", w.WebhookID, clean(errorLine(err)))
			return
		}
		fmt.Fprintf(a.stderr, "Deleted webhook %s.\n", w.WebhookID)
	}()

	l := &listener{app: a, secret: w.Secret.Reveal(), forwardTo: forwardTo, http: &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if forwardTo != "" {
		s, err := newSecret()
		if err != nil {
			return err
		}
		l.forwardSecret = s
		fmt.Fprintf(a.stderr, "Forwarding to %s, signed with this secret (shown once): %s\n", clean(forwardTo), s)
	}
	hs := &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(a.stderr, "Ready: %s receives %s for webhook %s on %s. Ctrl-C to stop.\n",
		clean(hookURL), clean(what), w.WebhookID, networkLine(c))

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shut)
	return nil
}

// newSecret makes a signing secret for the forward target.
func newSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + hex.EncodeToString(b), nil
}

// listener receives deliveries, verifies, prints and forwards them.
type listener struct {
	app                              *app
	secret, forwardTo, forwardSecret string
	http                             *http.Client
	mu                               sync.Mutex // one delivery printed at a time
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	ev, err := webhookverify.ConstructEvent(body, r.Header.Get(webhookverify.SignatureHeader), l.secret)
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.app
	if err != nil {
		fmt.Fprintf(a.stderr, "%s a delivery: %s\n", a.paint(a.stderr, red, "Rejected"), strings.TrimPrefix(err.Error(), "webhookverify: "))
		http.Error(w, "signature not verified", http.StatusBadRequest)
		return
	}
	attempt := r.Header.Get(webhookverify.AttemptHeader)
	if a.jsonOut {
		var line bytes.Buffer
		if json.Compact(&line, body) == nil {
			line.WriteByte('\n')
			_, _ = a.stdout.Write(line.Bytes())
		}
	} else {
		retry := ""
		if attempt != "" && attempt != "1" {
			retry = "  (attempt " + clean(attempt) + ")"
		}
		fmt.Fprintf(a.stdout, "%s  %-18s  %s  %s%s\n", fmtTime(ev.Time()), clean(ev.Kind()), clean(ev.ID()), describe(ev), retry)
	}
	status := http.StatusOK
	if l.forwardTo != "" {
		status = l.forward(r.Context(), body, r.Header)
	}
	w.WriteHeader(status)
}

// forward sends a verified delivery to the forward target, re-signed, and
// returns the status to answer the service with.
func (l *listener) forward(ctx context.Context, body []byte, h http.Header) int {
	a := l.app
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(a.stderr, "  forward failed: %v\n", err)
		return http.StatusBadGateway
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhookverify.SignatureHeader, webhookverify.Sign(l.forwardSecret, body))
	for _, k := range []string{webhookverify.EventIDHeader, webhookverify.AttemptHeader} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := l.http.Do(req)
	if err != nil {
		fmt.Fprintf(a.stderr, "  forward to %s failed: %v\n", clean(l.forwardTo), err)
		return http.StatusBadGateway
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	color := green
	if resp.StatusCode >= 300 {
		color = red
	}
	fmt.Fprintf(a.stderr, "  forwarded: %s\n", a.paint(a.stderr, color, resp.Status))
	if resp.StatusCode < 200 || resp.StatusCode > 599 {
		return http.StatusBadGateway
	}
	return resp.StatusCode
}

// describe summarises an event in a few words.
func describe(ev webhookverify.Event) string {
	switch e := ev.(type) {
	case *webhookverify.TransferEvent:
		verb, prep := "sent", "to"
		if e.Direction == webhookverify.DirectionReceived {
			verb, prep = "received", "from"
		}
		return clean(fmt.Sprintf("%s  %s %s %s %s, %s", e.TransferID, e.Account, verb, prep, e.Counterparty, e.Asset))
	case *webhookverify.AgentTransactionEvent:
		s := fmt.Sprintf("%s  %s pays %s, %s", e.TransactionID, e.Agent, e.Counterparty, e.Asset)
		if e.TransferID != "" {
			s += " (transfer " + e.TransferID + ")"
		}
		return clean(s)
	case *webhookverify.PolicyUpdatedEvent:
		return clean(fmt.Sprintf("%s  %s changed %s", e.PolicyID, e.Agent, strings.Join(e.ChangedFields, ", ")))
	}
	return ""
}
