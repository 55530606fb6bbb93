package fakeserver

import "testing"

// Test-only views of the server's inside, for the external tests.

// PendingTimers is how many timers the server's clock has scheduled.
func PendingTimers(s *Server) int { return s.clock.Pending() }

// WithoutOpenAPICheck turns the OpenAPI recorder (openapi_test.go) off for
// the servers made until tb ends, so that a benchmark measures the server
// and not the check. Only for benchmarks: they run alone, after the tests.
func WithoutOpenAPICheck(tb testing.TB) {
	h := testHooks.handler
	testHooks.handler = nil
	tb.Cleanup(func() { testHooks.handler = h })
}
