package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/builtin"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// model adapts the real llm client, pointed at llmtest servers.
type model struct{ c *llm.Client }

func (m model) Chat(ctx context.Context, req openaiReq) (openaiResp, string, error) {
	r, err := m.c.Chat(ctx, req)
	if err != nil {
		return openaiResp{}, "", err
	}
	return r.ChatCompletionResponse, r.Endpoint, nil
}

type rig struct {
	eng   *engine.Engine
	store *store.Memory
	llm   *llmtest.Server
}

type rigOpts struct {
	extra      []tools.Tool
	maxIter    int
	fallback   *llmtest.Server
	timeout    time.Duration
	playbook   engine.Playbook
	backstop   engine.Backstop
	noModel    bool
	personaArg string
	log        *zap.Logger
	metrics    *engine.Metrics
	budget     engine.TokenBudget
	now        func() time.Time
	store      *store.Memory
	limits     engine.Options // ContextTokens, MaxCallsPer*, Max*Chars, ToolOutputMax: zero means the default
	prepare    engine.Prepare
	runTimeout time.Duration
	// maxConcurrent is AGENT_MAX_CONCURRENT_RUNS (0: no limit).
	maxConcurrent int
}

// echo is a read-only tool: it returns its argument.
type echoArgs struct {
	Text string `json:"text" description:"what to echo"`
}

func echoTool() tools.Tool {
	return tools.New("echo", "Echo text back.", false, func(_ context.Context, a echoArgs) (string, error) {
		return "echo: " + a.Text, nil
	})
}

// scaleToZero is a mutating primitive no autonomous run may perform.
type scaleArgs struct {
	Name string `json:"name"`
}

var scaled []string

func scalePrimitive(ctx context.Context, a scaleArgs) (string, error) {
	if err := tools.Check(ctx, "k8s.scale"); err != nil {
		return "", err
	}
	scaled = append(scaled, a.Name)
	return "scaled " + a.Name + " to zero", nil
}

