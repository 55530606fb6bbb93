package fakeserver_test

// The one helper vocabulary of the external tests. Where the package's own
// test helpers (testing.go) do the job, the tests call them directly:
// srv.AddFunds to fund on the test network, srv.Balance to read what an
// account can spend, srv.AddAccount (under newAccount), srv.Record to watch
// events in process. What is here adds what a test of the server itself
// needs beside them:
//
//	accounts and keys   party, newAccount, newAccountWith, newKey, fundOn
//	clients             newClient, noRetry
//	payments            pay, send, hold, payOption, withMemo, withAsset, public, orderMemo
//	figures             settled, current, proofAccount, openNote
//	errors              wantAPIError
//	raw HTTP            answer, rawCall (over the network), serve (in process)
//	state               checkUnchanged, snapshotOptions, waitTimers
//	agents              limit, fixture, newFixture, fixture.createAgent, fixture.pendingIDs
//	webhooks            hookSink, newHookSink, subscribeSink, allDeliveries (a TCP forwarder: internal/tcpforward)

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
)

// party is an account made for a test, with its keys and (when it has an
// encryption key) its decryption key.
type party struct {
	info *fakeserver.AccountInfo
	dk   *decrypt.PrivateKey // nil without an encryption key
}

func (p party) test() string { return p.info.TestKey.Reveal() }
func (p party) live() string { return p.info.LiveKey.Reveal() }

// newAccount creates a verified account with a generated encryption key.
func newAccount(t testing.TB, srv *fakeserver.Server, handle string) party {
	t.Helper()
	return newAccountWith(t, srv, fakeserver.AccountParams{Handle: handle, GenerateEncryptionKey: true})
}

// newAccountWith creates an account with p (see Server.AddAccount).
func newAccountWith(t testing.TB, srv *fakeserver.Server, p fakeserver.AccountParams) party {
	t.Helper()
	info := srv.AddAccount(t, p)
	pt := party{info: info}
	if info.DecryptionKey != "" {
		k, err := decrypt.ParsePrivateKeyHex(info.DecryptionKey.Reveal())
		if err != nil {
			t.Fatal(err)
		}
		pt.dk = k
	}
	return pt
}

// newKey issues one more test key for an account (an agent included).
func newKey(t testing.TB, srv *fakeserver.Server, ref string) string {
	t.Helper()
	k, err := srv.IssueKey(ref, confpay.NetworkTest, "extra")
	if err != nil {
		t.Fatal(err)
	}
	return k.APIKey.Reveal()
}

// fundOn credits an account on network n; srv.AddFunds is the test
// network's.
func fundOn(t testing.TB, srv *fakeserver.Server, who string, n confpay.Network, asset, amount string) {
	t.Helper()
	if err := srv.Fund(who, n, asset, amount); err != nil {
		t.Fatalf("Fund(%s, %s %s): %v", who, amount, asset, err)
	}
}

// noRetry makes an SDK client give up after the first answer, so that a
// test sees every refusal as the server gave it.
var noRetry = confpay.WithMaxRetries(0)

// newClient returns an SDK client for key, recording every answer in rec
// (which may be nil).
func newClient(t testing.TB, srv *fakeserver.Server, key string, rec *leakcheck.Recorder, opts ...confpay.Option) *confpay.Client {
	t.Helper()
	if rec != nil {
		opts = append(opts, confpay.WithHTTPClient(rec.Client()))
	}
	return srv.Client(confpay.Secret(key), opts...)
}

// payOption changes a payment's parameters.
type payOption func(*confpay.TransferCreateParams)

// withMemo sets the memo.
func withMemo(m string) payOption { return func(p *confpay.TransferCreateParams) { p.Memo = m } }

// withAsset sets the asset (USDG when empty).
func withAsset(a string) payOption { return func(p *confpay.TransferCreateParams) { p.Asset = a } }

// public makes the payment non-confidential.
func public() payOption {
	return func(p *confpay.TransferCreateParams) { p.Confidential = confpay.Ptr(false) }
}

// orderMemo is the memo of the agent tests' payments.
var orderMemo = withMemo("order 7")

