package pulseserver

import (
	"context"
	"fmt"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// EngineRunner runs pulse tasks on the engine: Start, then Wait until the
// run ends or the pulse timeout (ctx) does; then it cancels the run and
// waits, at most Grace, for it to finish and record its result.
type EngineRunner struct {
	Engine *engine.Engine
	Grace  time.Duration // default 30s
}

var _ pulse.Runner = EngineRunner{}

// Run implements pulse.Runner.
func (e EngineRunner) Run(ctx context.Context, req api.RunRequest) (api.RunResult, error) {
	// The pulse timeout is the run's budget: the run ends inside it with
	// its best report (docs/ARCHITECTURE.md, "The time budget").
	// (Too short a timeout for a budget leaves the cancel below to end it.)
	budget, ok := api.BudgetOf(ctx, time.Now(), 0)
	if ok && budget >= api.MinBudget && req.BudgetMS == 0 {
		req.BudgetMS = api.Millis(budget)
	}
	run, err := e.Engine.Start(ctx, req)
	if err != nil {
		return api.RunResult{}, err
	}
	res, err := run.Wait(ctx)
	if err == nil {
		if run.BudgetSpent() {
			res.Error = fmt.Sprintf("PULSE_TIMEOUT bounds a pulse run (its budget_ms was %d): %s", req.BudgetMS, res.Error)
		}
		return res, nil
	}
	cause := context.Cause(ctx)
	run.Cancel()
	grace := e.Grace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-run.Done():
		res = run.Result()
	case <-t.C:
		now := time.Now().UTC()
		res = api.RunResult{RunID: run.ID, Agent: e.Engine.Agent().Slug, WorkflowType: req.WorkflowType,
			Status: api.StatusFailed, StartedAt: run.Started, FinishedAt: &now, Findings: []api.Finding{},
			Error: fmt.Sprintf("the run did not stop within %s of being cancelled", grace)}
	}
	if cause != nil {
		// The engine records "canceled by request"; say why it was.
		res.Error = cause.Error() + "; " + res.Error
	}
	return res, nil
}

// ReportTool is post_report bound to the engine: it posts the calling run's
// recorded findings and the model's summary through d, under the run's
// pulse task key when it is a pulse run.
func ReportTool(d *report.Deliverer) tools.Tool {
	return report.PostReportTool(d, func(ctx context.Context) (report.RunInfo, bool) {
		r := engine.RunFrom(ctx)
		if r == nil {
			return report.RunInfo{}, false
		}
		info := report.RunInfo{TaskText: r.Req.Task, Findings: r.Reported()}
		if r.Req.WorkflowType == api.WorkflowPulseTask { // a caller of POST /run cannot borrow a task's dedupe slot
			info.Task = r.Req.Context[pulse.ContextTask]
		}
		return info, true
	})
}
