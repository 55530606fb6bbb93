package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// Exit codes, documented in the package comment and docs/cli.md.
const (
	exitOK          = 0   // success
	exitError       = 1   // the service refused the request, or another failure
	exitUsage       = 2   // bad command line, argument, amount or missing decryption key
	exitAuth        = 3   // API key missing, malformed or refused (401); trigger: a fakeserver's admin token
	exitNotFound    = 4   // an id or recipient the service does not know
	exitUnavailable = 5   // no answer from the service
	exitVerify      = 6   // a webhook signature did not verify
	exitFailed      = 7   // a payment waited for with --wait failed
	exitInterrupted = 130 // interrupted (Ctrl-C)
)

// fakeURL is where confpay-fakeserver listens by default (its -addr flag).
const fakeURL = "http://127.0.0.1:12180"

// Environment variables the client reads.
const (
	envAPIKey        = "CONFPAY_API_KEY"
	envBaseURL       = "CONFPAY_BASE_URL"
	envDecryptionKey = "CONFPAY_DECRYPTION_KEY"
)

// app is one invocation: its streams, environment, global flags and the
// client built from them on first use.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) string

	// pollWait waits between two polls of pay --wait; tests replace it
	// to move the fakeserver's clock instead of waiting.
	pollWait func(ctx context.Context) error
	// now reads the time pay --wait measures its wait with (time.Now when
	// nil); tests move it instead of waiting.
	now func() time.Time
	// terminal makes the output streams count as terminals (tests).
	terminal bool

	// global flags
	jsonOut bool
	fake    bool
	keyFile string
	debug   bool

	started  bool   // the command's own code started: later errors are not usage errors
	stdinFor string // the --*-file flag that reads standard input ("-"), if any
	client   *confpay.Client
	key      *decrypt.PrivateKey // the decryption key once read
	keyRead  bool
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// codedError carries an exit code chosen by a command, with its message.
type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

// execute builds the command tree, runs args and turns the outcome into an
// exit code, writing any error as one line on stderr.
func (a *app) execute(ctx context.Context, args []string) int {
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if !a.started {
		var ue *usageError
		if !errors.As(err, &ue) {
			err = &usageError{err.Error()}
		}
	}
	code := exitCode(ctx, err)
	line := errorLine(err)
	if code == exitInterrupted {
		line = "interrupted"
	}
	fmt.Fprintln(a.stderr, a.paint(a.stderr, red, "confpay:")+" "+clean(line))
	if code == exitUsage && !a.started {
		fmt.Fprintln(a.stderr, "Run 'confpay --help' or '<command> --help' for usage.")
	}
	return code
}

// exitCode maps an error to the documented exit codes.
func exitCode(ctx context.Context, err error) int {
	var (
		ue *usageError
		ce *codedError
		ae *confpay.APIError
		te *confpay.TransportError
		pe *confpay.ParamError
	)
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue), errors.As(err, &pe):
		return exitUsage
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &ae):
		switch {
		case ae.StatusCode == 401:
			return exitAuth
		case ae.StatusCode == 404:
			return exitNotFound
		}
		return exitError
	case errors.As(err, &te):
		return exitUnavailable
	}
	return exitError
}

// errorLine is the one-line message for err: for an answer of the service,
// its code, message, field and request id.
func errorLine(err error) string {
	var ae *confpay.APIError
	if !errors.As(err, &ae) {
		return strings.TrimPrefix(err.Error(), "confpay: ")
	}
	var b strings.Builder
	b.WriteString(string(ae.Code))
	if ae.Message != "" {
		b.WriteString(": " + ae.Message)
	}
	details := []string{fmt.Sprintf("HTTP %d", ae.StatusCode)}
	for _, d := range [][2]string{{"param", ae.Param}, {"rule", ae.Rule}, {"reason", ae.Reason}, {"request", ae.RequestID}} {
		if d[1] != "" {
			details = append(details, d[0]+" "+d[1])
		}
	}
	b.WriteString(" (" + strings.Join(details, ", ") + ")")
	return b.String()
}

