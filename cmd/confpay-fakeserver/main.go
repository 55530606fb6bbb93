// Command confpay-fakeserver runs the confpay reference server (package
// fakeserver) as a standalone process, for tests in any language and for
// trying the interface with curl.
//
// Usage:
//
//	confpay-fakeserver [-addr 127.0.0.1:12111] [-block-time 1s]
//	    [-approval-window 24h] [-virtual-clock] [-seed accounts.json]
//	    [-admin-token TOKEN]
//
// On start it prints one line of JSON to standard output: the base URL and
// the seeded accounts with their API keys (and decryption keys, when the
// seed asked the server to generate them):
//
//	{"url":"http://127.0.0.1:12111","accounts":[{"account_id":"acct_…","handle":"@alice","test_key":"hc_test_…",…}]}
//
// The seed file holds accounts as POST /_fake/accounts takes them, plus
// their balances per network:
//
//	{"accounts": [
//	  {"handle": "@alice", "generate_encryption_key": true,
//	   "balances": {"test": {"USDG": "100", "ETH": "0.5"}}},
//	  {"handle": "@shop", "type": "business", "kyc_status": "verified"}
//	]}
//
// The server follows the wall clock unless -virtual-clock is given; either
// way POST /_fake/clock moves it. It listens on loopback by default: the
// /_fake admin interface takes no key unless -admin-token (or the
// environment variable CONFPAY_FAKESERVER_ADMIN_TOKEN, which stays out of
// shell history) sets one, so keep -addr on loopback (127.0.0.1:0 picks a
// free port; :0 would listen on every interface). With a token, every
// /_fake request needs "Authorization: Bearer TOKEN". SIGINT or SIGTERM
// stops it cleanly.
// See docs/fakeserver.md for the whole admin interface.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/internal/strictjson"
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

// seedFile is the -seed file.
type seedFile struct {
	Accounts []seedAccount `json:"accounts"`
}

// seedAccount is an account of the seed file: POST /_fake/accounts fields
// plus balances per network and asset.
type seedAccount struct {
	fakeserver.AccountParams
	Balances map[confpay.Network]map[string]string `json:"balances"`
}

// parseSeed decodes a seed file strictly (internal/strictjson): one JSON
// object, no unknown member, no member given twice or in another letter
// case, nothing after it. Errors name the member, as a path.
func parseSeed(b []byte) (*seedFile, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New(`the file is empty: it needs a JSON object such as {"accounts": []}`)
	}
	var seed seedFile
	if err := strictjson.Decode(b, &seed); err != nil {
		return nil, err
	}
	return &seed, nil
}

// apply creates the seed's accounts and balances on srv, in order.
func (seed *seedFile) apply(srv *fakeserver.Server) ([]*fakeserver.AccountInfo, error) {
	infos := []*fakeserver.AccountInfo{}
	for i, a := range seed.Accounts {
		info, err := srv.CreateAccount(a.AccountParams)
		if err != nil {
			return nil, fmt.Errorf("seed account %d (%s): %w", i, a.Handle, err)
		}
		for n, assets := range a.Balances {
			for asset, amount := range assets {
				if err := srv.Fund(info.AccountID, n, asset, amount); err != nil {
					return nil, fmt.Errorf("seed account %d (%s), %s %s balance: %w", i, a.Handle, n, asset, err)
				}
			}
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// adminTokenEnv names the environment variable that sets the admin token
// when -admin-token is not given (an environment variable stays out of
// shell history and process listings).
const adminTokenEnv = "CONFPAY_FAKESERVER_ADMIN_TOKEN"

// started is the line printed on start.
type started struct {
	URL      string                    `json:"url"`
	Accounts []*fakeserver.AccountInfo `json:"accounts"`
}

// run parses args, starts the server, prints where it listens and the
// seeded keys to stdout, and serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("confpay-fakeserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:12111", "address to listen on; keep it on loopback, the admin interface takes no key without -admin-token (127.0.0.1:0 picks a free port)")
	blockTime := fs.Duration("block-time", time.Second, "how long a transfer stays pending before it confirms")
	approval := fs.Duration("approval-window", 24*time.Hour, "how long a held agent payment waits for a decision")
	virtual := fs.Bool("virtual-clock", false, "start a virtual clock at 2026-01-05T09:00:00Z that moves only through POST /_fake/clock")
	seedPath := fs.String("seed", "", "JSON file of accounts and balances to create at start")
	adminToken := fs.String("admin-token", "", "require this bearer token on every /_fake admin request (default: $"+adminTokenEnv+"; none: the admin interface takes no credentials)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *blockTime < 0 || *approval <= 0 {
		return errors.New("-block-time must be at least 0 and -approval-window above 0")
	}
	var seed *seedFile
	if *seedPath != "" {
		b, err := os.ReadFile(*seedPath)
		if err != nil {
			return fmt.Errorf("reading the seed file: %w", err)
		}
		if seed, err = parseSeed(b); err != nil {
			return fmt.Errorf("seed file %s: %w", *seedPath, err)
		}
	}

	opts := []fakeserver.Option{fakeserver.WithBlockTime(*blockTime), fakeserver.WithApprovalWindow(*approval)}
	if *adminToken == "" {
		*adminToken = os.Getenv(adminTokenEnv)
	}
	if *adminToken != "" {
		if strings.ContainsAny(*adminToken, " \t,") {
			return errors.New("-admin-token must be one token: no space, tab or comma")
		}
		opts = append(opts, fakeserver.WithAdminToken(*adminToken))
	}
	if !*virtual {
		opts = append(opts, fakeserver.WithRealClock())
	}
	srv := fakeserver.NewUnstartedServer(opts...)
	defer srv.Close()

	out := started{Accounts: []*fakeserver.AccountInfo{}}
	if seed != nil {
		infos, err := seed.apply(srv)
		if err != nil {
			return err
		}
		out.Accounts = infos
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	out.URL = "http://" + ln.Addr().String()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		_ = hs.Close()
		return err
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "confpay-fakeserver: shutting down")
	srv.Close() // releases requests held by delay faults
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
