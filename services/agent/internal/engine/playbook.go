package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Playbook is a persona's deterministic behaviour: what it does without a
// model, and the fallback when the model is down.
type Playbook interface {
	Run(ctx context.Context, r *Run) error
}

// InCode is a Playbook that also answers some requests with a model
// configured: work that is code's by design (the weekly repository review,
// docs/MANUAL.md "Deploy-path review"), never the model's to redo or skip.
type InCode interface {
	Playbook
	InCode(req api.RunRequest) bool
}

// PlaybookFunc adapts a function to Playbook.
type PlaybookFunc func(ctx context.Context, r *Run) error

// Run calls f.
func (f PlaybookFunc) Run(ctx context.Context, r *Run) error { return f(ctx, r) }

func (e *Engine) runDeterministic(ctx context.Context, r *Run) outcome {
	if e.opts.Playbook == nil {
		msg := fmt.Sprintf("%s has no deterministic playbook for this task; set LLM_BASE_URL and AGENT_MODEL to run it with a model", r.Agent().Name)
		// The task was not done: failed, saying why, never completed.
		return outcome{status: api.StatusFailed, answer: msg, verdict: "unsupported", err: errors.New(msg)}
	}
	if err := e.opts.Playbook.Run(ctx, r); err != nil {
		return outcome{status: fallbackStatus(err), err: err}
	}
	return outcome{status: api.StatusCompleted}
}

// Partial is a playbook's error for a task done in part (some files could
// not be read, some checks could not run): the run ends partial with the
// reason, and what the playbook answered and found is kept. Any other
// error fails the run; nil completes it.
type Partial struct{ Reason string }

func (p *Partial) Error() string { return p.Reason }
