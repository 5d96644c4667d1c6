package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// clock is a settable now().
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var playbookAnswer = engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
	run.SetAnswer("swept by the playbook")
	return nil
})

// A run whose next model call would cross AGENT_RUN_TOKEN_BUDGET stops
// calling the model: the playbook answers, and the answer says why.
func TestRunTokenBudgetHandsOverToThePlaybook(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := newRig(t, rigOpts{playbook: playbookAnswer, metrics: engine.NewMetrics(reg), budget: engine.TokenBudget{PerRun: 12000}},
		llmtest.WithUsage(llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"x"}`}), 11000, 500),
		llmtest.Text("never asked"))
	res := r.run(t, api.RunRequest{Task: "sweep", WorkflowType: api.WorkflowPulseTask})
	if res.Status != api.StatusPartial || res.ModelCalls != 1 || len(r.llm.Requests()) != 1 {
		t.Fatalf("status %s after %d calls (%d requests): %+v", res.Status, res.ModelCalls, len(r.llm.Requests()), res)
	}
	if !strings.HasPrefix(res.Answer, "The model token budget is spent, so this run used the deterministic playbook") ||
		!strings.HasSuffix(res.Answer, "swept by the playbook") {
		t.Errorf("answer = %q", res.Answer)
	}
	if !strings.Contains(res.Error, "AGENT_RUN_TOKEN_BUDGET=12000 has 500 left") {
		t.Errorf("error = %q", res.Error)
	}
	evs := r.events(t, res.RunID)
	if b := eventsOf(evs, "token_budget"); len(b) != 1 || b[0]["scope"] != "run" || b[0]["used"] != float64(11500) {
		t.Errorf("token_budget events = %v", b)
	}
	if len(eventsOf(evs, "fallback_playbook")) != 1 {
		t.Error("no fallback_playbook event")
	}
	if body := gather(t, reg); !strings.Contains(body, `kubecrew_agent_token_budget_refusals_total{scope="run"} 1`+"\n") {
		t.Errorf("/metrics:\n%s", grep(body, "token_budget"))
	}
}

// AGENT_TOKEN_BUDGET is per UTC day: once spent, runs get no model call
// (and say so) until the next day; a persona without a playbook fails.
func TestDailyTokenBudget(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)}
	r := newRig(t, rigOpts{budget: engine.TokenBudget{Daily: 20000}, now: c.now},
		llmtest.WithUsage(llmtest.Text("Hello."), 18500, 100),
		llmtest.WithUsage(llmtest.Text("Hello again, a new day."), 9000, 100))
	if res := r.run(t, api.RunRequest{Task: "hello"}); res.Status != api.StatusCompleted || res.Tokens.Prompt != 18500 {
		t.Fatalf("first run = %+v", res)
	}
	st := r.eng.TokenBudget()
	if st.Day != "2026-12-01" || st.UsedToday != 18600 || st.LeftToday == nil || *st.LeftToday != 1400 {
		t.Fatalf("budget status = %+v", st)
	}
	res := r.run(t, api.RunRequest{Task: "hello"})
	if res.Status != api.StatusFailed || res.ModelCalls != 0 || len(r.llm.Requests()) != 1 {
		t.Fatalf("second run: %s after %d calls: %+v", res.Status, res.ModelCalls, res)
	}
	if !strings.Contains(res.Answer, "token budget is spent, and noor has no deterministic playbook for this task") ||
		!strings.Contains(res.Error, "AGENT_TOKEN_BUDGET=20000 has 1400 left") {
		t.Errorf("answer %q error %q", res.Answer, res.Error)
	}
	c.add(2 * time.Hour) // 01:00 the next day
	if st := r.eng.TokenBudget(); st.Day != "2026-12-02" || st.UsedToday != 0 {
		t.Fatalf("after midnight: %+v", st)
	}
	if res := r.run(t, api.RunRequest{Task: "hello"}); res.Status != api.StatusCompleted || res.ModelCalls != 1 {
		t.Fatalf("next day's run = %+v", res)
	}
}

// A restart does not reset the day: the ledger starts from the store's
// runs of the day (older ones and other agents' do not count).
func TestDailyTokenBudgetSurvivesARestart(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	st := store.NewMemory(nil)
	ctx := context.Background()
	for i, r := range []struct {
		agent   string
		started time.Time
		tokens  int
	}{
		{"platform-sre", now.Add(-20 * time.Hour), 50000}, // yesterday
		{"platform-sre", now.Add(-3 * time.Hour), 7000},
		{"k8s-engineer", now.Add(-2 * time.Hour), 9000},
		{"platform-sre", now.Add(-time.Hour), 4000},
	} {
		run := store.Run{ID: "r" + itoa(i), Agent: r.agent, WorkflowType: api.WorkflowManual, Task: "t", Status: api.StatusCompleted,
			StartedAt: r.started, Tokens: api.Tokens{Prompt: r.tokens - 100, Completion: 100}}
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	rg := newRig(t, rigOpts{store: st, budget: engine.TokenBudget{Daily: 100000, PerRun: 30000}, now: func() time.Time { return now }})
	got := rg.eng.TokenBudget()
	if got.UsedToday != 11000 || *got.LeftToday != 89000 || got.PerRunLimit != 30000 {
		t.Fatalf("status = %+v", got)
	}
}

func grep(body, s string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
