// Command smokeimage smoke-tests a running confpay-fakeserver, as
// scripts/smoke-image.sh runs it against the container image: /_fake
// refuses a request without the admin token; accounts are made and funded
// through /_fake with it; a payment through /v1; its webhook delivered to
// a receiver on this host (loopback), signature verified; the balance read
// through /_fake/prove and /v1, and through the SDK's own proof.
//
// With -receiver it checks the compose example's topology instead
// (examples/compose): a webhook receiver in its own container, sharing the
// server's network namespace, started by -receiver-start with the
// subscription's secret in CONFPAY_WEBHOOK_SECRET, verifies the deliveries
// it prints (read by -receiver-logs).
//
//	go run ./scripts/smokeimage -free-port            # print a free loopback port
//	CONFPAY_FAKESERVER_ADMIN_TOKEN=… go run ./scripts/smokeimage -url http://127.0.0.1:PORT
//	CONFPAY_FAKESERVER_ADMIN_TOKEN=… go run ./scripts/smokeimage -url http://127.0.0.1:PORT \
//		-receiver 127.0.0.1:RPORT -receiver-start 'podman run …' -receiver-logs 'podman logs …'
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
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/webhookverify"
)

func main() {
	url := flag.String("url", "", "the fakeserver's base URL")
	wait := flag.Duration("wait", 30*time.Second, "how long to wait for the server to answer, and for the delivery")
	freePort := flag.Bool("free-port", false, "print a free TCP port on loopback and exit")
	receiver := flag.String("receiver", "", "check the compose topology: the receiver's address (host:port)")
	receiverStart := flag.String("receiver-start", "", "with -receiver: a shell command that starts the receiver, the secret in CONFPAY_WEBHOOK_SECRET")
	receiverLogs := flag.String("receiver-logs", "", "with -receiver: a shell command that prints the receiver's output")
	flag.Parse()
	if *freePort {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fail(err)
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		return
	}
	token := os.Getenv("CONFPAY_FAKESERVER_ADMIN_TOKEN")
	if *url == "" || token == "" {
		fail(errors.New("give -url and set CONFPAY_FAKESERVER_ADMIN_TOKEN"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2**wait)
	defer cancel()
	check := func() error { return smoke(ctx, strings.TrimSuffix(*url, "/"), token, *wait) }
	if *receiver != "" {
		if *receiverStart == "" || *receiverLogs == "" {
			fail(errors.New("-receiver needs -receiver-start and -receiver-logs"))
		}
		check = func() error {
			return composeSmoke(ctx, strings.TrimSuffix(*url, "/"), token, *wait, *receiver, *receiverStart, *receiverLogs)
		}
	}
	if err := check(); err != nil {
		fail(err)
	}
	fmt.Println("smoke: ok")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "smoke: FAIL:", err)
	os.Exit(1)
}

func step(format string, args ...any) { fmt.Printf("smoke: "+format+"\n", args...) }

// admin calls /_fake with token (none when empty) and decodes the answer.
func admin(ctx context.Context, base, token, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

// poll calls ok until it returns nil, every 200 ms, for at most wait: it
// waits for another process (a container starting, its output), never to
// synchronise with this one.
func poll(ctx context.Context, wait time.Duration, what string, ok func() error) error {
	deadline := time.Now().Add(wait)
	for {
		err := ok()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s: %v", what, wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitUp waits until the server answers /_fake/clock with the token.
func waitUp(ctx context.Context, base, token string, wait time.Duration) error {
	if err := poll(ctx, wait, "the server answering at "+base, func() error {
		_, err := admin(ctx, base, token, "GET", "/_fake/clock", nil, nil)
		return err
	}); err != nil {
		return err
	}
	step("the server answers at %s", base)
	return nil
}

func smoke(ctx context.Context, base, token string, wait time.Duration) error {
	if err := waitUp(ctx, base, token, wait); err != nil {
		return err
	}

	if code, _ := admin(ctx, base, "", "POST", "/_fake/reset", nil, nil); code != http.StatusUnauthorized {
		return fmt.Errorf("POST /_fake/reset without the admin token answered %d, want 401", code)
	}
	step("/_fake without the admin token: 401")

	type created struct {
		Handle        string `json:"handle"`
		TestKey       string `json:"test_key"`
		DecryptionKey string `json:"decryption_key"`
	}
	var alice, bob created
	if _, err := admin(ctx, base, token, "POST", "/_fake/accounts", map[string]any{"handle": "@smoke_alice", "generate_encryption_key": true}, &alice); err != nil {
		return err
	}
	if _, err := admin(ctx, base, token, "POST", "/_fake/accounts", map[string]any{"handle": "@smoke_bob", "generate_encryption_key": true}, &bob); err != nil {
		return err
	}
	if _, err := admin(ctx, base, token, "POST", "/_fake/fund", map[string]any{"account": "@smoke_alice", "amount": "10"}, nil); err != nil {
		return err
	}
	step("accounts @smoke_alice (funded, 10 USDG) and @smoke_bob made through /_fake")

	// A receiver on this host's loopback: the container (host network)
	// delivers to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c, err := confpay.NewClient(alice.TestKey, confpay.WithBaseURL(base))
	if err != nil {
		return err
	}
	events := make(chan webhookverify.Event, 16)
	var secret atomic.Value // the subscription's secret, once created
	secret.Store("")
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		ev, err := webhookverify.ConstructEvent(body, r.Header.Get(webhookverify.SignatureHeader), secret.Load().(string))
		if err != nil {
			http.Error(w, "signature", http.StatusBadRequest)
			return
		}
		events <- ev
	})}
	go hs.Serve(ln)
	defer hs.Close()
	w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "http://" + ln.Addr().String() + "/hooks",
		Events: []confpay.EventKind{webhookverify.KindTransferInitiated}})
	if err != nil {
		return err
	}
	secret.Store(w.Secret.Reveal())
	step("webhook %s subscribed: %s", w.WebhookID, w.URL)

	tr, err := c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@smoke_bob", Amount: confpay.MustParseAmount("2.5"), Memo: "smoke"})
	if err != nil {
		return err
	}
	step("paid @smoke_bob 2.5 USDG through /v1: %s", tr.TransferID)
	select {
	case ev := <-events:
		te, ok := ev.(*webhookverify.TransferEvent)
		if !ok || te.TransferID != tr.TransferID {
			return fmt.Errorf("delivered %s, want transfer.initiated of %s", ev.Kind(), tr.TransferID)
		}
		step("transfer.initiated delivered from the server to the receiver on this host, signature verified")
	case <-time.After(wait):
		return fmt.Errorf("no delivery within %s", wait)
	}

	// The balance, through /_fake/prove and /v1, as a client without the SDK reads it.
	var proved struct {
		DecryptionProof string `json:"decryption_proof"`
	}
	if _, err := admin(ctx, base, token, "POST", "/_fake/prove", map[string]any{"account": "@smoke_alice", "decryption_key": alice.DecryptionKey}, &proved); err != nil {
		return err
	}
	bals, err := c.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: proved.DecryptionProof})
	if err != nil {
		return err
	}
	if len(bals) != 1 || bals[0].Amount == nil || bals[0].Amount.String() != "7.5" {
		return fmt.Errorf("balances with the proof from /_fake/prove: %+v, want USDG 7.5", bals)
	}
	key, err := decrypt.ParsePrivateKeyHex(alice.DecryptionKey)
	if err != nil {
		return err
	}
	if bals, err = c.Accounts.ReadBalances(ctx, key); err != nil || bals[0].Amount.String() != "7.5" {
		return fmt.Errorf("ReadBalances: %v", err)
	}
	step("balance 7.5 USDG read through /_fake/prove and /v1, and through the SDK's own proof")
	return nil
}

