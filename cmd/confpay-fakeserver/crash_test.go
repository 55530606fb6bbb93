package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// childEnv makes the test binary run the server (the kill -9 test's
// child) instead of the tests.
const childEnv = "CONFPAY_FAKESERVER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "confpay-fakeserver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is the server run as a separate process.
type child struct {
	cmd   *exec.Cmd
	url   string
	start map[string]any
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		_ = cmd.Wait()
		t.Fatalf("no start line: %v; stderr %s", err, stderr.String())
	}
	c := &child{cmd: cmd}
	if err := json.Unmarshal(line, &c.start); err != nil {
		t.Fatal(err)
	}
	c.url = c.start["url"].(string)
	return c
}

func (c *child) call(method, path, key, body string) (int, map[string]any, error) {
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	return resp.StatusCode, v, nil
}

const crashSeed = `{"accounts": [
 {"handle": "@acct0", "generate_encryption_key": true, "balances": {"test": {"USDG": "1000"}, "live": {"USDG": "100"}}},
 {"handle": "@acct1", "generate_encryption_key": true, "balances": {"test": {"USDG": "1000"}}},
 {"handle": "@acct2", "generate_encryption_key": true, "balances": {"test": {"USDG": "1000"}}},
 {"handle": "@acct3", "generate_encryption_key": true, "balances": {"test": {"USDG": "1000"}}}],
 "agents": [{"owner": "@acct0", "name": "bot", "balances": {"test": {"USDG": "500"}},
  "spend_policy": {"daily_limit_usdg": 100000, "per_transaction_limit_usdg": 1000, "hitl_threshold_usdg": 1}}]}`

// TestKillNineLosesNothing runs the binary with -data under concurrent
// load (payments between four accounts, an agent's held payments and
// their approvals, clock moves), kills it with SIGKILL mid-load, starts
// it again on the directory, and checks that every acknowledged transfer
// and approval is there and that money is conserved per asset and
// network.
func TestKillNineLosesNothing(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-addr", "127.0.0.1:0", "-data", dir, "-virtual-clock", "-seed", writeSeed(t, crashSeed), "-log-level", "off"}
	c := startChild(t, args...)
	seeded := c.start["accounts"].([]any)
	var keys []string
	var ids []string
	for _, a := range seeded {
		m := a.(map[string]any)
		keys = append(keys, m["test_key"].(string))
		ids = append(ids, m["account_id"].(string))
	}
	agent := c.start["agents"].([]any)[0].(map[string]any)
	agentKey := agent["test_key"].(string)

	var mu sync.Mutex
	acked := map[string]string{} // transfer id → sender's key
	approved := map[string]bool{}
	var wg sync.WaitGroup
	const perClient = 40
	progress := make(chan struct{}, 1000)
	for i := range keys {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			to := fmt.Sprintf("@acct%d", (i+1)%len(keys))
			for j := 0; ; j++ {
				code, v, err := c.call("POST", "/v1/transfers", keys[i], `{"to":"`+to+`","amount":"0.01","asset":"USDG"}`)
				if err != nil {
					return // the server is gone
				}
				if code == http.StatusCreated {
					mu.Lock()
					acked[v["transfer_id"].(string)] = keys[i]
					mu.Unlock()
				}
				if j == perClient {
					progress <- struct{}{}
				}
			}
		}(i)
	}
	wg.Add(2)
	go func() { // the agent asks, the owner approves
		defer wg.Done()
		for {
			code, v, err := c.call("POST", "/v1/transfers", agentKey, `{"to":"@acct1","amount":"2","asset":"USDG"}`)
			if err != nil {
				return
			}
			if code != http.StatusAccepted {
				continue
			}
			code, _, err = c.call("POST", "/v1/agents/transactions/"+v["transaction_id"].(string)+"/approve", keys[0], "")
			if err != nil {
				return
			}
			if code == http.StatusOK {
				mu.Lock()
				approved[v["transaction_id"].(string)] = true
				mu.Unlock()
			}
		}
	}()
	go func() { defer wg.Done(); moveClock(c) }()
	killOnceEachMadeProgress(t, c, len(keys), progress)
	wg.Wait()
	if len(acked) == 0 || len(approved) == 0 {
		t.Fatalf("the load acknowledged %d transfers and %d approvals: nothing to check", len(acked), len(approved))
	}

	c2 := startChild(t, args...)
	if got := c2.start["accounts"]; got != nil && len(got.([]any)) != 0 {
		t.Fatalf("-seed applied to a directory with state: %d accounts created", len(got.([]any)))
	}
	for id, key := range acked {
		code, _, err := c2.call("GET", "/v1/transfers/"+id, key, "")
		if err != nil || code != http.StatusOK {
			t.Errorf("acknowledged transfer %s: %d %v after restart", id, code, err)
		}
	}
	for id := range approved {
		code, v, err := c2.call("GET", "/_fake/held/"+id, "", "")
		if err != nil || code != http.StatusOK || v["status"] != "approved" {
			t.Errorf("acknowledged approval %s: %d %v %v after restart", id, code, v["status"], err)
		}
	}
	checkSeedMoneyConserved(t, c2, append(ids, agent["account_id"].(string)))
	t.Logf("%d acknowledged transfers and %d approvals survived kill -9", len(acked), len(approved))
}

