package pulse_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/store"
)

const pulseMD = `# Noor
## Continuous
- Health sweep and delegation. Call cluster_problems.
- Second continuous check.

## Daily
- Housekeeping. Do not post a report.

## Weekly
- Trend review. post_report it.
`

func tasks(t testing.TB) []pulse.Task {
	t.Helper()
	ts, _, err := pulse.Parse("noor/PULSE.md", []byte(pulseMD))
	if err != nil || len(ts) != 4 {
		t.Fatalf("parse: %v (%d tasks)", err, len(ts))
	}
	return ts
}

var t0 = time.Date(2025, 9, 14, 10, 0, 0, 0, time.UTC)

func TestNextDue(t *testing.T) {
	t.Parallel()
	ts := tasks(t)
	cont, daily, weekly := ts[0], ts[2], ts[3]
	ok := func(at time.Time) store.PulseState {
		return store.PulseState{LastRun: at, Outcome: api.StatusCompleted}
	}
	failed := func(at time.Time) store.PulseState { return store.PulseState{LastRun: at, Outcome: api.StatusFailed} }
	cases := []struct {
		name  string
		task  pulse.Task
		st    store.PulseState
		ran   bool
		retry time.Duration
		want  time.Time
	}{
		{"never ran: due now (zero)", daily, store.PulseState{}, false, time.Hour, time.Time{}},
		{"continuous: due as soon as it ran", cont, ok(t0), true, time.Hour, t0},
		{"daily: 20h after", daily, ok(t0), true, time.Hour, t0.Add(20 * time.Hour)},
		{"weekly: 6 days after", weekly, ok(t0), true, time.Hour, t0.Add(6 * 24 * time.Hour)},
		{"partial counts as a run", daily, store.PulseState{LastRun: t0, Outcome: api.StatusPartial}, true, time.Hour, t0.Add(20 * time.Hour)},
		{"failed daily: retried after an hour", daily, failed(t0), true, time.Hour, t0.Add(time.Hour)},
		{"failed weekly: retried after an hour", weekly, failed(t0), true, time.Hour, t0.Add(time.Hour)},
		{"failed, retry off", weekly, failed(t0), true, -1, t0.Add(6 * 24 * time.Hour)},
		{"failed, retry longer than the period", daily, failed(t0), true, 30 * time.Hour, t0.Add(20 * time.Hour)},
	}
	for _, c := range cases {
		if got := pulse.NextDue(c.task, c.st, c.ran, c.retry); !got.Equal(c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestDueTasksOrder(t *testing.T) {
	t.Parallel()
	ts := tasks(t)
	keys := func(ds []pulse.Due) string {
		var out []string
		for _, d := range ds {
			out = append(out, string(d.Task.Cadence)[:1]+string(rune('0'+d.Task.Index)))
		}
		return strings.Join(out, " ")
	}
	st := func(i int, at time.Time, outcome string) store.PulseState {
		return store.PulseState{Agent: "platform-sre", Task: ts[i].Key, LastRun: at, Outcome: outcome}
	}
	interval := 45 * time.Minute
	cases := []struct {
		name   string
		states []store.PulseState
		now    time.Time
		want   string
	}{
		{"fresh start: all due, file order", nil, t0, "c0 c1 d2 w3"},
		{"never-run first, then most overdue", []store.PulseState{st(0, t0, "completed"), st(3, t0.Add(-7*24*time.Hour), "completed")}, t0.Add(interval),
			"c1 d2 w3 c0"},
		{"continuous tasks alternate", []store.PulseState{
			st(0, t0.Add(interval), "completed"), st(1, t0, "completed"),
			st(2, t0, "completed"), st(3, t0, "completed")}, t0.Add(2 * interval), "c1 c0"},
		{"daily just due: behind a more overdue continuous, ahead of an equally overdue one", []store.PulseState{
			st(0, t0, "completed"), st(1, t0.Add(interval), "completed"),
			st(2, t0.Add(-20*time.Hour).Add(interval), "completed"), st(3, t0, "completed")}, t0.Add(interval + time.Minute),
			"c0 d2 c1"},
		{"daily not yet due at 19h59m", []store.PulseState{st(2, t0, "completed")}, t0.Add(20*time.Hour - time.Minute), "c0 c1 w3"},
		{"daily due at exactly 20h", []store.PulseState{st(0, t0.Add(20*time.Hour), "completed"), st(1, t0.Add(20*time.Hour), "completed"), st(2, t0, "completed"), st(3, t0.Add(20*time.Hour), "completed")},
			t0.Add(20 * time.Hour), "d2 c0 c1"},
		{"weekly due after 6 days, overdue first", []store.PulseState{
			st(0, t0.Add(6*24*time.Hour+30*time.Minute), "completed"), st(1, t0.Add(6*24*time.Hour+30*time.Minute), "completed"),
			st(2, t0.Add(6*24*time.Hour), "completed"), st(3, t0, "completed")}, t0.Add(6*24*time.Hour + time.Hour), "w3 c0 c1"},
		{"on a tie the rarer cadence first", []store.PulseState{
			st(0, t0.Add(20*time.Hour), "completed"), st(1, t0.Add(20*time.Hour), "completed"),
			st(2, t0, "completed"), st(3, t0.Add(-6*24*time.Hour+20*time.Hour), "completed")}, t0.Add(40 * time.Hour), "w3 d2 c0 c1"},
		{"failed weekly due again after the retry", []store.PulseState{
			st(0, t0.Add(90*time.Minute), "completed"), st(1, t0.Add(90*time.Minute), "completed"),
			st(2, t0.Add(90*time.Minute), "completed"), st(3, t0, "failed")}, t0.Add(90 * time.Minute), "w3 c0 c1"},
		{"states of other (reworded) tasks are ignored", []store.PulseState{{Agent: "platform-sre", Task: "daily-000000000000", LastRun: t0}}, t0, "c0 c1 d2 w3"},
	}
	for _, c := range cases {
		got := keys(pulse.DueTasks(ts, pulse.StatesByKey(c.states), c.now, time.Hour))
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestReportDecision(t *testing.T) {
	t.Parallel()
	bad := []api.Finding{{Severity: "high", Namespace: "a", Kind: "Pod", Name: "b", Reason: "BackOff"}}
	cases := []struct {
		c    pulse.Cadence
		res  api.RunResult
		want bool
	}{
		{pulse.Continuous, api.RunResult{Status: "completed"}, false},
		{pulse.Continuous, api.RunResult{Status: "completed", Findings: bad}, true},
		{pulse.Continuous, api.RunResult{Status: "partial", Findings: bad}, true},
		{pulse.Continuous, api.RunResult{Status: "failed"}, false},
		{pulse.Daily, api.RunResult{Status: "completed", Findings: bad}, false},
		{pulse.Weekly, api.RunResult{Status: "completed", Findings: bad}, true},
		{pulse.Weekly, api.RunResult{Status: "completed", Answer: "trend text"}, false},
		// healthy now, but a finding went away: the report says so
		{pulse.Continuous, api.RunResult{Status: "completed", Lifecycle: &api.Lifecycle{Complete: true,
			Changes: []api.LifecycleChange{{Change: api.ChangeResolved, Finding: bad[0]}}}}, true},
		{pulse.Continuous, api.RunResult{Status: "completed", Lifecycle: &api.Lifecycle{Complete: true}}, false},
	}
	for _, c := range cases {
		if got, why := pulse.ReportDecision(c.c, c.res); got != c.want || why == "" && !got {
			t.Errorf("%s %s findings=%d: %v (%s), want %v", c.c, c.res.Status, len(c.res.Findings), got, why, c.want)
		}
	}
}
