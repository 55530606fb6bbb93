package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// maxBody is the largest webhook body verify and listen read.
const maxBody = 1 << 20

func (a *app) webhooksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Manage webhook subscriptions and verify deliveries",
		Example: `  confpay webhooks create --url https://example.com/hooks --events transfer.confirmed --secret-file hook.secret
  confpay webhooks list
  confpay webhooks verify --secret-file hook.secret "$SIGNATURE" < body.json`,
	}
	cmd.AddCommand(a.webhooksCreateCmd(), a.webhooksListCmd(), a.webhooksDeleteCmd(),
		a.webhooksDeliveriesCmd(), a.webhooksReplayCmd(), a.webhooksVerifyCmd())
	return cmd
}

func (a *app) webhooksCreateCmd() *cobra.Command {
	var (
		url, secretFile string
		events          []string
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Subscribe an HTTPS endpoint to events",
		Long: `Subscribe an endpoint to event kinds. The signing secret exists only in this
answer: with --secret-file it is written to that file (mode 0600, which must
not exist yet) and not printed; otherwise it is printed once.

Event kinds: ` + strings.Join(webhookverify.Kinds(), ", ") + `.`,
		Args: exactArgs(),
		Example: `  confpay webhooks create --url https://example.com/hooks \
      --events transfer.confirmed,transfer.failed --secret-file hook.secret`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" || len(events) == 0 {
				return usagef("webhooks create needs --url and --events")
			}
			var f *os.File
			if secretFile != "" {
				var err error
				// Created before the subscription, so a bad path loses no secret.
				if f, err = os.OpenFile(secretFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
					return usagef("--secret-file: %v", err)
				}
				defer f.Close()
			}
			c, err := a.api()
			if err != nil {
				if f != nil {
					_ = os.Remove(secretFile)
				}
				return err
			}
			w, err := c.Webhooks.Create(cmd.Context(), &confpay.WebhookCreateParams{URL: url, Events: eventKinds(events)})
			if err != nil {
				if f != nil {
					_ = os.Remove(secretFile)
				}
				return err
			}
			if f != nil {
				if _, err := io.WriteString(f, w.Secret.Reveal()+"\n"); err != nil {
					return fmt.Errorf("writing the secret to %s: %w (the subscription %s exists: delete it and try again)", secretFile, err, w.WebhookID)
				}
				if err := f.Close(); err != nil {
					return fmt.Errorf("writing the secret to %s: %w", secretFile, err)
				}
				w.Secret = ""
			}
			if a.jsonOut { // a Secret encodes as REDACTED: the answer shows it
				return a.printJSON(struct {
					*confpay.Webhook
					Secret string `json:"secret,omitempty"`
				}{w, w.Secret.Reveal()})
			}
			pairs := [][2]string{
				{"Webhook", clean(w.WebhookID)},
				{"URL", clean(w.URL)},
				{"Events", clean(joinKinds(w.Events, ", "))},
			}
			if f != nil {
				pairs = append(pairs, [2]string{"Secret", "written to " + secretFile})
			} else {
				pairs = append(pairs, [2]string{"Secret", w.Secret.Reveal() + "  (shown once: store it now)"})
			}
			return a.fields(append(pairs, [2]string{"Created", fmtTime(w.CreatedAt)})...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "the endpoint (https; http only for a loopback host)")
	f.StringSliceVar(&events, "events", nil, "event kinds, comma-separated or repeated")
	f.StringVar(&secretFile, "secret-file", "", "write the signing secret to this new file instead of printing it")
	return cmd
}

func (a *app) webhooksListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List webhook subscriptions",
		Args:    exactArgs(),
		Example: "  confpay webhooks list",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			hooks, err := c.Webhooks.List(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(confpay.WebhookList{Webhooks: hooks})
			}
			if len(hooks) == 0 {
				fmt.Fprintln(a.stdout, "No webhooks.")
				return nil
			}
			t := a.newTable("ID", "URL", "EVENTS", "CREATED")
			for _, w := range hooks {
				t.row(clean(w.WebhookID), clean(w.URL), clean(joinKinds(w.Events, ",")), fmtTime(w.CreatedAt))
			}
			return t.flush()
		},
	}
}

func (a *app) webhooksDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete WEBHOOK_ID",
		Short:   "Delete a webhook subscription",
		Args:    exactArgs("WEBHOOK_ID"),
		Example: "  confpay webhooks delete wh_0123456789abcdefghij",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			if err := c.Webhooks.Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(struct {
					WebhookID string `json:"webhook_id"`
					Deleted   bool   `json:"deleted"`
				}{args[0], true})
			}
			fmt.Fprintf(a.stdout, "Deleted %s\n", clean(args[0]))
			return nil
		},
	}
}

