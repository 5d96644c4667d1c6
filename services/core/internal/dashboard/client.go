package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
)

// apiClient calls the core's public REST API in process: the same handler
// and routes GET /api/v1/openapi.yaml documents, never the store (docs/MANUAL.md,
// "Dashboard": no private back door).
type apiClient struct{ h http.Handler }

// APIError is an answer of the API other than 2xx.
type APIError struct {
	Path string
	Code int
	Msg  string
}

func (e *APIError) Error() string { return fmt.Sprintf("GET %s: %d %s", e.Path, e.Code, e.Msg) }

// get decodes the JSON answer of GET path?query into v.
func (c apiClient) get(ctx context.Context, path string, query url.Values, v any) error {
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	// The page's own request carries chi's route context; the API calls run
	// concurrently, so each gets a fresh one (a shared one is a data race
	// that panics inside chi's router).
	ctx = context.WithValue(ctx, chi.RouteCtxKey, (*chi.Context)(nil))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", target, err)
	}
	req.Header.Set("Accept", "application/json")
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	c.h.ServeHTTP(rec, req)
	if rec.code < 200 || rec.code > 299 {
		var eb struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.body.Bytes(), &eb)
		return &APIError{Path: target, Code: rec.code, Msg: eb.Error}
	}
	if err := json.Unmarshal(rec.body.Bytes(), v); err != nil {
		return fmt.Errorf("GET %s: %w", target, err)
	}
	return nil
}

// recorder is the in-process response of one API call.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
