package fakeserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/leakcheck"
)

// cParty is an account made for a test, with its keys and (when it has an
// encryption key) its decryption key.
type cParty struct {
	info *fakeserver.AccountInfo
	dk   *decrypt.PrivateKey // nil without an encryption key
}

func (p cParty) test() string { return p.info.TestKey.Reveal() }
func (p cParty) live() string { return p.info.LiveKey.Reveal() }

// cAccount creates a verified account with a generated encryption key.
func cAccount(t testing.TB, srv *fakeserver.Server, handle string) cParty {
	t.Helper()
	return cAccountWith(t, srv, fakeserver.AccountParams{Handle: handle, GenerateEncryptionKey: true})
}

func cAccountWith(t testing.TB, srv *fakeserver.Server, p fakeserver.AccountParams) cParty {
	t.Helper()
	info, err := srv.CreateAccount(p)
	if err != nil {
		t.Fatalf("CreateAccount(%s): %v", p.Handle, err)
	}
	pt := cParty{info: info}
	if info.DecryptionKey != "" {
		k, err := decrypt.ParsePrivateKeyHex(info.DecryptionKey.Reveal())
		if err != nil {
			t.Fatal(err)
		}
		pt.dk = k
	}
	return pt
}

func cFund(t testing.TB, srv *fakeserver.Server, who string, n confpay.Network, asset, amount string) {
	t.Helper()
	if err := srv.Fund(who, n, asset, amount); err != nil {
		t.Fatalf("Fund(%s, %s %s): %v", who, amount, asset, err)
	}
}

// cSDK returns an SDK client for key, recording every answer in rec (which
// may be nil).
func cSDK(t testing.TB, srv *fakeserver.Server, key string, rec *leakcheck.Recorder, opts ...confpay.Option) *confpay.Client {
	t.Helper()
	if rec != nil {
		opts = append(opts, confpay.WithHTTPClient(rec.Client()))
	}
	c := srv.Client(confpay.Secret(key), opts...)
	return c
}

// cSend creates a transfer through the SDK.
func cSend(t testing.TB, c *confpay.Client, to, amount string, mods ...func(*confpay.TransferCreateParams)) *confpay.Transfer {
	t.Helper()
	p := &confpay.TransferCreateParams{To: to, Amount: confpay.MustParseAmount(amount)}
	for _, m := range mods {
		m(p)
	}
	tr, err := c.Transfers.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("create transfer to %s: %v", to, err)
	}
	return tr
}

// cWantErr checks that err is an *confpay.APIError with status and code
// (and param when not empty).
func cWantErr(t testing.TB, err error, status int, code confpay.ErrorCode, param string) *confpay.APIError {
	t.Helper()
	var ae *confpay.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want API error %d %s", err, status, code)
	}
	if ae.StatusCode != status || ae.Code != code || (param != "" && ae.Param != param) {
		t.Fatalf("got %d %s (param %q), want %d %s (param %q): %s", ae.StatusCode, ae.Code, ae.Param, status, code, param, ae.Message)
	}
	if ae.RequestID == "" {
		t.Fatalf("error answer without a request id")
	}
	return ae
}

// cAnswer is a raw HTTP answer.
type cAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (a cAnswer) err() confpay.ErrorBody {
	var e confpay.ErrorBody
	_ = json.Unmarshal(a.body, &e)
	return e
}

func (a cAnswer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decoding %q: %v", a.body, err)
	}
}

// cRaw sends one request over HTTP, with the bearer key when key is not
// empty, and extra headers as name, value pairs.
func cRaw(t testing.TB, srv *fakeserver.Server, method, path, key, body string, headers ...string) cAnswer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
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
	return cAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// cBook returns an account's book entry for asset (a zero entry when it
// never held the asset).
func cBook(t testing.TB, srv *fakeserver.Server, who string, n confpay.Network, asset string) fakeserver.BookEntry {
	t.Helper()
	bs, err := srv.Books(who, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Asset == asset {
			return b
		}
	}
	return fakeserver.BookEntry{Asset: asset}
}

// cAvailable returns the available figure of asset in an account's books.
func cAvailable(t testing.TB, srv *fakeserver.Server, who string, n confpay.Network, asset string) string {
	t.Helper()
	return cBook(t, srv, who, n, asset).Available.String()
}

// cSettled returns the settled balance of asset in an account's books.
func cSettled(t testing.TB, srv *fakeserver.Server, who string, n confpay.Network, asset string) string {
	t.Helper()
	return cBook(t, srv, who, n, asset).Balance.String()
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
