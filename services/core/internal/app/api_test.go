package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
)

type listPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

// walk pages through a list endpoint and returns every item.
func walk(t *testing.T, base string, limit int) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	cursor := ""
	for i := 0; i < 100; i++ {
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		u := base + sep + "limit=" + itoa(limit)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		code, b := call(t, http.MethodGet, u, nil)
		if code != 200 {
			t.Fatalf("GET %s: %d %s", u, code, b)
		}
		p := decode[listPage](t, b)
		if len(p.Items) > limit {
			t.Fatalf("GET %s: %d items over limit %d", u, len(p.Items), limit)
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all
		}
		cursor = p.NextCursor
	}
	t.Fatalf("%s: more than 100 pages", base)
	return nil
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestDashboardAPI(t *testing.T) {
	t.Parallel()
	vera := agenttest.New(t, "code-reviewer")
	vera.SetA2A(nil, true) // no /a2a/log yet: 404
	c := newCore(t, coreOpts{peers: map[string]string{"code-reviewer": vera.URL()}})
	c.Agent.SetA2A([]map[string]any{
		{"id": "a1", "verb": "delegate", "text": "restart api", "at": "2026-11-30T10:00:00Z"},
		{"id": "a2", "verb": "ask", "text": "why", "at": "2026-11-30T11:00:00Z"},
		{"id": "a3", "verb": "notify", "text": "fyi", "at": "2026-11-30T09:00:00Z"},
	}, false)

	// Three alerts in one group, three namespaces (three incidents): one
	// dispatched, two queued then dispatched as the agent frees up.
	code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(
		alert("fp1", "KubePodCrashLooping", "prod", "firing"),
		alert("fp2", "KubePodCrashLooping", "payments", "firing"),
		alert("fp3", "KubePodNotReady", "staging", "firing"),
	))
	if code != 200 {
		t.Fatalf("webhook: %d %s", code, b)
	}
	got := decode[decisionsAnswer](t, b)
	if len(got.Decisions) != 3 || got.Decisions[0].Decision != "dispatched" {
		t.Fatalf("decisions: %s", b)
	}
	c.WaitIdle()

	t.Run("alerts paginate without loss or repeats", func(t *testing.T) {
		items := walk(t, c.URL+"/api/v1/alerts", 2)
		seen := map[string]bool{}
		dispatched := 0
		for _, it := range items {
			d := decode[struct{ ID, Decision string }](t, it)
			if seen[d.ID] {
				t.Fatalf("decision %s twice", d.ID)
			}
			seen[d.ID] = true
			if d.Decision == "dispatched" {
				dispatched++
			}
		}
		if dispatched != 3 {
			t.Fatalf("%d dispatched decisions in %d items", dispatched, len(items))
		}
	})

	var invID string
	t.Run("investigations", func(t *testing.T) {
		items := walk(t, c.URL+"/api/v1/investigations", 2)
		if len(items) != 3 {
			t.Fatalf("%d investigations, want 3", len(items))
		}
		inv := decode[struct {
			ID, Status string
			Findings   []kapi.Finding
		}](t, items[0])
		if inv.Status != "completed" || len(inv.Findings) != 1 {
			t.Fatalf("investigation %s", items[0])
		}
		invID = inv.ID
		code, b := call(t, http.MethodGet, c.URL+"/api/v1/investigations/"+invID, nil)
		if code != 200 || !strings.Contains(string(b), invID) {
			t.Fatalf("get: %d %s", code, b)
		}
		if code, b := call(t, http.MethodGet, c.URL+"/api/v1/investigations/nope", nil); code != 404 {
			t.Fatalf("unknown id: %d %s", code, b)
		}
	})

	t.Run("findings", func(t *testing.T) {
		for _, limit := range []int{1, 2, 50} {
			items := walk(t, c.URL+"/api/v1/findings", limit)
			if len(items) != 3 {
				t.Fatalf("limit %d: %d findings, want 3", limit, len(items))
			}
		}
	})

	t.Run("bad pagination", func(t *testing.T) {
		for _, p := range []string{"/api/v1/alerts?limit=0", "/api/v1/alerts?limit=abc", "/api/v1/investigations?limit=501",
			"/api/v1/findings?limit=-1", "/api/v1/audit?limit=x", "/api/v1/alerts?cursor=garbage!",
			"/api/v1/investigations?cursor=Zm9v", "/api/v1/findings?cursor=@@@", "/api/v1/audit?cursor=bm9wZQ"} {
			code, b := call(t, http.MethodGet, c.URL+p, nil)
			if code != 400 || decode[struct{ Error string }](t, b).Error == "" {
				t.Errorf("%s: %d %s, want 400 with an error", p, code, b)
			}
		}
	})

	t.Run("agents", func(t *testing.T) {
		code, b := call(t, http.MethodGet, c.URL+"/api/v1/agents", nil)
		if code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		ans := decode[struct {
			Agents []struct {
				Slug, Persona, Status, Error, Model string
				ReceivesAlerts                      bool `json:"receives_alerts"`
				Tools                               []struct{ Name string }
			}
		}](t, b)
		if len(ans.Agents) != 5 {
			t.Fatalf("%d agents: %s", len(ans.Agents), b)
		}
		for _, a := range ans.Agents {
			switch a.Slug {
			case "platform-sre":
				if a.Status != "up" || a.Model != "none" || len(a.Tools) != 2 || a.Tools[0].Name != "cluster_problems" || !a.ReceivesAlerts || a.Persona != "noor" {
					t.Errorf("platform-sre: %+v", a)
				}
			case "code-reviewer":
				if a.Status != "up" || a.ReceivesAlerts {
					t.Errorf("code-reviewer: %+v", a)
				}
			default:
				if a.Status != "down" || a.Error == "" {
					t.Errorf("%s should be down with an error: %+v", a.Slug, a)
				}
			}
		}
	})

	t.Run("audit merges agents and says who cannot answer", func(t *testing.T) {
		code, b := call(t, http.MethodGet, c.URL+"/api/v1/audit?limit=2", nil)
		if code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		ans := decode[struct {
			Items []struct {
				Agent, ID string
				At        time.Time
			}
			NextCursor string `json:"next_cursor"`
			Sources    []struct{ Agent, Status, Error string }
		}](t, b)
		if len(ans.Items) != 2 || ans.Items[0].ID != "a2" || ans.Items[1].ID != "a1" || ans.NextCursor == "" {
			t.Fatalf("first page (newest first): %s", b)
		}
		status := map[string]string{}
		for _, s := range ans.Sources {
			status[s.Agent] = s.Status
		}
		if status["platform-sre"] != "ok" || status["code-reviewer"] != "unsupported" || status["k8s-engineer"] != "down" {
			t.Fatalf("sources: %v", status)
		}
		code, b = call(t, http.MethodGet, c.URL+"/api/v1/audit?limit=2&cursor="+url.QueryEscape(ans.NextCursor), nil)
		page2 := decode[struct {
			Items []struct{ ID string }
			Next  string `json:"next_cursor"`
		}](t, b)
		if code != 200 || len(page2.Items) != 1 || page2.Items[0].ID != "a3" || page2.Next != "" {
			t.Fatalf("second page: %d %s", code, b)
		}
	})

	t.Run("manual run", func(t *testing.T) {
		before := len(c.Agent.Runs())
		code, b := call(t, http.MethodPost, c.URL+"/api/v1/agents/noor/run", []byte(`{"task":"check prod","context":{"k":"v"}}`))
		if code != 200 || decode[kapi.RunResult](t, b).Status != "completed" {
			t.Fatalf("%d %s", code, b)
		}
		runs := c.Agent.Runs()
		if len(runs) != before+1 || runs[before].Request.WorkflowType != "manual" || runs[before].Request.Caller != "core" || runs[before].Request.Context["k"] != "v" {
			t.Fatalf("forwarded %+v", runs[len(runs)-1])
		}
		code, b = call(t, http.MethodPost, c.URL+"/api/v1/agents/platform-sre/run?async=1", []byte(`{"task":"later"}`))
		if code != 202 || decode[kapi.RunResult](t, b).Status != "running" {
			t.Fatalf("async: %d %s", code, b)
		}
		for _, tt := range []struct {
			path, body string
			code       int
		}{
			{"/api/v1/agents/bob/run", `{"task":"x"}`, 404},
			{"/api/v1/agents/noor/run", `{"task":""}`, 400},
			{"/api/v1/agents/noor/run", `{"task":"x","extra":1}`, 400},
			{"/api/v1/agents/noor/run", `not json`, 400},
			{"/api/v1/agents/dax/run", `{"task":"x"}`, 502},
		} {
			code, b := call(t, http.MethodPost, c.URL+tt.path, []byte(tt.body))
			if code != tt.code || decode[struct{ Error string }](t, b).Error == "" {
				t.Errorf("%s %s: %d %s, want %d", tt.path, tt.body, code, b, tt.code)
			}
		}
		c.Agent.Reply(func(kapi.RunRequest) (int, any) { return 429, kapi.ErrorBody{Error: "too many runs"} })
		code, b = call(t, http.MethodPost, c.URL+"/api/v1/agents/noor/run", []byte(`{"task":"x"}`))
		if code != 429 || !strings.Contains(string(b), "too many runs") {
			t.Errorf("agent 429 passed through: %d %s", code, b)
		}
		c.Agent.Reply(nil)
	})

	t.Run("misc", func(t *testing.T) {
		code, b := call(t, http.MethodGet, c.URL+"/api/v1/openapi.yaml", nil)
		if code != 200 || !strings.HasPrefix(string(b), "openapi: 3") {
			t.Fatalf("openapi: %d %.50s", code, b)
		}
		code, b = call(t, http.MethodGet, c.URL+"/ready", nil)
		if code != 200 || !strings.Contains(string(b), `"store":"memory"`) {
			t.Fatalf("ready: %d %s", code, b)
		}
		code, b, _ = do(t, http.MethodGet, c.URL+"/metrics", nil)
		if code != 200 || !strings.Contains(string(b), `kubecrew_core_alert_decisions_total{decision="dispatched"} 3`) ||
			!strings.Contains(string(b), `kubecrew_core_investigations_total{agent="platform-sre",status="completed"} 3`) ||
			!strings.Contains(string(b), `kubecrew_core_investigations_total{agent="platform-sre",status="failed"} 0`) ||
			!strings.Contains(string(b), `kubecrew_build_info{binary="core"`) {
			t.Fatalf("metrics: %d\n%s", code, grep(string(b), "kubecrew_core"))
		}
		code, b, _ = do(t, http.MethodGet, c.URL+"/nope", nil)
		if code != 404 || decode[struct{ Error string }](t, b).Error == "" {
			t.Fatalf("404: %d %s", code, b)
		}
		code, b, _ = do(t, http.MethodDelete, c.URL+"/api/v1/alerts", nil)
		if code != 405 || decode[struct{ Error string }](t, b).Error == "" {
			t.Fatalf("405: %d %s", code, b)
		}
	})
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// List filters filter, and a query parameter a route does not take is
// refused, not ignored.
func TestListFiltersFilterAndUnknownParametersAreRefused(t *testing.T) {
	c := newCore(t, coreOpts{})
	// Each run reports one critical and two high findings in the alert's namespace.
	c.Agent.Reply(func(req kapi.RunRequest) (int, any) {
		now := time.Now().UTC()
		ns := req.Context["namespace"]
		return 200, kapi.RunResult{RunID: "r-" + req.Context["fingerprint"], Agent: "platform-sre", WorkflowType: req.WorkflowType,
			Status: kapi.StatusCompleted, Answer: "triaged", StartedAt: now, FinishedAt: &now, Findings: []kapi.Finding{
				{Key: ns + "-a", Severity: kapi.SeverityCritical, Kind: "Deployment", Namespace: ns, Name: "a", Reason: "OOMKilled", Remediable: true},
				{Key: ns + "-b", Severity: kapi.SeverityHigh, Kind: "Deployment", Namespace: ns, Name: "b", Reason: "ImagePullBackOff"},
				{Key: ns + "-c", Severity: kapi.SeverityHigh, Kind: "Node", Name: "n1", Reason: "NotReady"},
			}}
	})
	for _, a := range []map[string]any{alert("fp1", "KubePodOOMKilled", "prod", "firing"), alert("fp2", "KubePodCrashLooping", "staging", "firing")} {
		if code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(a)); code != 200 {
			t.Fatalf("webhook: %d %s", code, b)
		}
		c.WaitIdle()
	}
	for _, tt := range []struct {
		query string
		want  int
		check func(kapi.Finding) bool
	}{
		{"", 6, func(kapi.Finding) bool { return true }},
		{"severity=critical", 2, func(f kapi.Finding) bool { return f.Severity == kapi.SeverityCritical }},
		{"severity=critical,high&namespace=prod", 2, func(f kapi.Finding) bool { return f.Namespace == "prod" }},
		{"remediable=true&alertname=KubePodOOMKilled", 1, func(f kapi.Finding) bool { return f.Remediable && f.Namespace == "prod" }},
		{"kind=Node&reason=NotReady", 2, func(f kapi.Finding) bool { return f.Kind == "Node" }},
		{"agent=code-reviewer", 0, nil},
	} {
		for _, limit := range []int{1, 50} {
			items := walk(t, c.URL+"/api/v1/findings?"+tt.query, limit)
			if len(items) != tt.want {
				t.Errorf("?%s (limit %d): %d findings, want %d", tt.query, limit, len(items), tt.want)
			}
			for _, it := range items {
				if f := decode[struct{ Finding kapi.Finding }](t, it).Finding; tt.check != nil && !tt.check(f) {
					t.Errorf("?%s: %+v does not match", tt.query, f)
				}
			}
		}
	}
	for _, p := range []string{"/api/v1/findings?severity=urgent", "/api/v1/findings?remediable=maybe",
		"/api/v1/findings?sevrity=critical", "/api/v1/alerts?status=firing", "/api/v1/investigations?agent=noor",
		"/api/v1/audit?verb=delegate", "/api/v1/agents?x=1"} {
		code, b := call(t, http.MethodGet, c.URL+p, nil)
		if e := decode[struct{ Error string }](t, b).Error; code != 400 || e == "" {
			t.Errorf("%s: %d %s, want 400 with an error", p, code, b)
		} else {
			t.Logf("%s: %s", p, e)
		}
	}
	if _, b := call(t, http.MethodGet, c.URL+"/api/v1/findings?sevrity=critical", nil); !strings.Contains(string(b), `unknown query parameter \"sevrity\"`) ||
		!strings.Contains(string(b), "severity") {
		t.Errorf("the error does not name the parameter and what the route takes: %s", b)
	}
}

