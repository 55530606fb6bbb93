package fakeserver

import (
	"io"
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
// (Content-Length, "Connection: close") and the connection handed to
// lingerClose.
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
		go lingerClose(conn)
	}
}

// lingerTime is how long lingerClose discards what a refused client still
// sends (net/http waits as long before its own closes, for the same
// reason).
const lingerTime = 500 * time.Millisecond

// lingerClose closes a connection whose client may still be sending a body
// the server will not read. Closing a socket with unread data makes the
// kernel reset the connection, and a reset can destroy the answer before
// the client reads it: the client then sees "connection reset by peer"
// instead of the 401. So the server's side is ended first (the client
// reads the whole answer, then EOF), and what the client still sends is
// read and thrown away, at most MaxBodyBytes of it for at most lingerTime,
// before the connection is closed. Nothing read is kept.
func lingerClose(conn net.Conn) {
	stop := time.AfterFunc(lingerTime, func() { _ = conn.Close() })
	defer stop.Stop()
	defer conn.Close()
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, MaxBodyBytes+1))
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
