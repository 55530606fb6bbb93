package fakeserver_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestSecretsNeverPrinted: an AccountInfo, a NewKey and the SDK's
// TransferCreateParams printed with fmt, or logged with slog's text and
// JSON handlers, never show a key, an amount or a memo.
func TestSecretsNeverPrinted(t *testing.T) {
	srv := fakeserver.New(t)
	info, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.IssueKey("@alice", confpay.NetworkTest, "ci")
	if err != nil {
		t.Fatal(err)
	}
	params := confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("987.654321"), Memo: "invoice 4711 for Bob", Confidential: confpay.Ptr(true)}
	secrets := []string{info.TestKey.Reveal(), info.LiveKey.Reveal(), info.DecryptionKey.Reveal(), key.APIKey.Reveal(), "987.654321", "4711"}

	var out bytes.Buffer
	for _, v := range []any{info, &info, *info, key, &key, params, &params} {
		fmt.Fprintf(&out, "%v %+v %#v %s\n", v, v, v, v)
	}
	for _, h := range []slog.Handler{slog.NewJSONHandler(&out, nil), slog.NewTextHandler(&out, nil)} {
		slog.New(h).Info("made", "info", *info, "info_ptr", info, "key", key, "params", params, "params_ptr", &params)
	}
	for _, s := range secrets {
		if strings.Contains(out.String(), s) {
			t.Errorf("%q printed:\n%s", s, out.String())
		}
	}
	if !strings.Contains(out.String(), "@alice") || !strings.Contains(out.String(), key.KeyID) {
		t.Errorf("the public fields are missing:\n%s", out.String())
	}
}
