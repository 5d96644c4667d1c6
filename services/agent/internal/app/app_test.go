package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// envOf is m as an environment; without an AUTH_ setting in m the agent
// runs as on a laptop (AUTH_DISABLED=true): a test of authentication sets
// its tokens.
func envOf(m map[string]string) func(string) string {
	return func(k string) string {
		if k == "AUTH_DISABLED" && m["AUTH_TOKEN"] == "" && m["AUTH_READ_TOKEN"] == "" && m[k] == "" {
			return "true"
		}
		return m[k]
	}
}

type agent struct {
	app *app.App
	url string
	// token is the AUTH_TOKEN the agent was started with ("" without one).
	token string
}

// start builds a whole agent from env and serves it on loopback.
func start(t *testing.T, env map[string]string) *agent {
	t.Helper()
	cfg, err := config.Load(envOf(env), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		srv.Close()
	})
	return &agent{app: a, url: srv.URL, token: env["AUTH_TOKEN"]}
}

func do(t *testing.T, method, url, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func modelEnv(srv *llmtest.Server, persona string) map[string]string {
	return map[string]string{
		"AGENT_PERSONA": persona, "LLM_BASE_URL": srv.URL(), "AGENT_MODEL": "test-model", "LLM_API_KEY": "secret-key",
		"AGENT_TOOLS": "load_skill", "LLM_TIMEOUT": "5s", "SYNTHESIS_TIMEOUT": "2s",
	}
}

func TestInfoToolsAreExactlyWhatTheModelIsSent(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("hello"), llmtest.Text("{}"))
	a := start(t, modelEnv(srv, "vera"))
	code, body := do(t, "POST", a.url+"/run", `{"task":"hi"}`)
	if code != 200 {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	_, ib := do(t, "GET", a.url+"/info", "")
	var info struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"tools"`
		Settings map[string]config.Setting `json:"settings"`
		Model    string                    `json:"model"`
	}
	if err := json.Unmarshal(ib, &info); err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()[0].Request.Tools
	if len(sent) != len(info.Tools) || len(sent) == 0 {
		t.Fatalf("/info lists %d tools, the model was sent %d", len(info.Tools), len(sent))
	}
	for i, s := range sent {
		it := info.Tools[i]
		params, _ := json.Marshal(s.Function.Parameters)
		if s.Function.Name != it.Name || s.Function.Description != it.Description || !jsonEqual(t, params, it.Parameters) {
			t.Errorf("tool %d: model got %s %s, /info says %s %s", i, s.Function.Name, params, it.Name, it.Parameters)
		}
	}
	if info.Model != "test-model" {
		t.Errorf("model = %q", info.Model)
	}
	if s := info.Settings["LLM_API_KEY"]; strings.Contains(s.Value, "secret-key") || s.Source != "env" {
		t.Errorf("LLM_API_KEY shown as %+v", s)
	}
	if s := info.Settings["AGENT_MAX_ITERATIONS"]; s.Source != "persona" || s.Where == "" {
		t.Errorf("AGENT_MAX_ITERATIONS = %+v, want from the persona's agent.env with file:line", s)
	}
	if s := info.Settings["TOOL_OUTPUT_MAX_CHARS"]; s.Source != "default" || s.Value != "8000" {
		t.Errorf("TOOL_OUTPUT_MAX_CHARS = %+v", s)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestRunRequestErrors(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "dax", "AGENT_TOOLS": "load_skill"})
	big := `{"task":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"malformed", `{"task":`, 400, "malformed request"},
		{"unknown field", `{"task":"x","tsk":"y"}`, 400, `unknown field "tsk"`},
		{"missing task", `{}`, 400, "task is required"},
		{"bad workflow", `{"task":"x","workflow_type":"cron"}`, 400, "unknown workflow_type"},
		{"empty body", ``, 400, "empty request body"},
		{"trailing data", `{"task":"x"} {}`, 400, "trailing data"},
		{"too large", big, 413, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, "POST", a.url+"/run", tc.body)
			var e api.ErrorBody
			_ = json.Unmarshal(body, &e)
			if code != tc.code || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("= %d %s, want %d containing %q", code, body, tc.code, tc.msg)
			}
		})
	}
	// curl -d sends a form content type; the JSON body is still accepted.
	if code, body := do(t, "POST", a.url+"/run", `{"task":"x"}`, "Content-Type", "application/x-www-form-urlencoded"); code != 200 {
		t.Errorf("curl-style body = %d %s, want 200", code, body)
	}
	if code, _ := do(t, "POST", a.url+"/run", `{"task":"x"}`, "Content-Type", "multipart/form-data; boundary=x"); code != 415 {
		t.Errorf("multipart body = %d, want 415", code)
	}
	code, body := do(t, "GET", a.url+"/runs/nope", "")
	if code != 404 || !strings.Contains(string(body), `"error"`) {
		t.Errorf("unknown run = %d %s", code, body)
	}
}

