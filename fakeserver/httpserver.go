package fakeserver

import (
	"net/http"
	"strconv"
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