func (a *app) webhooksDeliveriesCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "deliveries WEBHOOK_ID",
		Short:   "Show a subscription's delivery history",
		Args:    exactArgs("WEBHOOK_ID"),
		Example: "  confpay webhooks deliveries wh_0123456789abcdefghij",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var ds []*confpay.Delivery
			for d, err := range c.Webhooks.AllDeliveries(cmd.Context(), args[0], nil) {
				if err != nil {
					return err
				}
				ds = append(ds, d)
			}
			if a.jsonOut {
				return a.printJSON(confpay.DeliveryList{Deliveries: ds})
			}
			if len(ds) == 0 {
				fmt.Fprintln(a.stdout, "No deliveries.")
				return nil
			}
			t := a.newTable("DELIVERY", "EVENT", "KIND", "STATUS", "ATTEMPTS", "HTTP", "LAST ATTEMPT", "NEXT ATTEMPT", "TRIGGER")
			for _, d := range ds {
				code := "-"
				if d.ResponseStatus != 0 {
					code = strconv.Itoa(d.ResponseStatus)
				}
				t.row(clean(d.DeliveryID), clean(d.EventID), clean(string(d.Event)), a.status(string(d.Status)), strconv.Itoa(d.Attempts), code,
					fmtTimePtr(d.LastAttemptAt), fmtTimePtr(d.NextAttemptAt), clean(string(d.Trigger)))
			}
			return t.flush()
		},
	}
}

func (a *app) webhooksReplayCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "replay WEBHOOK_ID EVENT_ID",
		Short:   "Send an event to a subscription again",
		Args:    exactArgs("WEBHOOK_ID", "EVENT_ID"),
		Example: "  confpay webhooks replay wh_0123456789abcdefghij evt_0123456789abcdefghij",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			r, err := c.Webhooks.Replay(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(r)
			}
			fmt.Fprintf(a.stdout, "Replaying %s to %s: delivery %s, %s\n", clean(r.EventID), clean(r.WebhookID), clean(r.DeliveryID), a.status(string(r.Status)))
			return nil
		},
	}
}

func (a *app) webhooksVerifyCmd() *cobra.Command {
	var secretFile string
	cmd := &cobra.Command{
		Use:   "verify SIGNATURE",
		Short: "Check a delivery's signature: the body on stdin, the header value as argument",
		Long: `Check that SIGNATURE (the X-Service-Signature header's value) is the service's
signature of the body read from standard input, under the secret in
--secret-file. Exits 0 and describes the event when it verifies, 6 when it
does not. The body must be the exact bytes received.`,
		Args:    exactArgs("SIGNATURE"),
		Example: `  confpay webhooks verify --secret-file hook.secret 5f0c...e1 < body.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if secretFile == "" {
				return usagef("webhooks verify needs --secret-file (the secret never goes on the command line)")
			}
			if secretFile == "-" {
				return usagef("webhooks verify reads the body from standard input: give --secret-file a file")
			}
			raw, err := a.read(input{flag: "--secret-file", what: "the signing secret", path: secretFile,
				max: maxKeyFile, limit: "a signing secret is a short string", private: true})
			if err != nil {
				return err
			}
			secret := strings.TrimSpace(string(raw))
			clear(raw)
			body, err := io.ReadAll(io.LimitReader(a.stdin, maxBody+1))
			if err != nil {
				return fmt.Errorf("reading the body from stdin: %w", err)
			}
			if len(body) > maxBody {
				return usagef("the body on stdin is over %d bytes", maxBody)
			}
			ev, err := webhookverify.ConstructEvent(body, args[0], secret)
			switch {
			case errors.Is(err, webhookverify.ErrNoSecret):
				return usagef("--secret-file %s holds no secret", secretFile)
			case errors.Is(err, webhookverify.ErrMalformedEvent):
				return &codedError{exitError, "the signature verifies but the body is not an event: " + strings.TrimPrefix(err.Error(), "webhookverify: ")}
			case err != nil:
				return &codedError{exitVerify, "not verified: " + strings.TrimPrefix(err.Error(), "webhookverify: ")}
			}
			if a.jsonOut {
				return a.printJSON(struct {
					Verified bool   `json:"verified"`
					Event    string `json:"event"`
					EventID  string `json:"event_id"`
				}{true, ev.Kind(), ev.ID()})
			}
			fmt.Fprintf(a.stdout, "%s: %s %s at %s\n", a.paint(a.stdout, green, "verified"), clean(ev.Kind()), clean(ev.ID()), fmtTime(ev.Time()))
			return nil
		},
	}
	cmd.Flags().StringVar(&secretFile, "secret-file", "", "file holding the subscription's signing secret")
	return cmd
}
