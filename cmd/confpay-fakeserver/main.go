// Command confpay-fakeserver runs the confpay reference server (package
// fakeserver) as a standalone process, for tests in any language and for
// trying the interface with curl. Install it with
//
//	go install github.com/confpay/confpay-go/cmd/confpay-fakeserver@latest
//
// Usage:
//
//	confpay-fakeserver [-addr 127.0.0.1:12180] [-seed accounts.json]
//	    [-virtual-clock] [-block-time 1s] [-approval-window 24h]
//	    [-admin-token TOKEN] [-log-format text|json] [-log-level info]
//	    [-read-header-timeout 5s] [-read-timeout 30s] [-write-timeout 60s]
//	    [-idle-timeout 60s] [-max-header-bytes 65536] [-shutdown-timeout 10s]
//	confpay-fakeserver -version
//	confpay-fakeserver -help
//
// On start it prints one line of JSON to standard output: the base URL and
// the seeded accounts and agents with their API keys (and decryption keys,
// when the seed asked the server to generate them):
//
//	{"url":"http://127.0.0.1:12180","accounts":[{"account_id":"acct_…","handle":"@alice","test_key":"hc_test_…",…}]}
//
// The seed file (fakeserver.Seed, read with fakeserver.ParseSeed) holds
// accounts as POST /_fake/accounts takes them, plus their balances per
// network, and agents with their owner, spend policy and keys:
//
//	{"accounts": [
//	  {"handle": "@alice", "generate_encryption_key": true,
//	   "balances": {"test": {"USDG": "100", "ETH": "0.5"}}},
//	  {"handle": "@shop", "type": "business", "kyc_status": "verified"}
//	 ],
//	 "agents": [
//	  {"owner": "@alice", "name": "buyer",
//	   "spend_policy": {"daily_limit_usdg": 500, "per_transaction_limit_usdg": 100}}
//	 ]}
//
// POST /_fake/reset?to=seed empties the server and loads the seed again,
// answering with the same object as the start line (new ids and keys);
// POST /_fake/reset empties it.
//
// It listens on loopback, port 12180 (not stripe-mock's 12111 or 12112, so
// both can run), by default: the /_fake admin interface takes no key
// unless -admin-token (or the environment variable
// CONFPAY_FAKESERVER_ADMIN_TOKEN, which stays out of shell history) sets
// one, of at least 16 bytes. On any address but a loopback one it refuses
// to start without a token. Each request is logged on standard error as one line (-log-format,
// -log-level) that never holds a key, a body, a proof or a figure. The
// HTTP server has read-header, read, write and idle timeouts and a header
// size cap, each a flag. SIGINT or SIGTERM stops it: at once when idle,
// after the requests in flight otherwise. -help prints the whole manual;
// docs/fakeserver.md has the admin interface.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/confpay/confpay-go/fakeserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second SIGINT or SIGTERM ends the process at once
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "confpay-fakeserver:", err)
		os.Exit(1)
	}
}

// adminTokenEnv names the environment variable that sets the admin token
// when -admin-token is not given (an environment variable stays out of
// shell history and process listings).
const adminTokenEnv = "CONFPAY_FAKESERVER_ADMIN_TOKEN"

// minAdminTokenBytes is the shortest admin token the binary takes: 16
// bytes (openssl rand -hex 16 makes 32).
const minAdminTokenBytes = 16

// checkAdminToken refuses an admin token that is not one token of at least
// minAdminTokenBytes bytes. The error never holds the token.
func checkAdminToken(token string) error {
	if strings.ContainsAny(token, " \t,") {
		return errors.New("the admin token (-admin-token or $" + adminTokenEnv + ") must be one token: no space, tab or comma")
	}
	if len(token) < minAdminTokenBytes {
		return fmt.Errorf("the admin token (-admin-token or $%s) is shorter than %d bytes: make one with openssl rand -hex 16", adminTokenEnv, minAdminTokenBytes)
	}
	return nil
}

// checkExposure refuses to serve /_fake beyond loopback without an admin
// token: a listener on any address but a loopback one (0.0.0.0, ::, a
// host's own address) needs one, or anyone who reaches the port could
// mint keys, read plaintext books and reset the server. The address
// checked is the one the listener is bound to, after every resolution.
func checkExposure(addr net.Addr, token string) error {
	if token != "" {
		return nil
	}
	if t, ok := addr.(*net.TCPAddr); ok && t.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listening on %s, beyond loopback, needs an admin token for /_fake: "+
		"set %s (at least %d bytes; for example %s=$(openssl rand -hex 16)) or -admin-token, or listen on 127.0.0.1",
		addr, adminTokenEnv, minAdminTokenBytes, adminTokenEnv)
}

// config is what the flags set.
type config struct {
	addr, seedPath, adminToken string
	dataDir                    string
	dataNoSync                 bool
	blockTime, approval        time.Duration
	virtual, version           bool
	logFormat, logLevel        string
	chaos                      string // -chaos, a fakeserver.ParseChaos spec
	limits                     limits
	bounds                     bounds
}

