package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// sweepPlaybook reports one finding and answers, as a persona's
// deterministic playbook does.
var sweepPlaybook = engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
	run.ReportFinding(api.Finding{Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "cart", Reason: "OOMKilled"})
	run.SetAnswer("found by the playbook")
	return nil
})

// A model that stalls past the run's budget: the playbook still answers in
// the reserve the budget kept for it, and the run says why it is partial.
// The budget comes from the caller (budget_ms) or from RUN_TIMEOUT alone.
func TestBudgetRunsOutThePlaybookAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runTimeout time.Duration
		budgetMS   int64
		source     string
	}{
		{"caller's budget_ms", 30 * time.Second, 3000, "the caller's budget_ms 3000"},
		{"RUN_TIMEOUT", 2500 * time.Millisecond, 0, "RUN_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{playbook: sweepPlaybook, runTimeout: tc.runTimeout, timeout: time.Minute},
				llmtest.ToolCalls(llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"looking"}`}), llmtest.Hang())
			res := r.run(t, api.RunRequest{Task: "sweep the cluster", WorkflowType: api.WorkflowPulseTask, BudgetMS: tc.budgetMS})
			if res.Status != api.StatusPartial || res.Answer != "found by the playbook" || len(res.Findings) != 1 {
				t.Fatalf("result = %+v; want partial with the playbook's report", res)
			}
			if !strings.Contains(res.Error, "the model's share") || !strings.Contains(res.Error, tc.source) ||
				!strings.Contains(res.Error, "the deterministic playbook answered") {
				t.Errorf("error = %q; want the budget that ran out, its source and the fallback", res.Error)
			}
			evs := r.events(t, res.RunID)
			start := eventsOf(evs, "run_start")[0]
			if start["budget_source"] == nil || !strings.Contains(start["budget_source"].(string), tc.source) {
				t.Errorf("run_start = %v; want the budget and its source", start)
			}
			if n := len(eventsOf(evs, "budget_spent")); n != 1 {
				t.Errorf("%d budget_spent events, want 1", n)
			}
			if fb := eventsOf(evs, "fallback_playbook"); len(fb) != 1 {
				t.Errorf("fallback_playbook events = %v", fb)
			}
			if n := len(eventsOf(evs, "tool_result")); n != 1 {
				t.Errorf("the trace kept %d tool results of the model's work, want 1", n)
			}
		})
	}
}

// Without a playbook behind the model, the budget bounds the model loop
// itself: the run fails and says which budget ran out.
func TestBudgetRunsOutWithoutPlaybookFails(t *testing.T) {
	r := newRig(t, rigOpts{personaArg: "dax", timeout: time.Minute}, llmtest.Hang())
	res := r.run(t, api.RunRequest{Task: "review the Dockerfile", BudgetMS: 500})
	if res.Status != api.StatusFailed || !strings.Contains(res.Error, "the run budget") || !strings.Contains(res.Error, "budget_ms 500") {
		t.Fatalf("result = %+v; want failed naming the caller's budget", res)
	}
	start := eventsOf(r.events(t, res.RunID), "run_start")[0]
	if ms, _ := start["budget_ms"].(float64); ms <= 0 || ms >= 500 {
		t.Errorf("run_start budget_ms = %v; want below the caller's 500 (the report margin)", start["budget_ms"])
	}
	if start["model_budget_ms"] != float64(0) {
		t.Errorf("model_budget_ms = %v; without a playbook the model has the whole budget", start["model_budget_ms"])
	}
}

func TestBudgetOfTheRun(t *testing.T) {
	for _, tc := range []struct {
		budgetMS int64
		want     string
	}{
		{-1, "budget_ms must not be negative"},
		{50, "below the minimum of 100"},
		{100, ""},
		{0, ""},
	} {
		req := api.RunRequest{Task: "x", BudgetMS: tc.budgetMS}
		err := engine.Validate(&req)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(budget_ms %d) = %v, want %q", tc.budgetMS, err, tc.want)
		}
	}
	for _, tc := range []struct {
		d, reserve time.Duration
	}{
		{time.Second, 200 * time.Millisecond},
		{10 * time.Minute, 2 * time.Minute},
		{time.Hour, 2 * time.Minute},
	} {
		if got := engine.PlaybookReserve(tc.d); got != tc.reserve {
			t.Errorf("PlaybookReserve(%s) = %s, want %s", tc.d, got, tc.reserve)
		}
	}
}

// Capacity: over AGENT_MAX_CONCURRENT_RUNS, or a second alert run, Start
// refuses with a BusyError saying what is full and when a slot frees.
func TestCapacityRefusesBusy(t *testing.T) {
	r := newRig(t, rigOpts{noModel: true, playbook: engine.PlaybookFunc(func(ctx context.Context, _ *engine.Run) error {
		<-ctx.Done()
		return context.Cause(ctx)
	}), runTimeout: 30 * time.Second, maxConcurrent: 2})
	start := func(req api.RunRequest) (*engine.Run, error) { return r.eng.Start(context.Background(), req) }
	alert, err := start(api.RunRequest{Task: "alert one", WorkflowType: api.WorkflowAlert, BudgetMS: 20000})
	if err != nil {
		t.Fatal(err)
	}
	var busy *api.BusyError
	if _, err := start(api.RunRequest{Task: "alert two", WorkflowType: api.WorkflowAlert}); !errors.As(err, &busy) ||
		!strings.Contains(busy.Reason, "already investigating an alert (run "+alert.ID+")") || busy.RetryAfter <= 0 || busy.RetryAfter > 18*time.Second {
		t.Fatalf("second alert run: %v; want busy until the first's budget (18s) ends", err)
	}
	manual, err := start(api.RunRequest{Task: "a manual run beside the alert"})
	if err != nil {
		t.Fatalf("a manual run beside one alert run: %v", err)
	}
	if _, err := start(api.RunRequest{Task: "a third run", WorkflowType: api.WorkflowPulseTask}); !errors.As(err, &busy) ||
		!strings.Contains(busy.Reason, "2 runs in flight (AGENT_MAX_CONCURRENT_RUNS=2)") || !strings.HasPrefix(err.Error(), "busy: ") {
		t.Fatalf("third run: %v; want busy naming AGENT_MAX_CONCURRENT_RUNS", err)
	}
	// A freed slot takes the next run.
	manual.Cancel()
	if _, err := manual.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	next, err := start(api.RunRequest{Task: "after the slot freed", WorkflowType: api.WorkflowPulseTask})
	if err != nil {
		t.Fatalf("after a run ended: %v", err)
	}
	for _, run := range []*engine.Run{alert, next} {
		run.Cancel()
		if _, err := run.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRetryAfterFromRecentRuns: once runs have finished, a busy agent's
// Retry-After is how long recent runs took, less the running one's time so
// far — not the rest of its whole budget (issue 31, case 6: Retry-After:
// 1200 when runs take a second).
func TestRetryAfterFromRecentRuns(t *testing.T) {
	r := newRig(t, rigOpts{noModel: true, playbook: engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
		if run.Req.Task == "quick" {
			return nil
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}), runTimeout: 1200 * time.Second, maxConcurrent: 1})
	start := func(task string) (*engine.Run, error) {
		return r.eng.Start(context.Background(), api.RunRequest{Task: task, WorkflowType: api.WorkflowPulseTask})
	}
	slow, err := start("slow")
	if err != nil {
		t.Fatal(err)
	}
	var busy *api.BusyError
	if _, err := start("quick"); !errors.As(err, &busy) || busy.RetryAfter < 1000*time.Second {
		t.Fatalf("before any run finished: %v; want the rest of the budget", err)
	}
	slow.Cancel()
	if _, err := slow.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		q, err := start("quick")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	blocking, err := start("blocking")
	if err != nil {
		t.Fatal(err)
	}
	defer blocking.Cancel()
	// The longest recent run is the cancelled slow one: well under a minute here.
	if _, err := start("quick"); !errors.As(err, &busy) || busy.RetryAfter > time.Minute {
		t.Fatalf("after quick runs: %v; want a Retry-After from their durations, not the 1200 s budget", err)
	}
	if got := api.RetryAfterSeconds(busy.RetryAfter); got < 1 {
		t.Fatalf("Retry-After %d", got)
	}
}
