package fakeserver

// STUB: owned by the core engineer, who replaces this file.

// faultScript holds the scripted faults.
type faultScript struct{}

type fault struct{}

func (f *faultScript) reset()                           {}
func (f *faultScript) match(method, path string) *fault { return nil }

// applyFault applies f to the call; it reports whether the call is answered.
func (s *Server) applyFault(c *call, f *fault, rt *route) bool { return false }