// bounds are the server's own limits the flags can change.
type bounds struct {
	deliveryTimeout  time.Duration
	maxHeld, maxKeys int
	maxAgents        int
	// webhook history and pending deliveries, per account and network
	maxPending, maxPendingPerAccount, maxEvents, maxRecords int
	maxAuditRequests                                        int // requests the audit keeps per account and network
}

// check refuses a bound that would remove the limit: each must be above 0.
func (b bounds) check() error {
	if b.deliveryTimeout <= 0 {
		return errors.New("-delivery-timeout must be above 0, such as 10s")
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"-max-held-per-agent", b.maxHeld}, {"-max-idempotency-keys", b.maxKeys}, {"-max-agents-per-owner", b.maxAgents},
		{"-max-pending-deliveries", b.maxPending}, {"-max-pending-deliveries-per-account", b.maxPendingPerAccount},
		{"-max-events", b.maxEvents}, {"-max-delivery-records", b.maxRecords}, {"-max-audit-requests", b.maxAuditRequests}} {
		if n.v <= 0 {
			return fmt.Errorf("%s must be above 0", n.name)
		}
	}
	return nil
}

// options are the fakeserver options that set the bounds.
func (b bounds) options() []fakeserver.Option {
	return []fakeserver.Option{fakeserver.WithDeliveryTimeout(b.deliveryTimeout),
		fakeserver.WithMaxHeldPerAgent(b.maxHeld), fakeserver.WithMaxIdempotencyKeys(b.maxKeys),
		fakeserver.WithMaxAgentsPerOwner(b.maxAgents), fakeserver.WithMaxPendingDeliveries(b.maxPending, b.maxPendingPerAccount),
		fakeserver.WithMaxEvents(b.maxEvents), fakeserver.WithMaxDeliveryRecords(b.maxRecords),
		fakeserver.WithAuditConfig(fakeserver.AuditConfig{MaxRequests: b.maxAuditRequests})}
}

// defineFlags defines every flag on fs (the manual, in manual.go, says
// what each does: a test holds the two together).
func defineFlags(fs *flag.FlagSet) *config {
	c := &config{}
	fs.StringVar(&c.addr, "addr", defaultAddr, "address to listen on")
	fs.DurationVar(&c.blockTime, "block-time", time.Second, "how long a transfer stays pending")
	fs.DurationVar(&c.approval, "approval-window", 24*time.Hour, "how long a held agent payment waits")
	fs.BoolVar(&c.virtual, "virtual-clock", false, "start a virtual clock")
	fs.StringVar(&c.seedPath, "seed", "", "JSON file of accounts and balances")
	fs.StringVar(&c.dataDir, "data", "", "directory that keeps the state across restarts")
	fs.BoolVar(&c.dataNoSync, "data-nosync", false, "write -data without fsync")
	fs.StringVar(&c.adminToken, "admin-token", "", "bearer token for /_fake (default $"+adminTokenEnv+")")
	fs.StringVar(&c.logFormat, "log-format", "text", "text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn, error or off")
	fs.DurationVar(&c.limits.readHeader, "read-header-timeout", 5*time.Second, "time to read a request's headers")
	fs.DurationVar(&c.limits.read, "read-timeout", 30*time.Second, "time to read a whole request")
	fs.DurationVar(&c.limits.write, "write-timeout", 60*time.Second, "time to answer once the headers are read")
	fs.DurationVar(&c.limits.idle, "idle-timeout", 60*time.Second, "how long a keep-alive connection may idle")
	fs.IntVar(&c.limits.maxHeaderBytes, "max-header-bytes", 64<<10, "largest request head in bytes")
	fs.DurationVar(&c.limits.drain, "shutdown-timeout", 10*time.Second, "how long requests in flight may finish on stop")
	fs.DurationVar(&c.bounds.deliveryTimeout, "delivery-timeout", fakeserver.DefaultDeliveryTimeout, "how long a webhook receiver has to answer")
	fs.IntVar(&c.bounds.maxHeld, "max-held-per-agent", fakeserver.DefaultMaxHeldPerAgent, "payments waiting for a decision per agent and network")
	fs.IntVar(&c.bounds.maxKeys, "max-idempotency-keys", fakeserver.DefaultMaxIdempotencyKeys, "Idempotency-Keys kept per account and network")
	fs.IntVar(&c.bounds.maxAgents, "max-agents-per-owner", fakeserver.DefaultMaxAgentsPerOwner, "agents one owner may have")
	fs.IntVar(&c.bounds.maxPending, "max-pending-deliveries", fakeserver.DefaultMaxPendingDeliveries, "webhook deliveries pending per subscription")
	fs.IntVar(&c.bounds.maxPendingPerAccount, "max-pending-deliveries-per-account", fakeserver.DefaultMaxPendingDeliveries, "webhook deliveries pending per account and network")
	fs.IntVar(&c.bounds.maxEvents, "max-events", fakeserver.DefaultMaxEvents, "events kept per account and network")
	fs.IntVar(&c.bounds.maxRecords, "max-delivery-records", fakeserver.DefaultMaxDeliveryRecords, "finished webhook delivery records kept per account and network")
	fs.IntVar(&c.bounds.maxAuditRequests, "max-audit-requests", fakeserver.DefaultMaxAuditRequests, "requests the audit keeps per account and network")
	fs.StringVar(&c.chaos, "chaos", "", "chaos on a seed: seed=N,error=200bp,drop=1%,... (see -help)")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	return c
}

