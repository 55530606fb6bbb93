package fakeserver

import (
	"os"
	"slices"
)

// Test-only views of the server's inside, for the external tests.

// PendingTimers is how many timers the server's clock has scheduled.
func PendingTimers(s *Server) int { return s.clock.Pending() }

// Routes lists every route of the HTTP face, /v1 and /_fake, as "METHOD
// pattern", sorted.
func Routes(s *Server) []string {
	var out []string
	for pattern, rs := range s.routeTable() {
		for _, rt := range rs {
			out = append(out, rt.method+" "+pattern)
		}
	}
	slices.Sort(out)
	return out
}

// QueryParams names the query parameters a route ("METHOD pattern") takes.
func QueryParams(route string) []string { return queryParams[route] }

// SetFsync makes s's data directory fsync its journal with fn.
func SetFsync(s *Server, fn func(*os.File) error) { s.jr.SetSync(fn) }

// SetTestHook makes s call fn at its named test points (Server.testHook).
// Set it before the server serves.
func SetTestHook(s *Server, fn func(point string)) { s.testHook = fn }
