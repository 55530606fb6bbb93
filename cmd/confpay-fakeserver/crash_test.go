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
	go func() { // the clock moves
		defer wg.Done()
		for {
			if _, _, err := c.call("POST", "/_fake/clock", "", `{"advance":"1s"}`); err != nil {
				return
			}
		}
	}()
	for range keys {
		<-progress
	}
	if err := c.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
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
	// Money is conserved: what the seed funded, on each network.
	want := map[string]*big.Int{"test": big.NewInt(4500), "live": big.NewInt(100)}
	for n, w := range want {
		sum := new(big.Rat)
		for _, id := range append(ids, agent["account_id"].(string)) {
			code, v, err := c2.call("GET", "/_fake/books/"+id+"?network="+n, "", "")
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
	t.Logf("%d acknowledged transfers and %d approvals survived kill -9", len(acked), len(approved))
}
