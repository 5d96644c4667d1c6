package app_test

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
)

// The core's call to an agent carries its time budget: AGENT_CALL_TIMEOUT
// less the margin the answer needs, so the agent's run always ends before
// the core stops waiting (docs/ARCHITECTURE.md, "The time budget"). An
// asynchronous manual run carries none: nobody waits for it.
func TestDispatchSendsTheCallBudget(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{env: map[string]string{"AGENT_CALL_TIMEOUT": "10s"}})
	code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fp1", "KubePodCrashLooping", "prod", "firing")))
	if code != 200 {
		t.Fatalf("webhook: %d %s", code, b)
	}
	c.WaitIdle()
	code, b = call(t, http.MethodPost, c.URL+"/api/v1/agents/platform-sre/run", []byte(`{"task":"sweep"}`))
	if code != 200 {
		t.Fatalf("manual run: %d %s", code, b)
	}
	code, b = call(t, http.MethodPost, c.URL+"/api/v1/agents/platform-sre/run?async=1", []byte(`{"task":"sweep later"}`))
	if code/100 != 2 {
		t.Fatalf("async manual run: %d %s", code, b)
	}
	runs := c.Agent.Runs()
	if len(runs) != 3 {
		t.Fatalf("agent got %d runs, want 3", len(runs))
	}
	for i, r := range runs[:2] {
		// 10s less a tenth: at most 9s (less the time spent before the call).
		if ms := r.Request.BudgetMS; ms <= 0 || ms > 9000 {
			t.Errorf("run %d (%s) budget_ms = %d, want in (0, 9000]", i, r.Request.WorkflowType, ms)
		}
	}
	if ms := runs[2].Request.BudgetMS; ms != 0 {
		t.Errorf("async run budget_ms = %d, want none", ms)
	}
}

// An agent at capacity (429 with Retry-After) is busy, not failed: the
// core waits and sends the investigation again, with the time left as its
// budget; it is recorded once, completed.
func TestBusyAgentIsRetriedNotFailed(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{env: map[string]string{"AGENT_CALL_TIMEOUT": "10s"}})
	var n atomic.Int32
	c.Agent.Reply(func(req kapi.RunRequest) (int, any) {
		if n.Add(1) == 1 {
			return http.StatusTooManyRequests, &kapi.BusyError{Reason: "platform-sre has 4 runs in flight (AGENT_MAX_CONCURRENT_RUNS=4)", RetryAfter: time.Second}
		}
		return 200, kapi.RunResult{RunID: "run-2", Agent: "platform-sre", WorkflowType: req.WorkflowType, Status: kapi.StatusCompleted,
			Answer: "triaged", Findings: []kapi.Finding{}}
	})
	if code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(alert("fp1", "KubePodCrashLooping", "prod", "firing"))); code != 200 {
		t.Fatalf("webhook: %d %s", code, b)
	}
	c.WaitIdle()
	invs := investigations(t, c)
	if len(invs) != 1 || invs[0].Status != kapi.StatusCompleted || invs[0].RunID != "run-2" {
		t.Fatalf("investigations = %+v; want one, completed by the second call", invs)
	}
	runs := c.Agent.Runs()
	if len(runs) != 2 || runs[1].Request.BudgetMS >= runs[0].Request.BudgetMS {
		t.Errorf("agent got %d calls; want 2, the second with less budget than the first", len(runs))
	}
}

// GET /info shows the core's part of the time-budget chain: the call, the
// budget it sends (the call less its margin), the cooldown above both.
func TestInfoShowsTheBudgetChain(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{env: map[string]string{"AGENT_CALL_TIMEOUT": "100s", "ALERT_COOLDOWN": "5m"}})
	code, b := call(t, http.MethodGet, c.URL+"/info", nil)
	if code != 200 {
		t.Fatalf("/info: %d %s", code, b)
	}
	var info struct {
		Budget []struct{ Step, Bound, Rule string } `json:"budget"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"agent call", "1m40s"}, {"agent run", "1m30s"}, {"alert cooldown", "5m0s"}}
	if len(info.Budget) != len(want) {
		t.Fatalf("budget = %+v", info.Budget)
	}
	for i, w := range want {
		if s := info.Budget[i]; s.Step != w[0] || s.Bound != w[1] || s.Rule == "" {
			t.Errorf("step %d = %+v, want %s %s", i, s, w[0], w[1])
		}
	}
}
