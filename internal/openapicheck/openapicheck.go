// Package openapicheck checks HTTP exchanges, webhook deliveries and JSON
// documents against the project's OpenAPI 3.1 documents (openapi.yaml for
// /v1, fakeserver/openapi-fake.yaml for /_fake), with kin-openapi's
// openapi3filter and its JSON Schema 2020-12 validator. Only tests and the
// CI lint use it.
//
// Every object schema is closed when a document is loaded for checking
// (additionalProperties: false unless the document says otherwise): the
// published document lets the service add members, but the fakeserver must
// send exactly what is documented, so a member on one side and not the
// other fails a check.
package openapicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Doc is one loaded OpenAPI document, ready to check exchanges against.
type Doc struct {
	T      *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]bool // "METHOD /path/template status" exercised
}

// Load parses and validates a document, then closes its object schemas.
func Load(spec []byte) (*Doc, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	closeSchemas(t)
	// Match any host: the document's server is relative ("/").
	t.Servers = openapi3.Servers{{URL: "/"}}
	r, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &Doc{T: t, router: r, seen: map[string]bool{}}, nil
}

// MustLoad is Load for documents known to be good; it panics otherwise.
func MustLoad(spec []byte) *Doc {
	d, err := Load(spec)
	if err != nil {
		panic("openapicheck: " + err.Error())
	}
	return d
}

// closeSchemas sets additionalProperties: false on every object schema with
// properties that does not say otherwise, everywhere in the document. The
// conjuncts kin-openapi builds for the siblings of a $ref (allOf members)
// stay open: they constrain members the referenced schema already names.
func closeSchemas(t *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.SchemaRef, conjunct bool)
	walk = func(s *openapi3.SchemaRef, conjunct bool) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		v := s.Value
		seen[v] = true
		if !conjunct && len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
			v.AdditionalProperties.Has = openapi3.Ptr(false)
		}
		for _, p := range v.Properties {
			walk(p, false)
		}
		walk(v.Items, false)
		for _, x := range v.OneOf {
			walk(x, false)
		}
		for _, x := range v.AnyOf {
			walk(x, false)
		}
		for _, x := range v.AllOf {
			walk(x, true)
		}
		walk(v.Not, true)
	}
	content := func(c openapi3.Content) {
		for _, mt := range c {
			walk(mt.Schema, false)
		}
	}
	if t.Components != nil {
		for _, s := range t.Components.Schemas {
			walk(s, false)
		}
		for _, r := range t.Components.Responses {
			content(r.Value.Content)
		}
	}
	ops := func(pi *openapi3.PathItem) {
		for _, op := range pi.Operations() {
			if op.RequestBody != nil {
				content(op.RequestBody.Value.Content)
			}
			for _, r := range op.Responses.Map() {
				content(r.Value.Content)
			}
		}
	}
	for _, pi := range t.Paths.Map() {
		ops(pi)
	}
	for _, pi := range t.Webhooks {
		ops(pi)
	}
}

func options() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
}

// Exchange is one request and the answer to it, as recorded.
type Exchange struct {
	Method    string
	URL       *url.URL
	ReqHeader http.Header
	ReqBody   []byte
	Status    int
	Header    http.Header
	Body      []byte
}

// Check checks one exchange against the document, both ways:
//   - an answer to a request the document does not route (unknown path or
//     method) must be 404 not_found or 405 method_not_allowed with the
//     error body;
//   - a request the document refuses must not succeed: its answer is a 4xx
//     the operation documents;
//   - every answer must be one the operation documents: status, headers
//     and body.
//
// The error names the endpoint.
func (d *Doc) Check(ex Exchange) error {
	req, err := http.NewRequest(ex.Method, ex.URL.String(), bytes.NewReader(ex.ReqBody))
	if err != nil {
		return err
	}
	req.Header = ex.ReqHeader.Clone()
	endpoint := ex.Method + " " + ex.URL.Path
	route, params, rerr := d.router.FindRoute(req)
	// The service reads every request body as JSON whatever its
	// Content-Type (curl -d sends application/x-www-form-urlencoded),
	// except where the operation declares the body's own media type (the
	// dashboard's forms).
	if len(ex.ReqBody) > 0 && !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") && !declaresBody(route, req.Header.Get("Content-Type")) {
		req.Header.Set("Content-Type", "application/json")
	}
	if rerr != nil && !cleanPath(ex.URL.Path) {
		// An unclean path (//x, /a/../x, %2e%2e) is refused, never
		// redirected to its clean form.
		if ex.Status != http.StatusBadRequest {
			return fmt.Errorf("%s: an unclean path answered %d, want 400 invalid_request", endpoint, ex.Status)
		}
		return d.checkSchema("Error", ex.Body, endpoint)
	}
	if rerr != nil {
		want := map[error]int{routers.ErrPathNotFound: http.StatusNotFound, routers.ErrMethodNotAllowed: http.StatusMethodNotAllowed}
		for e, st := range want {
			if errors.Is(rerr, e) {
				if ex.Status != st {
					return fmt.Errorf("%s: the document has no such operation (%v), yet the server answered %d", endpoint, rerr, ex.Status)
				}
				return d.checkSchema("Error", ex.Body, endpoint)
			}
		}
		return fmt.Errorf("%s: %v", endpoint, rerr)
	}
	endpoint = ex.Method + " " + route.Path
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options()}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && (ex.Status < 400 || ex.Status > 499) {
		return fmt.Errorf("%s: the server answered %d to a request the document refuses (query %q): %v", endpoint, ex.Status, ex.URL.RawQuery, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 ex.Status,
		Header:                 ex.Header,
		Body:                   io.NopCloser(bytes.NewReader(ex.Body)),
		Options:                options(),
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s: answer %d does not match the document: %v\nbody: %s", endpoint, ex.Status, err, clip(ex.Body))
	}
	d.mu.Lock()
	d.seen[fmt.Sprintf("%s %d", endpoint, ex.Status)] = true
	d.mu.Unlock()
	return nil
}

