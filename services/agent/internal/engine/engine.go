// Package engine is the run engine every persona uses (docs/ARCHITECTURE.md):
// prompt assembly, tool resolution through both safety gates, the ReAct
// loop with a ceiling that keeps the work, the synthesis pass, delivery
// precedence, backstops, and deterministic playbooks when no model is set.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Model is the chat API the loop talks to (pkg/llm's client in production,
// through an adapter). Endpoint names which endpoint answered.
type Model interface {
	Chat(ctx context.Context, req openai.ChatCompletionRequest) (resp openai.ChatCompletionResponse, endpoint string, err error)
}

// Backstop produces, in code, an outcome the task requires and the model
// forgot (e.g. Noor's delegation of a remediable critical finding).
type Backstop func(ctx context.Context, r *Run) error

// Options are the engine's dependencies and limits.
type Options struct {
	Agent persona.Info
	// Persona returns the persona files for a run (re-read per run when
	// PERSONA_DIR is set).
	Persona func() (*persona.Persona, error)
	// Tools is every tool the persona is configured with (AGENT_TOOLS plus
	// built-ins): what an interactive run may call.
	Tools tools.Set
	// Model is nil in deterministic mode.
	Model     Model
	ModelName string
	Playbook  Playbook // nil: the persona has none
	Backstop  Backstop // nil: none
	Prepare   Prepare  // nil: none
	// Delegator sends delegations over A2A (nil: decisions are recorded only).
	Delegator Delegator

	Store store.AgentStore
	// Cluster names the cluster in findings (CLUSTER_NAME): with a
	// finding's key, its identity in the lifecycle.
	Cluster string
	Now     func() time.Time
	NewID   func() string

	MaxIterations int
	// ContextTokens is the model's context window (AGENT_CONTEXT_TOKENS):
	// the transcript is kept within it (window.go).
	ContextTokens int
	// ReplyTokens is the answer cap sent with each request
	// (AGENT_MAX_COMPLETION_TOKENS); the window keeps at least that much
	// free for the reply, and never less than an eighth.
	ReplyTokens int
	// MaxCallsPerTurn and MaxCallsPerRun cap the tool calls a model may
	// make; MaxReplyChars one model reply, MaxAnswerChars a run's answer
	// (caps.go).
	MaxCallsPerTurn  int
	MaxCallsPerRun   int
	MaxReplyChars    int
	MaxAnswerChars   int
	Temperature      float32
	ToolOutputMax    int
	MemoryMax        int
	SynthesisTimeout time.Duration
	RunTimeout       time.Duration
	// TokenBudget bounds the model tokens a day and a run may spend.
	TokenBudget TokenBudget
	// MaxConcurrentRuns bounds the runs in flight (capacity.go); 0: no limit.
	MaxConcurrentRuns int

	// Paused reports the action envelope's kill switch (docs/MANUAL.md, "The
	// action envelope"); nil: never. A run that starts or ends paused says
	// so in its trace and its answer: it continued read-only.
	Paused func(ctx context.Context) (line string, paused bool)

	Metrics *Metrics
	Log     *zap.Logger
}

// Engine runs tasks.
type Engine struct {
	opts    Options
	metrics *Metrics
	log     *zap.Logger
	ledger  *ledger
	marks   pulseMarks

	base       context.Context // parent of every run; cancelled on forced shutdown
	cancelBase context.CancelCauseFunc

	mu      sync.Mutex
	running map[string]*Run
	took    []time.Duration // the last recentRuns finished runs' durations (capacity.go)
	closed  bool
	wg      sync.WaitGroup
}

// ErrShuttingDown is the cause of runs ended by a forced shutdown.
var ErrShuttingDown = errors.New("agent shutting down")

