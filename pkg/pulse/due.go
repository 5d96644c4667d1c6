package pulse

import (
	"cmp"
	"slices"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Periods between runs of a task, by cadence. Continuous tasks are due
// every tick.
const (
	DailyPeriod  = 20 * time.Hour
	WeeklyPeriod = 6 * 24 * time.Hour
)

// DefaultFailedRetry is how soon a daily or weekly task whose last run
// failed is due again (instead of a whole period later).
const DefaultFailedRetry = time.Hour

// Period returns the time between runs of a cadence (0 for continuous).
func Period(c Cadence) time.Duration {
	switch c {
	case Daily:
		return DailyPeriod
	case Weekly:
		return WeeklyPeriod
	}
	return 0
}

// NextDue returns when t is next due given its last recorded state (ran
// false: never ran, due at once, reported as the zero time). A continuous
// task is due again as soon as it ran; a daily one 20 h after its last run,
// a weekly one 6 days after. A daily or weekly task whose last run failed is
// due again after failedRetry when that is sooner (failedRetry <= 0: no
// early retry).
func NextDue(t Task, last store.PulseState, ran bool, failedRetry time.Duration) time.Time {
	if !ran {
		return time.Time{}
	}
	p := Period(t.Cadence)
	if last.Outcome == api.StatusFailed && failedRetry > 0 && failedRetry < p {
		p = failedRetry
	}
	return last.LastRun.Add(p)
}

// Due is one task that is due, with why.
type Due struct {
	Task     Task
	NeverRan bool
	// Overdue is how long past its due time the task is (0 when it never ran).
	Overdue time.Duration
}

// DueTasks returns the tasks due at now, the one to run first first:
// tasks that never ran (in file order), then by how overdue they are (most
// first; on a tie the rarer cadence first, then file order). states are the
// agent's recorded states by task key.
func DueTasks(tasks []Task, states map[string]store.PulseState, now time.Time, failedRetry time.Duration) []Due {
	var out []Due
	for _, t := range tasks {
		st, ran := states[t.Key]
		next := NextDue(t, st, ran, failedRetry)
		if ran && now.Before(next) {
			continue
		}
		d := Due{Task: t, NeverRan: !ran}
		if ran {
			d.Overdue = now.Sub(next)
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b Due) int {
		if a.NeverRan != b.NeverRan {
			if a.NeverRan {
				return -1
			}
			return 1
		}
		if a.NeverRan {
			return cmp.Compare(a.Task.Index, b.Task.Index)
		}
		return cmp.Or(cmp.Compare(b.Overdue, a.Overdue), cmp.Compare(Period(b.Task.Cadence), Period(a.Task.Cadence)),
			cmp.Compare(a.Task.Index, b.Task.Index))
	})
	return out
}

// StatesByKey indexes states by task key.
func StatesByKey(states []store.PulseState) map[string]store.PulseState {
	m := make(map[string]store.PulseState, len(states))
	for _, s := range states {
		m[s.Task] = s
	}
	return m
}
