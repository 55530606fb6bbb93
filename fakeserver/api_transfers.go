package fakeserver

// The /v1/transfers handlers: parse, one domain call (pay.go for a
// payment), render. Handlers never lock (TestLayout checks it).

import "net/http"

// handleCreateTransfer answers POST /v1/transfers.
func (s *Server) handleCreateTransfer(c *call) (int, any, error) {
	if !s.kycOK(c) { // KYC is answered before the body is looked at
		return 0, nil, errKYC()
	}
	p, apiErr := parseCreateTransfer(c.body, s.assets)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	return s.pay(c, p, c.failAtConfirm)
}

// handleGetTransfer answers GET /v1/transfers/{transfer_id}.
func (s *Server) handleGetTransfer(c *call) (int, any, error) {
	v, err := s.transferFor(c.net, c.acct, c.r.PathValue("transfer_id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// handleListTransfers answers GET /v1/transfers.
func (s *Server) handleListTransfers(c *call) (int, any, error) {
	q, apiErr := parseListQuery(c.r.URL.Query())
	if apiErr != nil {
		return 0, nil, apiErr
	}
	l, err := s.transfersFor(c.net, c.acct, q)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, l, nil
}
