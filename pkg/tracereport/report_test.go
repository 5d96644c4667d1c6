package tracereport_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
)

func TestReportIsSelfContainedEscapedAndHighlightsDenials(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	t1 := t0.Add(1500 * time.Millisecond)
	ev := func(seq int, typ string, data any) store.Event {
		raw, _ := json.Marshal(data)
		return store.Event{RunID: "r1", Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Type: typ, Data: raw}
	}
	v := tracereport.Run{
		AgentName: "noor",
		RunResult: api.RunResult{RunID: "r1", Agent: "platform-sre", WorkflowType: "alert", Status: "completed",
			Answer: "<script>alert('x')</script> cart is down", StartedAt: t0, FinishedAt: &t1,
			Findings: []api.Finding{{Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "cart", Reason: "OOMKilled", Detail: "<b>exit 137</b>"}}},
		Task: "why is <cart> down?",
		Trace: []store.Event{
			ev(1, "run_start", map[string]any{"task": "t"}),
			ev(2, "tool_call", map[string]any{"name": "k8s_rollout", "args": map[string]string{"action": "undo"}}),
			ev(3, "guard_denied", map[string]any{"gate": "execution", "tool": "k8s_rollout"}),
			ev(4, "tool_result", map[string]any{"name": "k8s_rollout", "outcome": "denied", "output": "ERROR: denied"}),
			ev(5, "tool_call", map[string]any{"name": "cluster_problems"}),
			ev(6, "tool_result", map[string]any{"name": "cluster_problems", "outcome": "ok", "output": "</pre><img src=x onerror=alert(1)>"}),
			ev(7, "run_finish", map[string]any{"status": "completed"}),
		},
	}
	page, err := tracereport.Render(tracereport.Page{Title: "noor run r1", Runs: []tracereport.Run{v, {AgentName: "sol", RunResult: api.RunResult{RunID: "r2"}, FetchError: "agent down"}}})
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>exit 137</b>", "http://", "https://", "<link", `src="`, "href="} {
		if strings.Contains(html, bad) {
			t.Errorf("page contains %q (unescaped payload or an external asset)", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "1.5s", "🔴 critical", `<details class="guard_denied">`, "1 guard denial(s)",
		"execution gate refused k8s_rollout", "<td>k8s_rollout</td><td>1</td><td>0</td><td>1</td>", "<td>cluster_problems</td><td>1</td><td>0</td><td>0</td>",
		"Timeline (7 events)", "sol — run <code>r2</code>", "Could not read this run: agent down"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestLinksFollowA2ASendsAndTheDelegation(t *testing.T) {
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	r := tracereport.Run{
		RunResult: api.RunResult{Delegation: &api.Delegation{To: "k8s-engineer", RunID: "sol-1", Sent: true}},
		Trace: []store.Event{
			{Type: "a2a_send", Data: raw(map[string]string{"to": "k8s-engineer", "callee_run_id": "sol-1"})},
			{Type: "a2a_send", Data: raw(map[string]string{"to": "code-reviewer", "callee_run_id": "vera-1"})},
			{Type: "a2a_send", Data: raw(map[string]string{"to": "code-reviewer", "outcome": "refused"})},
			{Type: "tool_call", Data: raw(map[string]string{"to": "x", "callee_run_id": "y"})},
		},
	}
	got := tracereport.Links(r)
	want := []tracereport.Link{{Agent: "k8s-engineer", RunID: "sol-1"}, {Agent: "code-reviewer", RunID: "vera-1"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Links = %+v, want %+v", got, want)
	}
}
