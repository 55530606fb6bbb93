package fakeserver

import "net/http"

// WithResetSeed gives POST /_fake/reset?to=seed something to reload: after
// emptying the server (as Reset does), it runs seed and answers 200 with
// the value seed returns, encoded as JSON. The binary passes its -seed
// file this way and answers with the same object it printed at start, so
// the caller learns the new keys. Without this option, to=seed loads the
// seed Server.Load last loaded (answering what it created), and answers
// 400 invalid_request with param "to" when there is none. A seed error
// answers as any error does, and leaves the server as far as seed got.
func WithResetSeed(seed func(*Server) (any, error)) Option {
	return func(o *options) { o.seed = seed }
}

// resetTo handles POST /_fake/reset: ?to=empty (or no "to") empties the
// server and answers 204; ?to=seed empties it and reloads the seed
// (WithResetSeed). The target is checked before anything changes.
func (s *Server) resetTo(c *call) (int, any, error) {
	switch c.r.URL.Query().Get("to") { // checkQuery: at most once
	case "", "empty":
		s.Reset()
		return http.StatusNoContent, nil, nil
	case "seed":
		if s.opts.seed == nil {
			return s.seedAnswer() // seed.go: the seed Load loaded, if any
		}
		s.Reset()
		v, err := s.opts.seed(s)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, v, nil
	default:
		return 0, nil, errInvalid("to", "to must be empty or seed")
	}
}
