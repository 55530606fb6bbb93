package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
)

func TestRunSeedsServesAndStops(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seed, []byte(`{"accounts":[
		{"handle":"@alice","generate_encryption_key":true,"balances":{"test":{"USDG":"100"},"live":{"ETH":"0.5"}}},
		{"handle":"@shop","type":"business"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var out struct {
		URL      string `json:"url"`
		Accounts []struct {
			Handle        string `json:"handle"`
			TestKey       string `json:"test_key"`
			LiveKey       string `json:"live_key"`
			DecryptionKey string `json:"decryption_key"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(line, &out); err != nil {
		t.Fatalf("start line %q: %v", line, err)
	}
	if !strings.HasPrefix(out.URL, "http://127.0.0.1:") || len(out.Accounts) != 2 || !strings.HasPrefix(out.Accounts[0].TestKey, "hc_test_") ||
		out.Accounts[0].DecryptionKey == "" || out.Accounts[1].DecryptionKey != "" {
		t.Fatalf("start line %s", line)
	}

	c, err := confpay.NewClient(out.Accounts[0].TestKey, confpay.WithBaseURL(out.URL))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := c.Accounts.Balances(context.Background(), nil)
	if err != nil || len(bs) != 1 || bs[0].Asset != "USDG" || !*bs[0].Nonzero {
		t.Fatalf("balances %v %v", bs, err)
	}
	resp, err := http.Get(out.URL + "/_fake/books/%40alice?network=live")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"available":"0.5"`) {
		t.Fatalf("live books %s", body)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := http.Get(out.URL + "/_fake/clock"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := [][]string{
		{"-nope"},
		{"extra"},
		{"-block-time", "-1s"},
		{"-seed", filepath.Join(dir, "missing.json")},
		{"-seed", write("bad.json", `{"accounts":[{"handle":"@a"}]}`)},                                          // handle too short
		{"-seed", write("unknown.json", `{"accounts":[{"handle":"@alice","color":"red"}]}`)},                    // unknown field
		{"-seed", write("money.json", `{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"1e3"}}}]}`)}, // bad amount
		{"-seed", write("net.json", `{"accounts":[{"handle":"@alice","balances":{"main":{"USDG":"1"}}}]}`)},     // bad network
		{"-addr", "256.0.0.1:1"},
		{"-seed", write("empty.json", "")},
		{"-admin-token", "two words"},
		{"-max-audit-requests", "0"},
		{"-chaos", "error=1%"},                  // no seed
		{"-chaos", "seed=1,error=60%,drop=50%"}, // over 100 %
	}
	for _, args := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil {
			t.Errorf("run(%q) succeeded", args)
		} else if err.Error() == "EOF" || strings.HasSuffix(err.Error(), ": EOF") {
			t.Errorf("run(%q): a bare %q says nothing", args, err)
		}
		if stdout.Len() != 0 {
			t.Errorf("run(%q) printed %q", args, stdout.String())
		}
	}
}

// startRun starts run with args and returns the base URL it printed; the
// server stops when the test ends.
func startRun(t *testing.T, args ...string) string {
	t.Helper()
	var out struct {
		URL string `json:"url"`
	}
	if line := startRunLine(t, args...); json.Unmarshal(line, &out) != nil {
		t.Fatalf("start line %q", line)
	}
	return out.URL
}

// startRunLine starts run with args and returns the start line it
// printed; the server stops when the test ends.
func startRunLine(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	line, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return line
}

// TestRunSeedsAgents: a seed file's agents are created with their policy,
// status and keys, and listed on the start line; a bad agent names its
// member and starts nothing.
func TestRunSeedsAgents(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seed, []byte(`{"accounts":[{"handle":"@alice","generate_encryption_key":true}],
		"agents":[{"owner":"@alice","name":"buyer","balances":{"test":{"USDG":"9"}},
		  "spend_policy":{"daily_limit_usdg":50,"per_transaction_limit_usdg":10},"keys":[{"network":"test","name":"ci"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	line := startRunLine(t, "-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock", "-log-level", "off")
	var out struct {
		URL    string `json:"url"`
		Agents []struct {
			Handle  string `json:"handle"`
			TestKey string `json:"test_key"`
			LiveKey string `json:"live_key"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(line, &out); err != nil || len(out.Agents) != 1 || out.Agents[0].Handle != "@alice/buyer" ||
		!strings.HasPrefix(out.Agents[0].TestKey, "hc_test_") || out.Agents[0].LiveKey != "" {
		t.Fatalf("start line %s (%v)", line, err)
	}
	c, err := confpay.NewClient(out.Agents[0].TestKey, confpay.WithBaseURL(out.URL))
	if err != nil {
		t.Fatal(err)
	}
	if me, err := c.Accounts.Me(context.Background()); err != nil || me.Handle != "@alice/buyer" {
		t.Fatalf("the agent's key: %v, %v", me, err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"accounts":[{"handle":"@alice"}],"agents":[{"owner":"@alice","name":"buyer","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":10}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0", "-seed", bad}, &stdout, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "seed: agents[0].spend_policy.per_transaction_limit_usdg: must not be above daily_limit_usdg") || stdout.Len() != 0 {
		t.Fatalf("a bad agent: %v, printed %q", err, stdout.String())
	}
}

// TestRunAdminToken: -admin-token (or its environment variable) closes
// /_fake to requests without the token.
func TestRunAdminToken(t *testing.T) {
	status := func(base, auth string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/_fake/accounts", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	flagged := startRun(t, "-addr", "127.0.0.1:0", "-admin-token", "flag-token-0123456789")
	if got := status(flagged, ""); got != 401 {
		t.Errorf("-admin-token, no credentials: %d, want 401", got)
	}
	if got := status(flagged, "Bearer flag-token-0123456789"); got != 200 {
		t.Errorf("-admin-token, right token: %d, want 200", got)
	}
	t.Setenv(adminTokenEnv, "env-token-0123456789")
	fromEnv := startRun(t, "-addr", "127.0.0.1:0")
	if got := status(fromEnv, "Bearer flag-token-0123456789"); got != 401 {
		t.Errorf("$%s, wrong token: %d, want 401", adminTokenEnv, got)
	}
	if got := status(fromEnv, "bearer env-token-0123456789"); got != 200 {
		t.Errorf("$%s, right token: %d, want 200", adminTokenEnv, got)
	}
}

// TestRunChaos: -chaos turns chaos on at the rates given, on /v1 only; a
// request at error=100% gets an injected error with Retry-After.
func TestRunChaos(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seed, []byte(`{"accounts":[{"handle":"@alice"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	line := startRunLine(t, "-addr", "127.0.0.1:0", "-seed", seed, "-chaos", "seed=7,error=100%,retry_after=3", "-max-audit-requests", "5")
	var out struct {
		URL      string `json:"url"`
		Accounts []struct {
			TestKey string `json:"test_key"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(line, &out); err != nil || len(out.Accounts) != 1 {
		t.Fatalf("start line %q: %v", line, err)
	}
	req, _ := http.NewRequest("GET", out.URL+"/v1/accounts/me", nil)
	req.Header.Set("Authorization", "Bearer "+out.Accounts[0].TestKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("/v1 under chaos: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, err = http.Get(out.URL + "/_fake/clock")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/_fake under chaos: %d", resp.StatusCode)
	}
}
