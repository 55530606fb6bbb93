// Command confpay is the command-line client of the confidential payments
// service, for the real service and for a local fakeserver alike. It reads
// confidential figures locally, with the account's own decryption key: the
// service never sees the key and never answers a figure it was not proved.
//
// Usage:
//
//	confpay [--fake] [--json] [--decryption-key-file F] [--debug] <command>
//
// Commands: me, balances, pay, transfers (list, get), agents (list, create,
// policy get, policy set), approvals list, approve, reject, webhooks
// (create, list, delete, deliveries, replay, verify), listen, proof (a
// decryption proof built locally, for clients in other languages) and
// trigger (make an event happen for real). Every command has --help with
// an example; docs/cli.md describes them all.
//
// Configuration comes from the environment: CONFPAY_API_KEY (the key's
// prefix selects the network), CONFPAY_BASE_URL, and CONFPAY_DECRYPTION_KEY
// (or --decryption-key-file, a file private to its owner, or "-" for
// standard input; never a flag value, which would land in the shell's
// history and in ps). pay takes the amount and memo from files too
// (--amount-file, --memo-file). --fake targets a confpay-fakeserver on its
// default address, http://127.0.0.1:12180.
//
// Exit codes: 0 success, 1 the service refused the request (or another
// failure), 2 bad usage (unknown command or flag, bad argument or amount,
// missing decryption key), 3 API key missing or refused, 4 not found, 5 no
// answer from the service, 6 a webhook signature did not verify, 7 a
// payment waited for with --wait failed, 130 interrupted.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code. It
// builds the whole command tree for this call and keeps no global state,
// so tests run commands in process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, env: env}
	return a.execute(ctx, args)
}