// run parses args, starts the server, prints where it listens and the
// seeded keys to stdout, logs requests to stderr, and serves until ctx is
// done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("confpay-fakeserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // -help prints the manual; a bad flag, one line
	cfg := defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printManual(stdout)
			return nil
		}
		fmt.Fprintln(stderr, "usage: confpay-fakeserver [flags]; confpay-fakeserver -help for the manual")
		return err
	}
	if cfg.version {
		fmt.Fprintln(stdout, version())
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.blockTime < 0 || cfg.approval <= 0 {
		return errors.New("-block-time must be at least 0 and -approval-window above 0")
	}
	if err := cfg.limits.check(); err != nil {
		return err
	}
	if err := cfg.bounds.check(); err != nil {
		return err
	}
	log, err := newLogger(cfg.logFormat, cfg.logLevel, stderr)
	if err != nil {
		return err
	}
	var seed *fakeserver.Seed
	if cfg.seedPath != "" {
		b, err := os.ReadFile(cfg.seedPath)
		if err != nil {
			return fmt.Errorf("reading the seed file: %w", err)
		}
		if seed, err = fakeserver.ParseSeed(b); err != nil {
			return fmt.Errorf("seed file %s: %w", cfg.seedPath, err)
		}
	}

	opts := append([]fakeserver.Option{fakeserver.WithBlockTime(cfg.blockTime), fakeserver.WithApprovalWindow(cfg.approval), fakeserver.WithLogger(log)},
		cfg.bounds.options()...)
	if cfg.adminToken == "" {
		cfg.adminToken = os.Getenv(adminTokenEnv)
	}
	if cfg.adminToken != "" {
		if err := checkAdminToken(cfg.adminToken); err != nil {
			return err
		}
		opts = append(opts, fakeserver.WithAdminToken(cfg.adminToken))
	}
	if !cfg.virtual {
		opts = append(opts, fakeserver.WithRealClock())
	}
	if cfg.chaos != "" {
		seed, rates, err := fakeserver.ParseChaos(cfg.chaos)
		if err != nil {
			return fmt.Errorf("-chaos: %w", err)
		}
		opts = append(opts, fakeserver.WithChaos(seed, rates))
	}
	// The start line: the base URL and what the seed created, keys in
	// clear (fakeserver.SeededAnswer).
	out := fakeserver.SeededAnswer{Seeded: &fakeserver.Seeded{}}
	if seed != nil {
		// POST /_fake/reset?to=seed answers with the start line anew.
		opts = append(opts, fakeserver.WithResetSeed(func(srv *fakeserver.Server) (any, error) {
			sd, err := srv.Load(seed) // the server was just emptied
			if err != nil {
				return nil, err
			}
			return fakeserver.SeededAnswer{URL: out.URL, Seeded: sd}, nil
		}))
	}
	if cfg.dataDir != "" {
		opts = append(opts, fakeserver.WithDataDir(cfg.dataDir))
		if cfg.dataNoSync {
			opts = append(opts, fakeserver.WithDataDirNoSync())
		}
	}
	srv, err := fakeserver.Open(opts...)
	if err != nil {
		return err
	}
	defer srv.Close()
	// Listen before seeding: a start that cannot listen changes nothing
	// in the data directory.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	if err := checkExposure(ln.Addr(), cfg.adminToken); err != nil {
		_ = ln.Close()
		return err
	}
	out.URL = "http://" + ln.Addr().String()
	// The seed stays for POST /_fake/reset?to=seed either way (the
	// reset answer above reads it).
	applySeed := seed != nil
	if applySeed && cfg.dataDir != "" && !srv.DataDirWasEmpty() {
		log.Info("the data directory holds state: -seed not applied (POST /_fake/reset?to=seed applies it)", "data", cfg.dataDir)
		applySeed = false
	}
	if applySeed {
		sd, err := srv.Load(seed)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("seed file %s: %w", cfg.seedPath, err)
		}
		out.Seeded = sd
	}
	// Once the listener is closed, srv.Close releases requests held by
	// delay faults, so that they answer (503) within the drain.
	hs := newHTTPServer(logRequests(log, srv.Handler()), cfg.limits, log, srv.Close)
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		_ = ln.Close()
		return err
	}
	log.Info("listening", "url", out.URL)
	err = hs.serve(ctx, ln, cfg.limits.drain)
	log.Info("stopped")
	return err
}