// pay sends amount from c to to through the SDK and returns what it gave.
func pay(c *confpay.Client, to, amount string, opts ...payOption) (*confpay.Transfer, error) {
	p := &confpay.TransferCreateParams{To: to, Amount: confpay.MustParseAmount(amount)}
	for _, o := range opts {
		o(p)
	}
	return c.Transfers.Create(context.Background(), p)
}

// send pays and fails the test unless the payment is submitted: a
// pending transfer with an id.
func send(t testing.TB, c *confpay.Client, to, amount string, opts ...payOption) *confpay.Transfer {
	t.Helper()
	tr, err := pay(c, to, amount, opts...)
	if err != nil {
		t.Fatalf("pay %s to %s: %v", amount, to, err)
	}
	if tr.TransferID == "" || tr.Status != confpay.StatusPending {
		t.Fatalf("pay %s to %s: %+v, want a pending transfer", amount, to, tr)
	}
	return tr
}

// hold pays and fails the test unless the payment is held for approval
// (a HeldError carrying a pending atx_ payment with its instants); it
// returns the held payment.
func hold(t testing.TB, c *confpay.Client, to, amount string, opts ...payOption) *confpay.AgentTransaction {
	t.Helper()
	tr, err := pay(c, to, amount, opts...)
	var held *confpay.HeldError
	if !errors.As(err, &held) || tr != nil {
		t.Fatalf("pay %s to %s = %+v, %v; want a HeldError", amount, to, tr, err)
	}
	h := held.Payment
	if !strings.HasPrefix(h.TransactionID, "atx_") || h.TransferID != "" || h.Status != confpay.DecisionPending {
		t.Fatalf("pay %s: %+v, want held", amount, h)
	}
	if h.RequestedAt.IsZero() || h.ExpiresAt.IsZero() {
		t.Fatalf("the 202 answer lacks requested_at or expires_at: %+v", h)
	}
	return h
}

// settled returns the settled balance of asset in an account's books on
// network n (zero when it never held the asset); srv.Balance is what it
// can spend.
func settled(t testing.TB, srv *fakeserver.Server, who string, n confpay.Network, asset string) string {
	t.Helper()
	bs, err := srv.Books(who, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Asset == asset {
			return b.Balance.String()
		}
	}
	return fakeserver.BookEntry{Asset: asset}.Balance.String()
}

// current turns the no-proof answer into the ciphertexts to prove.
func current(t testing.TB, bs []*confpay.Balance) []decrypt.Balance {
	t.Helper()
	var out []decrypt.Balance
	for _, b := range bs {
		if b.EncryptedBalance == "" {
			t.Fatalf("%s has no encrypted_balance", b.Asset)
		}
		ct, err := decrypt.DecodeBase64(b.EncryptedBalance)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decrypt.Balance{Asset: b.Asset, Version: b.BalanceVersion, Ciphertext: ct})
	}
	return out
}

// proofAccount is p as a decryption proof names it on chain.
func proofAccount(t testing.TB, p party, chain uint64) decrypt.Account {
	t.Helper()
	return decrypt.Account{ChainID: chain, Address: common.HexToAddress(p.info.PublicKey), Key: p.dk.PublicKey()}
}

// openNote opens a transfer's encrypted note with k.
func openNote(t testing.TB, k *decrypt.PrivateKey, tr *confpay.Transfer) *decrypt.Note {
	t.Helper()
	b, err := decrypt.DecodeBase64(tr.EncryptedNote)
	if err != nil {
		t.Fatalf("encrypted_note: %v", err)
	}
	var readers []*decrypt.PublicKey
	for _, h := range tr.NoteReaders {
		pk, err := decrypt.ParsePublicKeyHex(h)
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, pk)
	}
	chain := confpay.ChainIDTest
	if strings.HasPrefix(tr.TransferID, "tr_") && tr.TxHash == "" {
		t.Fatal("no tx hash")
	}
	n, err := decrypt.OpenNote(k, decrypt.NoteContext{ChainID: chain, Reference: tr.TransferID, Asset: tr.Asset, Readers: readers}, b)
	if err != nil {
		t.Fatalf("OpenNote: %v", err)
	}
	return n
}

