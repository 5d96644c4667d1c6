package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/metrics"
)

// Job is one dispatched alert investigation.
type Job struct {
	InvestigationID string
	Agent           string
	Fingerprint     string
	Alertname       string
	Task            string
	Context         map[string]string
	// Alert is the alert as stored with the investigation (its labels
	// route the chat post).
	Alert []byte
	// Done, when set, is called with the agent after the outcome is
	// recorded (the pipeline offers the freed slot to a queued alert); not
	// once the dispatcher is closed.
	Done func(agent string)
}

// Finisher records an investigation's outcome (store.Alerts).
type Finisher interface {
	FinishInvestigation(ctx context.Context, inv store.Investigation) error
}

// Runner calls an agent's POST /run (*Client).
type Runner interface {
	Run(ctx context.Context, slug string, req api.RunRequest, async bool) (api.RunResult, error)
}

// Notifier is told of each finished investigation, after its outcome is
// recorded (*notify.Notifier posts it to chat).
type Notifier interface {
	Investigated(inv store.Investigation, res api.RunResult)
}

// Escalation hears of every finished investigation: one that ended with
// a critical finding no agent may fix pages a human (*escalate.Escalate).
type Escalation interface {
	Investigated(ctx context.Context, inv store.Investigation)
}

// Options configure a Dispatcher.
type Options struct {
	Timeout time.Duration // AGENT_CALL_TIMEOUT
	// Notifier, when set, hears of every finished investigation.
	Notifier Notifier
	// Escalate, when set, is told of each investigation once recorded.
	Escalate Escalation
	Now      func() time.Time
	Log      *zap.Logger
	Metrics  *metrics.Metrics
}

// Dispatcher runs investigations in the background: the webhook answer
// never waits for an agent. An agent that is down or times out makes a
// failed investigation, never a crash or a lost alert.
type Dispatcher struct {
	run    Runner
	store  Finisher
	o      Options
	base   context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// ErrShuttingDown is the cause given to investigations cut short by Close.
var ErrShuttingDown = errors.New("core shutting down")

// New returns a Dispatcher.
func New(run Runner, st Finisher, o Options) *Dispatcher {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New(nil)
	}
	if o.Timeout <= 0 {
		o.Timeout = 600 * time.Second
	}
	base, cancel := context.WithCancelCause(context.Background())
	return &Dispatcher{run: run, store: st, o: o, base: base, cancel: cancel}
}

// Start runs job in the background.
func (d *Dispatcher) Start(job Job) {
	d.mu.Lock()
	closed := d.closed
	if !closed {
		d.wg.Add(1)
	}
	d.mu.Unlock()
	if closed {
		// Recorded as failed so the alert's slot is freed and the alert is
		// retried on its backoff.
		started := d.o.Now()
		d.finish(job, started, api.RunResult{}, ErrShuttingDown)
		return
	}
	d.o.Metrics.InvestigationsDoing.Inc()
	go func() {
		defer d.wg.Done()
		d.investigate(job)
	}()
}

// Go runs fn in the background as part of the dispatcher's work: Wait and
// Close wait for it too. It refuses (false) once the dispatcher is closed.
// The pipeline's drains run here, so "idle" covers the investigations a
// drain is about to start.
func (d *Dispatcher) Go(fn func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		fn()
	}()
	return true
}

func (d *Dispatcher) investigate(job Job) {
	log := d.o.Log.With(zap.String("investigation_id", job.InvestigationID), zap.String("agent", job.Agent),
		zap.String("fingerprint", job.Fingerprint), zap.String("alertname", job.Alertname))
	started := d.o.Now()
	ctx, cancel := context.WithTimeoutCause(d.base, d.o.Timeout,
		fmt.Errorf("AGENT_CALL_TIMEOUT (%s) elapsed", d.o.Timeout))
	defer cancel()
	log.Info("investigation dispatched")
	res, err := d.call(ctx, log, job)
	// The gauge counts calls to agents: what is queued waits in the
	// pipeline's queue, not here.
	d.o.Metrics.InvestigationsDoing.Dec()
	if err != nil {
		d.o.Metrics.AgentRequests.WithLabelValues(job.Agent, "run", "error").Inc()
	} else {
		d.o.Metrics.AgentRequests.WithLabelValues(job.Agent, "run", "ok").Inc()
	}
	inv := d.finish(job, started, res, err)
	if d.o.Escalate != nil {
		d.o.Escalate.Investigated(ctx, inv)
	}
	log.Info("investigation finished", zap.String("status", inv.Status), zap.String("run_id", inv.RunID),
		zap.Int("findings", len(inv.Findings)), zap.String("error", inv.Error))
}

