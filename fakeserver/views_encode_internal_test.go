package fakeserver

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// TestAppendTransferJSON holds appendTransferJSON to encoding/json's bytes
// for every field of confpay.Transfer, set and unset, and to its fallback
// (false, nothing appended) for what it does not write itself.
func TestAppendTransferJSON(t *testing.T) {
	// A field added to the wire type must be added to the appender.
	var names []string
	tt := reflect.TypeFor[confpay.Transfer]()
	for i := range tt.NumField() {
		names = append(names, tt.Field(i).Tag.Get("json"))
	}
	want := []string{"transfer_id,omitempty", "status", "from,omitempty", "to", "asset,omitempty", "confidential",
		"tx_hash,omitempty", "created_at,omitzero", "confirmed_at,omitempty", "failed_at,omitempty",
		"encrypted_note,omitempty", "note_readers,omitempty"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("confpay.Transfer's fields are %q; appendTransferJSON writes %q: update it", names, want)
	}

	at := time.Date(2026, 11, 26, 2, 3, 4, 500600000, time.UTC)
	at2 := time.Date(2026, 11, 26, 2, 3, 5, 0, time.UTC)
	zero := time.Time{}
	full := &confpay.Transfer{TransferID: "tr_1", Status: confpay.StatusConfirmed, From: "@alice", To: "@bob",
		Asset: "USDG", Confidential: true, TxHash: "0x" + string(bytes.Repeat([]byte("ab"), 32)), CreatedAt: at,
		ConfirmedAt: &at2, EncryptedNote: "bm90ZQ", NoteReaders: []string{"02ab", "03cd"}}
	plain := []*confpay.Transfer{
		{},
		{Status: confpay.StatusPending, To: "@bob"},
		{TransferID: "tr_0000000000000000000", Status: confpay.StatusPending, To: "@bob", Asset: "USDG", Confidential: true,
			TxHash: "0x00", CreatedAt: at},
		full,
		{Status: confpay.StatusFailed, To: "0x52908400098527886E0F7030069857D2E4169EE7", FailedAt: &at, CreatedAt: at2},
		{Status: confpay.StatusPending, To: "x", ConfirmedAt: &zero, NoteReaders: []string{}},
		{Status: confpay.StatusPending, To: "x", CreatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{Status: confpay.StatusPending, To: "x", CreatedAt: time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC)},
	}
	odd := []*confpay.Transfer{ // encoding/json escapes or refuses these: the fallback writes them
		{Status: confpay.StatusPending, To: "a<b"},
		{Status: confpay.StatusPending, To: "a&b"},
		{Status: confpay.StatusPending, To: `a"b`},
		{Status: confpay.StatusPending, To: `a\b`},
		{Status: confpay.StatusPending, To: "é"},
		{Status: confpay.StatusPending, To: "a\x7f"},
		{Status: confpay.StatusPending, To: "a\nb"},
		{Status: confpay.StatusPending, To: "\xff"},
		{Status: "<", To: "x"},
		{Status: confpay.StatusPending, To: "x", NoteReaders: []string{"ok", "<"}},
		{Status: confpay.StatusPending, To: "x", EncryptedNote: "\u2028"},
		{Status: confpay.StatusPending, To: "x", CreatedAt: at.In(time.FixedZone("X", 3600))},
		{Status: confpay.StatusPending, To: "x", CreatedAt: at.In(time.FixedZone("UTC", 0))},
		{Status: confpay.StatusPending, To: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Status: confpay.StatusPending, To: "x", CreatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Status: confpay.StatusPending, To: "x", ConfirmedAt: &[]time.Time{at.Local()}[0]},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(ss ...string) string { return ss[rng.IntN(len(ss))] }
	for range 2000 {
		v := &confpay.Transfer{TransferID: pick("", "tr_1", "a<b"), Status: confpay.TransferStatus(pick("pending", "", "é")),
			From: pick("", "@a", "\n"), To: pick("", "@b", "&"), Asset: pick("", "USDG"), Confidential: rng.IntN(2) == 0,
			TxHash: pick("", "0xab"), EncryptedNote: pick("", "bm90ZQ", `"`)}
		if rng.IntN(2) == 0 {
			v.CreatedAt = time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)).UTC()
		}
		if rng.IntN(3) == 0 {
			c := time.Unix(rng.Int64N(1<<34), rng.Int64N(1e9)).UTC()
			v.ConfirmedAt = &c
		}
		if rng.IntN(3) == 0 {
			v.FailedAt = &at
		}
		for range rng.IntN(3) {
			v.NoteReaders = append(v.NoteReaders, pick("02", "", "<"))
		}
		plain = append(plain, v)
	}
	var fast int
	for i, v := range append(plain, odd...) {
		var enc bytes.Buffer
		if err := json.NewEncoder(&enc).Encode(v); err != nil {
			if _, ok := appendTransferJSON(nil, v); ok {
				t.Errorf("%d: encoding/json refuses %+v (%v) but appendTransferJSON wrote it", i, v, err)
			}
			continue
		}
		got, ok := appendTransferJSON([]byte("prefix"), v)
		if !ok {
			if string(got) != "prefix" {
				t.Errorf("%d: appended %q before falling back", i, got)
			}
			if i < len(plain) && i < 8 {
				t.Errorf("%d: %+v fell back", i, v)
			}
			continue
		}
		fast++
		if i >= len(plain) {
			t.Errorf("%d: %+v did not fall back", i, v)
		}
		if string(got[len("prefix"):]) != enc.String() {
			t.Errorf("%d: appendTransferJSON wrote\n%s\nencoding/json\n%s", i, got[len("prefix"):], enc.Bytes())
		}
	}
	if fast < 150 {
		t.Errorf("only %d of the cases took the appender", fast)
	}
}
