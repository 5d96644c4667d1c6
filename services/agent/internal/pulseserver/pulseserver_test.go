package pulseserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/llm"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/builtin"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/pulseserver"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

const token = "pulse-token"

// discord is an httptest Discord webhook: it records posts and answers with
// the scripted statuses, then 204.
type discord struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []discordPost
	status []int
}

type discordPost struct {
	Username string `json:"username"`
	Embeds   []struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Color       int    `json:"color"`
	} `json:"embeds"`
}

func newDiscord(t *testing.T) *discord {
	d := &discord{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p discordPost
		_ = json.NewDecoder(r.Body).Decode(&p)
		d.mu.Lock()
		code := http.StatusNoContent
		if len(d.status) > 0 {
			code, d.status = d.status[0], d.status[1:]
		}
		if code/100 == 2 {
			d.posts = append(d.posts, p)
		}
		d.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *discord) url() string { return d.srv.URL + "/api/webhooks/42/secret-token" }

func (d *discord) got() []discordPost {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]discordPost(nil), d.posts...)
}

func (d *discord) failNext(codes ...int) {
	d.mu.Lock()
	d.status = append(d.status, codes...)
	d.mu.Unlock()
}

// rig is Noor's engine, pulse and HTTP server, with a test playbook in
// place of the cluster tools (or a scripted model): the findings it reports
// are whatever the test sets.
type rig struct {
	st    *store.Memory
	eng   *engine.Engine
	sched *pulse.Scheduler
	dc    *discord
	url   string

	mu       sync.Mutex
	findings []api.Finding
	hold     chan struct{}
	started  chan string
}

