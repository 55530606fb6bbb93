package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// running is a run started by a test.
type running struct {
	url    string
	line   []byte // the start line
	stderr *lockedBuffer
	cancel context.CancelFunc
	done   chan error
}

// stop asks run to stop (as SIGTERM does) and returns its error.
func (r *running) stop() error {
	r.cancel()
	return <-r.done
}

// launch starts run with args; the test must call stop, or the server
// stops when the test ends.
func launch(t testing.TB, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{stderr: &lockedBuffer{}, cancel: cancel, done: make(chan error, 1)}
	finished := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw, r.stderr)
		pw.Close()
		finished <- err
	}()
	var once sync.Once
	var result error
	wait := func() error { once.Do(func() { result = <-finished }); return result }
	go func() { r.done <- wait() }()
	t.Cleanup(func() { cancel(); _ = wait() })
	line, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no start line: %v; stderr %s", err, r.stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	r.line = line
	var out struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(line, &out); err != nil {
		t.Fatalf("start line %q: %v", line, err)
	}
	r.url = out.URL
	return r
}

func writeSeed(t testing.TB, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDefaultAddress: loopback only, and not stripe-mock's ports.
func TestDefaultAddress(t *testing.T) {
	host, port, err := net.SplitHostPort(defaultAddr)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("default host %q is not a loopback address", host)
	}
	if port == "12111" || port == "12112" {
		t.Errorf("default port %s is stripe-mock's", port)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	defineFlags(fs)
	if got := fs.Lookup("addr").DefValue; got != defaultAddr {
		t.Errorf("-addr defaults to %q, want %q", got, defaultAddr)
	}
}

// TestVersionAndHelp: -version prints the module version line; -help
// prints a manual page with every section and every flag, on stdout, and
// both exit 0.
func TestVersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if v := stdout.String(); !strings.HasPrefix(v, "confpay-fakeserver ") || !strings.HasSuffix(v, " "+runtime.Version()+"\n") || stderr.Len() != 0 {
		t.Errorf("-version printed %q (stderr %q)", v, stderr.String())
	}
	for _, arg := range []string{"-help", "-h"} {
		stdout.Reset()
		stderr.Reset()
		if err := run(context.Background(), []string{arg}, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		page := stdout.String()
		if stderr.Len() != 0 {
			t.Errorf("%s wrote to stderr: %q", arg, stderr.String())
		}
		for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "FILES", "EXAMPLES", "EXIT STATUS"} {
			if !strings.Contains(page, "\n"+section+"\n") && !strings.HasPrefix(page, section+"\n") {
				t.Errorf("%s: no %s section", arg, section)
			}
		}
		if !strings.Contains(page, adminTokenEnv) || !strings.Contains(page, "go install github.com/confpay/confpay-go/cmd/confpay-fakeserver@latest") {
			t.Errorf("%s: the environment variable or the install line is missing", arg)
		}
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		defineFlags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(page, "\n    -"+f.Name+" ") && !strings.Contains(page, "\n    -"+f.Name+"\n") {
				t.Errorf("%s: flag -%s is not in OPTIONS", arg, f.Name)
			}
		})
	}
}

