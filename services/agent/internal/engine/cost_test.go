package engine_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

const oomFinding = `{"severity":"critical","kind":"Deployment","namespace":"shop","name":"api","container":"app","reason":"OOMKilled","detail":"exit 137","remediable":true}`

// bumpTool is a mutating tool: a run that calls it took an action.
func bumpTool() tools.Tool {
	return tools.New("bump", "Raise a limit.", true, func(_ context.Context, a echoArgs) (string, error) {
		return "opened PR #7", nil
	})
}

// The synthesis pass is paid only when it can add something; every model
// call that answered is counted in the result, the trace and /metrics.
func TestSynthesisOnlyWhenItAddsSomething(t *testing.T) {
	synth := llmtest.WithUsage(llmtest.JSON(map[string]any{"healthy": false, "verdict": "action_taken", "summary": "s", "findings": []any{}}), 500, 50)
	report := llmtest.WithUsage(llmtest.ToolCalls(llmtest.Call{Name: "report_finding", Args: oomFinding}), 1000, 20)
	answer := llmtest.WithUsage(llmtest.Text("api is OOM-killed."), 1100, 30)
	cases := []struct {
		name     string
		workflow string
		script   []llmtest.Reply
		calls    int    // model calls the run makes
		skipped  string // the trace's synthesis_skipped reason ("": the pass ran)
		verdict  string
		tokens   api.Tokens
	}{
		{"report_finding gave the findings", api.WorkflowPulseTask, []llmtest.Reply{report, answer, synth},
			2, engine.SkipReported, "issues_found", api.Tokens{Prompt: 2100, Completion: 50}},
		{"a question answered without tools", api.WorkflowManual, []llmtest.Reply{llmtest.WithUsage(llmtest.Text("Hello! I watch the cluster."), 900, 10), synth},
			1, engine.SkipQuestion, "healthy", api.Tokens{Prompt: 900, Completion: 10}},
		{"a peer's question answered without tools", api.WorkflowA2AAsk, []llmtest.Reply{llmtest.WithUsage(llmtest.Text("No."), 900, 10), synth},
			1, engine.SkipQuestion, "healthy", api.Tokens{Prompt: 900, Completion: 10}},
		{"an alert answered without tools still gets its report", api.WorkflowAlert, []llmtest.Reply{answer, synth},
			2, "", "action_taken", api.Tokens{Prompt: 1600, Completion: 80}},
		{"a manual run with evidence gets its report", api.WorkflowManual, []llmtest.Reply{
			llmtest.WithUsage(llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"x"}`}), 1000, 20), answer, synth},
			3, "", "action_taken", api.Tokens{Prompt: 2600, Completion: 100}},
		{"an action keeps the pass for its verdict", api.WorkflowManual, []llmtest.Reply{
			llmtest.WithUsage(llmtest.ToolCalls(llmtest.Call{Name: "report_finding", Args: oomFinding}, llmtest.Call{Name: "bump", Args: `{"text":"x"}`}), 1000, 20), answer, synth},
			3, "", "action_taken", api.Tokens{Prompt: 2600, Completion: 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := engine.NewMetrics(reg)
			r := newRig(t, rigOpts{extra: []tools.Tool{bumpTool()}, metrics: m}, tc.script...)
			res := r.run(t, api.RunRequest{Task: "check the shop namespace", WorkflowType: tc.workflow})
			if res.Status != api.StatusCompleted {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			if n := len(r.llm.Requests()); n != tc.calls || res.ModelCalls != tc.calls {
				t.Errorf("model got %d requests, result says %d model calls; want %d", n, res.ModelCalls, tc.calls)
			}
			if res.Tokens != tc.tokens {
				t.Errorf("tokens = %+v, want %+v", res.Tokens, tc.tokens)
			}
			if res.Verdict != tc.verdict {
				t.Errorf("verdict = %q, want %q", res.Verdict, tc.verdict)
			}
			evs := r.events(t, res.RunID)
			skipped := eventsOf(evs, "synthesis_skipped")
			switch {
			case tc.skipped == "" && len(skipped) > 0:
				t.Errorf("synthesis skipped: %v", skipped)
			case tc.skipped != "" && (len(skipped) != 1 || skipped[0]["reason"] != tc.skipped):
				t.Errorf("synthesis_skipped = %v, want reason %q", skipped, tc.skipped)
			}
			fin := eventsOf(evs, "run_finish")
			if len(fin) != 1 || fin[0]["model_calls"] != float64(tc.calls) {
				t.Errorf("run_finish = %v", fin)
			}
			synthCalls := 0
			if tc.skipped == "" {
				synthCalls = 1
			}
			body := gather(t, reg)
			for _, want := range []string{
				`kubecrew_agent_model_calls_total{pass="loop",workflow_type="` + tc.workflow + `"} ` + itoa(tc.calls-synthCalls),
				`kubecrew_agent_model_calls_total{pass="synthesis",workflow_type="` + tc.workflow + `"} ` + itoa(synthCalls),
				`kubecrew_agent_model_tokens_total{kind="prompt"} ` + itoa(tc.tokens.Prompt),
				`kubecrew_agent_run_tokens_sum{workflow_type="` + tc.workflow + `"} ` + itoa(tc.tokens.Prompt+tc.tokens.Completion),
			} {
				if !strings.Contains(body, want+"\n") {
					t.Errorf("/metrics lacks %q", want)
				}
			}
		})
	}
}

// Without a synthesis verdict, a run that handed its finding on says what
// came of the hand-off.
func TestDelegationVerdictWithoutSynthesis(t *testing.T) {
	bs := func(ctx context.Context, run *engine.Run) error {
		run.SetDelegation(api.Delegation{To: "k8s-engineer", Sent: true, Verdict: api.VerdictActionTaken, Finding: run.Reported()[0]})
		return nil
	}
	r := newRig(t, rigOpts{backstop: bs},
		llmtest.ToolCalls(llmtest.Call{Name: "report_finding", Args: oomFinding}), llmtest.Text("api is OOM-killed; handed to Sol."))
	res := r.run(t, api.RunRequest{Task: "sweep", WorkflowType: api.WorkflowPulseTask})
	if res.Verdict != api.VerdictDelegated || res.ModelCalls != 2 {
		t.Fatalf("verdict %q after %d calls: %+v", res.Verdict, res.ModelCalls, res)
	}
}

// gather reads reg's /metrics over HTTP, as a scraper does.
func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }
