package fakeserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	confpay "github.com/confpay/confpay-go"
)

// bearerCredential returns the credential of the request's Authorization
// header when there is exactly one such header and it uses the Bearer
// scheme, matched without regard to case (RFC 9110 §11.1): "Bearer",
// "bearer" and "BEARER" all do. Two Authorization headers are refused
// rather than one of them picked. The credential is one token: no space,
// tab or comma.
func bearerCredential(r *http.Request) (string, bool) {
	vs := r.Header.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, rest, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred := strings.TrimLeft(rest, " ")
	if cred == "" || strings.ContainsAny(cred, " \t,") {
		return "", false
	}
	return cred, true
}

// isAdminPath reports whether path is under the /_fake admin interface.
func isAdminPath(path string) bool {
	return path == "/_fake" || strings.HasPrefix(path, "/_fake/")
}

// checkAdminToken answers 401 to an admin request without the admin token,
// when the server has one (WithAdminToken). The hashes are compared in
// constant time; the token never reaches a log or an answer.
func (s *Server) checkAdminToken(r *http.Request) *apiError {
	want := s.opts.adminTokenHash
	if want == nil || !isAdminPath(r.URL.Path) {
		return nil
	}
	cred, ok := bearerCredential(r)
	got := sha256.Sum256([]byte(cred))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !ok {
		return newError(http.StatusUnauthorized, confpay.CodeUnauthorized, "missing or invalid admin token")
	}
	return nil
}
