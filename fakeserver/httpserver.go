package fakeserver

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// refuseUnread answers a request refused before its body was read (a
// missing or wrong key or admin token) without reading the body at all.
// net/http would otherwise read up to 256 KiB of an unread body after the
// handler returns, to reuse the connection, and wait for it as long as the
// client takes; so when a body may follow, the answer is sent whole
// (Content-Length, "Connection: close") and the connection closed at once.
// Where the connection cannot be taken over (HTTP/2), the answer goes out
// the ordinary way.
func (s *Server) refuseUnread(c *call, err error) {
	if c.r.ContentLength == 0 {
		s.writeError(c, err)
		return
	}
	status, b := render(errorAnswer(c.reqID, err))
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Connection", "close")
	c.w.WriteHeader(status)
	_, _ = c.w.Write(b)
	rc := http.NewResponseController(c.w)
	if rc.Flush() != nil {
		return
	}
	if conn, _, err := rc.Hijack(); err == nil {
		_ = conn.Close()
	}
}

// liftWriteTimeout removes the server's write deadline (http.Server's
// WriteTimeout, the binary's -write-timeout) from a request held by a
// delay fault: the test scripted the wait, and the answer must still reach
// the client after it, however long it is. Without a deadline (httptest,
// HTTP/2) it does nothing.
func liftWriteTimeout(c *call) {
	_ = http.NewResponseController(c.w).SetWriteDeadline(time.Time{})
}

// loopback is the listener Start opens: a plain http.Server on a loopback
// port. It takes the place of httptest.Server, which links the testing
// package from Go 1.27 on, so that a program using fakeserver (the binary
// included) does not. Like httptest's, its close waits for the requests
// in flight to end.
type loopback struct {
	srv  *http.Server
	url  string
	addr net.Addr

	mu     sync.Mutex
	closed bool
	active sync.WaitGroup // requests in flight
}

// listenLoopback serves h on 127.0.0.1 (or [::1] where IPv4 has no
// loopback) at a port the system picks.
func listenLoopback(h http.Handler) *loopback {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if ln, err = net.Listen("tcp6", "[::1]:0"); err != nil {
			panic("fakeserver: cannot listen on a loopback port: " + err.Error())
		}
	}
	return serveOn(ln, "http://"+ln.Addr().String(), h)
}

// serveOn serves h on ln with a plain http.Server, known by url.
func serveOn(ln net.Listener, url string, h http.Handler) *loopback {
	l := &loopback{url: url, addr: ln.Addr()}
	l.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		l.active.Add(1)
		l.mu.Unlock()
		defer l.active.Done()
		h.ServeHTTP(w, r)
	})}
	go func() { _ = l.srv.Serve(ln) }()
	return l
}

// close stops listening, closes every connection and waits for the
// requests in flight.
func (l *loopback) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	_ = l.srv.Close()
	l.active.Wait()
}
