package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// dial opens a raw connection to r, with a deadline that only guards the
// test against hanging (it is no timing assertion).
func dial(t *testing.T, r *running) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// closedByServer reads until the connection ends and fails the test if it
// was the guard deadline, not the server, that ended it.
func closedByServer(t *testing.T, what string, rd io.Reader) {
	t.Helper()
	_, err := io.Copy(io.Discard, rd)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: the server never closed the connection", what)
	}
}

// TestSlowAndIdleConnectionsAreClosed: the binary's server settings close
// a connection that sends its headers too slowly, one that sends its body
// too slowly, and a keep-alive connection left idle; a head over
// -max-header-bytes answers 431.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	r := launch(t, "-addr", "127.0.0.1:0", "-log-level", "off",
		"-read-header-timeout", "100ms", "-read-timeout", "300ms", "-idle-timeout", "100ms", "-max-header-bytes", "4096")

	slowHead := dial(t, r)
	fmt.Fprint(slowHead, "GET /_fake/clock HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	closedByServer(t, "slow headers", slowHead)

	slowBody := dial(t, r)
	fmt.Fprint(slowBody, "POST /_fake/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"handle\":")
	closedByServer(t, "slow body", slowBody)

	idle := dial(t, r)
	fmt.Fprint(idle, "GET /_fake/clock HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("first request: %d, close %v", resp.StatusCode, resp.Close)
	}
	closedByServer(t, "idle keep-alive", br) // then nothing: the server hangs up

	big := dial(t, r)
	fmt.Fprintf(big, "GET /_fake/clock HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", 16<<10))
	resp, err = http.ReadResponse(bufio.NewReader(big), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 16 KiB header with -max-header-bytes 4096: %d, want 431", resp.StatusCode)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestLimitsRefused: a timeout of 0 (which would disable it) or a tiny
// header cap is refused at start.
func TestLimitsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-read-header-timeout", "0s"}, {"-read-timeout", "-1s"}, {"-write-timeout", "0s"},
		{"-idle-timeout", "0s"}, {"-shutdown-timeout", "0s"}, {"-max-header-bytes", "10"},
		{"-delivery-timeout", "0s"}, {"-max-held-per-agent", "0"},
		{"-max-idempotency-keys", "-1"},
	} {
		err := run(t.Context(), append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("run(%q): %v, want an error naming %s", args, err, args[0])
		}
	}
}

// TestShutdownDrainsAndDropsFresh: on stop, a request in flight (its body
// still arriving) completes normally, while a connection that never sent a
// byte is closed at once instead of holding the stop (net/http counts it
// busy until it is 5 s old: the stop used to take 5 s and then fail).
func TestShutdownDrainsAndDropsFresh(t *testing.T) {
	began := make(chan struct{})
	testHookShutdown = func() { close(began) }
	t.Cleanup(func() { testHookShutdown = nil })
	// net/http would wait for the fresh connection until it is 5 s old,
	// past this drain limit, and run would fail.
	r := launch(t, "-addr", "127.0.0.1:0", "-log-level", "off", "-shutdown-timeout", "2s")

	fresh := dial(t, r)
	inflight := dial(t, r)
	body := `{"handle":"@draining"}`
	fmt.Fprintf(inflight, "POST /_fake/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	br := bufio.NewReader(inflight)
	cont, err := http.ReadResponse(br, nil) // the handler is reading the body
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("no 100 Continue: %v %v", cont, err)
	}

	r.cancel() // SIGTERM
	<-began    // the listener is closed; the request is still in flight
	if _, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://")); err == nil {
		t.Error("still accepting connections after the stop began")
	}
	fmt.Fprint(inflight, body)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the request in flight got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(b), `"@draining"`) {
		t.Errorf("the request in flight: %d %s, want 201", resp.StatusCode, b)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("run: %v", err)
	}
	closedByServer(t, "fresh connection", fresh)
}
