package tracereport_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
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
	for _, want := range []string{"&lt;script&gt;", "1.5s", `<td class="sev sev-critical">critical</td>`, `<details class="guard_denied">`, "1 guard denial(s)",
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

func TestConcludeSaysWhatCameOfIt(t *testing.T) {
	tool := func(name, output string) store.Event {
		raw, _ := json.Marshal(map[string]string{"name": name, "outcome": "ok", "output": output})
		return store.Event{Type: "tool_result", Data: raw}
	}
	opened := tool(gitops.ToolBumpWorkloadMemory, "Opened PR #3: file:///tmp/run/gitops.git#pull/3\nbranch: agent/fix/x\n")
	noor := tracereport.Run{AgentName: "Noor", RunResult: api.RunResult{Status: "completed", Verdict: "healthy"}}
	for _, tt := range []struct {
		name string
		runs []tracereport.Run
		want []string
	}{
		{"merged on a local repository", []tracereport.Run{noor, {AgentName: "Sol", Trace: []store.Event{opened}},
			{AgentName: "Vera", Trace: []store.Event{tool(gitops.ToolMergeIfTrivial, "MERGED PR #3: memory limit 32Mi -> 48Mi is now on main.")}}},
			[]string{"merged", "merged — PR #3 merged by Vera: memory limit 32Mi -> 48Mi is now on main", "PR #3 opened by Sol on branch agent/fix/x",
				"git --git-dir=/tmp/run/gitops.git show agent/fix/x", "false"}},
		{"merged by the playbook", []tracereport.Run{noor, {AgentName: "Sol", Trace: []store.Event{opened}},
			{AgentName: "Vera", Trace: []store.Event{tool(gitops.ToolMergeIfTrivial, "merged #3 (32Mi → 48Mi)")}}},
			[]string{"merged — PR #3 merged by Vera: 32Mi → 48Mi"}},
		{"left open by the playbook", []tracereport.Run{noor, {AgentName: "Sol", Trace: []store.Event{opened}},
			{AgentName: "Vera", Trace: []store.Event{tool(gitops.ToolMergeIfTrivial, "left for a human: the diff touches two lines")}}},
			[]string{"open", "PR #3 left open for a person: the diff touches two lines"}},
		{"left open", []tracereport.Run{noor, {AgentName: "Sol", Trace: []store.Event{opened}},
			{AgentName: "Vera", Trace: []store.Event{tool(gitops.ToolMergeIfTrivial, "NOT MERGED — PR #3 stays open for a human: two lines changed")}}},
			[]string{"open", "PR #3 left open for a person: two lines changed"}},
		{"delegation refused", []tracereport.Run{{AgentName: "Noor", RunResult: api.RunResult{Status: "completed",
			Delegation: &api.Delegation{To: "k8s-engineer", Error: "refused: settle window"}}}},
			[]string{"refused", "Noor's delegation to k8s-engineer did not succeed: refused: settle window"}},
		{"nothing to do", []tracereport.Run{noor}, []string{"done", "Noor's run completed, verdict healthy, 0 finding(s)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tracereport.Conclude(tt.runs)
			got := fmt.Sprintf("%s | %s | %s | %v | %v", o.State, o.Headline, o.Link, o.Openable, o.Lines)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("outcome %s lacks %q", got, w)
				}
			}
		})
	}
}