func TestAsyncRunAndTrace(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.ToolCalls(llmtest.Call{Name: "report_finding", Args: `{"severity":"high","kind":"Deployment","namespace":"shop","name":"cart","reason":"CrashLoopBackOff","detail":"exit 1","remediation":"restart","remediable":true}`}),
		llmtest.Text("cart is crash looping"), llmtest.Text("no json"), llmtest.Text("no json"))
	a := start(t, modelEnv(srv, "noor"))
	code, body := do(t, "POST", a.url+"/run?async=1", `{"task":"why is cart down?","context":{"namespace":"shop"}}`)
	if code != 202 {
		t.Fatalf("async = %d %s", code, body)
	}
	var acc struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(body, &acc)
	var view struct {
		api.RunResult
		Trace []struct {
			Type string `json:"type"`
		} `json:"trace"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, vb := do(t, "GET", a.url+"/runs/"+acc.RunID, "")
		_ = json.Unmarshal(vb, &view)
		if view.Status != api.StatusRunning || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if view.Status != api.StatusCompleted || len(view.Findings) != 1 || view.Findings[0].Key != "shop-deployment-cart-crashloopbackoff" {
		t.Fatalf("run = %+v", view.RunResult)
	}
	if len(view.Trace) == 0 || view.Trace[0].Type != "run_start" || view.Trace[len(view.Trace)-1].Type != "run_finish" {
		t.Errorf("trace = %+v", view.Trace)
	}
	// The same trace as JSONL, and as a page a person reads.
	_, tb := do(t, "GET", a.url+"/runs/"+acc.RunID+"/trace", "")
	if n := strings.Count(string(tb), "\n"); n != len(view.Trace) {
		t.Errorf("JSONL trace has %d lines, the run view %d events", n, len(view.Trace))
	}
	code, page := do(t, "GET", a.url+"/runs/"+acc.RunID+"/report", "")
	if code != 200 || !strings.Contains(string(page), "Timeline (") || !strings.Contains(string(page), "shop/Deployment/cart") {
		t.Errorf("report page = %d\n%.300s", code, page)
	}
	// The prompt carried the context value.
	if sys := srv.Requests()[0].Request.Messages[0].Content; !strings.Contains(sys, "- namespace: shop") {
		t.Errorf("system prompt lacks the context")
	}
	_, mb := do(t, "GET", a.url+"/metrics", "")
	for _, m := range []string{`kubecrew_agent_runs_total{agent="platform-sre",status="completed",workflow_type="manual"} 1`,
		`kubecrew_agent_tool_calls_total{agent="platform-sre",outcome="ok",tool="report_finding"} 1`, `kubecrew_agent_model_requests_total`} {
		if !strings.Contains(string(mb), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

func TestReadyReportsComponents(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill"})
	code, body := do(t, "GET", a.url+"/ready", "")
	var r map[string]any
	_ = json.Unmarshal(body, &r)
	if code != 200 || r["ready"] != true || r["store"] == nil || r["model"] != "none" {
		t.Errorf("/ready = %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = a.app.Shutdown(ctx)
	if code, _ := do(t, "GET", a.url+"/ready", ""); code != 503 {
		t.Errorf("/ready while draining = %d, want 503", code)
	}
	if code, _ := do(t, "POST", a.url+"/run", `{"task":"x"}`); code != 503 {
		t.Errorf("POST /run while draining = %d, want 503", code)
	}
}

// TestControlCharacterIDsAre400: a run id holding NUL or another control
// character is bad input on every route that takes one, on the Postgres
// store too (which refuses NUL outright and used to surface it as a 500).
func TestControlCharacterIDsAre400(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "dax", "AGENT_TOOLS": "load_skill", "DATABASE_URL": pgtest.Schema(t, "agent")})
	for _, p := range []string{"/runs/a%00b", "/runs/%00/trace", "/runs/a%00b/report", "/runs/a%01b", "/runs/a%C2%85b", "/runs/%FF",
		"/runs?cursor=%00", "/a2a/log?cursor=x%00"} {
		code, body := do(t, "GET", a.url+p, "")
		var e api.ErrorBody
		if code != 400 || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, "control character") {
			t.Errorf("GET %s = %d %s, want 400 naming the control character", p, code, body)
		}
	}
	if code, body := do(t, "GET", a.url+"/runs/no-such-run", ""); code != 404 {
		t.Errorf("unknown run = %d %s, want 404", code, body)
	}
}

// A list filter the agent does not know is refused, not ignored.
func TestRunsUnknownQueryParameterRefused(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill"})
	if code, b := do(t, "GET", a.url+"/runs?workflow=alert", ""); code != 400 || !strings.Contains(string(b), `unknown query parameter \"workflow\"`) {
		t.Errorf("GET /runs?workflow=alert = %d %s", code, b)
	}
	if code, b := do(t, "GET", a.url+"/runs?workflow_type=alert&status=failed", ""); code != 200 {
		t.Errorf("GET /runs with known filters = %d %s", code, b)
	}
}

