package fakeserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/confpay/confpay-go/fakeserver"
)

// TestMemoKeptByteForByte: every valid UTF-8 memo, up to the documented
// 1024 bytes, reaches the recipient's note exactly as the sender wrote it,
// through the SDK's JSON (which escapes <, >, &, U+2028 and U+2029) and the
// server's strict decoding.
func TestMemoKeptByteForByte(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	ac := newClient(t, srv, alice.test(), nil)
	bc := newClient(t, srv, bob.test(), nil)
	for _, memo := range []string{
		"\uFFFD sent as such",
		"\uFEFFstarts with a byte-order mark",
		"<b>&amp;</b> \u2028\u2029",
		"nul \x00 and del \x7f",
		"🏠 \U0010FFFF \u0301",
		strings.Repeat("é", 512),            // exactly 1024 bytes
		strings.Repeat("🏠", 256),            // exactly 1024 bytes of 4-byte characters
		strings.Repeat("m", 1023) + "\\",    // a backslash last
		`\ud800 written out, not an escape`, // the six characters, not a surrogate
		"\"quoted\" \t tab \r\n line",
	} {
		sent := send(t, ac, "@bob", "1", withMemo(memo))
		tr, err := bc.Transfers.Get(context.Background(), sent.TransferID)
		if err != nil {
			t.Fatal(err)
		}
		if got := openNote(t, bob.dk, tr).Memo; got != memo {
			t.Errorf("memo of %d bytes reached the recipient as %d bytes %q", len(memo), len(got), got)
		}
	}
}