// GET / points to the API instead of a JSON 404.
func TestIndexPointsToTheAPI(t *testing.T) {
	c := newCore(t, coreOpts{})
	code, b := call(t, http.MethodGet, c.URL+"/", nil)
	idx := decode[struct {
		API, OpenAPI string
		Routes       []struct{ Method, Path string }
	}](t, b)
	if code != 200 || idx.API != "/api/v1" || idx.OpenAPI != "/api/v1/openapi.yaml" || len(idx.Routes) < 5 {
		t.Fatalf("GET / = %d %s", code, b)
	}
	code, page, hdr := do(t, http.MethodGet, c.URL+"/", nil, "Accept", "text/html,application/xhtml+xml")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(page), `href="/api/v1/openapi.yaml"`) {
		t.Fatalf("GET / for a browser = %d %s\n%.300s", code, hdr.Get("Content-Type"), page)
	}
}

// TestAgentsViewRedacts: /api/v1/agents passes on an agent's settings only
// redacted, even when the agent itself (an older version, a foreign one)
// reports a URL with userinfo or a key, and the peer URL too.
func TestAgentsViewRedacts(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{peers: map[string]string{"code-reviewer": "http://peer:Pl4ntedPeerPass@127.0.0.1:1"}})
	c.Agent.SetSetting("LLM_BASE_URL", "https://u:Pl4ntedLlmPass@llm.example.com/v1?api-key=Pl4ntedKey")
	c.Agent.SetSetting("GITHUB_TOKEN", "Pl4ntedGithubToken")
	code, b := call(t, http.MethodGet, c.URL+"/api/v1/agents", nil)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if strings.Contains(string(b), "Pl4nted") {
		t.Fatalf("/api/v1/agents leaks a planted secret:\n%s", b)
	}
	if !strings.Contains(string(b), "llm.example.com/v1") {
		t.Errorf("the redacted URL should still name its host: %s", b)
	}
}