// declaresBody reports whether route's operation takes a request body of
// the media type of contentType.
func declaresBody(route *routers.Route, contentType string) bool {
	if route == nil || route.Operation == nil || route.Operation.RequestBody == nil || route.Operation.RequestBody.Value == nil {
		return false
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return route.Operation.RequestBody.Value.Content.Get(strings.TrimSpace(mt)) != nil
}

// cleanPath reports whether p is its own clean form, as ServeMux cleans
// (a final "/" kept).
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// CheckSchema checks a JSON value against components/schemas/<name>.
func (d *Doc) CheckSchema(name string, body []byte) error {
	return d.checkSchema(name, body, name)
}

func (d *Doc) checkSchema(name string, body []byte, where string) error {
	s := d.T.Components.Schemas[name]
	if s == nil {
		return fmt.Errorf("%s: no schema %q in the document", where, name)
	}
	return checkValue(s.Value, body, where)
}

func checkValue(s *openapi3.Schema, body []byte, where string) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s: not JSON: %v", where, err)
	}
	if err := s.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("%s: %v\nbody: %s", where, err, clip(body))
	}
	return nil
}

// CheckDelivery checks a webhook delivery (its headers and body) against
// the document's webhooks section, picking the event kind from the body.
func (d *Doc) CheckDelivery(header http.Header, body []byte) error {
	var probe struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return fmt.Errorf("webhook delivery: not JSON: %v", err)
	}
	where := "webhook " + probe.Event
	pi := d.T.Webhooks[probe.Event]
	if pi == nil || pi.Post == nil {
		return fmt.Errorf("%s: the document has no such webhook", where)
	}
	op := pi.Post
	for _, p := range op.Parameters {
		if p.Value.In != openapi3.ParameterInHeader {
			continue
		}
		v := header.Values(p.Value.Name)
		if len(v) != 1 {
			if p.Value.Required {
				return fmt.Errorf("%s: header %s sent %d times", where, p.Value.Name, len(v))
			}
			continue
		}
		if err := p.Value.Schema.Value.VisitJSON(v[0], openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("%s: header %s: %v", where, p.Value.Name, err)
		}
	}
	if ct := header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("%s: Content-Type %q", where, ct)
	}
	if err := checkValue(op.RequestBody.Value.Content.Get("application/json").Schema.Value, body, where); err != nil {
		return err
	}
	d.mu.Lock()
	d.seen["webhook "+probe.Event] = true
	d.mu.Unlock()
	return nil
}

// Operations lists every operation and webhook of the document as Seen
// names them ("GET /v1/transfers", "webhook transfer.confirmed"), sorted.
func (d *Doc) Operations() []string {
	var all []string
	for path, pi := range d.T.Paths.Map() {
		for method := range pi.Operations() {
			all = append(all, method+" "+path)
		}
	}
	for kind := range d.T.Webhooks {
		all = append(all, "webhook "+kind)
	}
	slices.Sort(all)
	return all
}

// Unexercised lists the operations (and webhooks) of the document that no
// checked exchange reached with a success (2xx) answer.
func (d *Doc) Unexercised() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var missing []string
	for _, op := range d.Operations() {
		ok := d.seen[op]
		for k := range d.seen {
			// A success, or the redirect of an operation that only
			// redirects (GET / leads to the dashboard).
			if strings.HasPrefix(k, op+" 2") || strings.HasPrefix(k, op+" 3") {
				ok = true
			}
		}
		if !ok {
			missing = append(missing, op)
		}
	}
	return missing
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// Lint checks a document beyond what OpenAPI itself requires, for the
// project's conventions: it loads and validates it, then every operation
// has an operationId, every answer of a path (not a webhook) declares
// X-Request-Id, and every POST, PATCH and DELETE of /v1 takes
// Idempotency-Key.
func Lint(spec []byte) error {
	d, err := Load(spec)
	if err != nil {
		return err
	}
	var problems []string
	for path, pi := range d.T.Paths.Map() {
		for method, op := range pi.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				problems = append(problems, where+": no operationId")
			}
			for status, r := range op.Responses.Map() {
				if r.Value.Headers["X-Request-Id"] == nil {
					problems = append(problems, fmt.Sprintf("%s %s: no X-Request-Id header", where, status))
				}
			}
			if strings.HasPrefix(path, "/v1/") && method != http.MethodGet {
				has := false
				for _, p := range op.Parameters {
					has = has || (p.Value.In == openapi3.ParameterInHeader && p.Value.Name == "Idempotency-Key")
				}
				if !has {
					problems = append(problems, where+": no Idempotency-Key parameter")
				}
			}
		}
	}
	for kind, pi := range d.T.Webhooks {
		if pi.Post == nil || pi.Post.RequestBody == nil {
			problems = append(problems, "webhook "+kind+": no POST with a body")
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