// keyedCall is one POST /v1/transfers under an Idempotency-Key: its key and
// body, and its answer if one arrived.
type keyedCall struct {
	sender int
	key    string // the Idempotency-Key, also the transfer's memo
	body   string
	status int // 0: no answer (the server died under it)
	answer []byte
}

// do sends one request with extra headers (name, value pairs) and returns
// the status, the headers and the raw body.
func (c *child) do(method, path, key, body string, hdr ...string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// TestKillNineIdempotencyKeys runs the binary with -data while several
// clients pay under Idempotency-Keys (and the clock moves), kills it with
// SIGKILL mid-load, starts it again on the directory, and has each client
// send again, with the same key and body, every request whose answer it
// never got, and every one it did. Then: each key moved money at most once
// (exactly once, after the retries), every acknowledged transfer exists
// with its key's memo, a retry of an acknowledged request replays its
// answer byte for byte, and money is conserved per asset and network.
func TestKillNineIdempotencyKeys(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-addr", "127.0.0.1:0", "-data", dir, "-virtual-clock", "-seed", writeSeed(t, crashSeed), "-log-level", "off"}
	c := startChild(t, args...)
	var keys, ids []string
	for _, a := range c.start["accounts"].([]any) {
		m := a.(map[string]any)
		keys = append(keys, m["test_key"].(string))
		ids = append(ids, m["account_id"].(string))
	}

	calls := make([][]*keyedCall, len(keys)) // per client, in order
	var wg sync.WaitGroup
	const perClient = 40
	progress := make(chan struct{}, len(keys))
	for i := range keys {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			to := fmt.Sprintf("@acct%d", (i+1)%len(keys))
			for j := 0; ; j++ {
				k := &keyedCall{sender: i, key: fmt.Sprintf("c%d-%d", i, j)}
				k.body = `{"to":"` + to + `","amount":"0.01","asset":"USDG","memo":"` + k.key + `"}`
				calls[i] = append(calls[i], k)
				code, _, b, err := c.do("POST", "/v1/transfers", keys[i], k.body, "Idempotency-Key", k.key)
				if err != nil {
					return // the server is gone: k has no answer
				}
				if code != http.StatusCreated {
					t.Errorf("%s: %d %s", k.key, code, b)
					return
				}
				k.status, k.answer = code, b
				if j == perClient {
					progress <- struct{}{}
				}
			}
		}(i)
	}
	wg.Add(1)
	go func() { defer wg.Done(); moveClock(c) }()
	killOnceEachMadeProgress(t, c, len(keys), progress)
	wg.Wait()
	if t.Failed() {
		return
	}

	c2 := startChild(t, args...)
	acked, lost, replayedLost := 0, 0, 0
	var rwg sync.WaitGroup
	var mu sync.Mutex
	for i := range keys {
		rwg.Add(1)
		go func(i int) { // each client retries concurrently with the others
			defer rwg.Done()
			for _, k := range calls[i] {
				code, h, b, err := c2.do("POST", "/v1/transfers", keys[i], k.body, "Idempotency-Key", k.key)
				if err != nil || code != http.StatusCreated {
					t.Errorf("retry of %s: %d %s %v", k.key, code, b, err)
					continue
				}
				replayed := h.Get("Idempotent-Replayed") == "true"
				mu.Lock()
				if k.status != 0 {
					acked++
					if !replayed || !bytes.Equal(b, k.answer) {
						t.Errorf("retry of acknowledged %s: replayed %v, answer %s, want the first answer %s", k.key, replayed, b, k.answer)
					}
				} else {
					lost++
					if replayed {
						replayedLost++ // its effect and answer were durable, its answer never arrived
					}
				}
				mu.Unlock()
				k.status, k.answer = code, b
			}
		}(i)
	}
	rwg.Wait()
	if acked == 0 || lost == 0 {
		t.Fatalf("%d acknowledged and %d unanswered requests: nothing to check", acked, lost)
	}

	// Each key moved money exactly once: one transfer per memo, the one
	// its (first or replayed) answer names.
	for i, id := range ids {
		code, v, err := c2.call("GET", "/_fake/transfers?network=test&account="+id, "", "")
		if err != nil || code != http.StatusOK {
			t.Fatalf("transfers of %s: %d %v", id, code, err)
		}
		byMemo := map[string][]string{}
		for _, x := range v["transfers"].([]any) {
			tr := x.(map[string]any)
			if tr["from_account_id"] == id {
				memo, _ := tr["memo"].(string)
				byMemo[memo] = append(byMemo[memo], tr["transfer_id"].(string))
			}
		}
		for _, k := range calls[i] {
			var ans map[string]any
			if err := json.Unmarshal(k.answer, &ans); err != nil {
				t.Fatalf("%s: answer %s", k.key, k.answer)
			}
			got := byMemo[k.key]
			if len(got) != 1 || got[0] != ans["transfer_id"] {
				t.Errorf("key %s: transfers %v, want exactly its answer's %v", k.key, got, ans["transfer_id"])
			}
			delete(byMemo, k.key)
		}
		for memo, got := range byMemo {
			t.Errorf("client %d: transfers %v with memo %q that no request sent", i, got, memo)
		}
	}
	checkSeedMoneyConserved(t, c2, append(ids, c.start["agents"].([]any)[0].(map[string]any)["account_id"].(string)))
	t.Logf("%d acknowledged keyed requests replayed after kill -9; %d unanswered retried (%d of them had committed and replayed)", acked, lost, replayedLost)
}

