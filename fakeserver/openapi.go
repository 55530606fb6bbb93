package fakeserver

import (
	_ "embed" // the admin interface's OpenAPI document
	"net/http"

	confpay "github.com/confpay/confpay-go"
)

//go:embed openapi-fake.yaml
var adminOpenAPIDocument []byte

// AdminOpenAPI returns the OpenAPI 3.1 document of the admin interface
// (/_fake), in YAML; the server serves it at GET /_fake/openapi-fake.yaml.
// The /v1 interface's document is confpay.OpenAPI, served at
// GET /_fake/openapi.yaml. Each call returns a fresh copy.
func AdminOpenAPI() []byte { return append([]byte(nil), adminOpenAPIDocument...) }

// adminOpenAPI serves confpay.OpenAPI (GET /_fake/openapi.yaml).
func (s *Server) adminOpenAPI(c *call) (int, any, error) {
	return serveYAML(c, confpay.OpenAPI())
}

// adminOpenAPIFake serves AdminOpenAPI (GET /_fake/openapi-fake.yaml).
func (s *Server) adminOpenAPIFake(c *call) (int, any, error) {
	return serveYAML(c, adminOpenAPIDocument)
}

// serveYAML writes a YAML document as the whole answer. The handler
// pipeline writes JSON, so the document goes straight to the connection
// and the pipeline's own (empty) answer to a writer that drops it.
func serveYAML(c *call, doc []byte) (int, any, error) {
	h := c.w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(doc)
	c.w = &discardWriter{header: http.Header{}}
	return http.StatusOK, nil, nil
}

// testHooks lets the package's own tests watch the server's traffic
// (openapi_test.go checks every request, answer and webhook delivery
// against the OpenAPI documents), and run every server on a data
// directory (dataDir, a new directory for each server that names none:
// CONFPAY_TEST_DATA_DIR=1, see openapi_test.go's TestMain). Nil outside
// tests.
var testHooks struct {
	handler   func(http.Handler) http.Handler
	transport func(http.RoundTripper) http.RoundTripper
	dataDir   func() string
}

// hookHandler wraps the server's handler when a test asked for it.
func hookHandler(h http.Handler) http.Handler {
	if testHooks.handler != nil {
		return testHooks.handler(h)
	}
	return h
}

// hookTransport wraps the delivery transport when a test asked for it.
func hookTransport(rt http.RoundTripper) http.RoundTripper {
	if testHooks.transport != nil {
		return testHooks.transport(rt)
	}
	return rt
}
