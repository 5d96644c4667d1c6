package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// A persona's Prepare narrows the task the model is given, or answers the
// run in code without a model call.
func TestPrepareNarrowsOrAnswersTheTask(t *testing.T) {
	t.Run("note", func(t *testing.T) {
		prep := func(ctx context.Context, r *engine.Run) (engine.Prep, error) {
			return engine.Prep{Note: "PR #7 was picked in code for this run."}, nil
		}
		r := newRig(t, rigOpts{prepare: prep}, llmtest.Text("Reviewed #7."))
		res := r.run(t, api.RunRequest{Task: "Review the next PR.", WorkflowType: api.WorkflowPulseTask})
		reqs := r.llm.Requests()
		if len(reqs) < 1 || reqs[0].Request.Messages[1].Content != "Review the next PR.\n\nPR #7 was picked in code for this run." {
			t.Fatalf("the model was given %+v", reqs)
		}
		if res.Answer != "Reviewed #7." {
			t.Errorf("answer = %q", res.Answer)
		}
	})
	t.Run("done", func(t *testing.T) {
		prep := func(ctx context.Context, r *engine.Run) (engine.Prep, error) {
			r.SetAnswer("Nothing to review.")
			r.SetVerdict("nothing_to_review")
			return engine.Prep{Done: true}, nil
		}
		r := newRig(t, rigOpts{prepare: prep}, llmtest.Text("never asked"))
		res := r.run(t, api.RunRequest{Task: "Review the next PR.", WorkflowType: api.WorkflowPulseTask})
		if len(r.llm.Requests()) != 0 || res.ModelCalls != 0 || res.Verdict != "nothing_to_review" || res.Status != api.StatusCompleted {
			t.Fatalf("%d requests; result %+v", len(r.llm.Requests()), res)
		}
	})
	t.Run("error", func(t *testing.T) {
		prep := func(ctx context.Context, r *engine.Run) (engine.Prep, error) {
			return engine.Prep{}, errors.New("forge down")
		}
		r := newRig(t, rigOpts{prepare: prep}, llmtest.Text("Reviewed what I could."))
		res := r.run(t, api.RunRequest{Task: "Review the next PR.", WorkflowType: api.WorkflowPulseTask})
		if res.Answer != "Reviewed what I could." || len(r.llm.Requests()) == 0 {
			t.Fatalf("result %+v", res)
		}
		if ev := eventsOf(r.events(t, res.RunID), "prepare"); len(ev) != 1 || ev[0]["error"] != "forge down" {
			t.Errorf("prepare events = %v", ev)
		}
	})
}

// A pulse tick whose problem set is the last tick's, after a tick that
// ended completed and delegated nothing, does not call the model: it
// records unchanged with the current findings.
func TestPulseTickUnchangedSkipsTheModel(t *testing.T) {
	var mu sync.Mutex
	digest, delegate := "d1", false
	oom := api.Finding{Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "api", Container: "app", Reason: "OOMKilled"}
	prep := func(ctx context.Context, r *engine.Run) (engine.Prep, error) {
		mu.Lock()
		defer mu.Unlock()
		return engine.Prep{Digest: digest, Findings: []api.Finding{oom}, Summary: "1 problem (critical OOMKilled shop/Deployment/api)."}, nil
	}
	bs := func(ctx context.Context, r *engine.Run) error {
		mu.Lock()
		defer mu.Unlock()
		if delegate {
			r.SetDelegation(api.Delegation{To: "k8s-engineer", Sent: true, Verdict: api.VerdictRefused, Finding: oom})
		}
		return nil
	}
	answer := llmtest.Text("api is OOM-killed.")
	r := newRig(t, rigOpts{prepare: prep, backstop: bs})
	tick := func(task string) api.RunResult {
		r.llm.Push(answer, llmtest.JSON(map[string]any{"healthy": false, "verdict": "issues_found", "summary": "s", "findings": []any{}}))
		return r.run(t, api.RunRequest{Task: "Health sweep.", WorkflowType: api.WorkflowPulseTask, Context: map[string]string{"pulse_task": task}})
	}
	set := func(d string, del bool) { mu.Lock(); digest, delegate = d, del; mu.Unlock() }
	steps := []struct {
		name      string
		task      string
		digest    string
		delegate  bool
		unchanged bool
	}{
		{"first tick: nothing to compare with", "sweep", "d1", false, false},
		{"same problems: unchanged", "sweep", "d1", false, true},
		{"again the same: still unchanged", "sweep", "d1", false, true},
		{"another task has its own mark", "trend", "d1", false, false},
		{"the problem set changed", "sweep", "d2", true, false},
		{"same as last, but last tick delegated: pending", "sweep", "d2", false, false},
		{"now unchanged", "sweep", "d2", false, true},
	}
	var base string
	for _, s := range steps {
		set(s.digest, s.delegate)
		before := len(r.llm.Requests())
		res := tick(s.task)
		called := len(r.llm.Requests()) > before
		if called == s.unchanged || (res.Verdict == api.VerdictUnchanged) != s.unchanged {
			t.Fatalf("%s: model called %v, verdict %q: %+v", s.name, called, res.Verdict, res)
		}
		if !s.unchanged {
			if s.task == "sweep" {
				base = res.RunID
			}
			continue
		}
		if len(res.Findings) != 1 || res.Findings[0].Name != "api" || res.ModelCalls != 0 || res.Status != api.StatusCompleted {
			t.Errorf("%s: %+v", s.name, res)
		}
		if !strings.HasPrefix(res.Answer, "Unchanged since the last tick (run "+base) || !strings.Contains(res.Answer, "The model was not called.") {
			t.Errorf("%s: answer %q", s.name, res.Answer)
		}
		if ev := eventsOf(r.events(t, res.RunID), "pulse_unchanged"); len(ev) != 1 || ev[0]["since_run"] != base {
			t.Errorf("%s: pulse_unchanged = %v", s.name, ev)
		}
	}
}