// call runs the investigation on the agent. An agent at capacity (429) is
// busy, not failed: the call is sent again after its Retry-After, with the
// time left as its budget, until the call timeout; only then is it a
// failure, saying the agent stayed busy.
func (d *Dispatcher) call(ctx context.Context, log *zap.Logger, job Job) (api.RunResult, error) {
	req := api.RunRequest{Task: job.Task, WorkflowType: api.WorkflowAlert, Context: job.Context, Caller: "core"}
	for {
		res, err := d.run.Run(ctx, job.Agent, req, false)
		var se *StatusError
		if !errors.As(err, &se) || !se.Busy() {
			return res, err
		}
		d.o.Metrics.AgentRequests.WithLabelValues(job.Agent, "run", "busy").Inc()
		wait := max(se.RetryAfter, time.Second)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait+api.MinBudget {
			return res, fmt.Errorf("agent %s stayed busy until the call timeout: %s", job.Agent, se.Msg)
		}
		log.Info("agent busy: the investigation waits and is sent again", zap.Duration("retry_after", wait), zap.String("reason", se.Msg))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, fmt.Errorf("agent %s was busy (%s), then %w", job.Agent, se.Msg, context.Cause(ctx))
		}
	}
}

// finish records the outcome, frees the slot and calls the job's Done.
func (d *Dispatcher) finish(job Job, started time.Time, res api.RunResult, err error) store.Investigation {
	finished := d.o.Now()
	inv := store.Investigation{
		ID:          job.InvestigationID,
		Fingerprint: job.Fingerprint,
		Alertname:   job.Alertname,
		Agent:       job.Agent,
		FinishedAt:  &finished,
	}
	switch {
	case err != nil:
		inv.Status = api.StatusFailed
		inv.Error = err.Error()
	case res.Status == api.StatusCompleted || res.Status == api.StatusPartial || res.Status == api.StatusFailed:
		inv.Status = res.Status
		inv.RunID = res.RunID
		inv.Findings = res.Findings
		inv.Answer = res.Answer
		inv.Error = res.Error
	default:
		inv.Status = api.StatusFailed
		inv.RunID = res.RunID
		inv.Error = fmt.Sprintf("agent answered run status %q, want completed, partial or failed", res.Status)
	}
	d.o.Metrics.Investigations.WithLabelValues(job.Agent, inv.Status).Inc()
	d.o.Metrics.InvestigationTime.WithLabelValues(job.Agent).Observe(finished.Sub(started).Seconds())

	// The store may be briefly unreachable: try a few times. If it stays
	// down the alert's slot is reclaimed as stale later.
	var ferr error
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ferr = d.store.FinishInvestigation(ctx, inv)
		cancel()
		if ferr == nil || errors.Is(ferr, store.ErrNotFound) || errors.Is(ferr, store.ErrInvalid) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	if ferr != nil {
		d.o.Metrics.StoreErrors.WithLabelValues("finish_investigation").Inc()
		d.o.Log.Error("could not record investigation outcome", zap.String("investigation_id", inv.ID), zap.Error(ferr))
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if d.o.Notifier != nil && !errors.Is(err, ErrShuttingDown) {
		stored := inv
		stored.Alert = job.Alert
		stored.StartedAt = started
		d.o.Notifier.Investigated(stored, res)
	}
	if job.Done != nil && !closed {
		job.Done(job.Agent)
	}
	return inv
}

// Close stops accepting jobs and waits for running investigations until
// ctx ends; then it cancels them (each is recorded as failed).
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		d.cancel(ErrShuttingDown)
		<-done
		return fmt.Errorf("investigations cut short: %w", context.Cause(ctx))
	}
}

// Wait blocks until no investigation runs (tests).
func (d *Dispatcher) Wait() { d.wg.Wait() }