// TestRequestLogHoldsNoSecret: one line per request with its method, path,
// status, duration and request id, in text and JSON; no API key, admin
// token, query, body, memo, proof or figure, at any level.
func TestRequestLogHoldsNoSecret(t *testing.T) {
	seed := writeSeed(t, `{"accounts":[{"handle":"@alice","generate_encryption_key":true,"balances":{"test":{"USDG":"7319.4477"}}},{"handle":"@bobby"}]}`)
	const token = "admin-token-Zq81"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			r := launch(t, "-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock", "-admin-token", token, "-log-format", format, "-log-level", "debug")
			var start struct {
				Accounts []struct {
					T string `json:"test_key"`
					L string `json:"live_key"`
					D string `json:"decryption_key"`
				} `json:"accounts"`
			}
			if err := json.Unmarshal(r.line, &start); err != nil {
				t.Fatal(err)
			}
			alice := start.Accounts[0]
			do := func(method, path, auth, body string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, r.url+path, strings.NewReader(body))
				if auth != "" {
					req.Header.Set("Authorization", "Bearer "+auth)
				}
				req.Header.Set("Idempotency-Key", "idem-Kx9-secretish")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, resp.Header.Get("X-Request-Id")
			}
			type want struct {
				method, path string
				status       int
				id           string
			}
			var wants []want
			for _, q := range []struct{ method, path, auth, body string }{
				{"GET", "/v1/accounts/me/balances?decryption_proof=proof-Vv77-0xdeadbeef", alice.T, ""},
				{"POST", "/v1/transfers", alice.T, `{"to":"@bobby","amount":"12.5031","asset":"USDG","memo":"memo-Pp42 rent"}`},
				{"POST", "/v1/transfers", "hc_test_wrongwrongwrongwrongwrongwron", `{"to":"@bobby","amount":"12.5031"}`},
				{"GET", "/v1/accounts/me", alice.L, ""},
				{"GET", "/_fake/books/%40alice?network=test", token, ""},
				{"POST", "/_fake/fund", token, `{"account":"@bobby","amount":"5508.0061"}`},
				{"POST", "/_fake/settle", token, ""},
				{"GET", "/_fake/accounts", "", ""},
			} {
				status, id := do(q.method, q.path, q.auth, q.body)
				path, _, _ := strings.Cut(q.path, "?")
				path = strings.ReplaceAll(path, "%40", "@")
				wants = append(wants, want{q.method, path, status, id})
			}
			if err := r.stop(); err != nil {
				t.Fatalf("run: %v", err)
			}
			log := r.stderr.String()
			for _, secret := range []string{alice.T, alice.L, alice.D, start.Accounts[1].T, token, "proof-Vv77", "deadbeef", "7319.4477", "7319447700", "12.5031", "12503100", "5508.0061", "5508006100", "memo-Pp42", "idem-Kx9", "decryption_proof", "network=test", `"to"`} {
				if secret != "" && strings.Contains(log, secret) {
					t.Errorf("the log holds %q:\n%s", secret, log)
				}
			}
			var requests []string
			for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
				if strings.Contains(l, "request_id") {
					requests = append(requests, l)
				}
			}
			if len(requests) != len(wants) {
				t.Fatalf("%d request lines for %d requests:\n%s", len(requests), len(wants), log)
			}
			// A line is written once its request is done, which is not
			// always before the client has its answer: match by request id.
			got := map[string]string{}
			for _, l := range requests {
				var fields []string
				if format == "json" {
					var m map[string]any
					if err := json.Unmarshal([]byte(l), &m); err != nil {
						t.Fatalf("line %q: %v", l, err)
					}
					if _, ok := m["duration"].(float64); !ok || m["msg"] != "request" {
						t.Errorf("line %q: no duration or msg", l)
					}
					fields = []string{fmt.Sprint(m["method"]), fmt.Sprint(m["path"]), fmt.Sprint(m["status"]), fmt.Sprint(m["request_id"])}
				} else {
					if !strings.Contains(l, " duration=") || !strings.Contains(l, "msg=request") {
						t.Errorf("line %q: no duration or msg", l)
					}
					fields = []string{field(l, "method"), field(l, "path"), field(l, "status"), field(l, "request_id")}
				}
				got[fields[3]] = strings.Join(fields, " ")
			}
			for _, w := range wants {
				if exp := fmt.Sprintf("%s %s %d %s", w.method, w.path, w.status, w.id); got[w.id] != exp || w.id == "" {
					t.Errorf("logged %q, want %q", got[w.id], exp)
				}
			}
		})
	}
}

