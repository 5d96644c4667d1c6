package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// bulk returns n characters between two tags: a large tool output from
// small arguments.
type bulkArgs struct {
	Tag string `json:"tag"`
	N   int    `json:"n"`
}

func bulkTool() tools.Tool {
	return tools.New("bulk", "Return a large output.", false, func(_ context.Context, a bulkArgs) (string, error) {
		return "BEGIN-" + a.Tag + "\n" + strings.Repeat("pod line\n", a.N/9) + "END-" + a.Tag, nil
	})
}

func bulk(tags ...string) llmtest.Reply {
	var calls []llmtest.Call
	for _, t := range tags {
		calls = append(calls, llmtest.Call{ID: "id-" + t, Name: "bulk", Args: fmt.Sprintf(`{"tag":%q,"n":6000}`, t)})
	}
	return llmtest.ToolCalls(calls...)
}

// windowFor is an AGENT_CONTEXT_TOKENS whose limit (7/8 of it) leaves room
// tokens above the run's first request (system prompt, tool schemas, task).
func windowFor(t *testing.T, room int) (contextTokens, limit int) {
	t.Helper()
	probe := newRig(t, rigOpts{extra: []tools.Tool{bulkTool()}}, llmtest.Text("x"), noSynthesis, noSynthesis)
	probe.run(t, api.RunRequest{Task: "collect"})
	base := llm.EstimateRequest(probe.llm.Requests()[0].Request)
	contextTokens = (base + room) * 8 / 7
	return contextTokens, contextTokens - contextTokens/8
}

// Turn after turn of 6,000-character outputs: every request stays within
// the window; older outputs are compacted to head and tail with a marker,
// the system prompt, the task and the latest turn never; each compaction
// is a trace event, and the trace keeps the outputs whole.
func TestContextBudgetCompactsOlderToolOutputs(t *testing.T) {
	ctxTokens, limit := windowFor(t, 4000)
	r := newRig(t, rigOpts{maxIter: 10, extra: []tools.Tool{bulkTool()}, limits: engine.Options{ContextTokens: ctxTokens}},
		bulk("t1"), bulk("t2"), bulk("t3"), bulk("t4"), llmtest.Text("four bulks read"), healthyReport)
	res := r.run(t, api.RunRequest{Task: "collect"})
	if res.Status != api.StatusCompleted || res.Answer != "four bulks read" {
		t.Fatalf("result = %+v", res)
	}
	reqs := r.llm.Requests()
	first := reqs[0].Request.Messages
	for i, rec := range reqs[:5] {
		req := rec.Request
		if est := llm.EstimateRequest(req); est > limit {
			t.Errorf("request %d: %d estimated tokens, over the limit %d", i, est, limit)
		}
		if req.Messages[0].Content != first[0].Content || req.Messages[1].Content != first[1].Content {
			t.Errorf("request %d changed the system prompt or the task", i)
		}
		if i == 0 {
			continue
		}
		// The latest turn is whole; every older output is compacted.
		for _, m := range req.Messages {
			if m.Role != "tool" {
				continue
			}
			latest := m.ToolCallID == fmt.Sprintf("id-t%d", i)
			compacted := strings.Contains(m.Content, "compacted to fit AGENT_CONTEXT_TOKENS")
			if latest == compacted || !strings.Contains(m.Content, "BEGIN-") || !strings.Contains(m.Content, "END-") {
				t.Errorf("request %d, %s: latest %v, compacted %v, %d characters", i, m.ToolCallID, latest, compacted, len(m.Content))
			}
		}
	}
	evs := r.events(t, res.RunID)
	comp := eventsOf(evs, "context_compacted")
	if len(comp) != 3 {
		t.Fatalf("context_compacted events = %v, want 3 (before turns 2, 3, 4)", comp)
	}
	for _, c := range comp {
		if c["after_tokens"].(float64) >= c["before_tokens"].(float64) || c["context_tokens"] != float64(ctxTokens) {
			t.Errorf("compaction event = %v", c)
		}
	}
	for _, tr := range eventsOf(evs, "tool_result") {
		if out := tr["output"].(string); strings.Contains(out, "compacted") || len(out) < 5000 {
			t.Errorf("the trace's tool_result was cut: %d characters", len(out))
		}
	}
}

// One turn asking for more than the window holds: each output gets its
// share of the room left, and the next request still fits.
func TestContextBudgetSharesTheRoomAmongATurnsOutputs(t *testing.T) {
	ctxTokens, limit := windowFor(t, 4000)
	r := newRig(t, rigOpts{extra: []tools.Tool{bulkTool()}, limits: engine.Options{ContextTokens: ctxTokens}},
		bulk("a", "b", "c"), llmtest.Text("three read"), healthyReport)
	res := r.run(t, api.RunRequest{Task: "collect"})
	if res.Status != api.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	req := r.llm.Requests()[1].Request
	if est := llm.EstimateRequest(req); est > limit {
		t.Errorf("request after the turn: %d estimated tokens, over %d", est, limit)
	}
	budget := eventsOf(r.events(t, res.RunID), "tool_output_budget")
	if len(budget) != 1 || budget[0]["calls"] != float64(3) {
		t.Fatalf("tool_output_budget events = %v", budget)
	}
	chars := int(budget[0]["chars"].(float64))
	for _, m := range req.Messages {
		if m.Role == "tool" && (len(m.Content) > chars+200 || !strings.Contains(m.Content, "characters truncated")) {
			t.Errorf("%s: %d characters, budget %d", m.ToolCallID, len(m.Content), chars)
		}
	}
}
