package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// TestAuthEveryRoute walks every route the whole agent serves (so a route
// added later is covered without editing this test) and calls each over
// HTTP with no token, a wrong one, a non-bearer scheme, the read-only token
// and AUTH_TOKEN (with a lower-case scheme): only /health, /ready, /metrics
// and the agent card answer without one; the read-only token opens GETs
// and nothing else (README.md, "Authentication").
func TestAuthEveryRoute(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "load_skill",
		"AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"})
	type route struct{ method, path string }
	var routes []route
	err := chi.Walk(a.app.Server.Router(), func(method, path string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, route{method, strings.ReplaceAll(path, "{id}", "nope")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range routes {
		seen[r.method+" "+r.path] = true
	}
	for _, must := range []string{"GET /runs", "GET /runs/nope", "GET /runs/nope/trace", "GET /runs/nope/report",
		"GET /a2a/log", "GET /pulse", "GET /info", "POST /run", "POST /invoke", "POST /pulse", "GET /.well-known/agent-card.json"} {
		if !seen[must] {
			t.Errorf("route %s not served (the walk must cover it)", must)
		}
	}
	denied := func(code int) bool { return code == http.StatusUnauthorized || code == http.StatusForbidden }
	for _, r := range routes {
		open := server.OpenPaths[r.path]
		// A body the handlers reject as malformed: what matters here is
		// whether the request got past the guard, not what it then did.
		body := ""
		if r.method != http.MethodGet {
			body = "{"
		}
		for _, tc := range []struct {
			name, header string
			pass         bool
		}{
			{"no token", "", open},
			{"wrong token", "Bearer nope", open},
			{"token without scheme", "full-s3cret", open},
			{"basic scheme", "Basic full-s3cret", open},
			{"read-only token", "Bearer read-s3cret", open || r.method == http.MethodGet},
			{"full token, lower-case scheme", "bearer full-s3cret", true},
			{"full token", "Bearer full-s3cret", true},
		} {
			var hdr []string
			if tc.header != "" {
				hdr = []string{"Authorization", tc.header}
			}
			code, b := do(t, r.method, a.url+r.path, body, hdr...)
			if denied(code) == tc.pass {
				t.Errorf("%s %s with %s = %d %s; want it to %s", r.method, r.path, tc.name, code, b,
					map[bool]string{true: "pass the guard", false: "be refused"}[tc.pass])
			}
			if !tc.pass && tc.name == "read-only token" && code != http.StatusForbidden {
				t.Errorf("%s %s with the read-only token = %d, want 403", r.method, r.path, code)
			}
		}
	}
}

// TestInfoRedactsURLs: /info shows where the model and GitHub are, never
// the userinfo or a key in their URLs (the finding 2).
func TestInfoRedactsURLs(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "vera", "AGENT_TOOLS": "load_skill", "AGENT_MODEL": "m",
		"LLM_BASE_URL":          "https://llmuser:Pl4ntedLlmPass@llm.example.com/v1?api-key=Pl4ntedQueryKey",
		"LLM_FALLBACK_BASE_URL": "https://fb.example.com/v1?token=Pl4ntedFallbackToken",
		"GITHUB_API_URL":        "https://ghuser:Pl4ntedGhPass@ghe.example.com/api/v3",
		"LLM_API_KEY":           "Pl4ntedApiKey"})
	code, body := do(t, http.MethodGet, a.url+"/info", "")
	if code != http.StatusOK {
		t.Fatalf("GET /info = %d %s", code, body)
	}
	if strings.Contains(string(body), "Pl4nted") {
		t.Fatalf("/info leaks a planted secret:\n%s", body)
	}
	for _, want := range []string{"llm.example.com/v1", "fb.example.com", "ghe.example.com/api/v3", "[REDACTED:url-userinfo]"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/info lacks %q", want)
		}
	}
}