// Sol without his action tools (read-only) says so in words when handed a
// finding: refused, actions disabled — never an "unknown tool" error.
func TestSolReadOnlySaysSoInWords(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "AGENT_TOOLS": "k8s_get_resources,k8s_describe"})
	finding, _ := json.Marshal(api.Finding{Key: "shop-deployment-cart-app-oomkilled", Severity: "critical", Kind: "Deployment",
		Namespace: "shop", Name: "cart", Container: "app", Reason: "OOMKilled", Remediation: "raise the memory limit", Remediable: true})
	body, _ := json.Marshal(api.RunRequest{Task: "Fix Deployment shop/cart", Context: map[string]string{"finding": string(finding)}})
	code, b := do(t, "POST", a.url+"/run", string(body))
	var res api.RunResult
	if err := json.Unmarshal(b, &res); err != nil || code != 200 {
		t.Fatalf("POST /run = %d %s", code, b)
	}
	if res.Verdict != api.VerdictRefused || !strings.Contains(res.Answer, "read-only") || !strings.Contains(res.Answer, "actions are disabled") ||
		strings.Contains(res.Answer, "unknown tool") {
		t.Errorf("verdict %q, answer %q; want refused, in words", res.Verdict, res.Answer)
	}
}

// TestGitHubAppHalfConfigured: an installation id without its App id is a
// start-up error naming what a GitHub App needs, not a silent fallback to
// GITHUB_TOKEN.
func TestGitHubAppHalfConfigured(t *testing.T) {
	cfg, err := config.Load(envOf(map[string]string{"AGENT_PERSONA": "sol", "GITOPS_FORGE": "github", "GITOPS_REPO": "acme/gitops",
		"GITHUB_TOKEN": "ghp_unused", "GITHUB_APP_INSTALLATION_ID": "42", "GITHUB_APP_PRIVATE_KEY_FILE": "/var/run/kubecrew/github/key.pem"}), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err == nil {
		_ = a.Shutdown(context.Background())
		t.Fatal("an App installation id without GITHUB_APP_ID started, acting with GITHUB_TOKEN")
	}
	if !strings.Contains(err.Error(), "GITHUB_APP_ID") {
		t.Fatalf("error %q does not say GITHUB_APP_ID is missing", err)
	}
}
