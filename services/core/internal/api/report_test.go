package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// fakeAgents serves runs by agent and id; anything else errors.
type fakeAgents struct {
	runs map[string]map[string]any // "slug/id" → GET /runs/{id} body
}

func (f fakeAgents) Info(context.Context, string) (json.RawMessage, error) {
	return nil, fmt.Errorf("no")
}
func (f fakeAgents) A2ALog(context.Context, string, int) ([]json.RawMessage, error) {
	return nil, fmt.Errorf("no")
}
func (f fakeAgents) Run(context.Context, string, kapi.RunRequest, bool) (kapi.RunResult, error) {
	return kapi.RunResult{}, fmt.Errorf("no")
}
func (f fakeAgents) GetRun(_ context.Context, slug, id string) (json.RawMessage, error) {
	v, ok := f.runs[slug+"/"+id]
	if !ok {
		return nil, fmt.Errorf("agent %s: no run %s", slug, id)
	}
	return json.Marshal(v)
}

func TestInvestigationReportFollowsTheChain(t *testing.T) {
	st := store.NewMemory(nil)
	ctx := context.Background()
	now := time.Now()
	_, err := st.ApplyAlert(ctx, "fp1", "platform-sre", func(prev store.AlertState, ok bool, n int) (store.AlertDecision, store.AlertState) {
		return store.AlertDecision{Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Status: "firing", Decision: store.DecisionDispatched,
				Agent: "platform-sre", InvestigationID: "inv1", At: now},
			store.AlertState{Fingerprint: "fp1", Agent: "platform-sre", Firing: true, FirstSeen: now, LastSeen: now}
	}, func(d store.AlertDecision) *store.Investigation {
		return &store.Investigation{ID: "inv1", Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Agent: "platform-sre", Status: "running", StartedAt: now}
	})
	if err != nil {
		t.Fatal(err)
	}
	fin := now.Add(time.Second)
	if err := st.FinishInvestigation(ctx, store.Investigation{ID: "inv1", Fingerprint: "fp1", Alertname: "KubePodOOMKilled",
		Agent: "platform-sre", RunID: "noor-1", Status: "completed", StartedAt: now, FinishedAt: &fin}); err != nil {
		t.Fatal(err)
	}
	ev := func(typ string, data map[string]string) store.Event {
		raw, _ := json.Marshal(data)
		return store.Event{Type: typ, Data: raw, Time: now}
	}
	agents := fakeAgents{runs: map[string]map[string]any{
		"platform-sre/noor-1": {"run_id": "noor-1", "status": "completed", "task": "triage <oomkill>",
			"delegation": map[string]any{"to": "k8s-engineer", "run_id": "sol-1", "sent": true, "finding": map[string]string{"key": "k"}},
			"trace":      []store.Event{ev("a2a_send", map[string]string{"to": "k8s-engineer", "callee_run_id": "sol-1"})}},
		"k8s-engineer/sol-1": {"run_id": "sol-1", "status": "completed", "task": "fix it", "answer": "opened PR #1",
			"findings": []kapi.Finding{{Severity: "critical", Kind: "Deployment", Namespace: "f", Name: "oomkill", Reason: "OOMKilled"}},
			"trace": []store.Event{
				ev("tool_result", map[string]string{"name": "bump_workload_memory", "outcome": "ok",
					"output": "Opened PR #1: https://github.com/acme/gitops/pull/1\nbranch: agent/fix/f-oomkill\nfile: apps/f.yaml\n"}),
				ev("a2a_send", map[string]string{"verb": "notify", "to": "code-reviewer", "callee_run_id": "vera-1", "outcome": "accepted"}),
			}},
		"code-reviewer/vera-1": {"run_id": "vera-1", "status": "completed", "task": "review", "verdict": "approve",
			"trace": []store.Event{ev("tool_result", map[string]string{"name": "merge_if_trivial", "outcome": "ok",
				"output": "MERGED PR #1: memory limit 32Mi -> 48Mi is now on main."})}},
	}}
	r := chi.NewRouter()
	Routes(r, Deps{Store: st, Agents: agents, Resolve: func(n string) (string, bool) { return n, true }})
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/investigations/inv1/report")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	html := string(body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("= %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"Investigation inv1 — KubePodOOMKilled", "platform-sre — run <code>noor-1</code>",
		"k8s-engineer — run <code>sol-1</code>", "opened PR #1", "code-reviewer — run <code>vera-1</code>",
		"triage &lt;oomkill&gt;", `<td class="sev sev-critical">critical</td>`, "notify → code-reviewer: accepted"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The page opens with the outcome: merged, by whom, the link.
	outcome := html[strings.Index(html, "<h1>"):strings.Index(html, "<h2>")]
	for _, want := range []string{"Outcome: merged — PR #1 merged by code-reviewer: memory limit 32Mi -&gt; 48Mi is now on main",
		`<a href="https://github.com/acme/gitops/pull/1">`, "PR #1 opened by k8s-engineer on branch agent/fix/f-oomkill"} {
		if !strings.Contains(outcome, want) {
			t.Errorf("the top of the page lacks %q:\n%s", want, outcome)
		}
	}
	if strings.Contains(html, "&lt;nil&gt;") || strings.Contains(html, "<nil>") {
		t.Error("the page shows <nil>")
	}
	if resp, _ := http.Get(srv.URL + "/api/v1/investigations/nope/report"); resp.StatusCode != 404 {
		t.Errorf("unknown investigation = %d", resp.StatusCode)
	}
}