// field returns key's value in a slog text line.
func field(line, key string) string {
	for _, kv := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// TestLogLevels: warn keeps only 5xx request lines, off writes nothing; a
// bad level or format is refused.
func TestLogLevels(t *testing.T) {
	for _, level := range []string{"warn", "off"} {
		r := launch(t, "-addr", "127.0.0.1:0", "-log-level", level)
		resp, err := http.Get(r.url + "/_fake/clock")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		if log := r.stderr.String(); log != "" {
			t.Errorf("-log-level %s wrote %q", level, log)
		}
	}
	for _, args := range [][]string{{"-log-level", "loud"}, {"-log-format", "xml"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("run(%q): %v, want an error naming %s", args, err, args[0])
		}
	}
}

// TestResetToSeed: POST /_fake/reset?to=seed empties the server and loads
// the -seed file again, answering like the start line (new keys: the old
// ones stop working); POST /_fake/reset leaves it empty.
func TestResetToSeed(t *testing.T) {
	seed := writeSeed(t, `{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"100"}}}]}`)
	r := launch(t, "-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock", "-log-level", "off")
	type startLine struct {
		URL      string `json:"url"`
		Accounts []struct {
			Handle  string `json:"handle"`
			TestKey string `json:"test_key"`
		} `json:"accounts"`
	}
	var first startLine
	if err := json.Unmarshal(r.line, &first); err != nil {
		t.Fatal(err)
	}
	call := func(method, path, key string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, r.url+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if st, b := call("POST", "/_fake/accounts/%40alice/keys", ""); st != 201 {
		t.Fatalf("issue key: %d %s", st, b)
	}

	st, b := call("POST", "/_fake/reset?to=seed", "")
	var again startLine
	if err := json.Unmarshal(b, &again); st != 200 || err != nil {
		t.Fatalf("reset to seed: %d %s", st, b)
	}
	if again.URL != r.url || len(again.Accounts) != 1 || again.Accounts[0].Handle != "@alice" || again.Accounts[0].TestKey == first.Accounts[0].TestKey {
		t.Fatalf("reset to seed answered %s, start line was %s", b, r.line)
	}
	if st, _ := call("GET", "/v1/accounts/me", first.Accounts[0].TestKey); st != 401 {
		t.Errorf("the old key after reset: %d, want 401", st)
	}
	if st, b := call("GET", "/_fake/books/%40alice?network=test", ""); st != 200 || !strings.Contains(string(b), `"available":"100"`) {
		t.Errorf("books after reset to seed: %d %s", st, b)
	}
	if st, b := call("GET", "/_fake/accounts/%40alice/keys", ""); st != 200 || strings.Count(string(b), `"key_id"`) != 2 {
		t.Errorf("keys after reset to seed: %d %s, want the seed's two", st, b)
	}
	if st, _ := call("POST", "/_fake/reset", ""); st != 204 {
		t.Errorf("reset: %d, want 204", st)
	}
	if st, b := call("GET", "/_fake/accounts", ""); st != 200 || strings.Contains(string(b), "@alice") {
		t.Errorf("accounts after a plain reset: %d %s, want none", st, b)
	}
}

// TestDelayFaultOutlivesWriteTimeout: a request held by a delay fault
// longer than -write-timeout still gets its answer.
func TestDelayFaultOutlivesWriteTimeout(t *testing.T) {
	seed := writeSeed(t, `{"accounts":[{"handle":"@alice"}]}`)
	r := launch(t, "-addr", "127.0.0.1:0", "-seed", seed, "-write-timeout", "50ms", "-log-level", "off")
	var start struct {
		Accounts []struct {
			TestKey string `json:"test_key"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(r.line, &start); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(r.url+"/_fake/faults", "application/json", strings.NewReader(`{"method":"GET","path":"/v1/accounts/me","times":1,"action":"delay","delay":"300ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("fault: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", r.url+"/v1/accounts/me", nil)
	req.Header.Set("Authorization", "Bearer "+start.Accounts[0].TestKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the delayed request: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"@alice"`) {
		t.Errorf("the delayed request: %d %s", resp.StatusCode, b)
	}
}

// TestBoundFlags: -max-idempotency-keys and -max-held-per-agent reach the
// server: one key more than the bound, and one held payment more, answer
// 429 rate_limited.
func TestBoundFlags(t *testing.T) {
	seed := writeSeed(t, `{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"100"}}},{"handle":"@bobby"}],
		"agents":[{"owner":"@alice","name":"buyer","balances":{"test":{"USDG":"100"}},
		"spend_policy":{"daily_limit_usdg":100,"per_transaction_limit_usdg":50,"hitl_threshold_usdg":1}}]}`)
	r := launch(t, "-addr", "127.0.0.1:0", "-seed", seed, "-log-level", "off",
		"-max-idempotency-keys", "2", "-max-held-per-agent", "1", "-max-agents-per-owner", "1")
	var start struct {
		Accounts []struct {
			TestKey string `json:"test_key"`
		} `json:"accounts"`
		Agents []struct {
			TestKey string `json:"test_key"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(r.line, &start); err != nil || len(start.Agents) != 1 {
		t.Fatalf("start line: %v", err)
	}
	post := func(key, idem string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", r.url+"/v1/transfers", strings.NewReader(`{"to":"@bobby","amount":"2","confidential":false}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := []int{post(start.Accounts[0].TestKey, "k1"), post(start.Accounts[0].TestKey, "k2"), post(start.Accounts[0].TestKey, "k3")}; got[0] != 201 || got[1] != 201 || got[2] != 429 {
		t.Errorf("three new Idempotency-Keys with -max-idempotency-keys 2: %v, want 201 201 429", got)
	}
	if got := []int{post(start.Agents[0].TestKey, ""), post(start.Agents[0].TestKey, "")}; got[0] != 202 || got[1] != 429 {
		t.Errorf("two held payments with -max-held-per-agent 1: %v, want 202 429", got)
	}
	req, _ := http.NewRequest("POST", r.url+"/v1/accounts/me/agents", strings.NewReader(`{"name":"second","spend_policy":{"daily_limit_usdg":5,"per_transaction_limit_usdg":1}}`))
	req.Header.Set("Authorization", "Bearer "+start.Accounts[0].TestKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 409 || !strings.Contains(string(body), `"agent_limit_reached"`) {
		t.Errorf("a second agent with -max-agents-per-owner 1: %d %s, want 409 agent_limit_reached", resp.StatusCode, body)
	}
}

// TestResetToSeedAfterRestart: on a data directory that already holds
// state, -seed is not applied at start, and POST /_fake/reset?to=seed
// still applies it (it answered 500 and left the server empty).
func TestResetToSeedAfterRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	seed := writeSeed(t, `{"accounts":[{"handle":"@alice","balances":{"test":{"USDG":"100"}}}]}`)
	args := []string{"-addr", "127.0.0.1:0", "-seed", seed, "-data", dir, "-virtual-clock", "-log-level", "off"}
	if err := launch(t, args...).stop(); err != nil {
		t.Fatal(err)
	}
	r := launch(t, args...)
	defer r.stop()
	if strings.Contains(string(r.line), "@alice") {
		t.Errorf("the second start applied the seed: %s", r.line)
	}
	call := func(method, path string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, r.url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	st, b := call("POST", "/_fake/reset?to=seed")
	if st != 200 || !strings.Contains(string(b), `"handle":"@alice"`) || !strings.Contains(string(b), r.url) {
		t.Fatalf("reset to seed after a restart: %d %s", st, b)
	}
	if st, b := call("GET", "/_fake/books/%40alice?network=test"); st != 200 || !strings.Contains(string(b), `"available":"100"`) {
		t.Errorf("books after reset to seed: %d %s", st, b)
	}
}
