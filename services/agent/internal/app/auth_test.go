package app_test

import (
	"github.com/kubecrew/kubecrew/pkg/api"
	"net/http"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/httpauth/authtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// TestAuthEveryRoute walks every route the whole agent serves (so a route
// added later is covered without editing this test) and calls each over
// HTTP with no token, wrong ones, the read-only token and AUTH_TOKEN (with
// a lower-case scheme): only /health, /ready, /metrics and the agent card
// answer without one; the read-only token opens GETs and nothing else
// (docs/MANUAL.md, "Authentication").
func TestAuthEveryRoute(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "load_skill",
		"AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"})
	seen := authtest.CheckEveryRoute(t, authtest.Options{URL: a.url, Routes: a.app.Server.Router(),
		Params: [][2]string{{"{id}", "nope"}}, Open: server.OpenPaths, Full: "full-s3cret", Read: "read-s3cret"})
	for _, must := range []string{"GET /runs", "GET /runs/nope", "GET /runs/nope/trace", "GET /runs/nope/report",
		"GET /a2a/log", "GET /pulse", "GET /info", "POST /run", "POST /invoke", "POST /pulse", "GET /.well-known/agent-card.json"} {
		if !seen[must] {
			t.Errorf("route %s not served (the walk must cover it)", must)
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

// TestRunInteractiveOnlyForTheWriteToken: a manual POST /run is a
// person's (interactive) only when AUTH_TOKEN let it in; with
// AUTH_DISABLED=true, or when its body asks to be unattended, it runs
// autonomous whatever its workflow_type (issue 31, case 1: an anonymous
// caller's run passed the execution gate for every action).
func TestRunInteractiveOnlyForTheWriteToken(t *testing.T) {
	secured := start(t, map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "load_skill", "AUTH_TOKEN": "full-s3cret"})
	open := start(t, map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "load_skill", "AUTH_DISABLED": "true"})
	for _, tc := range []struct {
		name string
		a    *agent
		req  api.RunRequest
		want string
	}{
		{"write token", secured, api.RunRequest{Task: "look", WorkflowType: api.WorkflowManual}, "interactive"},
		{"write token, no workflow type", secured, api.RunRequest{Task: "look"}, "interactive"},
		{"write token, unattended asked", secured, api.RunRequest{Task: "look", Unattended: true}, "autonomous"},
		{"auth disabled", open, api.RunRequest{Task: "look", WorkflowType: api.WorkflowManual}, "autonomous"},
		{"auth disabled, no workflow type", open, api.RunRequest{Task: "look"}, "autonomous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, trace := runOn(t, tc.a, tc.req)
			var mode any
			for _, ev := range trace {
				if ev.Type == "run_start" {
					mode = ev.Data["mode"]
				}
			}
			if mode != tc.want {
				t.Fatalf("run_start mode %v, want %s", mode, tc.want)
			}
		})
	}
}
