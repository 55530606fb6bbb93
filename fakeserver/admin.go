package fakeserver

// STUB: owned by the core engineer, who extends this file.

// adminRoutes is the /_fake admin interface (no bearer key).
func (s *Server) adminRoutes() map[string][]route {
	return map[string][]route{}
}
