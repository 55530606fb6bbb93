package fakeserver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/confpay/confpay-go/fakeserver"
)

// TestResetTo: POST /_fake/reset empties the server (no "to", or
// to=empty); to=seed empties it and runs the WithResetSeed function,
// answering with what it returns; a bad or unavailable target answers 400
// naming "to" and changes nothing.
func TestResetTo(t *testing.T) {
	t.Parallel()
	seeds := 0
	srv := fakeserver.New(t, fakeserver.WithResetSeed(func(s *fakeserver.Server) (any, error) {
		seeds++
		if n := len(s.Accounts()); n != 0 {
			t.Errorf("the seed ran on a server with %d accounts, want an empty one", n)
		}
		info, err := s.CreateAccount(fakeserver.AccountParams{Handle: "@seeded"})
		return map[string]any{"handle": info.Handle}, err
	}))
	plain := fakeserver.New(t)
	handles := func(s *fakeserver.Server) string {
		var hs []string
		for _, a := range s.Accounts() {
			hs = append(hs, a.Handle)
		}
		return strings.Join(hs, ",")
	}
	for _, s := range []*fakeserver.Server{srv, plain} {
		if _, err := s.CreateAccount(fakeserver.AccountParams{Handle: "@before"}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		srv  *fakeserver.Server
		path string
	}{
		{srv, "/_fake/reset?to=bogus"},
		{srv, "/_fake/reset?to=seed&to=empty"},
		{plain, "/_fake/reset?to=seed"},
	} {
		a := rawCall(t, tc.srv, "POST", tc.path, "", "")
		if a.status != 400 || a.err().Param != "to" {
			t.Errorf("%s: %d %s, want 400 naming to", tc.path, a.status, a.body)
		}
		if got := handles(tc.srv); got != "@before" {
			t.Errorf("%s changed the server: accounts %s", tc.path, got)
		}
	}

	a := rawCall(t, srv, "POST", "/_fake/reset?to=seed", "", "")
	if a.status != 200 || strings.TrimSpace(string(a.body)) != `{"handle":"@seeded"}` || seeds != 1 {
		t.Fatalf("to=seed: %d %s after %d seeds", a.status, a.body, seeds)
	}
	if got := handles(srv); got != "@seeded" {
		t.Fatalf("after to=seed: accounts %s, want @seeded", got)
	}
	for _, path := range []string{"/_fake/reset", "/_fake/reset?to=empty"} {
		if _, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@again"}); err != nil {
			t.Fatal(err)
		}
		if a := rawCall(t, srv, "POST", path, "", ""); a.status != 204 || len(a.body) != 0 {
			t.Fatalf("%s: %d %s, want 204", path, a.status, a.body)
		}
		if got := handles(srv); got != "" || seeds != 1 {
			t.Fatalf("%s left accounts %q (seeds %d), want none", path, got, seeds)
		}
	}
}

// TestInternalErrorLogged: an answer 500 internal_error (here, a
// WithResetSeed function that fails) logs its cause at error level with
// the request's id; the answer itself says no more than "internal error".
func TestInternalErrorLogged(t *testing.T) {
	t.Parallel()
	logger, logged := newTextLog()
	srv := fakeserver.New(t, fakeserver.WithLogger(logger), fakeserver.WithResetSeed(func(*fakeserver.Server) (any, error) {
		return nil, errors.New("the seed went wrong")
	}))
	a := rawCall(t, srv, "POST", "/_fake/reset?to=seed", "", "")
	if a.status != 500 || strings.Contains(string(a.body), "went wrong") {
		t.Fatalf("to=seed with a failing seed: %d %s, want 500 without the cause", a.status, a.body)
	}
	if line := logged.String(); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "the seed went wrong") || !strings.Contains(line, a.err().RequestID) {
		t.Errorf("the log does not give the cause and request id of the 500 (%s):\n%s", a.err().RequestID, line)
	}
}
