package pulse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// DigestTitle opens a PULSE.md task that is the morning digest (docs/MANUAL.md,
// "The morning digest"): the pulse builds it in code, never with a model.
const DigestTitle = "Morning digest"

// IsDigest reports whether a pulse task's text is the morning digest.
func IsDigest(text string) bool { return strings.HasPrefix(strings.TrimSpace(text), DigestTitle) }

// DigestFunc builds the morning digest of what changed since since
// (lifecycle.Digest over the agent's store and GitOps repository).
type DigestFunc func(ctx context.Context, since, now time.Time) (report.Report, error)

// DigestWindow is what "since yesterday" means in the digest.
const DigestWindow = 24 * time.Hour

// runDigest builds the morning digest in code and posts it once per day:
// its report's dedupe key is the task's key and the date (UTC), and any
// post of that key today counts, so a second run that day — the timer or
// POST /pulse — posts nothing. The task's state is recorded like a run's.
func (s *Scheduler) runDigest(ctx context.Context, log *zap.Logger, task Task, started time.Time, res TickResult) (TickResult, error) {
	rctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), s.o.Timeout,
		fmt.Errorf("the digest exceeded PULSE_TIMEOUT (%s)", s.o.Timeout))
	defer cancel()
	rep, err := s.o.Digest(rctx, started.Add(-DigestWindow), started)
	finished := s.o.Now().UTC()
	result := api.RunResult{Agent: s.o.Agent, WorkflowType: api.WorkflowPulseTask, Status: api.StatusCompleted,
		Verdict: "digest", StartedAt: started, FinishedAt: &finished, Findings: []api.Finding{}}
	if err != nil {
		result.Status, result.Error = api.StatusFailed, err.Error()
	} else {
		result.Answer = report.Render(rep).Body()
	}
	res.Outcome, res.Result = OutcomeRan, &result
	s.m.runs.WithLabelValues(string(task.Cadence), result.Status).Inc()
	st := store.PulseState{Agent: s.o.Agent, Task: task.Key, LastRun: started, Outcome: result.Status}
	if serr := s.o.Store.SetPulseState(context.WithoutCancel(ctx), st); serr != nil {
		log.Error("pulse state not saved; the digest will be due again (its post stays once a day)", zap.Error(serr))
	}
	out := ReportResult{Reason: "the digest could not be built: " + result.Error}
	if err == nil {
		out = s.postDigest(rctx, task, rep, started)
	}
	res.Report = &out
	res.Message = fmt.Sprintf("ran task %d (%s, the morning digest): %s; %s", task.Index, task.Cadence, result.Status, out.Reason)
	log.Info("morning digest", zap.String("status", result.Status), zap.Bool("report_posted", out.Posted), zap.String("report", out.Reason))
	return res, nil
}

func (s *Scheduler) postDigest(ctx context.Context, task Task, rep report.Report, now time.Time) ReportResult {
	if s.o.Reporter == nil {
		return ReportResult{Reason: "no report target configured"}
	}
	day := now.UTC().Truncate(24 * time.Hour)
	ocs := s.o.Reporter.Deliver(ctx, task.Key+"/"+day.Format("2006-01-02"), rep, report.DeliverOptions{PostedSince: day})
	return resultOf(ocs)
}
