// Package tcpforward is a plain TCP forwarder for tests: what any port
// forward, reverse proxy or tunnel on a host does to a connection. The
// fakeserver's tests use it to show that no webhook delivery can reach
// /_fake through such a path.
package tcpforward

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Start listens on 127.0.0.1 and pipes every connection, byte for byte, to
// target (host:port). It returns its own address. Its listener and
// connections are closed when the test ends.
func Start(t testing.TB, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	keep := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			keep(in)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				keep(out)
				defer out.Close()
				done := make(chan struct{})
				go func() { _, _ = io.Copy(out, in); _ = out.Close(); close(done) }()
				_, _ = io.Copy(in, out)
				_ = in.Close()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}
