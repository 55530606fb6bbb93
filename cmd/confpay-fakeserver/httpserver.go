package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// limits are the HTTP server's bounds, each set by a flag.
type limits struct {
	readHeader     time.Duration // -read-header-timeout
	read           time.Duration // -read-timeout
	write          time.Duration // -write-timeout
	idle           time.Duration // -idle-timeout
	maxHeaderBytes int           // -max-header-bytes
	drain          time.Duration // -shutdown-timeout
}

// check refuses a bound that would disable itself or make no sense.
func (l limits) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"-read-header-timeout", l.readHeader}, {"-read-timeout", l.read}, {"-write-timeout", l.write}, {"-idle-timeout", l.idle}, {"-shutdown-timeout", l.drain}} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be above 0, such as 10s", d.name)
		}
	}
	if l.maxHeaderBytes < 1024 {
		return errors.New("-max-header-bytes must be at least 1024")
	}
	return nil
}

// httpServer is the binary's http.Server with what it needs to stop fast:
// the connections that have not sent a byte yet, which http.Server.Shutdown
// would otherwise wait up to 5 s for (it counts such a connection as busy
// until it is 5 s old).
type httpServer struct {
	*http.Server

	mu       sync.Mutex
	fresh    map[net.Conn]struct{} // connections in http.StateNew
	stopping bool

	// handlers counts the handlers running. Shutdown waits for requests
	// on the connections it manages, but not for a handler whose
	// connection was taken over (a request refused before its body was
	// read, a scripted connection fault): serve waits for those here, so
	// that every request is answered and logged before the binary stops.
	handlers sync.WaitGroup
}

// testHookShutdown, when set by a test, runs once shutdown has begun: the
// listener is closed and fresh connections are gone.
var testHookShutdown func()

// newHTTPServer returns a server for h with l's bounds. onShutdown runs
// once Shutdown has closed the listener (fresh connections are closed
// before, by serve).
func newHTTPServer(h http.Handler, l limits, log *slog.Logger, onShutdown func()) *httpServer {
	s := &httpServer{fresh: map[net.Conn]struct{}{}}
	s.Server = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.handlers.Add(1)
			defer s.handlers.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeaderBytes,
		ConnState:         s.track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	hook := testHookShutdown // read now: the function below may outlive the test
	s.RegisterOnShutdown(func() {
		onShutdown()
		if hook != nil {
			hook()
		}
	})
	return s
}

// track keeps the set of connections that have not begun a request.
func (s *httpServer) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st != http.StateNew {
		delete(s.fresh, c)
		return
	}
	if s.stopping {
		_ = c.Close()
		return
	}
	s.fresh[c] = struct{}{}
}

// closeFresh closes the connections that have not sent a byte (no request
// is lost: none has begun) and every one that arrives from now on.
// Connections idle between requests are closed by Shutdown itself, and
// connections with a request in flight are left to finish it.
func (s *httpServer) closeFresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	for c := range s.fresh {
		_ = c.Close()
	}
	clear(s.fresh)
}

// serve serves on ln until ctx is done, then shuts down: it stops
// accepting, closes idle and fresh connections at once, lets requests in
// flight finish for up to l.drain, and closes whatever is left after it.
func (s *httpServer) serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Fresh connections go first: Shutdown would count them busy at its
	// first look and check again only a millisecond or more later.
	s.closeFresh()
	shut, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := s.Shutdown(shut)
	if errors.Is(err, context.DeadlineExceeded) {
		_ = s.Close()
		err = fmt.Errorf("requests still running after -shutdown-timeout %s were cut off", drain)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	// Serve has returned, so no handler starts any more; wait, within the
	// drain, for those whose connections Shutdown does not track.
	done := make(chan struct{})
	go func() { s.handlers.Wait(); close(done) }()
	select {
	case <-done:
	case <-shut.Done():
	}
	return err
}