// wantAPIError fails the test unless err is an *confpay.APIError with
// status, code, param and rule (each exactly; "" when the answer must not
// carry one) and a request id.
func wantAPIError(t testing.TB, err error, status int, code confpay.ErrorCode, param, rule string) *confpay.APIError {
	t.Helper()
	var ae *confpay.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want API error %d %s", err, status, code)
	}
	if ae.StatusCode != status || ae.Code != code || ae.Param != param || ae.Rule != rule {
		t.Fatalf("got %d %s (param %q, rule %q), want %d %s (param %q, rule %q): %s",
			ae.StatusCode, ae.Code, ae.Param, ae.Rule, status, code, param, rule, ae.Message)
	}
	if ae.RequestID == "" {
		t.Fatalf("error answer without a request id")
	}
	return ae
}

// answer is a raw HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// err is the answer's error body (zero when it has none).
func (a answer) err() confpay.ErrorBody {
	var e confpay.ErrorBody
	_ = json.Unmarshal(a.body, &e)
	return e
}

// decode unmarshals the body into v.
func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decoding %q: %v", a.body, err)
	}
}

// newRequest is a request with the bearer key when key is not empty, a
// JSON body when body is not empty, and extra headers as name, value
// pairs.
func newRequest(method, target, key, body string, headers ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return req
}

// rawCall sends one request over HTTP (see newRequest for key, body and
// headers). It fails the test if the answer has no X-Request-Id or is an
// error whose body is not JSON.
func rawCall(t testing.TB, srv *fakeserver.Server, method, path, key, body string, headers ...string) answer {
	t.Helper()
	req := newRequest(method, srv.URL()+path, key, body, headers...)
	req.RequestURI = "" // a client's request
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: answer %d without X-Request-Id", method, path, resp.StatusCode)
	}
	if resp.StatusCode >= 400 && !json.Valid(b) {
		t.Fatalf("%s %s: error body is not JSON: %s", method, path, b)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// serve sends one request straight to h (a server's Handler), with no
// network, and returns the answer.
func serve(h http.Handler, method, path, key, body string, headers ...string) answer {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, newRequest(method, path, key, body, headers...))
	return answer{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

// snapshotOptions compare Snapshots while ignoring what every request
// changes (a key's last use and request count).
var snapshotOptions = cmp.Options{
	cmpopts.IgnoreFields(fakeserver.KeyInfo{}, "LastUsedAt", "RequestCount"),
	cmp.Comparer(func(a, b confpay.Amount) bool { return a.String() == b.String() }),
	cmp.Comparer(func(a, b confpay.Limit) bool { return a.String() == b.String() }),
}

// checkUnchanged fails the test if the server's state differs from before.
func checkUnchanged(t *testing.T, srv *fakeserver.Server, before fakeserver.Snapshot, what string) {
	t.Helper()
	if diff := cmp.Diff(before, srv.Snapshot(), snapshotOptions); diff != "" {
		t.Fatalf("%s changed the state (-before +after):\n%s", what, diff)
	}
}

// waitTimers waits, without sleeping, until the server clock has at least
// n timers scheduled.
func waitTimers(srv *fakeserver.Server, n int) {
	for fakeserver.PendingTimers(srv) < n {
		runtime.Gosched()
	}
}

// limit is a *confpay.Limit literal.
func limit(s string) *confpay.Limit { l := confpay.MustParseLimit(s); return &l }

// fixture is a server with an owner (@alice, with an encryption key the
// test holds) and a stranger (@mallory), each with a client that does
// not retry.
type fixture struct {
	t        *testing.T
	srv      *fakeserver.Server
	owner    *fakeserver.AccountInfo
	ownerKey *decrypt.PrivateKey
	alice    *confpay.Client // the owner, test network
	mallory  *confpay.Client // a stranger, test network
	ctx      context.Context
}

func newFixture(t *testing.T, opts ...fakeserver.Option) *fixture {
	t.Helper()
	srv := fakeserver.New(t, opts...)
	f := &fixture{t: t, srv: srv, ctx: context.Background()}
	alice := newAccount(t, srv, "@alice")
	f.owner, f.ownerKey = alice.info, alice.dk
	f.alice = newClient(t, srv, alice.test(), nil, noRetry)
	f.mallory = newClient(t, srv, newAccount(t, srv, "@mallory").test(), nil, noRetry)
	return f
}

// createAgent creates an agent of the owner through the SDK with the
// policy and returns it with a client (that does not retry) holding a
// fresh test key of its own.
func (f *fixture) createAgent(name string, p confpay.SpendPolicyParams) (*confpay.Agent, *confpay.Client) {
	f.t.Helper()
	a, err := f.alice.Agents.Create(f.ctx, &confpay.AgentCreateParams{Name: name, SpendPolicy: p})
	if err != nil {
		f.t.Fatalf("create agent %s: %v", name, err)
	}
	k, err := f.srv.IssueKey(a.AccountID, confpay.NetworkTest, "agent")
	if err != nil {
		f.t.Fatal(err)
	}
	return a, newClient(f.t, f.srv, k.APIKey.Reveal(), nil, noRetry)
}

// pendingIDs lists the ids in c's pending list.
func (f *fixture) pendingIDs(c *confpay.Client) []string {
	f.t.Helper()
	l, err := c.Agents.ListPending(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for _, p := range l {
		ids = append(ids, p.TransactionID)
	}
	return ids
}

// hookSink is a webhook receiver over HTTP that keeps every request and
// answers with a fixed status. (srv.Record is the in-process one.)
type hookSink struct {
	hs     *httptest.Server
	status int

	mu   sync.Mutex
	reqs []hookRequest
}

// hookRequest is one request a hookSink got.
type hookRequest struct {
	header http.Header
	body   []byte
	fields map[string]any
}

func newHookSink(t testing.TB, status int) *hookSink {
	t.Helper()
	k := &hookSink{status: status}
	k.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		k.mu.Lock()
		k.reqs = append(k.reqs, hookRequest{header: r.Header.Clone(), body: body, fields: m})
		k.mu.Unlock()
		w.WriteHeader(k.status)
	}))
	t.Cleanup(k.hs.Close)
	return k
}

