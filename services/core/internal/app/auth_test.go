package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
)

// TestAPIRunIsAPersonsOnlyWithTheWriteToken: the core's POST
// /api/v1/agents/{name}/run lends the agent its own token, so the run it
// forwards is a person's (interactive) only when the caller held
// AUTH_TOKEN; with AUTH_DISABLED=true every such run is unattended (issue
// 31, case 1: an anonymous caller's run passed the execution gate).
func TestAPIRunIsAPersonsOnlyWithTheWriteToken(t *testing.T) {
	secured := newCore(t, coreOpts{env: map[string]string{"AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"}})
	open := newCore(t, coreOpts{})
	for _, tc := range []struct {
		name       string
		c          *testCore
		header     []string
		code       int
		unattended bool
	}{
		{"write token", secured, []string{"Authorization", "Bearer full-s3cret"}, http.StatusOK, false},
		{"read token", secured, []string{"Authorization", "Bearer read-s3cret"}, http.StatusForbidden, false},
		{"no token", secured, nil, http.StatusUnauthorized, false},
		{"auth disabled", open, nil, http.StatusOK, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.c.Agent.Runs())
			code, b := call(t, http.MethodPost, tc.c.URL+"/api/v1/agents/platform-sre/run", []byte(`{"task":"restart web"}`), tc.header...)
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, b, tc.code)
			}
			runs := tc.c.Agent.Runs()
			if code != http.StatusOK {
				if len(runs) != before {
					t.Fatalf("a refused caller's run reached the agent: %+v", runs[len(runs)-1])
				}
				return
			}
			if len(runs) != before+1 {
				t.Fatalf("the agent got %d runs", len(runs)-before)
			}
			if got := runs[before].Request; got.WorkflowType != kapi.WorkflowManual || got.Unattended != tc.unattended {
				t.Fatalf("forwarded %+v, want unattended %v", got, tc.unattended)
			}
		})
	}
}

// bodyTrap fails the test when a handler reads it.
type bodyTrap struct {
	t     *testing.T
	route string
}

func (b bodyTrap) Read([]byte) (int, error) {
	b.t.Errorf("%s read the request body before authenticating the caller", b.route)
	return 0, http.ErrBodyReadAfterClose
}

// TestBodyReadOnlyAfterAuth: every route that takes a body (the webhook
// included) refuses a caller without a token before it reads one byte.
func TestBodyReadOnlyAfterAuth(t *testing.T) {
	c := newCore(t, coreOpts{env: map[string]string{"AUTH_TOKEN": "full-s3cret"}})
	routes, ok := c.Handler().(chi.Routes)
	if !ok {
		t.Fatalf("the core's handler is a %T, not a chi router", c.Handler())
	}
	var n int
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method != http.MethodPost && method != http.MethodPut && method != http.MethodPatch && method != http.MethodDelete {
			return nil
		}
		if route == "/login" { // the sign-in form: its body is the credential
			return nil
		}
		n++
		path := strings.NewReplacer("{slug}", "platform-sre", "{id}", "x", "{name}", "x", "*", "x").Replace(route)
		req := httptest.NewRequest(method, path, nil)
		req.Body, req.ContentLength = io.NopCloser(bodyTrap{t, method + " " + route}), 64
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d %s", method, path, rec.Code, rec.Body)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk: %v, %d routes with a body", err, n)
	}
}

// TestEveryPageSendsSecurityHeaders: every answer of the core — pages,
// the login form, redirects, static files, the API, a 404 — carries a
// Content-Security-Policy that forbids framing, Referrer-Policy and
// X-Content-Type-Options: nosniff; the pages' policy lets their own
// script and styles load (issue 31, case 6).
func TestEveryPageSendsSecurityHeaders(t *testing.T) {
	open := newCore(t, coreOpts{})
	secured := newCore(t, coreOpts{env: map[string]string{"AUTH_TOKEN": "full-s3cret"}})
	for _, tc := range []struct {
		c          *testCore
		path, want string // want: in the CSP
	}{
		{open, "/", "script-src 'self'"},
		{open, "/alerts", "style-src 'self'"},
		{open, "/investigations", "script-src 'self'"},
		{open, "/agents", "script-src 'self'"},
		{open, "/static/dash.js", "default-src 'none'"},
		{open, "/static/dash.css", "default-src 'none'"},
		{open, "/api/v1/agents", "default-src 'none'"},
		{open, "/no/such/page", "default-src 'none'"},
		{secured, "/login", "form-action 'self'"},
		{secured, "/alerts", "default-src 'none'"}, // the redirect to /login
	} {
		req := newRequest(t, http.MethodGet, tc.c.URL+tc.path, nil, "Accept", "text/html")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, tc.want) {
			t.Errorf("GET %s (%d): Content-Security-Policy %q, want frame-ancestors 'none' and %s", tc.path, resp.StatusCode, csp, tc.want)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" {
			t.Errorf("GET %s (%d): X-Content-Type-Options %q, Referrer-Policy %q", tc.path, resp.StatusCode, h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"))
		}
	}
}