// New builds an engine.
func New(o Options) (*Engine, error) {
	if o.Store == nil {
		return nil, errors.New("engine: a store is required")
	}
	if o.Persona == nil {
		return nil, errors.New("engine: a persona loader is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Cluster == "" {
		o.Cluster = "default" // CLUSTER_NAME's default
	}
	if o.NewID == nil {
		o.NewID = func() string { return uuid.NewString() }
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = 15
	}
	if o.ToolOutputMax <= 0 {
		o.ToolOutputMax = 8000
	}
	o.ContextTokens = orDefault(o.ContextTokens, DefaultContextTokens)
	o.MaxCallsPerTurn = orDefault(o.MaxCallsPerTurn, DefaultMaxCallsPerTurn)
	o.MaxCallsPerRun = orDefault(o.MaxCallsPerRun, DefaultMaxCallsPerRun)
	o.MaxReplyChars = orDefault(o.MaxReplyChars, DefaultMaxReplyChars)
	o.MaxAnswerChars = orDefault(o.MaxAnswerChars, DefaultMaxAnswerChars)
	if o.MemoryMax <= 0 {
		o.MemoryMax = 4000
	}
	if o.SynthesisTimeout <= 0 {
		o.SynthesisTimeout = 180 * time.Second
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 20 * time.Minute
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	var names []string
	for _, s := range o.Tools.Specs() {
		names = append(names, s.Name)
	}
	o.Metrics.initTools(names)
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	l, err := newLedger(lctx, o.TokenBudget, o.Store, o.Agent.Slug, o.Now)
	lcancel()
	if err != nil {
		o.Log.Warn("today's token use not read from the store: the daily budget counts from now", zap.Error(err))
	}
	base, cancel := context.WithCancelCause(context.Background())
	return &Engine{opts: o, metrics: o.Metrics, log: o.Log, ledger: l, base: base, cancelBase: cancel, running: map[string]*Run{}}, nil
}

func (e *Engine) now() time.Time { return e.opts.Now() }

// Deterministic reports whether the engine runs without a model.
func (e *Engine) Deterministic() bool { return e.opts.Model == nil }

// Tools returns the persona's full tool set.
func (e *Engine) Tools() tools.Set { return e.opts.Tools }

// ValidationError is a bad run request (HTTP 400).
type ValidationError struct{ Msg string }

func (v *ValidationError) Error() string { return v.Msg }

// Validate checks a run request and fills defaults.
func Validate(req *api.RunRequest) error {
	req.Task = strings.TrimSpace(req.Task)
	if req.Task == "" {
		return &ValidationError{"task is required"}
	}
	if len(req.Task) > 20000 {
		return &ValidationError{"task is longer than 20000 characters"}
	}
	if req.WorkflowType == "" {
		req.WorkflowType = api.WorkflowManual
	}
	if !api.ValidWorkflow(req.WorkflowType) {
		return &ValidationError{fmt.Sprintf("unknown workflow_type %q; valid: %s", req.WorkflowType, strings.Join(api.Workflows, ", "))}
	}
	if req.SocialDepth < 0 {
		return &ValidationError{"social_depth must not be negative"}
	}
	if err := validateBudget(req.BudgetMS); err != nil {
		return err
	}
	for k := range req.Context {
		if k == "" || len(k) > 100 {
			return &ValidationError{"context keys must be 1-100 characters"}
		}
	}
	return nil
}

// Start validates req, records the run and executes it in the background.
// The run does not depend on ctx; a caller that stops waiting ends it with
// Run.CancelFor (the HTTP and A2A servers do), and it is recorded, not
// lost. Wait on the returned run for the result. An agent at capacity
// refuses with an *api.BusyError (capacity.go).
func (e *Engine) Start(ctx context.Context, req api.RunRequest) (*Run, error) {
	if err := Validate(&req); err != nil {
		return nil, err
	}
	p, err := e.opts.Persona()
	if err != nil {
		return nil, fmt.Errorf("loading persona: %w", err)
	}
	mode := tools.ModeInteractive
	if api.Autonomous(req.WorkflowType) || req.Unattended {
		mode = tools.ModeAutonomous
	}
	set, removed := e.opts.Tools.ForMode(mode)
	r := &Run{
		ID: e.opts.NewID(), Req: req, Mode: mode, Tools: set, Persona: p,
		Started: e.now().UTC(), e: e, done: make(chan struct{}), budget: e.BudgetFor(req),
	}
	r.log = e.log.With(zap.String("run_id", r.ID), zap.String("workflow_type", req.WorkflowType))
	r.log.Debug("run started", zap.String("task", req.Task), zap.String("mode", mode.String()),
		zap.String("caller", req.Caller), zap.Int("social_depth", req.SocialDepth), zap.String("discussion_id", req.DiscussionID),
		zap.Any("context", req.Context), zap.Strings("tools", set.Names()), zap.String("model", e.modelName()))

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if err := e.admitLocked(req); err != nil {
		e.mu.Unlock()
		e.metrics.busy.WithLabelValues(req.WorkflowType).Inc()
		r.log.Info("run refused: the agent is at capacity", zap.Error(err))
		return nil, err
	}
	e.running[r.ID] = r
	e.wg.Add(1)
	e.mu.Unlock()

	rec := store.Run{
		ID: r.ID, Agent: e.opts.Agent.Slug, WorkflowType: req.WorkflowType, Task: req.Task,
		Context: req.Context, Caller: req.Caller, SocialDepth: req.SocialDepth,
		DiscussionID: req.DiscussionID, Status: api.StatusRunning, StartedAt: r.Started,
	}
	if err := e.opts.Store.CreateRun(context.WithoutCancel(ctx), rec); err != nil {
		r.log.Warn("run record not created", zap.Error(err))
	}
	r.Event(ctx, "run_start", map[string]any{
		"task": req.Task, "workflow_type": req.WorkflowType, "mode": mode.String(),
		"caller": req.Caller, "social_depth": req.SocialDepth, "discussion_id": req.DiscussionID,
		"tools": set.Names(), "model": e.modelName(),
		"budget_ms": r.budget.Total.Milliseconds(), "budget_source": r.budget.Source, "model_budget_ms": r.budget.Model.Milliseconds(),
	})
	if e.opts.Paused != nil {
		if line, paused := e.opts.Paused(ctx); paused {
			r.Event(ctx, "actions_paused", map[string]any{"line": line})
		}
	}
	if len(removed) > 0 {
		r.log.Info("autonomous run: restricted to safe tools", zap.Strings("removed", removed))
		r.Event(ctx, "guard_denied", map[string]any{"gate": "name", "removed": removed,
			"reason": "autonomous run (" + req.WorkflowType + "): restricted to the autonomous allowlist"})
	}

	cancelCtx, cancelRun := context.WithCancelCause(e.base)
	r.cancel = cancelRun
	runCtx, cancel := context.WithTimeoutCause(cancelCtx, r.budget.Total, &BudgetError{Budget: r.budget})
	runCtx = tools.WithMode(runCtx, mode)
	if t, ok := delegatedTarget(req); ok {
		runCtx = tools.WithTarget(runCtx, t)
	} else {
		runCtx = tools.WithNoTarget(runCtx)
	}
	runCtx = tools.WithRunInfo(runCtx, tools.RunInfo{ID: r.ID, Trace: func(typ string, data map[string]any) { r.Event(runCtx, typ, data) }})
	runCtx = context.WithValue(runCtx, runKey{}, r)
	e.metrics.inFlight.Inc()
	go func() {
		defer e.wg.Done()
		defer cancel()
		defer cancelRun(nil)
		defer e.metrics.inFlight.Dec()
		e.execute(runCtx, r)
	}()
	return r, nil
}

func (e *Engine) modelName() string {
	if e.opts.Model == nil {
		return "none"
	}
	return e.opts.ModelName
}

// Get returns a run in flight.
func (e *Engine) Get(id string) (*Run, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.running[id]
	return r, ok
}

// InFlight returns the number of runs executing.
func (e *Engine) InFlight() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// Shutdown stops accepting runs and waits for running ones until ctx ends;
// then it cancels the rest, which finish as failed ("agent shutting down")
// with their transcript recorded.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	e.cancelBase(ErrShuttingDown)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return errors.New("runs did not finish after cancellation")
	}
	return nil
}

