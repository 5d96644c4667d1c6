package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pulse"
)

// Prepare is a persona's code that runs before a model run (the persona's
// duties kept in code, docs/MANUAL.md "Model cost"): it may narrow the task
// (Vera's pick of the PR to review), answer it without the model (nothing
// to review), or fingerprint the state a pulse task judges (Noor's
// problem set) so an unchanged tick skips the model.
type Prepare func(ctx context.Context, r *Run) (Prep, error)

// Prep is what Prepare found.
type Prep struct {
	// Note is added to the task the model is given.
	Note string
	// Done: the run is answered in code (answer, verdict and findings set
	// on the run); the model is not called.
	Done bool
	// Digest fingerprints the state a pulse task judges ("" none). When it
	// equals the last tick's and that tick left nothing pending, the model
	// is not called: Findings are reported and the verdict is unchanged.
	Digest   string
	Findings []api.Finding
	// Summary describes the state in a line (the unchanged answer).
	Summary string
}

// pulseMark is the state a pulse task's last model run judged.
type pulseMark struct {
	digest string
	runID  string
	at     time.Time
}

// pulseMarks remembers, per pulse task, the digest of the last tick whose
// run ended completed and delegated nothing. It lives in the process: after
// a restart (or a change of pulse leader) the first tick pays a model run.
type pulseMarks struct {
	mu sync.Mutex
	m  map[string]pulseMark
}

func (p *pulseMarks) get(task string) (pulseMark, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.m[task]
	return m, ok
}

func (p *pulseMarks) set(task string, m pulseMark, keep bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]pulseMark{}
	}
	if keep {
		p.m[task] = m
	} else {
		delete(p.m, task)
	}
}

// prepare runs the persona's Prepare before a model run. done: the run is
// answered (in code, or unchanged since the last tick) and o is its
// outcome. A Prepare that fails is traced and the model runs as usual.
func (e *Engine) prepare(ctx context.Context, r *Run) (o outcome, done bool) {
	if e.opts.Prepare == nil {
		return outcome{}, false
	}
	p, err := e.opts.Prepare(ctx, r)
	if err != nil {
		r.log.Warn("prepare failed; the model runs without it", zap.Error(err))
		r.Event(ctx, "prepare", map[string]any{"error": err.Error()})
		return outcome{}, false
	}
	r.mu.Lock()
	r.note, r.digest = p.Note, p.Digest
	r.mu.Unlock()
	r.Event(ctx, "prepare", map[string]any{"note": p.Note, "done": p.Done, "digest": p.Digest})
	if p.Done {
		return outcome{status: api.StatusCompleted}, true
	}
	task := r.Req.Context[pulse.ContextTask]
	if p.Digest == "" || r.Req.WorkflowType != api.WorkflowPulseTask || task == "" {
		return outcome{}, false
	}
	last, ok := e.marks.get(task)
	if !ok || last.digest != p.Digest {
		return outcome{}, false
	}
	for _, f := range p.Findings {
		r.ReportFinding(f)
	}
	r.SetVerdict(api.VerdictUnchanged)
	r.SetAnswer(fmt.Sprintf("Unchanged since the last tick (run %s at %s): %s The model was not called.",
		last.runID, last.at.Format(time.RFC3339), p.Summary))
	r.Event(ctx, "pulse_unchanged", map[string]any{"digest": p.Digest, "since_run": last.runID, "findings": len(p.Findings)})
	e.metrics.pulseUnchanged.Inc()
	return outcome{status: api.StatusCompleted}, true
}

// markPulse remembers what a pulse run judged: a tick that ended completed
// and delegated nothing is the base the next tick compares with; any other
// (partial, failed, a delegation made or tried) leaves work pending, so the
// next tick runs the model. An unchanged tick keeps the mark it matched.
func (e *Engine) markPulse(r *Run, res api.RunResult) {
	task := r.Req.Context[pulse.ContextTask]
	r.mu.Lock()
	digest := r.digest
	r.mu.Unlock()
	if digest == "" || r.Req.WorkflowType != api.WorkflowPulseTask || task == "" || res.Verdict == api.VerdictUnchanged {
		return
	}
	keep := res.Status == api.StatusCompleted && res.Delegation == nil && r.Calls("delegate_task") == 0
	e.marks.set(task, pulseMark{digest: digest, runID: r.ID, at: r.Started}, keep)
}
