package strictjson

import (
	"encoding/json"
	"testing"
)

// transferBody is the body of BenchmarkTransferCreateLoopback (fakeserver).
var transferBody = []byte(`{"to":"@bob","amount":"0.000001"}`)

// transferRequest has the members of a transfer create.
type transferRequest struct {
	To           *string `json:"to"`
	Amount       *string `json:"amount"`
	Asset        *string `json:"asset"`
	Confidential *bool   `json:"confidential"`
	Memo         *string `json:"memo"`
}

// BenchmarkDecodeTransfer decodes a transfer create body; compare with
// BenchmarkDecodeTransferOracle, the decoder before the single pass.
func BenchmarkDecodeTransfer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var v transferRequest
		if err := Decode(transferBody, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTransferOracle is BenchmarkDecodeTransfer with the
// decoder before the single pass (oracle_test.go).
func BenchmarkDecodeTransferOracle(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var v transferRequest
		if err := oldDecode(transferBody, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTransferEncodingJSON is the floor: json.Unmarshal of the
// same body, which checks none of what Decode checks.
func BenchmarkDecodeTransferEncodingJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var v transferRequest
		if err := json.Unmarshal(transferBody, &v); err != nil {
			b.Fatal(err)
		}
	}
}