func (e *Engine) execute(ctx context.Context, r *Run) {
	var res outcome
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.log.Error("run panicked", zap.Any("panic", p))
				res = outcome{status: api.StatusFailed, err: fmt.Errorf("internal error: %v", p)}
			}
		}()
		if ic, ok := e.opts.Playbook.(InCode); e.opts.Model == nil || ok && ic.InCode(r.Req) {
			res = e.runDeterministic(ctx, r)
		} else {
			res = e.runModelWithin(ctx, r)
		}
	}()
	if be := (*BudgetError)(nil); errors.As(context.Cause(ctx), &be) {
		r.spent.Store(true)
	}
	e.finish(ctx, r, res)
}

// outcome is what a run produced before delivery precedence.
type outcome struct {
	status     string
	answer     string
	verdict    string
	synthesis  *DiagnosticReport
	synthErr   error // the structured report's pass ran and failed
	iterations int
	calls      int    // model calls, loop and synthesis
	note       string // opens the answer: why the model was not (fully) used
	tokens     api.Tokens
	err        error
	// toolCalls is the tool calls the model made that ran (caps.go),
	// toolErrors those that failed (an error or a panic).
	toolCalls, toolErrors int
	// oversized is the calls of the latest reply whose arguments were cut
	// (caps.go); originalChars the size of each compacted message before
	// its first compaction (window.go).
	oversized     map[string]int
	originalChars map[int]int
}

