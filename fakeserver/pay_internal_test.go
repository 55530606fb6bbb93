package fakeserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
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
