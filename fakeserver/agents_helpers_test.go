package fakeserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
)

// agentsFixture is a server with an owner (@alice, with an encryption key
// the test holds) and a stranger (@mallory).
type agentsFixture struct {
	t        *testing.T
	srv      *fakeserver.Server
	owner    *fakeserver.AccountInfo
	ownerKey *decrypt.PrivateKey
	alice    *confpay.Client // the owner, test network
	mallory  *confpay.Client // a stranger, test network
	ctx      context.Context
}

func newAgentsFixture(t *testing.T, opts ...fakeserver.Option) *agentsFixture {
	t.Helper()
	srv := fakeserver.New(t, opts...)
	f := &agentsFixture{t: t, srv: srv, ctx: context.Background()}
	var err error
	f.owner, err = srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	f.ownerKey, err = decrypt.ParsePrivateKeyHex(f.owner.DecryptionKey.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	f.alice = f.client(f.owner.TestKey.Reveal())
	stranger, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@mallory", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	f.mallory = f.client(stranger.TestKey.Reveal())
	return f
}

// client returns an SDK client for key that does not retry.
func (f *agentsFixture) client(key string, opts ...confpay.Option) *confpay.Client {
	f.t.Helper()
	c := f.srv.Client(confpay.Secret(key), append([]confpay.Option{confpay.WithMaxRetries(0)}, opts...)...)
	return c
}

// agLimit is a *confpay.Limit literal.
func agLimit(s string) *confpay.Limit { l := confpay.MustParseLimit(s); return &l }

// createAgent creates an agent of the owner with the policy and returns it
// with a client holding a fresh test key of its own.
func (f *agentsFixture) createAgent(name string, p confpay.SpendPolicyParams) (*confpay.Agent, *confpay.Client) {
	f.t.Helper()
	a, err := f.alice.Agents.Create(f.ctx, &confpay.AgentCreateParams{Name: name, SpendPolicy: p})
	if err != nil {
		f.t.Fatalf("create agent %s: %v", name, err)
	}
	k, err := f.srv.IssueKey(a.AccountID, confpay.NetworkTest, "agent")
	if err != nil {
		f.t.Fatal(err)
	}
	return a, f.client(k.APIKey.Reveal())
}

// agWantError fails unless err is an *confpay.APIError with status and
// code, and (when not empty) param and rule.
func agWantError(t *testing.T, err error, status int, code confpay.ErrorCode, param, rule string) *confpay.APIError {
	t.Helper()
	var e *confpay.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error = %v; want %d %s", err, status, code)
	}
	if e.StatusCode != status || e.Code != code {
		t.Fatalf("error = %d %s (%s); want %d %s", e.StatusCode, e.Code, e.Message, status, code)
	}
	if param != "" && e.Param != param {
		t.Errorf("param = %q, want %q (%s)", e.Param, param, e.Message)
	}
	if e.Rule != rule {
		t.Errorf("rule = %q, want %q", e.Rule, rule)
	}
	if e.RequestID == "" {
		t.Error("no request id")
	}
	return e
}

// agRawCall sends a request with a bearer key and returns the status and the
// decoded error body (if any) and raw body.
func agRawCall(t *testing.T, srv *fakeserver.Server, key, method, path, body string) (int, confpay.ErrorBody, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, srv.URL()+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb confpay.ErrorBody
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s %s: error body is not JSON: %s", method, path, b)
		}
	}
	return resp.StatusCode, eb, b
}

// agHookSink is a webhook receiver that keeps every payload.
type agHookSink struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []map[string]any
}

// agSubscribe starts a receiver and subscribes c to every event kind.
func agSubscribe(t *testing.T, c *confpay.Client) *agHookSink {
	t.Helper()
	h := &agHookSink{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		h.mu.Lock()
		h.got = append(h.got, m)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	_, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{
		URL: h.srv.URL + "/hook",
		Events: []confpay.EventKind{"transfer.initiated", "transfer.confirmed", "transfer.failed",
			"agent.transaction.pending_approval", "agent.transaction.approved",
			"agent.transaction.rejected", "agent.policy.updated"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// events returns the kinds received so far, in order.
func (h *agHookSink) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, m := range h.got {
		s, _ := m["event"].(string)
		out = append(out, s)
	}
	return out
}

// indexOf returns the position, in arrival order, of the first event of
// kind whose transfer_id is transferID, or -1.
func (h *agHookSink) indexOf(kind, transferID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, m := range h.got {
		if m["event"] == kind && m["transfer_id"] == transferID {
			return i
		}
	}
	return -1
}

// payloads returns every payload of kind received so far.
func (h *agHookSink) payloads(kind string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, m := range h.got {
		if m["event"] == kind {
			out = append(out, m)
		}
	}
	return out
}