func newRig(t *testing.T, o rigOpts, script ...llmtest.Reply) *rig {
	t.Helper()
	name := o.personaArg
	if name == "" {
		name = "noor"
	}
	p, err := persona.Load(agents.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, script...)
	eps := []llm.Endpoint{{Name: "primary", BaseURL: srv.URL(), APIKey: "k", Model: "test-model"}}
	if o.fallback != nil {
		eps = append(eps, llm.Endpoint{Name: "fallback", BaseURL: o.fallback.URL(), APIKey: "k2", Model: "fallback-model"})
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	c, err := llm.New(llm.Config{Endpoints: eps, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(append(builtin.Tools(), append([]tools.Tool{echoTool()}, o.extra...)...)...)
	set, err := reg.Resolve(reg.Names())
	if err != nil {
		t.Fatal(err)
	}
	st := o.store
	if st == nil {
		st = store.NewMemory(nil)
	}
	var m engine.Model = model{c}
	if o.noModel {
		m = nil
	}
	maxIter := o.maxIter
	if maxIter == 0 {
		maxIter = 6
	}
	runTimeout := o.runTimeout
	if runTimeout == 0 {
		runTimeout = 30 * time.Second
	}
	eng, err := engine.New(engine.Options{
		Agent: p.Info, Persona: func() (*persona.Persona, error) { return p, nil }, Tools: set,
		Model: m, ModelName: "test-model", Playbook: o.playbook, Backstop: o.backstop, Store: st,
		MaxIterations: maxIter, SynthesisTimeout: 2 * time.Second, RunTimeout: runTimeout, MaxConcurrentRuns: o.maxConcurrent, Log: o.log,
		Metrics: o.metrics, TokenBudget: o.budget, Now: o.now, Prepare: o.prepare,
		ContextTokens: o.limits.ContextTokens, MaxCallsPerTurn: o.limits.MaxCallsPerTurn, MaxCallsPerRun: o.limits.MaxCallsPerRun,
		MaxReplyChars: o.limits.MaxReplyChars, MaxAnswerChars: o.limits.MaxAnswerChars, ToolOutputMax: o.limits.ToolOutputMax,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{eng: eng, store: st, llm: srv}
}

func (r *rig) run(t *testing.T, req api.RunRequest) api.RunResult {
	t.Helper()
	run, err := r.eng.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (r *rig) events(t *testing.T, id string) []store.Event {
	t.Helper()
	evs, err := r.store.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func eventsOf(evs []store.Event, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e.Type == typ {
			var m map[string]any
			_ = json.Unmarshal(e.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

var noSynthesis = llmtest.Text("not json at all")

func TestToolCallResultAnswer(t *testing.T) {
	r := newRig(t, rigOpts{},
		llmtest.ToolCalls(llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"hello"}`}),
		llmtest.Text("The echo said hello."),
		llmtest.JSON(map[string]any{"healthy": true, "findings": []any{}, "verdict": "healthy", "summary": "fine"}),
	)
	res := r.run(t, api.RunRequest{Task: "say hello"})
	if res.Status != api.StatusCompleted || res.Answer != "The echo said hello." {
		t.Fatalf("result = %+v", res)
	}
	if res.Iterations != 2 || res.Tokens.Prompt == 0 {
		t.Errorf("iterations %d tokens %+v", res.Iterations, res.Tokens)
	}
	reqs := r.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model got %d requests, want 3 (loop 2 + synthesis 1)", len(reqs))
	}
	// The second request carries the tool result for call c1.
	msgs := reqs[1].Request.Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.ToolCallID != "c1" || last.Content != "<tool_output tool=\"echo\">\necho: hello\n</tool_output>" {
		t.Errorf("tool message = %+v", last)
	}
	// The synthesis call asks for a strict JSON schema and is sent no tools.
	syn := reqs[2].Request
	if syn.ResponseFormat == nil || syn.ResponseFormat.JSONSchema == nil || !syn.ResponseFormat.JSONSchema.Strict || len(syn.Tools) != 0 {
		t.Errorf("synthesis request = %+v", syn.ResponseFormat)
	}
	evs := r.events(t, res.RunID)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := "run_start llm_request llm_response tool_call tool_result llm_request llm_response synthesis run_finish"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("trace = %s\nwant    %s", got, want)
	}
}

func TestToolErrorsReachTheModelAndTheRunContinues(t *testing.T) {
	r := newRig(t, rigOpts{},
		llmtest.ToolCalls(
			llmtest.Call{ID: "a", Name: "kubectl_delete", Args: `{}`},
			llmtest.Call{ID: "b", Name: "echo", Args: `{"text": `},
			llmtest.Call{ID: "c", Name: "echo", Args: `{"txt": "x"}`},
		),
		llmtest.Text("done despite errors"),
		healthyReport,
	)
	res := r.run(t, api.RunRequest{Task: "t"})
	if res.Status != api.StatusCompleted || res.Answer != "done despite errors" {
		t.Fatalf("result = %+v", res)
	}
	msgs := r.llm.Requests()[1].Request.Messages
	got := map[string]string{}
	for _, m := range msgs {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Content
		}
	}
	for id, want := range map[string]string{"a": "ERROR: unknown tool \"kubectl_delete\"", "b": "ERROR: invalid arguments", "c": "ERROR: invalid arguments: unknown field \"txt\""} {
		if !strings.Contains(got[id], ">\n"+want) {
			t.Errorf("tool %s answered %q, want prefix %q", id, got[id], want)
		}
	}
}

func TestCeilingEndsCleanlyWithPartialAndKeepsTranscript(t *testing.T) {
	r := newRig(t, rigOpts{maxIter: 3},
		llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"1"}`}),
		llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"2"}`}),
		llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"3"}`}),
		llmtest.Text("best answer so far: three echoes"),
		llmtest.JSON(map[string]any{"healthy": false, "verdict": "issues_found", "summary": "s",
			"findings": []any{map[string]any{"severity": "high", "kind": "Deployment", "namespace": "ns", "name": "web",
				"reason": "CrashLoopBackOff", "detail": "d", "remediation": "r", "remediable": true, "confidence": 0.5, "key": ""}}}),
	)
	res := r.run(t, api.RunRequest{Task: "loop"})
	if res.Status != api.StatusPartial {
		t.Fatalf("status = %s, want partial (%+v)", res.Status, res)
	}
	if res.Answer != "best answer so far: three echoes" || res.Iterations != 4 {
		t.Errorf("answer %q iterations %d", res.Answer, res.Iterations)
	}
	reqs := r.llm.Requests()
	final := reqs[3].Request
	if len(final.Tools) != 0 {
		t.Errorf("the final ceiling call was sent %d tools, want none", len(final.Tools))
	}
	if len(res.Findings) != 1 || res.Findings[0].Key != "ns-deployment-web-crashloopbackoff" {
		t.Errorf("findings = %+v", res.Findings)
	}
	if n := len(eventsOf(r.events(t, res.RunID), "tool_result")); n != 3 {
		t.Errorf("transcript kept %d tool results, want 3", n)
	}
	// The synthesis pass saw the whole transcript.
	syn := reqs[4].Request.Messages[1].Content
	for _, s := range []string{"echo: 1", "echo: 2", "echo: 3"} {
		if !strings.Contains(syn, s) {
			t.Errorf("synthesis transcript lacks %q", s)
		}
	}
}

func TestEndlessToolCallsHitTheCeiling(t *testing.T) {
	r := newRig(t, rigOpts{maxIter: 4}, llmtest.Endless("echo", `{"text":"again"}`))
	res := r.run(t, api.RunRequest{Task: "loop forever"})
	if res.Status != api.StatusPartial || res.Iterations != 5 {
		t.Fatalf("status %s iterations %d", res.Status, res.Iterations)
	}
}

func TestDeliveryPrecedence(t *testing.T) {
	synth := llmtest.JSON(map[string]any{"healthy": false, "verdict": "issues_found", "summary": "s",
		"findings": []any{map[string]any{"severity": "low", "kind": "Pod", "namespace": "a", "name": "from-synthesis",
			"reason": "X", "detail": "", "remediation": "", "remediable": false, "confidence": 0, "key": ""}}})
	prose := "Found one.\n```json\n{\"verdict\":\"issues_found\",\"findings\":[{\"severity\":\"medium\",\"kind\":\"Deployment\",\"namespace\":\"b\",\"name\":\"from-prose\",\"reason\":\"Y\"}]}\n```"
	report := llmtest.ToolCalls(llmtest.Call{Name: "report_finding", Args: `{"severity":"critical","kind":"Deployment","namespace":"c","name":"from-tool","reason":"OOMKilled","detail":"exit 137","remediation":"raise the limit","remediable":true}`})
	cases := []struct {
		name   string
		script []llmtest.Reply
		want   string
		answer string
	}{
		{"report_finding wins over synthesis", []llmtest.Reply{report, llmtest.Text(prose), synth}, "from-tool", "Found one."},
		{"synthesis wins over prose", []llmtest.Reply{llmtest.Text(prose), synth}, "from-synthesis", "Found one."},
		{"synthesis prose falls back to the answer's json", []llmtest.Reply{llmtest.Text(prose), llmtest.Text("**Done.** Restarted it."), llmtest.Text("still prose")}, "from-prose", "Found one."},
		{"synthesis failing twice is survived, partial", []llmtest.Reply{llmtest.Text("all good"), llmtest.Status(502, "<html>Bad Gateway</html>", "text/html"), llmtest.Status(502, "<html>Bad Gateway</html>", "text/html")}, "", "all good"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOpts{}, tc.script...)
			// an alert needs its structured report: a manual question
			// answered without tools skips the pass (cost_test.go)
			res := r.run(t, api.RunRequest{Task: "check", WorkflowType: api.WorkflowAlert})
			// No finding from anywhere and no report: the answer stands,
			// the run is partial and says why (honest.go).
			want := api.StatusCompleted
			if tc.want == "" {
				want = api.StatusPartial
			}
			if res.Status != want || (want == api.StatusPartial) != strings.Contains(res.Error, "no structured report and no finding") {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings = %+v", res.Findings)
				}
			} else if len(res.Findings) != 1 || res.Findings[0].Name != tc.want {
				t.Fatalf("findings = %+v, want %s", res.Findings, tc.want)
			}
			if res.Answer != tc.answer {
				t.Errorf("answer = %q, want %q", res.Answer, tc.answer)
			}
		})
	}
}

func TestHangingPrimaryFailsOverWithinTheTimeout(t *testing.T) {
	fb := llmtest.NewServer(t, llmtest.Text("answered by the fallback"), noSynthesis, noSynthesis)
	r := newRig(t, rigOpts{fallback: fb, timeout: 300 * time.Millisecond}, llmtest.Hang(), llmtest.Hang(), llmtest.Hang())
	start := time.Now()
	res := r.run(t, api.RunRequest{Task: "anything"})
	if res.Status != api.StatusCompleted || res.Answer != "answered by the fallback" {
		t.Fatalf("result = %+v", res)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s; a hang must fail over after the per-call timeout", el)
	}
	if n := len(fb.Requests()); n < 1 {
		t.Errorf("fallback got %d requests", n)
	}
	evs := eventsOf(r.events(t, res.RunID), "llm_response")
	if evs[0]["endpoint"] != "fallback" {
		t.Errorf("first answer came from %v, want fallback", evs[0]["endpoint"])
	}
}

func TestAutonomousRunRefusedAtBothGatesIncludingAlias(t *testing.T) {
	scaled = nil
	danger := tools.New("scale_to_zero", "Scale a workload to zero.", true, scalePrimitive)
	// The same primitive under a name that IS on the autonomous allowlist:
	// only the execution gate can stop it.
	alias := tools.Alias("k8s_nodes", danger)
	r := newRig(t, rigOpts{extra: []tools.Tool{danger, alias}},
		llmtest.ToolCalls(
			llmtest.Call{ID: "n", Name: "scale_to_zero", Args: `{"name":"web"}`},
			llmtest.Call{ID: "x", Name: "k8s_nodes", Args: `{"name":"web"}`},
		),
		llmtest.Text("tried"), noSynthesis, noSynthesis,
	)
	res := r.run(t, api.RunRequest{Task: "scale web", WorkflowType: api.WorkflowAlert})
	if len(scaled) != 0 {
		t.Fatalf("an autonomous run scaled %v", scaled)
	}
	reqs := r.llm.Requests()
	for _, tl := range reqs[0].Request.Tools {
		if tl.Function.Name == "scale_to_zero" {
			t.Errorf("the name gate let scale_to_zero into an autonomous run's tool list")
		}
	}
	denials := eventsOf(r.events(t, res.RunID), "guard_denied")
	gates := map[any]int{}
	for _, d := range denials {
		gates[d["gate"]]++
	}
	// one removal at start, one named refusal, one execution refusal
	if gates["name"] != 2 || gates["execution"] != 1 {
		t.Errorf("guard_denied events = %v", denials)
	}
	got := map[string]string{}
	for _, m := range reqs[1].Request.Messages {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(got["n"], "not available in an autonomous run") {
		t.Errorf("name gate answer = %q", got["n"])
	}
	if !strings.Contains(got["x"], "denied by safety gate") {
		t.Errorf("execution gate answer = %q", got["x"])
	}

	// The same call in a manual run goes through.
	r2 := newRig(t, rigOpts{extra: []tools.Tool{danger, alias}},
		llmtest.ToolCalls(llmtest.Call{Name: "k8s_nodes", Args: `{"name":"web"}`}), llmtest.Text("ok"), noSynthesis, noSynthesis)
	r2.run(t, api.RunRequest{Task: "scale web"})
	if len(scaled) != 1 {
		t.Errorf("a manual run was refused: scaled = %v", scaled)
	}
}

func TestDeterministicModeWithoutPlaybookSaysSo(t *testing.T) {
	r := newRig(t, rigOpts{noModel: true, personaArg: "dax"})
	res := r.run(t, api.RunRequest{Task: "review the Dockerfile"})
	// The task was not done: the run is failed, never completed, and says why.
	if res.Status != api.StatusFailed || !strings.Contains(res.Answer, "no deterministic playbook for this task") ||
		!strings.Contains(res.Error, "no deterministic playbook for this task") {
		t.Fatalf("result = %+v", res)
	}
	if len(r.llm.Requests()) != 0 {
		t.Errorf("deterministic mode called the model")
	}
}

func TestModelDownFallsBackToPlaybook(t *testing.T) {
	pb := engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
		run.ReportFinding(api.Finding{Severity: "high", Kind: "Deployment", Namespace: "n", Name: "w", Reason: "CrashLoopBackOff"})
		run.SetAnswer("found by the playbook")
		return nil
	})
	r := newRig(t, rigOpts{playbook: pb}, llmtest.Status(401, `{"error":{"message":"bad key"}}`, "application/json"))
	res := r.run(t, api.RunRequest{Task: "sweep"})
	if res.Status != api.StatusPartial || res.Answer != "found by the playbook" || len(res.Findings) != 1 {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(res.Error, "model unavailable") {
		t.Errorf("error = %q", res.Error)
	}
}

func TestBackstopRunsAfterTheModel(t *testing.T) {
	called := false
	bs := func(ctx context.Context, run *engine.Run) error {
		called = true
		if run.Calls("echo") != 1 {
			return errors.New("backstop does not see the run's calls")
		}
		run.SetDelegation(api.Delegation{To: "k8s-engineer", Finding: api.Finding{Name: "w"}})
		return nil
	}
	r := newRig(t, rigOpts{backstop: bs}, llmtest.ToolCalls(llmtest.Call{Name: "echo", Args: `{"text":"x"}`}), llmtest.Text("a"), noSynthesis, noSynthesis)
	res := r.run(t, api.RunRequest{Task: "t"})
	if !called || res.Delegation == nil || res.Delegation.To != "k8s-engineer" {
		t.Fatalf("backstop called=%v delegation=%+v", called, res.Delegation)
	}
}

func TestShutdownMarksUnfinishedRunsFailed(t *testing.T) {
	r := newRig(t, rigOpts{timeout: 10 * time.Second}, llmtest.Hang())
	run, err := r.eng.Start(context.Background(), api.RunRequest{Task: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = r.eng.Shutdown(ctx)
	res := run.Result()
	if res.Status != api.StatusFailed || !strings.Contains(res.Error, "shutting down") {
		t.Fatalf("result = %+v", res)
	}
	rec, err := r.store.GetRun(context.Background(), run.ID)
	if err != nil || rec.Status != api.StatusFailed {
		t.Fatalf("stored run = %+v, %v", rec, err)
	}
	if _, err := r.eng.Start(context.Background(), api.RunRequest{Task: "late"}); !errors.Is(err, engine.ErrShuttingDown) {
		t.Errorf("start after shutdown: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		req  api.RunRequest
		want string
	}{
		{api.RunRequest{}, "task is required"},
		{api.RunRequest{Task: "  "}, "task is required"},
		{api.RunRequest{Task: "x", WorkflowType: "cron"}, "unknown workflow_type"},
		{api.RunRequest{Task: "x", SocialDepth: -1}, "social_depth"},
		{api.RunRequest{Task: "x"}, ""},
	} {
		err := engine.Validate(&tc.req)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.req, err, tc.want)
		}
	}
}

// A failed run is logged at warn with its error; debug adds the task and
// the result.
func TestFailedRunLoggedAtWarnWithTheError(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	r := newRig(t, rigOpts{log: zap.New(core), personaArg: "dax"}, llmtest.Status(401, `{"error":{"message":"bad key"}}`, "application/json"))
	res := r.run(t, api.RunRequest{Task: "review the Dockerfile"})
	if res.Error == "" {
		t.Fatalf("result = %+v, want an error", res)
	}
	var warned, started, result bool
	for _, e := range logs.All() {
		f := e.ContextMap()
		switch {
		case e.Level == zap.WarnLevel && strings.HasPrefix(e.Message, "run f"):
			warned = strings.Contains(fmt.Sprint(f["error"]), "bad key") && f["workflow_type"] == "manual" && f["status"] == res.Status
		case e.Level == zap.DebugLevel && e.Message == "run started":
			started = f["task"] == "review the Dockerfile"
		case e.Level == zap.DebugLevel && e.Message == "run result":
			result = f["answer"] == res.Answer
		}
	}
	if !warned || !started || !result {
		for _, e := range logs.All() {
			t.Logf("%s %s %v", e.Level, e.Message, e.ContextMap())
		}
		t.Fatalf("warn with the error %v, debug run started %v, debug run result %v", warned, started, result)
	}
}

// A playbook (or a model) that quotes what a tool read puts it in the run's
// answer and findings, which leave the agent: both are redacted like tool
// output, in the result and in the stored run.
func TestRunAnswerAndFindingsAreRedacted(t *testing.T) {
	const token = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
	pb := engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
		run.ReportFinding(api.Finding{Severity: "high", Kind: "Deployment", Namespace: "n", Name: "w", Reason: "BackOff",
			Detail: "evidence: config dump GITHUB_TOKEN=" + token})
		run.SetAnswer("the event says: app config dump GITHUB_TOKEN=" + token + " retrying")
		return nil
	})
	r := newRig(t, rigOpts{playbook: pb, noModel: true})
	res := r.run(t, api.RunRequest{Task: "sweep"})
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), token) {
		t.Fatalf("the run's result holds the token: %s", b)
	}
	if !strings.Contains(res.Answer, "[REDACTED:") || len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Detail, "[REDACTED:") {
		t.Fatalf("result = %+v; want the token replaced by a marker", res)
	}
}

