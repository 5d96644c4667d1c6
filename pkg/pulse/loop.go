package pulse

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Loop is the timer: after StartDelay, run the next due task, then sleep
// Interval, until ctx ends; then it gives the pulse lock back. A run in
// progress when ctx ends is not cancelled by Loop (the engine drains it).
// Without Enabled, Loop returns at once.
func (s *Scheduler) Loop(ctx context.Context) {
	if !s.o.Enabled {
		s.log.Info("pulse timer disabled (PULSE_ENABLED=false); POST /pulse still runs tasks")
		return
	}
	s.log.Info("pulse timer started", zap.Duration("interval", s.o.Interval), zap.Duration("timeout", s.o.Timeout),
		zap.Duration("start_delay", s.o.StartDelay), zap.Int("tasks", len(s.o.Tasks)), zap.String("holder", s.o.Holder))
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); s.heartbeat(hbCtx) }()
	defer func() {
		stopHeartbeat()
		<-hbDone
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.Release(rctx); err != nil {
			s.log.Warn("pulse lock not released; another replica takes over when it expires", zap.Error(err))
		}
		s.mu.Lock()
		s.nextTick = time.Time{}
		s.mu.Unlock()
		s.log.Info("pulse timer stopped")
	}()
	wait := s.o.StartDelay
	for {
		s.mu.Lock()
		s.nextTick = s.o.Now().Add(wait).UTC()
		s.mu.Unlock()
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.o.After(wait):
			}
		}
		if ctx.Err() != nil {
			return
		}
		res, err := s.RunNext(ctx, TriggerTimer)
		switch {
		case errors.Is(err, ErrBusy):
			s.log.Info("pulse tick skipped: a task is still running", zap.Error(err))
		case errors.Is(err, ErrNotLeader):
			s.log.Debug("pulse tick skipped: not the leader")
		case err != nil:
			s.log.Warn("pulse tick failed", zap.Error(err))
		default:
			s.log.Debug("pulse tick", zap.String("outcome", res.Outcome), zap.String("message", res.Message))
		}
		wait = s.o.Interval
	}
}

// heartbeat renews the pulse lock every RenewEvery until ctx ends, through
// runs and sleeps alike, so leadership does not lapse between ticks and a
// dead leader's lock expires within LockTTL.
func (s *Scheduler) heartbeat(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.o.RenewAfter(s.o.RenewEvery):
			rctx, cancel := context.WithTimeout(ctx, s.o.RenewEvery)
			if _, err := s.lock(rctx); err != nil {
				s.log.Warn("pulse lock renewal failed", zap.Error(err))
			}
			cancel()
		}
	}
}

// TaskStatus is one task as GET /pulse shows it.
type TaskStatus struct {
	Task
	LastRun *time.Time `json:"last_run"`
	Outcome string     `json:"outcome"`
	RunID   string     `json:"run_id"`
	// NextDue is when the task is due (now, for a task that never ran).
	NextDue time.Time `json:"next_due"`
	Due     bool      `json:"due"`
}

// Status is GET /pulse.
type Status struct {
	Agent           string  `json:"agent"`
	Enabled         bool    `json:"enabled"`
	Interval        string  `json:"interval"`
	IntervalSeconds float64 `json:"interval_seconds"`
	Timeout         string  `json:"timeout"`
	TimeoutSeconds  float64 `json:"timeout_seconds"`
	// Leader is this replica's last answer from the pulse lock (as of
	// LeaderCheckedAt; null when it never asked).
	Leader bool   `json:"leader"`
	Holder string `json:"holder"`
	// Leadership is how leaders are chosen: "store lock" or "lease ns/name".
	Leadership      string       `json:"leadership"`
	LeaderCheckedAt *time.Time   `json:"leader_checked_at"`
	LockTTL         string       `json:"lock_ttl"`
	LockError       string       `json:"lock_error,omitempty"`
	Running         *Running     `json:"running"`
	LastTick        *TickResult  `json:"last_tick"`
	NextTick        *time.Time   `json:"next_tick"`
	Tasks           []TaskStatus `json:"tasks"`
	StateError      string       `json:"state_error,omitempty"`
}

// Status reports the tasks with their recorded state and the effective
// settings. A store error is reported in StateError, not returned.
func (s *Scheduler) Status(ctx context.Context) Status {
	now := s.o.Now().UTC()
	st := Status{
		Agent: s.o.Agent, Enabled: s.o.Enabled, Holder: s.o.Holder, Leadership: s.Leadership(),
		Interval: s.o.Interval.String(), IntervalSeconds: s.o.Interval.Seconds(),
		Timeout: s.o.Timeout.String(), TimeoutSeconds: s.o.Timeout.Seconds(),
		LockTTL: s.o.LockTTL.String(), Tasks: []TaskStatus{},
	}
	s.mu.Lock()
	st.Leader, st.LockError = s.leader, s.lockError
	if !s.leaderAt.IsZero() {
		t := s.leaderAt
		st.LeaderCheckedAt = &t
	}
	if s.running != nil {
		r := *s.running
		st.Running = &r
	}
	if s.lastTick != nil {
		lt := *s.lastTick
		st.LastTick = &lt
	}
	if !s.nextTick.IsZero() {
		nt := s.nextTick
		st.NextTick = &nt
	}
	s.mu.Unlock()

	list, err := s.o.Store.PulseStates(ctx, s.o.Agent)
	if err != nil {
		st.StateError = err.Error()
	}
	states := StatesByKey(list)
	for _, t := range s.o.Tasks {
		ps, ran := states[t.Key]
		ts := TaskStatus{Task: t, NextDue: now, Due: true}
		if ran {
			lr := ps.LastRun.UTC()
			ts.LastRun, ts.Outcome, ts.RunID = &lr, ps.Outcome, ps.RunID
			ts.NextDue = NextDue(t, ps, true, s.o.FailedRetry).UTC()
			ts.Due = !now.Before(ts.NextDue)
		}
		st.Tasks = append(st.Tasks, ts)
	}
	return st
}

// Metrics are the pulse metrics.
type Metrics struct {
	ticks *prometheus.CounterVec
	runs  *prometheus.CounterVec
}

// NewMetrics registers kubecrew_pulse_ticks_total{outcome} and
// kubecrew_pulse_task_runs_total{cadence,status} on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_pulse_ticks_total",
			Help: "Pulse ticks (timer and POST /pulse) by outcome: ran, unchanged (ran without a model call: the last tick's problems), nothing_due, busy, not_leader, error.",
		}, []string{"outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecrew_pulse_task_runs_total",
			Help: "Pulse task runs by cadence and final status (completed, partial, failed, not_started).",
		}, []string{"cadence", "status"}),
	}
	if reg != nil {
		reg.MustRegister(m.ticks, m.runs)
	}
	// every known series from the start, at 0
	for _, o := range []string{OutcomeRan, OutcomeUnchanged, OutcomeNothingDue, OutcomeBusy, OutcomeNotLeader, OutcomeError} {
		m.ticks.WithLabelValues(o)
	}
	for _, c := range []Cadence{Continuous, Daily, Weekly} {
		for _, s := range []string{"completed", "partial", "failed", "not_started"} {
			m.runs.WithLabelValues(string(c), s)
		}
	}
	return m
}
