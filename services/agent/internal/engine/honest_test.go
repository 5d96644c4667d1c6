package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// brokenTool always fails, as a cluster tool does when the API server is
// unreachable.
func brokenTool() tools.Tool {
	return tools.New("broken", "Always fails.", false, func(context.Context, echoArgs) (string, error) {
		return "", errors.New("cluster_unavailable: dial tcp 10.0.0.1:6443: connect: connection refused")
	})
}

// A run that could not do its task ends partial with the reason, never
// completed (docs/MANUAL.md, "How a run works"): each path where it once ended
// completed, and the ones that rightly do.
func TestHonestStatus(t *testing.T) {
	playbook := func(f func(r *engine.Run)) engine.Playbook {
		return engine.PlaybookFunc(func(_ context.Context, r *engine.Run) error { f(r); return nil })
	}
	for _, tc := range []struct {
		name   string
		o      rigOpts
		script []llmtest.Reply
		task   string
		want   string // status
		reason string // in the run's error ("" for completed)
		// fallback: already partial as the playbook answered for the
		// model (trace event fallback_playbook, not partial)
		fallback bool
	}{
		{name: "the persona's code says its task was done in part", o: rigOpts{noModel: true, playbook: playbook(func(r *engine.Run) {
			r.SetPartial("1 files not reviewed: deploy/app.yaml (unreadable: permission denied)")
		})}, want: api.StatusPartial, reason: "deploy/app.yaml (unreadable: permission denied)"},
		{name: "the model is down and the playbook that answers did its task in part",
			o: rigOpts{playbook: engine.PlaybookFunc(func(context.Context, *engine.Run) error {
				return &engine.Partial{Reason: "review_deploy_path: 1 files could not be reviewed: deploy/app.yaml"}
			})},
			script: []llmtest.Reply{llmtest.APIError(401, "Incorrect API key provided")},
			want:   api.StatusPartial, reason: "1 files could not be reviewed: deploy/app.yaml", fallback: true},
		{name: "the peer is unreachable: the hand-off failed", o: rigOpts{noModel: true, playbook: playbook(func(r *engine.Run) {
			r.SetDelegation(api.Delegation{To: "k8s-engineer", Error: "a2a: cannot reach k8s-engineer: connection refused"})
		})}, want: api.StatusPartial, reason: "the hand-off to k8s-engineer failed: a2a: cannot reach k8s-engineer"},
		{name: "the delegate was at capacity", o: rigOpts{noModel: true, playbook: playbook(func(r *engine.Run) {
			r.SetDelegation(api.Delegation{To: "k8s-engineer", Busy: true, Error: "busy: 4 runs"})
		})}, want: api.StatusPartial, reason: "k8s-engineer was at capacity and started nothing"},
		{name: "the delegate's action failed", o: rigOpts{noModel: true, playbook: playbook(func(r *engine.Run) {
			r.SetDelegation(api.Delegation{To: "k8s-engineer", Sent: true, Verdict: api.VerdictActionFailed, Result: "rollout restart failed: forbidden"})
		})}, want: api.StatusPartial, reason: "k8s-engineer's action failed: rollout restart failed: forbidden"},
		{name: "the delegate refused: its decision, the hand-off was done", o: rigOpts{noModel: true, playbook: playbook(func(r *engine.Run) {
			r.SetDelegation(api.Delegation{To: "k8s-engineer", Sent: true, Verdict: api.VerdictRefused, Result: "read-only"})
		})}, want: api.StatusCompleted},
		{name: "the run's own action failed", o: rigOpts{noModel: true, playbook: playbook(func(r *engine.Run) {
			r.SetVerdict(api.VerdictActionFailed)
		})}, want: api.StatusPartial, reason: "the action failed"},
		{name: "the report pass failed and no finding came from anywhere", task: "check the cluster",
			script: []llmtest.Reply{
				llmtest.ToolCalls(llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"x"}`}),
				llmtest.Text("Looked at it."), noSynthesis, noSynthesis},
			want: api.StatusPartial, reason: "no structured report and no finding: the report pass failed"},
		{name: "every tool call failed", o: rigOpts{extra: []tools.Tool{brokenTool()}}, task: "check the cluster",
			script: []llmtest.Reply{
				llmtest.ToolCalls(llmtest.Call{ID: "c1", Name: "broken", Args: `{"text":"x"}`}),
				llmtest.Text("I could not read the cluster."), healthyReport},
			want: api.StatusPartial, reason: "every tool call failed (1)"},
		{name: "the duty kept in code failed", task: "check the cluster",
			o: rigOpts{backstop: func(context.Context, *engine.Run) error {
				return errors.New("notify code-reviewer: connection refused")
			}},
			script: []llmtest.Reply{
				llmtest.ToolCalls(llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"x"}`}),
				llmtest.Text("Done."), healthyReport},
			want: api.StatusPartial, reason: "the duty the persona keeps in code failed: notify code-reviewer: connection refused"},
		{name: "a run that did its task", task: "check the cluster",
			script: []llmtest.Reply{
				llmtest.ToolCalls(llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"x"}`}),
				llmtest.Text("All fine."), healthyReport},
			want: api.StatusCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.o, tc.script...)
			task := tc.task
			if task == "" {
				task = "do the task"
			}
			res := r.run(t, api.RunRequest{Task: task, WorkflowType: api.WorkflowManual})
			if res.Status != tc.want || !strings.Contains(res.Error, tc.reason) || (tc.reason == "") != (res.Error == "") {
				t.Fatalf("status %q error %q, want %q with %q", res.Status, res.Error, tc.want, tc.reason)
			}
			if tc.want == api.StatusPartial && !tc.fallback && len(eventsOf(r.events(t, res.RunID), "partial")) != 1 {
				t.Error("no partial trace event")
			}
		})
	}
}
