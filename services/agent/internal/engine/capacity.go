package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Capacity (docs/ARCHITECTURE.md, "Capacity"): an agent runs at most
// Options.MaxConcurrentRuns runs at once (AGENT_MAX_CONCURRENT_RUNS; 0 = no
// limit) and one alert run at a time. A run over either is not started: Start
// returns an *api.BusyError saying what is full and when a slot should
// free (expectedLeftLocked: from how long recent runs took, never past a
// run's budget), which POST /run answers as 429 with Retry-After and A2A as
// a busy error.

// admitLocked refuses req when the agent is full. e.mu is held.
func (e *Engine) admitLocked(req api.RunRequest) error {
	now := e.now()
	if req.WorkflowType == api.WorkflowAlert {
		for _, r := range e.running {
			if r.Req.WorkflowType == api.WorkflowAlert {
				return &api.BusyError{
					Reason:     fmt.Sprintf("%s is already investigating an alert (run %s); alert runs are one at a time", e.opts.Agent.Slug, r.ID),
					RetryAfter: e.expectedLeftLocked(r, now),
				}
			}
		}
	}
	if max := e.opts.MaxConcurrentRuns; max > 0 && len(e.running) >= max {
		soonest := time.Duration(-1)
		for _, r := range e.running {
			if l := e.expectedLeftLocked(r, now); soonest < 0 || l < soonest {
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

// recentRuns is how many finished runs' durations estimate when a slot
// frees.
const recentRuns = 16

// release frees r's slot and keeps how long it took.
func (e *Engine) release(r *Run) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.running, r.ID)
	e.recordTookLocked(e.now().Sub(r.Started))
}

// recordTookLocked keeps a finished run's duration. e.mu is held.
func (e *Engine) recordTookLocked(d time.Duration) {
	if len(e.took) == recentRuns {
		copy(e.took, e.took[1:])
		e.took = e.took[:recentRuns-1]
	}
	e.took = append(e.took, d)
}

// expectedLeftLocked is how long r should still take: the longest of the
// recent runs less r's time so far (at least a second), never more than
// the rest of its budget; before any run has finished, the rest of its
// budget. A Retry-After of the whole budget (RUN_TIMEOUT, 1200 s) sent
// callers away for twenty minutes when runs take seconds. e.mu is held.
func (e *Engine) expectedLeftLocked(r *Run, now time.Time) time.Duration {
	left := r.left(now)
	if len(e.took) == 0 {
		return left
	}
	return min(left, max(slices.Max(e.took)-now.Sub(r.Started), time.Second))
}
