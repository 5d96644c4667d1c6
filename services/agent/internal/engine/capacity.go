package engine

import (
	"fmt"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Capacity (docs/ARCHITECTURE.md, "Capacity"): an agent runs at most
// Options.MaxConcurrentRuns runs at once (AGENT_MAX_CONCURRENT_RUNS; 0 = no
// limit) and one alert run at a time. A run over either is not started: Start
// returns an *api.BusyError saying what is full and when a slot should
// free (the soonest end of a run's budget), which POST /run answers as 429
// with Retry-After and A2A as a busy error.

// admitLocked refuses req when the agent is full. e.mu is held.
func (e *Engine) admitLocked(req api.RunRequest) error {
	now := e.now()
	if req.WorkflowType == api.WorkflowAlert {
		for _, r := range e.running {
			if r.Req.WorkflowType == api.WorkflowAlert {
				return &api.BusyError{
					Reason:     fmt.Sprintf("%s is already investigating an alert (run %s); alert runs are one at a time", e.opts.Agent.Slug, r.ID),
					RetryAfter: r.left(now),
				}
			}
		}
	}
	if max := e.opts.MaxConcurrentRuns; max > 0 && len(e.running) >= max {
		soonest := time.Duration(-1)
		for _, r := range e.running {
			if l := r.left(now); soonest < 0 || l < soonest {
				soonest = l
			}
		}
		return &api.BusyError{
			Reason:     fmt.Sprintf("%s has %d runs in flight (AGENT_MAX_CONCURRENT_RUNS=%d)", e.opts.Agent.Slug, len(e.running), max),
			RetryAfter: soonest,
		}
	}
	return nil
}

// left is how long the run may still take: the rest of its budget.
func (r *Run) left(now time.Time) time.Duration {
	return max(r.Started.Add(r.budget.Total).Sub(now), 0)
}
