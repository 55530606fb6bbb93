package fakeserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/audit"
)

// TestPayAfterRevocationMovesNothing: a request authenticated just before
// its key is revoked must not move money once the revocation is done. The
// operation checks the key again inside its own critical section, so the
// revocation and the payment are ordered, never interleaved.
func TestPayAfterRevocationMovesNothing(t *testing.T) {
	s := NewUnstartedServer()
	defer s.Close()
	alice, err := s.CreateAccount(AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAccount(AccountParams{Handle: "@bob", GenerateEncryptionKey: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Fund("@alice", confpay.NetworkTest, "USDG", "10"); err != nil {
		t.Fatal(err)
	}
	body := `{"to":"@bob","amount":"1"}`
	r := httptest.NewRequest("POST", "/v1/transfers", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+alice.TestKey.Reveal())
	c := &call{s: s, r: r, body: []byte(body)}
	if apiErr := s.authenticate(c); apiErr != nil {
		t.Fatal(apiErr)
	}
	if err := s.RevokeKey(c.key.id); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.handleCreateTransfer(c)
	var e *apiError
	if !errors.As(err, &e) || e.status != http.StatusUnauthorized {
		t.Fatalf("payment with a key revoked after authentication: %v, want 401", err)
	}
	if ts, _ := s.Transfers("@alice", confpay.NetworkTest); len(ts) != 0 {
		t.Fatalf("%d transfers made with a revoked key", len(ts))
	}
}

// TestTransferKeepsLittle guards the sizes BENCHMARKS.md (issue 27 item 5)
// measured: every byte a transfer or an audit record keeps is heap the
// server grows into on every payment. A new field is welcome; it should
// be a deliberate step to the next size class.
func TestTransferKeepsLittle(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes measured on 64-bit platforms")
	}
	if got := unsafe.Sizeof(transfer{}); got > 208 {
		t.Errorf("a transfer is %d bytes, was 208", got)
	}
	if got := unsafe.Sizeof(audit.Request{}); got > 192 {
		t.Errorf("an audit record is %d bytes, was 192", got)
	}
}

// TestTransferCompactFieldsRoundTrip: the tx hash, the status and the
// settled time are kept compactly and written as before (the API's
// strings, the data directory's two times); reading a record back rejects
// what the server never writes.
func TestTransferCompactFieldsRoundTrip(t *testing.T) {
	h := txHash(1, &transfer{id: "tr_x", from: &account{}, asset: "USDG", createdAt: DefaultStart})
	s := hashHex(h)
	if len(s) != 66 || s != strings.ToLower(s) || s[:2] != "0x" {
		t.Fatalf("hashHex = %q", s)
	}
	if back, ok := parseHashHex(s); !ok || back != h {
		t.Errorf("parseHashHex(%q) = %x, %v", s, back, ok)
	}
	for _, bad := range []string{"", "0x", s[:65], s + "0", "0X" + s[2:], "0x" + strings.ToUpper(s[2:]), "0x" + strings.Repeat("g", 64)} {
		if _, ok := parseHashHex(bad); ok {
			t.Errorf("parseHashHex(%q) accepted", bad)
		}
	}
	for _, st := range []transferState{statePending, stateConfirmed, stateFailed} {
		if back, ok := parseTransferState(st.wire()); !ok || back != st {
			t.Errorf("parseTransferState(%q) = %v, %v", st.wire(), back, ok)
		}
	}
	if _, ok := parseTransferState("settled"); ok {
		t.Error(`parseTransferState("settled") accepted`)
	}
	at := DefaultStart
	for _, tc := range []struct {
		st                transferState
		confirmed, failed *time.Time
		want              *time.Time
		ok                bool
	}{
		{statePending, nil, nil, nil, true},
		{statePending, &at, nil, nil, false},
		{stateConfirmed, &at, nil, &at, true},
		{stateConfirmed, nil, nil, nil, false},
		{stateConfirmed, &at, &at, nil, false},
		{stateFailed, nil, &at, &at, true},
		{stateFailed, &at, nil, nil, false},
	} {
		got, ok := settledAtOf(tc.st, tc.confirmed, tc.failed)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("settledAtOf(%v, %v, %v) = %v, %v; want %v, %v", tc.st.wire(), tc.confirmed, tc.failed, got, ok, tc.want, tc.ok)
		}
		if ok {
			tr := &transfer{status: tc.st, settledAt: got}
			if tr.confirmedAt() != tc.confirmed || tr.failedAt() != tc.failed {
				t.Errorf("%v: confirmedAt %v, failedAt %v", tc.st.wire(), tr.confirmedAt(), tr.failedAt())
			}
		}
	}
}
