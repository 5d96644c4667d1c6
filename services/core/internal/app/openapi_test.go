package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/kubecrew/kubecrew/services/core/internal/api"
)

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

// spec loads and validates the embedded OpenAPI file once.
func spec(t testing.TB) routers.Router {
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
		// Served at any host: match paths only.
		doc.Servers = nil
		specRouter, specErr = legacy.NewRouter(doc)
	})
	if specErr != nil {
		t.Fatalf("openapi.yaml: %v", specErr)
	}
	return specRouter
}

// call sends a request and validates the request and the answer against
// the OpenAPI file: every documented path, status and body shape.
func call(t testing.TB, method, url string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	r := spec(t)
	req := newRequest(t, method, url, body, header...)
	route, params, err := r.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s is not in openapi.yaml: %v", method, req.URL.Path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true},
	}
	if body != nil && resp.StatusCode < 400 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s: request does not match openapi.yaml: %v", method, req.URL.Path, err)
		}
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(got)), Options: in.Options,
	})
	if err != nil {
		t.Errorf("%s %s → %d: answer does not match openapi.yaml: %v\nbody: %.600s", method, req.URL.Path, resp.StatusCode, err, got)
	}
	return resp.StatusCode, got
}
