package fakeserver

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// BenchmarkRenderCreateAnswer renders the create answer of
// BenchmarkTransferCreateLoopback's requests as render does (appender) and
// as it did before (encoding/json into a pooled buffer, then a copy).
func BenchmarkRenderCreateAnswer(b *testing.B) {
	v := &confpay.Transfer{TransferID: "tr_0000000000000000042_abcdefghij", Status: confpay.StatusPending, To: "@bob",
		Asset: "USDG", Confidential: true, TxHash: "0x" + string(bytes.Repeat([]byte("ab"), 32)),
		CreatedAt: time.Date(2026, 11, 26, 2, 3, 4, 500600000, time.UTC)}
	b.Run("appender", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = render(201, v)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := renderBuffers.Get().(*bytes.Buffer)
			_ = json.NewEncoder(buf).Encode(v)
			_ = bytes.Clone(buf.Bytes())
			putRenderBuffer(buf)
		}
	})
}