// checkSeedMoneyConserved checks, through /_fake/books, that the accounts
// ids hold what the seed funded on each network: money conserved.
func checkSeedMoneyConserved(t *testing.T, c *child, ids []string) {
	t.Helper()
	want := map[string]*big.Int{"test": big.NewInt(4500), "live": big.NewInt(100)}
	for n, w := range want {
		sum := new(big.Rat)
		for _, id := range ids {
			code, v, err := c.call("GET", "/_fake/books/"+id+"?network="+n, "", "")
			if err != nil || code != http.StatusOK {
				t.Fatalf("books %s: %d %v", id, code, err)
			}
			for _, b := range v["balances"].([]any) {
				e := b.(map[string]any)
				if e["asset"] != "USDG" {
					continue
				}
				r, ok := new(big.Rat).SetString(fmt.Sprint(e["balance"]))
				if !ok {
					t.Fatalf("books %s: %v", id, e)
				}
				sum.Add(sum, r)
			}
		}
		if sum.Cmp(new(big.Rat).SetInt(w)) != 0 {
			t.Errorf("%s: the accounts hold %s USDG, want %s", n, sum.FloatString(6), w)
		}
	}
}

// moveClock advances the server's clock a second at a time until the
// server is gone.
func moveClock(c *child) {
	for {
		if _, _, err := c.call("POST", "/_fake/clock", "", `{"advance":"1s"}`); err != nil {
			return
		}
	}
}

// killOnceEachMadeProgress waits until n clients reported progress, then
// kills the server (kill -9) and waits for the process.
func killOnceEachMadeProgress(t *testing.T, c *child, n int, progress <-chan struct{}) {
	t.Helper()
	for range n {
		<-progress
	}
	if err := c.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
}
