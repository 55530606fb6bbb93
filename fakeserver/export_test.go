package fakeserver

// Test-only views of the server's inside, for the external tests.

// PendingTimers is how many timers the server's clock has scheduled.
func PendingTimers(s *Server) int { return s.clock.Pending() }
