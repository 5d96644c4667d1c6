package pulse

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Runner runs one task to its end (the engine: Start, then Wait). ctx
// carries the pulse timeout; when it ends the runner must stop the run and
// still return its result.
type Runner interface {
	Run(ctx context.Context, req api.RunRequest) (api.RunResult, error)
}

// Leader decides whether this replica pulses: with several replicas only
// the leader does (docs/ARCHITECTURE.md). The default is the store's pulse lock;
// in a cluster the agent uses a Lease (NewLease).
type Leader interface {
	// Lead reports whether this replica leads now. The store lock is
	// taken or renewed here; a Lease answers from its elector.
	Lead(ctx context.Context) (bool, error)
	// Release gives leadership back (shutdown), so another replica takes
	// over at once instead of after the lock's lifetime.
	Release(ctx context.Context) error
}

// Reporter delivers reports (report.Deliverer).
type Reporter interface {
	Deliver(ctx context.Context, task string, r report.Report, o report.DeliverOptions) []report.Outcome
}

// Context keys a pulse run carries.
const (
	ContextTask    = "pulse_task" // the task's key
	ContextCadence = "cadence"
	ContextTrigger = "pulse_trigger" // timer|http
)

// Triggers.
const (
	TriggerTimer = "timer"
	TriggerHTTP  = "http"
)

// Tick outcomes (kubecrew_pulse_ticks_total{outcome}).
const (
	OutcomeRan = "ran"
	// OutcomeUnchanged: the task ran and found the last tick's problems,
	// so the agent did not call its model (verdict unchanged).
	OutcomeUnchanged  = "unchanged"
	OutcomeNothingDue = "nothing_due"
	OutcomeBusy       = "busy"
	OutcomeNotLeader  = "not_leader"
	OutcomeError      = "error"
)

// DefaultLockTTL is the default lifetime of pulse leadership without
// renewal.
const DefaultLockTTL = 2 * time.Minute

// Errors of RunNext and RunTask.
var (
	ErrBusy        = errors.New("a pulse task is already running")
	ErrNotLeader   = errors.New("another replica holds the pulse lock")
	ErrUnknownTask = errors.New("no such pulse task")
)

// Options are the scheduler's dependencies and settings.
type Options struct {
	// Agent is the agent's slug: the key of its pulse states and lock.
	Agent string
	// Holder names this replica in the pulse lock (pod name + random).
	Holder string
	Tasks  []Task
	Store  store.PulseStore
	// Leader decides leadership; nil: the store's pulse lock
	// (Store.TryPulseLock with LockTTL, renewed by the timer).
	Leader Leader
	Runner Runner
	// Reporter posts reports; nil: none are posted.
	Reporter Reporter
	// Digest builds the morning digest (a task whose text opens with
	// DigestTitle) in code, without a run; nil: such a task runs like any
	// other.
	Digest DigestFunc
	// Interval is the sleep between ticks; Timeout bounds one run.
	Interval time.Duration
	Timeout  time.Duration
	// LockTTL is how long leadership lasts without renewal (default
	// DefaultLockTTL). The timer renews it every RenewEvery (default a
	// third of it) while it runs, through runs and sleeps, so a dead
	// leader is replaced within about LockTTL. With a Leader, the timer
	// asks it every RenewEvery instead (GET /pulse's leader stays fresh).
	LockTTL    time.Duration
	RenewEvery time.Duration
	// FailedRetry: see NextDue (default DefaultFailedRetry; negative: off).
	FailedRetry time.Duration
	// Enabled runs the timer (Loop); RunNext and RunTask work regardless.
	Enabled bool
	// StartDelay is the wait before the timer's first tick.
	StartDelay time.Duration

	Now func() time.Time
	// After replaces time.After for the timer's sleeps, RenewAfter for its
	// heartbeat (tests).
	After      func(time.Duration) <-chan time.Time
	RenewAfter func(time.Duration) <-chan time.Time
	Log        *zap.Logger
	Metrics    *Metrics
}

// Scheduler is the pulse: one serial loop running at most one due task per
// tick. Every way in (the timer, POST /pulse) goes through one gate, so a
// tick never overlaps a running task, and through the Leader (the store's
// pulse lock, or a Lease), so with several replicas only the leader pulses.
type Scheduler struct {
	o     Options
	log   *zap.Logger
	m     *Metrics
	elect Leader

	gate sync.Mutex // held while a tick selects and runs a task

	mu        sync.Mutex
	running   *Running
	leader    bool
	leaderAt  time.Time
	lastTick  *TickResult
	nextTick  time.Time
	lockError string
}

// Running is the task in progress.
type Running struct {
	Task    Task      `json:"task"`
	Trigger string    `json:"trigger"`
	Started time.Time `json:"started_at"`
}