// subscribeSink starts a sink answering 200 and subscribes c to the
// transfer and agent event kinds.
func subscribeSink(t testing.TB, c *confpay.Client) *hookSink {
	t.Helper()
	k := newHookSink(t, http.StatusOK)
	_, err := c.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{
		URL: k.hs.URL + "/hook",
		Events: []confpay.EventKind{"transfer.initiated", "transfer.confirmed", "transfer.failed",
			"agent.transaction.pending_approval", "agent.transaction.approved",
			"agent.transaction.rejected", "agent.policy.updated"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// all returns the requests received so far, in order.
func (k *hookSink) all() []hookRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.reqs)
}

// find returns the requests of a kind, in order.
func (k *hookSink) find(kind string) []hookRequest {
	var out []hookRequest
	for _, r := range k.all() {
		if r.fields["event"] == kind {
			out = append(out, r)
		}
	}
	return out
}

// events returns the kinds received so far, in order.
func (k *hookSink) events() []string {
	var out []string
	for _, r := range k.all() {
		s, _ := r.fields["event"].(string)
		out = append(out, s)
	}
	return out
}

// indexOf returns the position, in arrival order, of the first event of
// kind whose transfer_id is transferID, or -1.
func (k *hookSink) indexOf(kind, transferID string) int {
	for i, r := range k.all() {
		if r.fields["event"] == kind && r.fields["transfer_id"] == transferID {
			return i
		}
	}
	return -1
}

// allDeliveries lists every delivery of a subscription through the SDK,
// all pages.
func allDeliveries(ctx context.Context, c *confpay.Client, webhookID string) ([]*confpay.Delivery, error) {
	var out []*confpay.Delivery
	for d, err := range c.Webhooks.AllDeliveries(ctx, webhookID, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
