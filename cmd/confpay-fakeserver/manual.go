package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// defaultAddr is where the binary listens unless -addr says otherwise:
// loopback only, and a port of its own. stripe-mock, which many teams run
// beside it, takes 12111 (HTTP) and 12112 (HTTPS); 12180 is neither, and
// not a port any common development tool claims.
const defaultAddr = "127.0.0.1:12180"

// manual is the text of -help, laid out like a manual page.
const manual = `NAME
    confpay-fakeserver - the confpay reference server, in memory

SYNOPSIS
    confpay-fakeserver [-addr host:port] [-seed file] [-data dir] [-virtual-clock]
                       [-block-time d] [-approval-window d]
                       [-admin-token token] [-log-format text|json]
                       [-log-level debug|info|warn|error|off]
                       [-read-header-timeout d] [-read-timeout d]
                       [-write-timeout d] [-idle-timeout d]
                       [-max-header-bytes n] [-shutdown-timeout d]
                       [-delivery-timeout d] [-max-held-per-agent n]
                       [-max-idempotency-keys n] [-max-agents-per-owner n]
                       [-max-pending-deliveries n]
                       [-max-pending-deliveries-per-account n]
                       [-max-events n] [-max-delivery-records n]
                       [-max-audit-requests n] [-chaos spec]
    confpay-fakeserver -version
    confpay-fakeserver -help

DESCRIPTION
    Serves the confidential payments interface (/v1) and its test controls
    (/_fake) from memory, for tests in any language and for trying the
    interface with curl. Nothing is written to disk; stopping it forgets
    everything.

    On start it prints one line of JSON on standard output: the base URL
    and the seeded accounts and agents with their API keys (and decryption
    keys, for accounts whose key the server generated). Then it serves until SIGINT
    or SIGTERM, logging one line per request on standard error.

    It listens on loopback only unless -addr says otherwise. Without an
    admin token the /_fake interface takes no credentials, so on any other
    address (0.0.0.0, ::, :port, a host's own address) it refuses to start
    until a token is set. A webhook delivery never acts on /_fake, with or
    without a token.

OPTIONS
    -addr host:port
        Where to listen (default ` + defaultAddr + `). 127.0.0.1:0 picks a
        free port; the start line says which.
    -seed file
        Accounts, agents and balances to create at start, as JSON:
        {"accounts": [{"handle": "@alice", "generate_encryption_key": true,
          "balances": {"test": {"USDG": "100"}}}],
         "agents": [{"owner": "@alice", "name": "buyer",
          "spend_policy": {"daily_limit_usdg": 500,
                           "per_transaction_limit_usdg": 100}}]}.
        An agent gets a test and a live key unless "keys" lists them
        ([{"network": "test", "name": "ci"}]); "status" and "balances" as
        for accounts. A bad file names the member at fault and starts
        nothing.
        POST /_fake/reset?to=seed empties the server and creates them again
        (with new ids and keys, in the answer); POST /_fake/reset empties it.
    -data dir
        Keep the state in dir (created 0700; files 0600) so that it
        survives a restart and a crash, kill -9 included: accounts, keys
        (hashed), agents and each network's policy, balances and their
        ciphertexts, transfers, held payments, the clock. Every answer is
        written only once its effect is fsynced there. -seed applies only
        when dir holds no state; POST /_fake/reset empties dir too. A
        second server on dir is refused. Also kept: webhook
        subscriptions with their secrets, events, delivery records and
        pending deliveries, kept Idempotency-Key answers; not kept:
        faults. Without -data nothing touches the disk.
    -data-nosync
        Write -data without fsync: a process crash still loses nothing,
        a machine crash may lose the last writes.
    -virtual-clock
        Start a virtual clock at 2026-01-05T09:00:00Z that moves only
        through POST /_fake/clock (default: the wall clock).
    -block-time d
        How long a transfer stays pending before it confirms (default 1s).
    -approval-window d
        How long a held agent payment waits for a decision (default 24h).
    -admin-token token
        Require "Authorization: Bearer token" on every /_fake request
        (default: $CONFPAY_FAKESERVER_ADMIN_TOKEN, else none). At least
        16 bytes, one word. Required when -addr is not a loopback address.
    -log-format text|json
        How request lines are written on standard error (default text).
    -log-level debug|info|warn|error|off
        The least severe lines written (default info). info logs every
        request; warn only 5xx answers; debug adds webhook delivery
        attempts. A line holds the method, the path without its query, the
        status, the duration and the request id: never a key, a token, a
        query, a body, a proof or a figure.
    -read-header-timeout d
        Time to read a request's headers (default 5s).
    -read-timeout d
        Time to read a whole request, body included (default 30s).
    -write-timeout d
        Time from the end of the headers to the end of the answer (default
        60s). A request held by a delay fault is exempt.
    -idle-timeout d
        How long a keep-alive connection may wait for its next request
        (default 60s).
    -max-header-bytes n
        Largest request head, in bytes (default 65536; more answers 431).
    -shutdown-timeout d
        How long requests in flight may take to finish once a stop is asked
        for (default 10s); then they are cut off.
    -delivery-timeout d
        How long a webhook receiver has to answer a delivery (default 10s).
    -max-held-per-agent n
        Payments that may wait for the owner's decision per agent and
        network (default 1000); one more answers 429 rate_limited.
    -max-idempotency-keys n
        Idempotency-Keys kept per account and network for 24 hours
        (default 100000); a request with one more new key answers 429
        rate_limited until the oldest expires.
    -max-agents-per-owner n
        Agents one owner may have (default 1000); one more answers 409
        agent_limit_reached.
    -max-pending-deliveries n
        Webhook deliveries that may be pending (in flight, due, or waiting
        for a retry) per subscription (default 100000).
    -max-pending-deliveries-per-account n
        The same over all the subscriptions of one account on one network
        (default 100000). A new delivery past either bound is recorded
        failed with no attempt (replay it later); a replay answers 429.
        No bound is shared: other accounts' deliveries go on as before.
    -max-events n
        Events kept per account and network (default 100000; 30 days at
        most); past it the account's oldest event is forgotten.
    -max-delivery-records n
        Finished webhook delivery records kept per account and network
        (default 100000; 30 days at most); past it the account's oldest
        go.
    -max-audit-requests n
        Requests the audit (GET /_fake/audit) keeps per account and network
        (default 10000); past it the account's oldest request is
        forgotten, and with it any finding it made.
    -chaos spec
        Chaos on a seed: each /v1 request (never /_fake) and each webhook
        delivery attempt may get a fault, drawn at the given rates from a
        generator seeded with seed. spec is comma-separated name=value:
        seed=N (required); the API faults error (429, 500, 502 or 503),
        drop (drop_after_commit), reset (reset_after_commit) and delay;
        the delivery faults lose_answer, duplicate, delivery_delay
        (held for delay_for) and reorder; each rate in basis
        points ("250bp") or a percentage with at most two decimals
        ("2.5%"), the API rates together at most 100 %, the delivery
        rates too; retry_after=SECONDS on the errors (default 0) and
        delay_for=DURATION (default 1s). The same seed gives the same
        faults to the same sequence of requests of each account on each
        route; CONFPAY_CHAOS_SEED replaces the seed.
    -version
        Print the module version and exit.
    -help
        Print this page and exit.

ENVIRONMENT
    CONFPAY_FAKESERVER_ADMIN_TOKEN
        The admin token when -admin-token is not given; unlike a flag it
        stays out of shell history and process listings.
    CONFPAY_CHAOS_SEED
        Replaces the seed of -chaos (and of faults with a probability):
        the replay of a chaos run.

FILES
    The -seed file, read once at start (and kept in memory for
    POST /_fake/reset?to=seed). The -data directory: snapshot, journal
    and LOCK, and journal.next and snapshot.tmp while the snapshot is
    rewritten (docs/fakeserver.md). Nothing else is read or written.

EXAMPLES
    Run it with two accounts and read their keys:
        confpay-fakeserver -seed seed.json > start.json
    Keep a shared sandbox across restarts, seeded on its first start:
        confpay-fakeserver -data /var/lib/confpay -seed seed.json
    Reset between tests to the seeded state:
        curl -s -X POST 'localhost:12180/_fake/reset?to=seed'
    Run it in CI with JSON logs on a free port and an admin token:
        CONFPAY_FAKESERVER_ADMIN_TOKEN=$(openssl rand -hex 16) \
            confpay-fakeserver -addr 127.0.0.1:0 -log-format json
    Serve it to other hosts (a container, a shared CI runner):
        CONFPAY_FAKESERVER_ADMIN_TOKEN=$(openssl rand -hex 16) \
            confpay-fakeserver -addr 0.0.0.0:12180
    Shake a client with 2 % errors, 1 % drops and 5 % lost webhook answers:
        confpay-fakeserver -chaos seed=42,error=2%,drop=1%,lose_answer=5%
    Install it:
        go install github.com/confpay/confpay-go/cmd/confpay-fakeserver@latest

EXIT STATUS
    0   stopped by SIGINT or SIGTERM after every request finished; or
        -help or -version
    1   a bad flag or seed file, an admin token under 16 bytes, an address
        it cannot listen on, a non-loopback address without an admin
        token, or requests still running after -shutdown-timeout
    A second SIGINT or SIGTERM ends it at once.

SEE ALSO
    docs/fakeserver.md in github.com/confpay/confpay-go
`

// printManual writes the manual page.
func printManual(w io.Writer) { _, _ = io.WriteString(w, manual) }

// version is the module version the binary was built from: v0.1.0 when
// installed with go install …@v0.1.0, "(devel)" when built from a
// checkout (with the commit, when the build recorded one).
func version() string {
	v := "(unknown)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
		if v == "" {
			v = "(devel)"
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && v == "(devel)" {
				v += " " + s.Value
			}
		}
	}
	return fmt.Sprintf("confpay-fakeserver %s %s", v, runtime.Version())
}
