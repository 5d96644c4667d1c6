package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Run is one run in flight: what playbooks, backstops and built-in tools
// see of it. Its methods are safe for concurrent use.
type Run struct {
	ID      string
	Req     api.RunRequest
	Mode    tools.Mode
	Tools   tools.Set // after the name gate: all this run may call
	Persona *persona.Persona
	Started time.Time

	e      *Engine
	log    *zap.Logger
	done   chan struct{}
	cancel context.CancelCauseFunc
	budget Budget
	spent  atomic.Bool // the budget (or the model's share) ran out

	mu         sync.Mutex
	seq        int
	reported   []api.Finding
	answer     string
	verdict    string
	delegation *api.Delegation
	calls      map[string]int // tool name → calls made
	results    []ToolResult   // every call's result, in order
	note       string         // added to the task by Prepare
	digest     string         // the pulse state Prepare saw
	result     api.RunResult
	sweep      *Sweep
	changes    *api.Lifecycle // SetChanges: the run's own comparison
	partial    []string       // why the task was done only in part (honest.go)
}

// ToolResult is one tool call of a run as the run's code sees it after
// the run (a backstop checking what the model did): the arguments as sent
// and the output as the model saw it (redacted, cut to the budget).
type ToolResult struct {
	ID      string
	Name    string
	Args    json.RawMessage
	Output  string
	Outcome string // tools.Outcome*
	By      string // "playbook" for the run's own code, "" for the model
}

// Results returns the run's calls of the named tool, in order.
func (r *Run) Results(name string) []ToolResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ToolResult
	for _, c := range r.results {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// Task is the task as the model is given it: the request's, with what the
// persona's code added before the run (Prepare).
func (r *Run) Task() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The caller's text cannot open or close a frame: only what the agent's
	// own code read (the note's evidence) is framed as tool output.
	task := toolOutputTag.ReplaceAllString(r.Req.Task, "<tool_output_")
	if r.note == "" {
		return task
	}
	return task + "\n\n" + r.note
}

type runKey struct{}

// RunFrom returns the run a tool is called in, or nil outside a run.
func RunFrom(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	return r
}

// Log returns the run's logger.
func (r *Run) Log() *zap.Logger { return r.log }

// Store returns the agent's store.
func (r *Run) Store() store.AgentStore { return r.e.opts.Store }

// Agent returns the agent's persona identity.
func (r *Run) Agent() persona.Info { return r.e.opts.Agent }

// ReportFinding records a finding (report_finding, playbooks). Findings
// recorded this way win over every other source.
func (r *Run) ReportFinding(f api.Finding) api.Finding {
	f = normalizeFinding(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, g := range r.reported {
		if g.Key == f.Key {
			r.reported[i] = f
			return f
		}
	}
	r.reported = append(r.reported, f)
	return f
}

// Reported returns the findings recorded so far.
func (r *Run) Reported() []api.Finding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.Finding(nil), r.reported...)
}

// SetAnswer sets the run's answer (playbooks).
func (r *Run) SetAnswer(s string) { r.mu.Lock(); r.answer = s; r.mu.Unlock() }

// SetVerdict sets the run's verdict (playbooks).
func (r *Run) SetVerdict(s string) { r.mu.Lock(); r.verdict = s; r.mu.Unlock() }

// SetChanges records what changed since the code's own previous look
// (a repository review compared with the last one): the result's
// Lifecycle when the run swept no cluster. Never the cluster's finding
// lifecycle, which only sweeps (Observe) change.
func (r *Run) SetChanges(l api.Lifecycle) { r.mu.Lock(); r.changes = &l; r.mu.Unlock() }

// Observe records what the run's sweep saw, for the findings' lifecycle:
// applied when the run ends (the last sweep of a run wins).
func (r *Run) Observe(s Sweep) { r.mu.Lock(); r.sweep = &s; r.mu.Unlock() }

// SetDelegation records a hand-off decision and its outcome.
func (r *Run) SetDelegation(d api.Delegation) { r.mu.Lock(); r.delegation = &d; r.mu.Unlock() }

// Delegation returns the hand-off recorded so far, if any.
func (r *Run) Delegation() *api.Delegation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delegation == nil {
		return nil
	}
	d := *r.delegation
	return &d
}

// Calls returns how many times the run called the named tool.
func (r *Run) Calls(name string) int { r.mu.Lock(); defer r.mu.Unlock(); return r.calls[name] }