// rootCmd builds the command tree for one invocation.
func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "confpay",
		Short: "Pay, approve, listen and verify on the confidential payments service",
		Long: `confpay is the command-line client of the confidential payments service.

Figures (balances, amounts, memos) are encrypted: confpay opens them locally
with your decryption key, which never leaves this machine.

Configuration:
  CONFPAY_API_KEY         API key; its prefix selects the network (hc_test_, hc_live_)
  CONFPAY_BASE_URL        service URL (default: the SDK's)
  CONFPAY_DECRYPTION_KEY  hex private decryption key (or --decryption-key-file)
  NO_COLOR                no colour even on a terminal

Exit codes: 0 ok, 1 refused by the service, 2 usage, 3 API key missing or
refused, 4 not found, 5 no answer, 6 signature did not verify, 7 payment
failed (--wait), 130 interrupted.`,
		Example: `  export CONFPAY_API_KEY=hc_test_...
  confpay me
  confpay --fake pay @bob 12.5 --memo "lunch" --wait`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		DisableAutoGenTag: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.started = true
			return nil
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	pf := root.PersistentFlags()
	pf.BoolVar(&a.jsonOut, "json", false, "print the SDK's JSON types instead of tables")
	pf.BoolVar(&a.fake, "fake", false, "use a local confpay-fakeserver at "+fakeURL)
	pf.StringVar(&a.keyFile, "decryption-key-file", "", "read the decryption key from this file (mode 0600; - for standard input) instead of "+envDecryptionKey)
	pf.BoolVar(&a.debug, "debug", false, "log each request (method, path, status, request id) on stderr; secrets redacted")

	root.AddCommand(
		a.meCmd(), a.balancesCmd(), a.payCmd(), a.transfersCmd(),
		a.agentsCmd(), a.approvalsCmd(), a.approveCmd(), a.rejectCmd(),
		a.webhooksCmd(), a.listenCmd(), a.proofCmd(), a.triggerCmd(),
	)
	return root
}

// api returns the client, built on first use from the environment and flags.
func (a *app) api() (*confpay.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	key := strings.TrimSpace(a.env(envAPIKey))
	if key == "" {
		return nil, &codedError{exitAuth, envAPIKey + " is not set: export your API key (hc_test_... or hc_live_...)"}
	}
	if _, ok := confpay.NetworkOfKey(key); !ok {
		return nil, &codedError{exitAuth, envAPIKey + " is not an API key: it must start with hc_test_ or hc_live_"}
	}
	base := strings.TrimSpace(a.env(envBaseURL))
	if a.fake {
		base = fakeURL
	}
	opts := []confpay.Option{confpay.WithUserAgent("confpay-cli")}
	if base != "" {
		opts = append(opts, confpay.WithBaseURL(base))
	}
	if a.debug {
		opts = append(opts, confpay.WithLogger(slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	c, err := confpay.NewClient(key, opts...)
	if err != nil {
		return nil, &codedError{exitAuth, "configuration: " + strings.TrimPrefix(err.Error(), "confpay: ")}
	}
	if a.debug {
		fmt.Fprintf(a.stderr, "debug: base URL %s, network %s (chain %d), API key %s, decryption key %s\n",
			c.BaseURL(), c.Network(), c.ChainID(), redactKey(key), a.keySource())
	}
	a.client = c
	return c, nil
}

// redactKey shows an API key's network prefix only.
func redactKey(k string) string {
	for _, p := range []string{"hc_test_", "hc_live_"} {
		if strings.HasPrefix(k, p) {
			return p + "REDACTED"
		}
	}
	return "REDACTED"
}

// keySource says where the decryption key comes from, never the key.
func (a *app) keySource() string {
	switch {
	case a.keyFile == "-":
		return "from standard input"
	case a.keyFile != "":
		return "from file " + clean(a.keyFile)
	case a.env(envDecryptionKey) != "":
		return "from " + envDecryptionKey
	}
	return "not set"
}

// decryptionKey returns the decryption key, or nil when none is configured.
// A key file must be private to its owner (mode 0600), as ssh requires of
// a private key: a decryption key opens every figure of the account.
func (a *app) decryptionKey() (*decrypt.PrivateKey, error) {
	if a.keyRead {
		return a.key, nil
	}
	var text, from string
	switch {
	case a.keyFile != "":
		in := input{flag: "--decryption-key-file", what: "the decryption key", path: a.keyFile,
			max: maxKeyFile, limit: "a decryption key is 64 hex digits", private: true}
		b, err := a.read(in)
		if err != nil {
			return nil, err
		}
		text, from = string(b), "--decryption-key-file "+in.source()
		clear(b)
	case a.env(envDecryptionKey) != "":
		text, from = a.env(envDecryptionKey), envDecryptionKey
	default:
		return nil, nil
	}
	k, err := decrypt.ParsePrivateKeyHex(strings.TrimPrefix(strings.TrimSpace(text), "0x"))
	if err != nil {
		// decrypt's errors never quote the input.
		return nil, usagef("the decryption key in %s is not a key: %v", from, err)
	}
	a.key, a.keyRead = k, true
	return k, nil
}

// wrongKey reports whether err says the decryption key is not a reader of
// a note or not the account's key.
func wrongKey(err error) bool { return errors.Is(err, decrypt.ErrNotForThisKey) }

// networkLine names the client's network, from its key.
func networkLine(c *confpay.Client) string {
	return fmt.Sprintf("%s (chain %d)", c.Network(), c.ChainID())
}

// fmtTime writes an instant in UTC, RFC 3339.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// fmtTimePtr is fmtTime for optional instants.
func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

// exactArgs is cobra.ExactArgs with a usage error naming what is missing.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s takes %d argument(s): %s (got %d)", cmd.CommandPath(), len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}