func (e *Engine) finish(ctx context.Context, r *Run, o outcome) {
	bg := context.WithoutCancel(ctx)
	if cause := context.Cause(ctx); cause != nil && o.status != api.StatusFailed && o.err == nil && o.status != api.StatusPartial {
		o.status, o.err = api.StatusFailed, cause
	}
	r.mu.Lock()
	answer, verdict := r.answer, r.verdict
	reported := append([]api.Finding(nil), r.reported...)
	delegation := r.delegation
	r.mu.Unlock()
	if answer == "" {
		answer = o.answer
	}
	if o.note != "" {
		answer = o.note + "\n\n" + answer
	}
	if verdict == "" {
		verdict = o.verdict
	}
	if e.opts.Paused != nil {
		if line, paused := e.opts.Paused(bg); paused {
			answer = "Actions are " + line + " — this run was read-only.\n\n" + answer
		}
	}
	findings, source := deliver(reported, o.synthesis, answer)
	// What a run says leaves the agent (store, report page, A2A reply, chat
	// post): its answer and findings pass the redactor as tool output does,
	// since a playbook or a model may quote what a tool read (docs/MANUAL.md "Redaction").
	answer, findings = redactResult(answer, findings, e.metrics)
	if verdict == "" {
		verdict = deriveVerdict(o, findings, delegation)
	}
	// "delegated" only when the delegate acted, whoever (a model) said so.
	if delegation != nil && verdict == api.VerdictDelegated {
		verdict = delegation.Outcome()
	}
	o = e.honest(bg, r, o, verdict, delegation, source)
	finished := e.now().UTC()
	res := api.RunResult{
		RunID: r.ID, Agent: e.opts.Agent.Slug, WorkflowType: r.Req.WorkflowType, Status: o.status,
		Answer: e.capAnswer(bg, r, cleanAnswer(answer)), Verdict: verdict, Findings: findings, Iterations: o.iterations,
		Tokens: o.tokens, ModelCalls: o.calls, StartedAt: r.Started, FinishedAt: &finished, Delegation: delegation,
	}
	if res.Findings == nil {
		res.Findings = []api.Finding{}
	}
	for i := range res.Findings {
		if res.Findings[i].Cluster == "" {
			res.Findings[i].Cluster = e.opts.Cluster
		}
	}
	if o.err != nil {
		res.Error, _ = redact.String(o.err.Error())
	}
	res.Lifecycle = e.lifecycle(bg, r, finished)
	if len(findings) > 0 {
		if err := e.opts.Store.RecordFindings(bg, r.ID, e.opts.Agent.Slug, finished, findings); err != nil {
			r.log.Warn("findings not recorded", zap.Error(err))
		}
	}
	rec := store.Run{
		ID: r.ID, Agent: e.opts.Agent.Slug, WorkflowType: r.Req.WorkflowType, Task: r.Req.Task,
		Context: r.Req.Context, Caller: r.Req.Caller, SocialDepth: r.Req.SocialDepth,
		DiscussionID: r.Req.DiscussionID, Status: res.Status, Answer: res.Answer, Verdict: res.Verdict,
		Findings: res.Findings, Iterations: res.Iterations, Tokens: res.Tokens, Error: res.Error,
		Delegation: res.Delegation, StartedAt: r.Started, FinishedAt: &finished,
	}
	r.Event(bg, "run_finish", map[string]any{"status": res.Status, "verdict": res.Verdict,
		"findings": len(res.Findings), "findings_source": source, "iterations": res.Iterations,
		"tokens": res.Tokens, "model_calls": res.ModelCalls, "error": res.Error, "duration_ms": finished.Sub(r.Started).Milliseconds()})
	if err := e.opts.Store.UpdateRun(bg, rec); err != nil {
		r.log.Warn("run record not updated", zap.Error(err))
	}
	e.metrics.runs.WithLabelValues(r.Req.WorkflowType, res.Status).Inc()
	e.metrics.runDuration.WithLabelValues(r.Req.WorkflowType).Observe(finished.Sub(r.Started).Seconds())
	if o.calls > 0 {
		e.metrics.runTokens.WithLabelValues(r.Req.WorkflowType).Observe(float64(o.tokens.Prompt + o.tokens.Completion))
	}
	fields := []zap.Field{zap.String("status", res.Status), zap.String("verdict", res.Verdict),
		zap.Int("findings", len(res.Findings)), zap.Int("iterations", res.Iterations), zap.Duration("duration", finished.Sub(r.Started))}
	if o.err != nil {
		fields = append(fields, zap.Error(o.err))
	}
	switch {
	case res.Status == api.StatusFailed:
		r.log.Warn("run failed", fields...)
	case o.err != nil:
		r.log.Warn("run finished with an error", fields...)
	default:
		r.log.Info("run finished", fields...)
	}
	if ce := r.log.Check(zap.DebugLevel, "run result"); ce != nil {
		keys := make([]string, 0, len(res.Findings))
		for _, f := range res.Findings {
			keys = append(keys, f.Severity+" "+f.Key)
		}
		ce.Write(zap.String("answer", res.Answer), zap.Strings("findings", keys), zap.String("findings_source", source),
			zap.Any("delegation", res.Delegation), zap.Any("tokens", res.Tokens))
	}

	e.markPulse(r, res)
	r.mu.Lock()
	r.result = res
	r.mu.Unlock()
	e.release(r)
	close(r.done)
}

