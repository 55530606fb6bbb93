package fakeserver_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/confpay/confpay-go/fakeserver"
)

// TestRefusedBeforeBodyIsRead: a request without a valid key (or admin
// token) is answered 401 while its body is still arriving, and the
// connection is closed: the server never waits for a body it will not
// use. The body here never ends; before the fix the server read it until
// the test's deadline.
func TestRefusedBeforeBodyIsRead(t *testing.T) {
	open := fakeserver.New(t)
	guarded := fakeserver.New(t, fakeserver.WithAdminToken("admin-token-7"))
	cases := []struct {
		name, base, path, auth string
	}{
		{"no key", open.URL(), "/v1/transfers", ""},
		{"unknown key", open.URL(), "/v1/transfers", "Bearer hc_test_00000000000000000000000000000000"},
		{"not bearer", open.URL(), "/v1/webhooks", "Basic eDp5"},
		{"no admin token", guarded.URL(), "/_fake/accounts", ""},
		{"wrong admin token", guarded.URL(), "/_fake/fund", "Bearer admin-token-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(tc.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A failure guard, not a timing assertion: the old code
			// never answers, so without it the test would hang.
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
			if tc.auth != "" {
				head += "Authorization: " + tc.auth + "\r\n"
			}
			chunk := `{"to":"@bob","amount":"1",`
			if _, err := fmt.Fprintf(conn, "%s\r\n%x\r\n%s\r\n", head, len(chunk), chunk); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer while the body is open: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"unauthorized"`) {
				t.Fatalf("%d %s, want 401 unauthorized", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Errorf("the answer keeps the connection open: Connection %q", resp.Header.Get("Connection"))
			}
			if n, err := br.Read(make([]byte, 1)); err == nil {
				t.Errorf("read %d more bytes, want the connection closed", n)
			}
		})
	}
}