// Event appends a trace event. A store failure is logged, never fatal: the
// trace must not fail the run.
func (r *Run) Event(ctx context.Context, typ string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	// The trace is read by the core, its pages and reports: every event
	// (an error's text included) passes the one redaction, value by value
	// so it stays JSON (docs/MANUAL.md, "Redaction").
	raw, _ = redact.JSON(raw)
	r.mu.Lock()
	r.seq++
	ev := store.Event{RunID: r.ID, Seq: r.seq, Time: r.e.now().UTC(), Type: typ, Data: raw}
	r.mu.Unlock()
	if err := r.e.opts.Store.AppendEvents(context.WithoutCancel(ctx), ev); err != nil {
		r.log.Warn("trace event not recorded", zap.String("event", typ), zap.Error(err))
	}
}

// CallTool calls a tool of the run by name through the gated set, records
// tool_call / tool_result (and guard_denied) in the trace, and counts it.
// Args may be a json.RawMessage or any value to marshal.
func (r *Run) CallTool(ctx context.Context, id, name string, args any) (out, outcome string) {
	return r.callTool(ctx, id, name, args, r.e.opts.ToolOutputMax)
}

// callTool is CallTool with the output cut to maxChars (the model loop's
// share of the context window, window.go).
func (r *Run) callTool(ctx context.Context, id, name string, args any, maxChars int) (out, outcome string) {
	start := r.startCall(ctx, id, name, args, "")
	var redacted redact.Counts
	out, outcome = r.nameGate(ctx, name)
	if outcome == "" {
		res := r.Tools.Call(ctx, name, rawArgs(args), maxChars)
		out, outcome, redacted = res.Output, res.Outcome, res.Redacted
		if outcome == tools.OutcomeDenied {
			r.Event(ctx, "guard_denied", map[string]any{"gate": "execution", "tool": name, "message": out})
			r.e.metrics.guardDenials.WithLabelValues("execution").Inc()
		}
	}
	r.finishCall(ctx, id, name, "", args, start, out, outcome, redacted)
	return out, outcome
}

// CallTyped is CallTool for a playbook that needs a tool's structured
// result rather than its text: fn calls the tool's mechanism directly, but
// the call takes the same path as a model's — the tool must be in the run's
// gated set (a playbook cannot reach a tool its agent was not given), the
// mechanism's own execution gate applies, and the call is traced, counted,
// measured and its text redacted and cut to the output budget. The text is
// returned with fn's error.
func (r *Run) CallTyped(ctx context.Context, id, name string, args any, fn func(ctx context.Context) (string, error)) (string, error) {
	start := r.startCall(ctx, id, name, args, "playbook")
	out, outcome := r.nameGate(ctx, name)
	if _, ok := r.Tools.Get(name); !ok && outcome == "" {
		out, outcome = "ERROR: "+name+" is not among this agent's tools (AGENT_TOOLS)", tools.OutcomeUnknown
	}
	var err error
	if outcome != "" {
		err = errors.New(strings.TrimPrefix(out, "ERROR: "))
	} else {
		out, err = fn(ctx)
		outcome = tools.OutcomeOK
		if err != nil {
			outcome, out = tools.OutcomeError, "ERROR: "+err.Error()
			if errors.Is(err, tools.ErrDenied) {
				outcome = tools.OutcomeDenied
				r.Event(ctx, "guard_denied", map[string]any{"gate": "execution", "tool": name, "message": out})
				r.e.metrics.guardDenials.WithLabelValues("execution").Inc()
			}
		}
	}
	out, redacted := redact.String(out)
	out = tools.Truncate(out, r.e.opts.ToolOutputMax)
	r.finishCall(ctx, id, name, "playbook", args, start, out, outcome, redacted)
	return out, err
}

func rawArgs(args any) json.RawMessage {
	switch a := args.(type) {
	case json.RawMessage:
		return a
	case []byte:
		return a
	case string:
		return json.RawMessage(a)
	}
	raw, _ := json.Marshal(args)
	return raw
}

// startCall records tool_call and returns when the call started.
func (r *Run) startCall(ctx context.Context, id, name string, args any, by string) time.Time {
	ev := map[string]any{"id": id, "name": name, "args": rawOrString(rawArgs(args))}
	if by != "" {
		ev["by"] = by
	}
	r.Event(ctx, "tool_call", ev)
	return r.e.now()
}