// A playbook's status follows what it could do: nil completes, a Partial
// error ends partial with its reason and keeps the answer and findings,
// any other error fails.
func TestPlaybookStatusIsHonest(t *testing.T) {
	tests := []struct {
		name, status string
		err          error
	}{
		{"done", api.StatusCompleted, nil},
		{"done in part", api.StatusPartial, fmt.Errorf("review: %w", &engine.Partial{Reason: "2 files not reviewed"})},
		{"not done", api.StatusFailed, errors.New("no repository")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pb := engine.PlaybookFunc(func(ctx context.Context, run *engine.Run) error {
				run.ReportFinding(api.Finding{Severity: "low", Kind: "Dockerfile", Name: "Dockerfile:1", Reason: "DF001"})
				run.SetAnswer("what I reviewed")
				return tc.err
			})
			r := newRig(t, rigOpts{noModel: true, playbook: pb})
			res := r.run(t, api.RunRequest{Task: "review"})
			if res.Status != tc.status || len(res.Findings) != 1 {
				t.Fatalf("result = %+v, want status %s", res, tc.status)
			}
			if tc.err != nil && !strings.Contains(res.Error, tc.err.Error()) {
				t.Errorf("error = %q, want %q", res.Error, tc.err)
			}
			if tc.status != api.StatusFailed && res.Answer != "what I reviewed" {
				t.Errorf("answer = %q", res.Answer)
			}
		})
	}
}

type inCodePlaybook struct{ engine.PlaybookFunc }

func (inCodePlaybook) InCode(req api.RunRequest) bool {
	return req.WorkflowType == api.WorkflowPulseTask
}

// An InCode playbook answers its requests even with a model configured;
// every other request goes to the model.
func TestInCodePlaybookRunsWithoutTheModel(t *testing.T) {
	pb := inCodePlaybook{func(ctx context.Context, run *engine.Run) error {
		run.SetAnswer("reviewed in code")
		return nil
	}}
	r := newRig(t, rigOpts{playbook: pb}, llmtest.Text("the model's answer"))
	if res := r.run(t, api.RunRequest{Task: "Weekly review", WorkflowType: api.WorkflowPulseTask}); res.Answer != "reviewed in code" || res.Status != api.StatusCompleted {
		t.Fatalf("pulse run = %+v", res)
	}
	if n := len(r.llm.Requests()); n != 0 {
		t.Fatalf("the in-code run called the model %d times", n)
	}
	if res := r.run(t, api.RunRequest{Task: "hello"}); res.Answer != "the model's answer" {
		t.Fatalf("manual run = %+v", res)
	}
}