func deriveVerdict(o outcome, fs []api.Finding, d *api.Delegation) string {
	if o.synthesis != nil && o.synthesis.Verdict != "" {
		return o.synthesis.Verdict
	}
	switch {
	case d != nil:
		// no pass stated a verdict: the hand-off's outcome is the run's
		return d.Outcome()
	case o.status == api.StatusFailed:
		return "error"
	case len(fs) == 0:
		return "healthy"
	default:
		return "issues_found"
	}
}

// Agent returns the engine's persona identity.
func (e *Engine) Agent() persona.Info { return e.opts.Agent }

// RunningDiscussion returns a run in flight that belongs to discussion id,
// if any (A2A cycle detection: a discussion coming back to an agent already
// working on it).
func (e *Engine) RunningDiscussion(id string) (*Run, bool) {
	if id == "" {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.running {
		if r.Req.DiscussionID == id {
			return r, true
		}
	}
	return nil, false
}

// delegatedTarget is the workload of the finding a run was delegated
// (context.finding): the only one an autonomous run may change (the scope
// gate, tools.CheckTarget).
func delegatedTarget(req api.RunRequest) (tools.Target, bool) {
	raw := req.Context[ContextFinding]
	if raw == "" {
		return tools.Target{}, false
	}
	var f api.Finding
	if err := json.Unmarshal([]byte(raw), &f); err != nil || f.Kind == "" || f.Name == "" {
		return tools.Target{}, false
	}
	return tools.Target{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}, true
}

// redactResult redacts a run's answer and its findings' free text, and
// counts what it replaced.
func redactResult(answer string, fs []api.Finding, m *Metrics) (string, []api.Finding) {
	var all redact.Counts
	answer, c := redact.String(answer)
	all.Merge(c)
	if len(fs) > 0 {
		fs = append([]api.Finding(nil), fs...)
		for i := range fs {
			for _, f := range []*string{&fs[i].Detail, &fs[i].Remediation} {
				var c redact.Counts
				*f, c = redact.String(*f)
				all.Merge(c)
			}
		}
	}
	m.redacted(all)
	return answer, fs
}