// TickResult is what one tick did.
type TickResult struct {
	Outcome string    `json:"outcome"`
	Message string    `json:"message"`
	Trigger string    `json:"trigger"`
	At      time.Time `json:"at"`
	Task    *Task     `json:"task,omitempty"`
	// Result is the run's result when a task ran.
	Result *api.RunResult `json:"result,omitempty"`
	// Report says whether the run's report was posted, and where.
	Report *ReportResult `json:"report,omitempty"`
	// NextDue is, when nothing was due, when the next task falls due.
	NextDue *time.Time `json:"next_due,omitempty"`
}

// ReportResult is the reporting decision after a run.
type ReportResult struct {
	Posted  bool             `json:"posted"`
	Reason  string           `json:"reason"`
	Targets []report.Outcome `json:"targets,omitempty"`
}

// New builds a scheduler.
func New(o Options) (*Scheduler, error) {
	switch {
	case o.Agent == "":
		return nil, errors.New("pulse: the agent slug is required")
	case o.Holder == "":
		return nil, errors.New("pulse: a lock holder name is required")
	case o.Store == nil:
		return nil, errors.New("pulse: a store is required")
	case o.Runner == nil:
		return nil, errors.New("pulse: a runner is required")
	case o.Interval <= 0:
		return nil, fmt.Errorf("pulse: interval %s must be positive", o.Interval)
	case o.Timeout <= 0:
		return nil, fmt.Errorf("pulse: timeout %s must be positive", o.Timeout)
	}
	seen := map[string]bool{}
	for i, t := range o.Tasks {
		if t.Index != i || t.Key == "" {
			return nil, fmt.Errorf("pulse: task %d has index %d and key %q: tasks must come from Parse", i, t.Index, t.Key)
		}
		if seen[t.Key] {
			return nil, fmt.Errorf("pulse: two tasks share the key %s", t.Key)
		}
		seen[t.Key] = true
	}
	if o.LockTTL <= 0 {
		o.LockTTL = DefaultLockTTL
	}
	if o.RenewEvery <= 0 {
		o.RenewEvery = o.LockTTL / 3
	}
	if o.FailedRetry == 0 {
		o.FailedRetry = DefaultFailedRetry
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.RenewAfter == nil {
		o.RenewAfter = time.After
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	leader := o.Leader
	if leader == nil {
		leader = &storeLock{st: o.Store, agent: o.Agent, holder: o.Holder, ttl: o.LockTTL}
	}
	return &Scheduler{o: o, log: o.Log, m: o.Metrics, elect: leader}, nil
}

// storeLock is the default Leader: the store's pulse lock (a row with a
// holder and an expiry, or the memory store's map).
type storeLock struct {
	st     store.PulseStore
	agent  string
	holder string
	ttl    time.Duration
}

func (l *storeLock) Lead(ctx context.Context) (bool, error) {
	return l.st.TryPulseLock(ctx, l.agent, l.holder, l.ttl)
}

func (l *storeLock) Release(ctx context.Context) error {
	_, err := l.st.TryPulseLock(ctx, l.agent, l.holder, 0)
	return err
}

func (l *storeLock) String() string { return "store lock" }

// Interval is the sleep between ticks.
func (s *Scheduler) Interval() time.Duration { return s.o.Interval }

// Timeout bounds one pulse run.
func (s *Scheduler) Timeout() time.Duration { return s.o.Timeout }

// Enabled reports whether the timer runs.
func (s *Scheduler) Enabled() bool { return s.o.Enabled }

// Tasks returns the tasks.
func (s *Scheduler) Tasks() []Task { return s.o.Tasks }

// RunNext runs the task that is due first, now. Nothing due is not an
// error (Outcome nothing_due). ErrBusy when a task is running; ErrNotLeader
// when another replica leads.
func (s *Scheduler) RunNext(ctx context.Context, trigger string) (TickResult, error) {
	return s.tick(ctx, trigger, func(states map[string]store.PulseState, now time.Time) (Task, bool, error) {
		due := DueTasks(s.o.Tasks, states, now, s.o.FailedRetry)
		if len(due) == 0 {
			return Task{}, false, nil
		}
		return due[0].Task, true, nil
	})
}

// RunTask runs the task with the given index now, due or not.
func (s *Scheduler) RunTask(ctx context.Context, index int, trigger string) (TickResult, error) {
	if index < 0 || index >= len(s.o.Tasks) {
		return TickResult{}, fmt.Errorf("%w: index %d (the agent has %d task(s), 0–%d)", ErrUnknownTask, index, len(s.o.Tasks), len(s.o.Tasks)-1)
	}
	return s.tick(ctx, trigger, func(map[string]store.PulseState, time.Time) (Task, bool, error) {
		return s.o.Tasks[index], true, nil
	})
}

type picker func(states map[string]store.PulseState, now time.Time) (Task, bool, error)

func (s *Scheduler) tick(ctx context.Context, trigger string, pick picker) (res TickResult, err error) {
	res = TickResult{Trigger: trigger, At: s.o.Now().UTC()}
	defer func() {
		outcome := res.Outcome
		switch {
		case errors.Is(err, ErrBusy):
			outcome = OutcomeBusy
		case errors.Is(err, ErrNotLeader):
			outcome = OutcomeNotLeader
		case err != nil:
			outcome = OutcomeError
		}
		s.m.ticks.WithLabelValues(outcome).Inc()
		if outcome != OutcomeBusy {
			r := res
			if err != nil {
				r.Outcome, r.Message = outcome, err.Error()
			}
			s.mu.Lock()
			s.lastTick = &r
			s.mu.Unlock()
		}
	}()
	if !s.gate.TryLock() {
		return res, s.busyError()
	}
	defer s.gate.Unlock()

	leader, err := s.lock(ctx)
	if err != nil {
		return res, err
	}
	if !leader {
		return res, ErrNotLeader
	}
	list, err := s.o.Store.PulseStates(ctx, s.o.Agent)
	if err != nil {
		return res, fmt.Errorf("reading pulse states: %w", err)
	}
	states := StatesByKey(list)
	task, ok, err := pick(states, res.At)
	if err != nil {
		return res, err
	}
	if !ok {
		res.Outcome = OutcomeNothingDue
		res.Message = "nothing due"
		if next, ok := s.earliestDue(states); ok {
			res.NextDue = &next
			res.Message = fmt.Sprintf("nothing due; the next task falls due at %s", next.Format(time.RFC3339))
		}
		if len(s.o.Tasks) == 0 {
			res.Message = "nothing due: the persona's PULSE.md has no tasks"
		}
		return res, nil
	}
	return s.run(ctx, trigger, task, res)
}

// Renew takes or renews the pulse lock (the timer's heartbeat) and
// reports whether this replica leads.
func (s *Scheduler) Renew(ctx context.Context) (bool, error) { return s.lock(ctx) }

// Leadership names the Leader (GET /pulse): "store lock", "lease ns/name".
func (s *Scheduler) Leadership() string {
	if d, ok := s.elect.(fmt.Stringer); ok {
		return d.String()
	}
	return fmt.Sprintf("%T", s.elect)
}

// lock asks the Leader (taking or renewing the store lock) and remembers
// the answer.
func (s *Scheduler) lock(ctx context.Context) (bool, error) {
	ok, err := s.elect.Lead(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.leader
	s.leaderAt = s.o.Now().UTC()
	if err != nil {
		s.leader = false
		s.lockError = err.Error()
		if was {
			s.log.Warn("pulse leadership lost: the lock could not be renewed", zap.Error(err))
		}
		return false, fmt.Errorf("pulse lock: %w", err)
	}
	s.leader, s.lockError = ok, ""
	switch {
	case ok && !was:
		s.log.Info("pulse leadership taken", zap.String("holder", s.o.Holder))
	case !ok && was:
		s.log.Warn("pulse leadership lost to another replica", zap.String("holder", s.o.Holder))
	}
	return ok, nil
}

// Release gives leadership back (shutdown), so another replica takes over
// at its next tick instead of after the TTL.
func (s *Scheduler) Release(ctx context.Context) error {
	err := s.elect.Release(ctx)
	s.mu.Lock()
	s.leader = false
	s.mu.Unlock()
	return err
}

func (s *Scheduler) busyError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.running; r != nil {
		return fmt.Errorf("%w: task %d (%s, %s) since %s", ErrBusy, r.Task.Index, r.Task.Cadence, r.Task.Key, r.Started.Format(time.RFC3339))
	}
	return ErrBusy
}

func (s *Scheduler) earliestDue(states map[string]store.PulseState) (time.Time, bool) {
	var best time.Time
	found := false
	for _, t := range s.o.Tasks {
		st, ran := states[t.Key]
		next := NextDue(t, st, ran, s.o.FailedRetry)
		if !found || next.Before(best) {
			best, found = next, true
		}
	}
	return best.UTC(), found
}

// run executes task: the run, its state, its report.
func (s *Scheduler) run(ctx context.Context, trigger string, task Task, res TickResult) (TickResult, error) {
	log := s.log.With(zap.Int("task", task.Index), zap.String("task_key", task.Key), zap.String("cadence", string(task.Cadence)), zap.String("trigger", trigger))
	started := s.o.Now().UTC()
	s.mu.Lock()
	s.running = &Running{Task: task, Trigger: trigger, Started: started}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = nil
		s.mu.Unlock()
	}()
	t := task
	res.Task = &t
	if s.o.Digest != nil && IsDigest(task.Text) {
		return s.runDigest(ctx, log, task, started, res)
	}

	// The run outlives the caller (a client hanging up, shutdown starting):
	// it is bounded by the pulse timeout and by the engine's drain.
	rctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), s.o.Timeout,
		fmt.Errorf("pulse run exceeded PULSE_TIMEOUT (%s)", s.o.Timeout))
	defer cancel()
	req := api.RunRequest{
		Task: task.Text, WorkflowType: api.WorkflowPulseTask,
		Context: map[string]string{ContextTask: task.Key, ContextCadence: string(task.Cadence), ContextTrigger: trigger},
	}
	log.Info("pulse task starting")
	result, err := s.o.Runner.Run(rctx, req)
	if err != nil {
		s.m.runs.WithLabelValues(string(task.Cadence), "not_started").Inc()
		log.Warn("pulse task did not start", zap.Error(err))
		return res, fmt.Errorf("task %d did not start: %w", task.Index, err)
	}
	res.Outcome = OutcomeRan
	if result.Verdict == api.VerdictUnchanged {
		res.Outcome = OutcomeUnchanged
	}
	res.Result = &result
	s.m.runs.WithLabelValues(string(task.Cadence), result.Status).Inc()

	st := store.PulseState{Agent: s.o.Agent, Task: task.Key, LastRun: started, Outcome: result.Status, RunID: result.RunID}
	if err := s.o.Store.SetPulseState(context.WithoutCancel(ctx), st); err != nil {
		// The run happened; losing its time only makes the task due again.
		log.Error("pulse state not saved; the task will be due again", zap.Error(err))
	}
	rep := s.report(rctx, task, result)
	res.Report = &rep
	res.Message = fmt.Sprintf("ran task %d (%s): %s", task.Index, task.Cadence, result.Status)
	if res.Outcome == OutcomeUnchanged {
		res.Message += ", unchanged since the last tick (no model call)"
	}
	if !rep.Posted {
		res.Message += "; " + rep.Reason
	}
	log.Info("pulse task finished", zap.String("run_id", result.RunID), zap.String("status", result.Status),
		zap.Int("findings", len(result.Findings)), zap.Bool("report_posted", rep.Posted), zap.String("report", rep.Reason))
	return res, nil
}