type rigOpts struct {
	model   *llmtest.Server // nil: deterministic with the test playbook
	timeout time.Duration
	enabled bool
	tasks   func([]pulse.Task) []pulse.Task // edits Noor's tasks
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	p, err := persona.Load(agents.FS, "noor")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{st: store.NewMemory(nil), dc: newDiscord(t)}
	targets, err := report.TargetsFromURLs(r.dc.url(), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	sender, err := report.NewSender(p.Name, p.Slug, "Noor", "0x5865F2")
	if err != nil {
		t.Fatal(err)
	}
	d, err := report.NewDeliverer(report.Options{Sender: sender, Targets: targets, Stamps: r.st})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(append(builtin.Tools(), pulseserver.ReportTool(d))...)
	set, err := reg.Resolve(reg.Names())
	if err != nil {
		t.Fatal(err)
	}
	eo := engine.Options{
		Agent: p.Info, Persona: func() (*persona.Persona, error) { return p, nil }, Tools: set, Store: r.st,
		MaxIterations: 6, SynthesisTimeout: 2 * time.Second, RunTimeout: 30 * time.Second,
		Playbook: engine.PlaybookFunc(r.playbook),
	}
	if o.model != nil {
		c, err := llm.New(llm.Config{Endpoints: []llm.Endpoint{{Name: "primary", BaseURL: o.model.URL(), APIKey: "k", Model: "m"}}, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		eo.Model, eo.ModelName, eo.Playbook = model{c}, "m", nil
	}
	r.eng, err = engine.New(eo)
	if err != nil {
		t.Fatal(err)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	tasks := p.Pulse
	if o.tasks != nil {
		tasks = o.tasks(tasks)
	}
	r.sched, err = pulse.New(pulse.Options{
		Agent: p.Slug, Holder: "pod-a", Tasks: tasks, Store: r.st, Runner: pulseserver.EngineRunner{Engine: r.eng},
		Reporter: d, Interval: 45 * time.Minute, Timeout: timeout, Enabled: o.enabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Deps{Engine: r.eng, Store: r.st, Auth: httpauth.Tokens{Full: token}, Info: func() any { return nil }})
	pulseserver.New(r.sched, nil).Mount(srv.Router())
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

func (r *rig) playbook(ctx context.Context, run *engine.Run) error {
	r.mu.Lock()
	fs, hold, started := r.findings, r.hold, r.started
	r.mu.Unlock()
	if started != nil {
		started <- run.ID
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	for _, f := range fs {
		run.ReportFinding(f)
	}
	return nil
}

func (r *rig) set(fs []api.Finding) { r.mu.Lock(); r.findings = fs; r.mu.Unlock() }

func do(t *testing.T, method, url string, auth bool) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (r *rig) post(t *testing.T, query string) (int, pulse.TickResult, string) {
	t.Helper()
	code, b := do(t, http.MethodPost, r.url+"/pulse"+query, true)
	var res pulse.TickResult
	_ = json.Unmarshal(b, &res)
	return code, res, string(b)
}

var problems = []api.Finding{
	{Severity: "high", Kind: "Deployment", Namespace: "shop", Name: "cart", Reason: "CrashLoopBackOff", Detail: "exit 1: missing DB_URL", Remediation: "fix the config in Git"},
	{Severity: "critical", Kind: "Deployment", Namespace: "shop", Name: "payments", Container: "api", Reason: "OOMKilled", Detail: "14 restarts, limit 256Mi", Remediation: "raise the memory limit", Remediable: true},
}

func TestPostPulseRunsTheSweepAndPostsOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.set(problems)
	code, res, body := r.post(t, "")
	if code != http.StatusOK || res.Outcome != pulse.OutcomeRan || res.Task.Index != 0 || res.Task.Cadence != pulse.Continuous {
		t.Fatalf("POST /pulse = %d %s", code, body)
	}
	if res.Result == nil || res.Result.Status != api.StatusCompleted || len(res.Result.Findings) != 2 ||
		res.Result.WorkflowType != api.WorkflowPulseTask || res.Result.RunID == "" {
		t.Fatalf("result = %+v", res.Result)
	}
	if !res.Report.Posted || res.Report.Targets[0].Status != report.StatusDelivered {
		t.Fatalf("report = %+v", res.Report)
	}
	posts := r.dc.got()
	if len(posts) != 1 {
		t.Fatalf("discord got %d posts, want 1", len(posts))
	}
	p := posts[0]
	if p.Username != "Noor" || p.Embeds[0].Color != 0x5865F2 {
		t.Errorf("post from %q colour %#x, want Noor 0x5865F2", p.Username, p.Embeds[0].Color)
	}
	lines := strings.Split(p.Embeds[0].Description, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "🔴 shop/Deployment/payments (api) — OOMKilled") || !strings.HasPrefix(lines[1], "🟠 shop/Deployment/cart") {
		t.Errorf("description = %q", p.Embeds[0].Description)
	}
	if p.Embeds[0].Title != "Health sweep and delegation — 2 problems (1 critical, 1 high)" {
		t.Errorf("title = %q", p.Embeds[0].Title)
	}
	// The run is stored as an autonomous pulse run carrying its task key.
	rec, err := r.st.GetRun(context.Background(), res.Result.RunID)
	if err != nil || rec.WorkflowType != api.WorkflowPulseTask || rec.Context["pulse_task"] != res.Task.Key {
		t.Errorf("run record = %+v, %v", rec, err)
	}

	// The second identical tick posts nothing.
	code, res, body = r.post(t, "?task=0")
	if code != http.StatusOK || res.Report.Posted || res.Report.Targets[0].Status != report.StatusDuplicate {
		t.Fatalf("second tick = %d %s", code, body)
	}
	if n := len(r.dc.got()); n != 1 {
		t.Fatalf("discord got %d posts after an identical tick, want 1", n)
	}

	// A failed delivery (500) is retried on the next tick.
	r.set(problems[1:])
	r.dc.failNext(http.StatusInternalServerError)
	code, res, body = r.post(t, "?task=0")
	if code != http.StatusOK || res.Report.Posted || res.Report.Targets[0].Status != report.StatusFailed || res.Result.Status != api.StatusCompleted {
		t.Fatalf("failed delivery tick = %d %s", code, body)
	}
	if strings.Contains(body, "secret-token") {
		t.Errorf("the answer holds the webhook secret: %s", body)
	}
	code, res, body = r.post(t, "?task=0")
	if code != http.StatusOK || !res.Report.Posted || len(r.dc.got()) != 2 {
		t.Fatalf("retry tick = %d %s (%d posts)", code, body, len(r.dc.got()))
	}

	// A healthy tick posts nothing.
	r.set(nil)
	code, res, body = r.post(t, "?task=0")
	if code != http.StatusOK || res.Report.Posted || len(r.dc.got()) != 2 || !strings.Contains(res.Message, "healthy") {
		t.Fatalf("healthy tick = %d %s", code, body)
	}
}

func TestPostPulseNextDueThenNothingDue(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.set(problems)
	var ran []string
	for i := 0; i < 4; i++ { // Noor's four tasks: the sweep, housekeeping, the morning digest, the trend review
		code, res, body := r.post(t, "")
		if code != http.StatusOK || res.Outcome != pulse.OutcomeRan {
			t.Fatalf("POST %d = %d %s", i, code, body)
		}
		ran = append(ran, string(res.Task.Cadence))
		if res.Task.Cadence == pulse.Daily && res.Report.Posted {
			t.Error("the daily housekeeping task posted")
		}
	}
	if got := strings.Join(ran, " "); got != "continuous daily daily weekly" {
		t.Errorf("ran %s", got)
	}
	// The continuous sweep stays due; with only daily/weekly left it would not.
	code, res, _ := r.post(t, "")
	if code != http.StatusOK || res.Task.Cadence != pulse.Continuous {
		t.Errorf("fifth POST ran %+v", res.Task)
	}

	// GET /pulse shows every task with its state and the settings.
	code, b := do(t, http.MethodGet, r.url+"/pulse", true)
	if code != http.StatusOK {
		t.Fatalf("GET /pulse = %d %s", code, b)
	}
	var st pulse.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Agent != "platform-sre" || st.Interval != "45m0s" || st.IntervalSeconds != 2700 || st.TimeoutSeconds != 20 ||
		st.Enabled || !st.Leader || st.Holder != "pod-a" || st.LastTick == nil || len(st.Tasks) != 4 {
		t.Fatalf("status = %s", b)
	}
	for _, ts := range st.Tasks {
		if ts.LastRun == nil || ts.RunID == "" || ts.Outcome != api.StatusCompleted || ts.Key == "" || ts.Text == "" {
			t.Errorf("task %d = %+v", ts.Index, ts)
		}
	}
	if d := st.Tasks[1]; d.Due || !d.NextDue.Equal(d.LastRun.Add(20*time.Hour)) {
		t.Errorf("daily = %+v", d)
	}
	var raw map[string]any
	_ = json.Unmarshal(b, &raw)
	task0 := raw["tasks"].([]any)[0].(map[string]any)
	for _, k := range []string{"index", "cadence", "text", "key", "last_run", "outcome", "run_id", "next_due"} {
		if _, ok := task0[k]; !ok {
			t.Errorf("GET /pulse task lacks %q: %v", k, task0)
		}
	}
	for _, k := range []string{"interval", "timeout", "enabled", "leader"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("GET /pulse lacks %q", k)
		}
	}
}

func TestNothingDueAnswers200(t *testing.T) {
	t.Parallel()
	// Noor's daily and weekly tasks only: once all three ran, nothing is due.
	r := newRig(t, rigOpts{tasks: func(ts []pulse.Task) []pulse.Task {
		var out []pulse.Task
		for _, task := range ts {
			if task.Cadence != pulse.Continuous {
				task.Index = len(out)
				out = append(out, task)
			}
		}
		return out
	}})
	for i := 0; i < 3; i++ {
		if code, res, body := r.post(t, ""); code != http.StatusOK || res.Outcome != pulse.OutcomeRan {
			t.Fatalf("POST %d = %d %s", i, code, body)
		}
	}
	code, res, body := r.post(t, "")
	if code != http.StatusOK || res.Outcome != pulse.OutcomeNothingDue || res.Result != nil || res.NextDue == nil ||
		!strings.HasPrefix(res.Message, "nothing due; the next task falls due at ") {
		t.Errorf("POST with nothing due = %d %s", code, body)
	}
}

func TestConcurrentPostIs409(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.hold, r.started = make(chan struct{}), make(chan string, 1)
	type answer struct {
		code int
		body string
	}
	first := make(chan answer, 1)
	go func() {
		code, _, body := r.post(t, "")
		first <- answer{code, body}
	}()
	runID := <-r.started
	code, _, body := r.post(t, "")
	if code != http.StatusConflict || !strings.Contains(body, "already running") || !strings.Contains(body, `"error"`) {
		t.Errorf("concurrent POST = %d %s, want 409", code, body)
	}
	if code, _, _ := r.post(t, "?task=2"); code != http.StatusConflict {
		t.Errorf("concurrent POST ?task=2 = %d, want 409", code)
	}
	// GET /pulse shows what is running.
	_, b := do(t, http.MethodGet, r.url+"/pulse", true)
	if !strings.Contains(string(b), `"running":{"task":{"index":0`) {
		t.Errorf("GET /pulse while running: %s", b)
	}
	close(r.hold)
	a := <-first
	if a.code != http.StatusOK || !strings.Contains(a.body, runID) {
		t.Errorf("first POST = %d %s", a.code, a.body)
	}
}

func TestPostPulseAuthAndBadInput(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	if code, b := do(t, http.MethodPost, r.url+"/pulse", false); code != http.StatusUnauthorized || !strings.Contains(string(b), "bearer") {
		t.Errorf("POST without a token = %d %s", code, b)
	}
	if code, _ := do(t, http.MethodGet, r.url+"/pulse", false); code != http.StatusUnauthorized {
		t.Errorf("GET /pulse without a token = %d, want 401", code)
	}
	if code, _ := do(t, http.MethodGet, r.url+"/pulse", true); code != http.StatusOK {
		t.Errorf("GET /pulse with the token = %d, want 200", code)
	}
	cases := []struct {
		q    string
		code int
		want string
	}{
		{"?task=4", http.StatusNotFound, "no such pulse task: index 4"},
		{"?task=-1", http.StatusNotFound, "no such pulse task"},
		{"?task=abc", http.StatusBadRequest, "not a task index"},
		{"?task=", http.StatusBadRequest, "not a task index"},
		{"?task=1&task=2", http.StatusBadRequest, "not a task index"},
		{"?tsk=1", http.StatusBadRequest, "unknown query parameter"},
	}
	for _, c := range cases {
		code, _, body := r.post(t, c.q)
		if code != c.code || !strings.Contains(body, c.want) || !strings.Contains(body, `"error"`) {
			t.Errorf("POST /pulse%s = %d %s, want %d %q", c.q, code, body, c.code, c.want)
		}
	}
}

func TestPulseTimeoutEndsTheRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{timeout: 100 * time.Millisecond})
	r.hold = make(chan struct{}) // never released: the pulse timeout ends it
	t.Cleanup(func() { close(r.hold) })
	code, res, body := r.post(t, "?task=0")
	if code != http.StatusOK || res.Result.Status != api.StatusFailed || !strings.Contains(res.Result.Error, "PULSE_TIMEOUT") {
		t.Fatalf("POST = %d %s", code, body)
	}
	sts, _ := r.st.PulseStates(context.Background(), "platform-sre")
	if len(sts) != 1 || sts[0].Outcome != api.StatusFailed || sts[0].RunID != res.Result.RunID {
		t.Errorf("states = %+v", sts)
	}
	rec, _ := r.st.GetRun(context.Background(), res.Result.RunID)
	if rec.Status != api.StatusFailed {
		t.Errorf("stored run status = %s", rec.Status)
	}
}

// The agent posts during the run with post_report (a scripted model): the
// pulse does not post the same report again.
func TestPostReportDuringTheRunIsNotPostedTwice(t *testing.T) {
	t.Parallel()
	finding := `{"severity":"critical","kind":"Deployment","namespace":"shop","name":"payments","reason":"OOMKilled","detail":"limit 256Mi","remediation":"raise the limit","remediable":true,"confidence":0.9}`
	script := func() []llmtest.Reply {
		return []llmtest.Reply{
			llmtest.ToolCalls(llmtest.Call{ID: "f1", Name: "report_finding", Args: finding}),
			llmtest.ToolCalls(llmtest.Call{ID: "p1", Name: "post_report", Args: `{"summary":"1 problem, delegated to k8s-engineer.\n- critical shop/payments OOMKilled\nNot checked: nodes."}`}),
			llmtest.Text("1 problem: shop/payments OOMKilled."),
			llmtest.JSON(map[string]any{"healthy": false, "verdict": "issues_found", "summary": "s", "findings": []any{}}),
		}
	}
	m := llmtest.NewServer(t, script()...)
	r := newRig(t, rigOpts{model: m})
	code, res, body := r.post(t, "?task=0")
	if code != http.StatusOK || res.Result.Status != api.StatusCompleted || len(res.Result.Findings) != 1 {
		t.Fatalf("POST = %d %s", code, body)
	}
	if res.Report.Posted || res.Report.Targets[0].Status != report.StatusPosted {
		t.Errorf("pulse report = %+v, want already_posted", res.Report)
	}
	posts := r.dc.got()
	if len(posts) != 1 {
		t.Fatalf("discord got %d posts, want 1 (the agent's)", len(posts))
	}
	desc := posts[0].Embeds[0].Description
	if !strings.HasPrefix(desc, "🔴 shop/Deployment/payments — OOMKilled") || !strings.Contains(desc, "Not checked: nodes.") || strings.Contains(desc, "- critical") {
		t.Errorf("agent's post = %q", desc)
	}
	// Next tick, the same: post_report finds the identical body, and the
	// pulse still does not post its own rendering.
	m.Push(script()...)
	code, res, body = r.post(t, "?task=0")
	if code != http.StatusOK || res.Report.Posted || len(r.dc.got()) != 1 {
		t.Fatalf("second tick = %d %s, %d posts", code, body, len(r.dc.got()))
	}
}

func TestReportToolOutsideAPulseRunUsesTheManualKey(t *testing.T) {
	t.Parallel()
	m := llmtest.NewServer(t,
		llmtest.ToolCalls(llmtest.Call{ID: "p1", Name: "post_report", Args: `{"summary":"manual check: all fine except shop."}`}),
		llmtest.Text("posted"),
		llmtest.JSON(map[string]any{"healthy": true, "verdict": "healthy", "summary": "s", "findings": []any{}}),
	)
	r := newRig(t, rigOpts{model: m})
	run, err := r.eng.Start(context.Background(), api.RunRequest{Task: "check shop", Context: map[string]string{"pulse_task": "continuous-deadbeef"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.dc.got()) != 1 {
		t.Fatalf("posts = %d", len(r.dc.got()))
	}
	if _, err := r.st.LastDelivery(context.Background(), "platform-sre", report.ManualTask, "discord"); err != nil {
		t.Errorf("manual stamp: %v", err)
	}
	if _, err := r.st.LastDelivery(context.Background(), "platform-sre", "continuous-deadbeef", "discord"); err == nil {
		t.Error("a manual run borrowed a pulse task's dedupe slot")
	}
}

// model adapts the llm client to the engine.
type model struct{ c *llm.Client }

func (m model) Chat(ctx context.Context, req openaiReq) (openaiResp, string, error) {
	r, err := m.c.Chat(ctx, req)
	if err != nil {
		return openaiResp{}, "", err
	}
	return r.ChatCompletionResponse, r.Endpoint, nil
}
