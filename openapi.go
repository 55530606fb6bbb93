package confpay

import _ "embed" // the OpenAPI document

//go:embed openapi.yaml
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 document of the service's HTTP interface
// (openapi.yaml at the root of the module), in YAML: every /v1 endpoint
// with its parameters, bodies, errors and headers, the seven webhook
// events, and the test and live key schemes. The fakeserver serves it at
// GET /_fake/openapi.yaml, and its own test suite checks every request and
// answer against it. Each call returns a fresh copy.
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }
