package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/matchmakerhq/matchmaker/api"
)

// The spec is loaded once per test binary: every handler test validates its responses
// against it, so the code cannot drift from the contract without a test failing.
var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

func loadSpec(t testing.TB) routers.Router {
	t.Helper()
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(api.OpenAPI)
		if err != nil {
			specErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			specErr = err
			return
		}
		// The spec's server is localhost:8080; httptest requests go to example.com.
		doc.Servers = nil
		for _, ref := range doc.Components.Schemas {
			closeObjects(ref.Value, map[*openapi3.Schema]bool{})
		}
		specRouter, specErr = legacy.NewRouter(doc)
	})
	if specErr != nil {
		t.Fatalf("api/openapi.yaml: %v", specErr)
	}
	return specRouter
}

// closeObjects forbids properties the spec does not list, for the tests only: a response
// field that exists in the code but not in the contract fails a test instead of slipping by.
func closeObjects(s *openapi3.Schema, seen map[*openapi3.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		closed := false
		s.AdditionalProperties.Has = &closed
	}
	for _, p := range s.Properties {
		closeObjects(p.Value, seen)
	}
	if s.Items != nil {
		closeObjects(s.Items.Value, seen)
	}
	for _, list := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
		for _, r := range list {
			closeObjects(r.Value, seen)
		}
	}
}

// The operations endpoints answer YAML and Prometheus text; the validator should check them
// as the strings the spec says they are.
func init() {
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
}

// exchange sends one request to h, checks the response against the spec (its status must be
// documented for that operation, its headers and body must match the schema) and returns it.
func exchange(t testing.TB, h http.Handler, method, path, contentType, body string, headers ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	validateResponse(t, req, resp)
	return resp
}

func validateResponse(t testing.TB, req *http.Request, resp *http.Response) {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: response has no X-Request-Id", req.Method, req.URL.Path)
	}
	router := loadSpec(t)
	// The spec's router matches on the unescaped path, where a%2Fb is two segments; the
	// service matches on the escaped one, where it is one.
	find := req
	if req.URL.RawPath != "" {
		find = req.Clone(req.Context())
		find.URL.Path, find.URL.RawPath = req.URL.RawPath, ""
	}
	route, pathParams, err := router.FindRoute(find)
	if err != nil {
		// Only the service's own 404 and 405 answers may come from outside the spec.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s is not in the spec but answered %d", req.Method, req.URL.Path, resp.StatusCode)
		}
		assertProblem(t, resp, body)
		return
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		t.Fatalf("%s %s -> %d does not match api/openapi.yaml: %v\nbody: %s",
			req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	if resp.StatusCode >= 400 {
		assertProblem(t, resp, body)
	}
}

func assertProblem(t testing.TB, resp *http.Response, body []byte) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("error response has Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body: %v: %s", err, body)
	}
	if p.Status != resp.StatusCode || p.Type == "" || p.Title == "" {
		t.Fatalf("problem %+v does not describe status %d", p, resp.StatusCode)
	}
}

// readProblem decodes a problem response.
func readProblem(t testing.TB, resp *http.Response) problem {
	t.Helper()
	var p problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// hasField reports whether the problem names field among its errors.
func hasField(p problem, field string) bool {
	for _, e := range p.Errors {
		if e.Field == field {
			return true
		}
	}
	return false
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