// ReportDecision says whether a finished pulse run posts a report. Daily
// tasks are housekeeping and never post; continuous and weekly tasks post
// their findings, and a run without findings stays quiet (a healthy tick
// posts nothing). Text-only reports are post_report's job.
func ReportDecision(c Cadence, res api.RunResult) (post bool, reason string) {
	switch {
	case c == Daily:
		return false, "daily tasks are housekeeping and never post"
	case len(res.Findings) == 0 && res.Status == api.StatusFailed:
		return false, "the run failed without findings: nothing to post"
	case len(res.Findings) == 0 && len(res.Lifecycle.Resolved()) > 0:
		return true, "" // healthy now, and it says what went away
	case len(res.Findings) == 0:
		return false, "healthy: nothing to post"
	}
	return true, ""
}

func (s *Scheduler) report(ctx context.Context, task Task, res api.RunResult) ReportResult {
	post, reason := ReportDecision(task.Cadence, res)
	if !post {
		return ReportResult{Reason: reason}
	}
	if s.o.Reporter == nil {
		return ReportResult{Reason: "no report target configured"}
	}
	max := report.SweepLines
	if task.Cadence == Weekly {
		max = 0 // a weekly list is read in full, split across messages
	}
	r := report.Report{Title: report.Title(task.Text, res.Findings), Findings: res.Findings, MaxFindings: max, Lifecycle: res.Lifecycle}
	if n := len(res.Lifecycle.Resolved()); n > 0 {
		r.Title += fmt.Sprintf(" — %d resolved", n)
	}
	// A report is worth its own few seconds even when the run used up the
	// pulse timeout.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	ocs := s.o.Reporter.Deliver(dctx, task.Key, r, report.DeliverOptions{PostedSince: res.StartedAt})
	return resultOf(ocs)
}

// resultOf says whether a delivery reached any target, and why not.
func resultOf(ocs []report.Outcome) ReportResult {
	out := ReportResult{Targets: ocs}
	for _, o := range ocs {
		if o.Delivered() {
			out.Posted = true
		}
	}
	switch {
	case len(ocs) == 0:
		out.Reason = "no report target configured"
	case out.Posted:
		out.Reason = "posted"
	default:
		out.Reason = "not posted: " + summarize(ocs)
	}
	return out
}

func summarize(ocs []report.Outcome) string {
	s := ""
	for i, o := range ocs {
		if i > 0 {
			s += ", "
		}
		s += o.Target + " " + o.Status
	}
	return s
}