// nameGate answers the call itself when name is not in the run's set: a
// tool the safety gate removed from an autonomous run is denied, one the
// agent was never given is unknown. "" outcome: the call may proceed.
func (r *Run) nameGate(ctx context.Context, name string) (out, outcome string) {
	if _, ok := r.Tools.Get(name); ok {
		return "", ""
	}
	if _, exists := r.e.opts.Tools.Get(name); exists {
		r.Event(ctx, "guard_denied", map[string]any{"gate": "name", "tool": name, "workflow_type": r.Req.WorkflowType})
		r.e.metrics.guardDenials.WithLabelValues("name").Inc()
		return "ERROR: " + name + " is not available in an autonomous run (" + r.Req.WorkflowType + "); it was removed by the safety gate", tools.OutcomeDenied
	}
	return "", ""
}

// finishCall counts the call, keeps its result for the run's code and
// records tool_result.
func (r *Run) finishCall(ctx context.Context, id, name, by string, args any, start time.Time, out, outcome string, redacted redact.Counts) {
	r.mu.Lock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[name]++
	r.results = append(r.results, ToolResult{ID: id, Name: name, Args: rawArgs(args), Output: out, Outcome: outcome, By: by})
	r.mu.Unlock()
	r.e.metrics.toolCalls.WithLabelValues(metricToolName(r.e.opts.Tools, name), outcome).Inc()
	ev := map[string]any{"id": id, "name": name, "outcome": outcome,
		"output": out, "duration_ms": r.e.now().Sub(start).Milliseconds()}
	if by != "" {
		ev["by"] = by
	}
	if redacted.Total() > 0 {
		// How many values of which kind, never the values (docs/MANUAL.md, "Redaction").
		ev["redacted"] = redacted
		r.e.metrics.redacted(redacted)
	}
	r.Event(ctx, "tool_result", ev)
}

// metricToolName keeps the label bounded: a name the model invented is
// counted as "unknown".
func metricToolName(all tools.Set, name string) string {
	if _, ok := all.Get(name); ok {
		return name
	}
	return "unknown"
}

func rawOrString(raw []byte) any {
	if json.Valid(raw) {
		return json.RawMessage(raw)
	}
	return string(raw)
}

// Done is closed when the run has finished and its record is written.
func (r *Run) Done() <-chan struct{} { return r.done }

// Result returns the final result; valid after Done.
func (r *Run) Result() api.RunResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result
}

// Wait blocks until the run finishes or ctx ends.
func (r *Run) Wait(ctx context.Context) (api.RunResult, error) {
	select {
	case <-r.done:
		return r.Result(), nil
	case <-ctx.Done():
		return api.RunResult{}, context.Cause(ctx)
	}
}

// ErrCanceled is the cause of a run cancelled by request (A2A tasks/cancel).
var ErrCanceled = errors.New("run canceled by request")

// Cancel asks the run to stop; it finishes as failed with ErrCanceled.
func (r *Run) Cancel() {
	if r.cancel != nil {
		r.cancel(ErrCanceled)
	}
}

// CancelFor is Cancel saying why: a caller that stopped waiting ends the
// run it waited for (docs/ARCHITECTURE.md, "The time budget").
func (r *Run) CancelFor(why string) {
	if r.cancel != nil {
		r.cancel(fmt.Errorf("%w: %s", ErrCanceled, why))
	}
}

// Budget returns the run's time budget.
func (r *Run) Budget() Budget { return r.budget }

// BudgetSpent reports whether the run's budget, or the model's share of
// it, ran out before the run finished.
func (r *Run) BudgetSpent() bool { return r.spent.Load() }

// Finished reports whether the run has finished.
func (r *Run) Finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Delegator sends a finding to another agent (A2A delegate_task).
type Delegator interface {
	Delegate(ctx context.Context, r *Run, to string, f api.Finding, instruction string) api.Delegation
}

// Delegate hands f to the agent to (a slug or persona name) through the
// engine's Delegator, records the outcome on the run and returns it. Without
// a Delegator the decision is recorded as not sent.
func (r *Run) Delegate(ctx context.Context, to string, f api.Finding, instruction string) api.Delegation {
	var d api.Delegation
	if r.e.opts.Delegator == nil {
		d = api.Delegation{To: to, Finding: f, Error: "no A2A delegator configured: decision recorded, not sent"}
	} else {
		d = r.e.opts.Delegator.Delegate(ctx, r, to, f, instruction)
	}
	r.SetDelegation(d)
	return d
}