// composeSmoke checks the compose example's topology: the receiver of
// examples/compose/receiver runs in its own container in the server's
// network namespace (compose's network_mode: service:fakeserver), is
// started with the subscription's secret, and prints the deliveries it
// verified.
func composeSmoke(ctx context.Context, base, token string, wait time.Duration, addr, start, logs string) error {
	if err := waitUp(ctx, base, token, wait); err != nil {
		return err
	}
	var alice struct {
		TestKey string `json:"test_key"`
	}
	if _, err := admin(ctx, base, token, "POST", "/_fake/accounts", map[string]any{"handle": "@compose_alice", "generate_encryption_key": true}, &alice); err != nil {
		return err
	}
	if _, err := admin(ctx, base, token, "POST", "/_fake/accounts", map[string]any{"handle": "@compose_bob", "generate_encryption_key": true}, nil); err != nil {
		return err
	}
	if _, err := admin(ctx, base, token, "POST", "/_fake/fund", map[string]any{"account": "@compose_alice", "amount": "10"}, nil); err != nil {
		return err
	}
	c, err := confpay.NewClient(alice.TestKey, confpay.WithBaseURL(base))
	if err != nil {
		return err
	}
	w, err := c.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "http://" + addr + "/hooks",
		Events: []confpay.EventKind{webhookverify.KindTransferInitiated}})
	if err != nil {
		return err
	}
	step("webhook %s subscribed: %s", w.WebhookID, w.URL)

	cmd := exec.CommandContext(ctx, "sh", "-c", start)
	cmd.Env = append(os.Environ(), "CONFPAY_WEBHOOK_SECRET="+w.Secret.Reveal())
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("-receiver-start: %v", err)
	}
	if err := poll(ctx, wait, "the receiver listening at "+addr, func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	}); err != nil {
		return err
	}
	step("the receiver container listens at %s with the subscription's secret", addr)

	if _, err := c.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@compose_bob", Amount: confpay.MustParseAmount("1")}); err != nil {
		return err
	}
	var printed string
	if err := poll(ctx, wait, "the receiver printing the verified transfer.initiated", func() error {
		out, err := exec.CommandContext(ctx, "sh", "-c", logs).CombinedOutput()
		printed = string(out)
		if err != nil {
			return fmt.Errorf("-receiver-logs: %v", err)
		}
		if !strings.Contains(printed, " transfer.initiated evt_") {
			return errors.New("not printed yet")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("%v; the receiver printed:\n%s", err, printed)
	}
	if strings.Contains(printed, w.Secret.Reveal()) {
		return errors.New("the receiver printed the secret")
	}
	step("transfer.initiated delivered to the receiver container, verified and printed")
	return nil
}
