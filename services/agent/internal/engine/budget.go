package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// The run's time budget (docs/ARCHITECTURE.md, "The time budget"): the
// least of RUN_TIMEOUT and the caller's budget_ms less the report margin.
// With a model and a playbook, the model loop gets the budget less the
// playbook's reserve; when that share runs out, the playbook answers in the
// reserve, so a run that ran out of time still ends with a report.

// maxPlaybookReserve bounds PlaybookReserve.
const maxPlaybookReserve = 2 * time.Minute

// PlaybookReserve is the part of a run budget d kept for the deterministic
// playbook when the model loop uses up its share: a fifth, at most 2m.
func PlaybookReserve(d time.Duration) time.Duration {
	return min(d/5, maxPlaybookReserve)
}

// Budget is one run's time budget.
type Budget struct {
	// Total bounds the whole run.
	Total time.Duration
	// Source says what set Total: RUN_TIMEOUT or the caller's budget_ms.
	Source string
	// Model is the model loop's share (Total less the playbook's reserve);
	// 0 when nothing stands behind the model (no playbook, or no model).
	Model time.Duration
}

// BudgetError is the cause of a run, or of its model loop, ending because
// its budget ran out.
type BudgetError struct {
	Budget Budget
	// ModelShare is set when only the model loop's share ran out.
	ModelShare bool
}

func (b *BudgetError) Error() string {
	if b.ModelShare {
		return fmt.Sprintf("the model's share (%s) of the run budget (%s, %s) ran out",
			b.Budget.Model.Round(time.Millisecond), b.Budget.Total.Round(time.Millisecond), b.Budget.Source)
	}
	return fmt.Sprintf("the run budget (%s, %s) ran out", b.Budget.Total.Round(time.Millisecond), b.Budget.Source)
}

// BudgetFor is the budget a run of req gets (/info shows it for a run
// bounded by RUN_TIMEOUT alone).
func (e *Engine) BudgetFor(req api.RunRequest) Budget {
	b := Budget{Total: e.opts.RunTimeout, Source: "RUN_TIMEOUT"}
	if req.BudgetMS > 0 {
		caller := time.Duration(req.BudgetMS) * time.Millisecond
		if c := caller - api.Margin(caller); c < b.Total {
			b.Total = c
			b.Source = fmt.Sprintf("the caller's budget_ms %d less the report margin", req.BudgetMS)
		}
	}
	if e.opts.Model != nil && e.opts.Playbook != nil {
		b.Model = b.Total - PlaybookReserve(b.Total)
	}
	return b
}

// validateBudget refuses a budget no run can keep.
func validateBudget(ms int64) error {
	switch {
	case ms < 0:
		return &ValidationError{"budget_ms must not be negative"}
	case ms > 0 && ms < api.MinBudget.Milliseconds():
		return &ValidationError{fmt.Sprintf("budget_ms %d is below the minimum of %d: no report can be written in that time",
			ms, api.MinBudget.Milliseconds())}
	}
	return nil
}

// runModelWithin runs the model loop within its share of the budget; when
// the share runs out while the run's own budget holds, the persona's
// playbook answers.
func (e *Engine) runModelWithin(ctx context.Context, r *Run) outcome {
	if r.budget.Model <= 0 {
		return e.runModel(ctx, r)
	}
	spent := &BudgetError{Budget: r.budget, ModelShare: true}
	mctx, cancel := context.WithTimeoutCause(ctx, r.budget.Model, spent)
	defer cancel()
	o := e.runModel(mctx, r)
	if mctx.Err() == nil || ctx.Err() != nil || !errors.Is(context.Cause(mctx), spent) {
		return o
	}
	return e.budgetFallback(ctx, r, o, spent)
}

// budgetFallback runs the playbook after the model's share of the budget
// ran out: the run ends partial, saying why, with the playbook's report.
func (e *Engine) budgetFallback(ctx context.Context, r *Run, o outcome, spent *BudgetError) outcome {
	r.spent.Store(true)
	reason := fmt.Sprintf("%s after %d model calls; the deterministic playbook answered", spent, o.iterations)
	r.Event(ctx, "budget_spent", map[string]any{"budget_ms": r.budget.Total.Milliseconds(),
		"model_share_ms": r.budget.Model.Milliseconds(), "source": r.budget.Source, "iterations": o.iterations})
	r.Event(ctx, "fallback_playbook", map[string]any{"reason": reason})
	if err := e.opts.Playbook.Run(ctx, r); err != nil {
		o.status, o.err = fallbackStatus(err), errors.Join(spent, fmt.Errorf("deterministic playbook: %w", err))
		return o
	}
	o.status, o.err = api.StatusPartial, errors.New(reason)
	return o
}
