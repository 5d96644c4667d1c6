// Package pipeline is the core's alert path, in stages: route → decide
// (pure, run atomically by the store) → record → dispatch. The webhook
// handler feeds it decoded messages; the dispatcher tells it when an agent
// frees a slot, and it dispatches the oldest queued alert.
package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/decide"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
	"github.com/kubecrew/kubecrew/services/core/internal/metrics"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// Store is the part of the store the pipeline uses.
type Store interface {
	ApplyAlert(ctx context.Context, fingerprint, agent string, fn store.DecideFunc, inv func(store.AlertDecision) *store.Investigation) (store.AlertDecision, error)
	PendingAlerts(ctx context.Context, agent string) ([]store.AlertState, error)
	RecordDecision(ctx context.Context, d store.AlertDecision) error
}

// Starter starts an investigation in the background (*dispatch.Dispatcher).
type Starter interface {
	Start(job dispatch.Job)
}

// Options configure a Pipeline.
type Options struct {
	Store   Store
	Routes  *route.Routes
	Starter Starter
	Now     func() time.Time
	NewID   func() string
	Log     *zap.Logger
	Metrics *metrics.Metrics
	// StaleAfter: an investigation older than this no longer blocks its
	// alert (its core died mid-call). Typically 2 × AGENT_CALL_TIMEOUT.
	StaleAfter time.Duration
	// Escalate, when set, hears of every resolved alert: the pages its
	// investigations opened are resolved (*escalate.Escalate).
	Escalate interface {
		AlertResolved(ctx context.Context, fingerprint string)
	}
	// Background is the context of the drain that follows each finished
	// investigation; cancelled at shutdown. Default: context.Background().
	Background context.Context
	// Resolved, when set, hears of every alert decided resolved (the chat
	// follow-up, *notify.Notifier).
	Resolved interface{ Resolved(fingerprint string) }
}

// Pipeline decides and dispatches alerts.
type Pipeline struct {
	o      Options
	queue  *queue
	mu     sync.Mutex
	drains map[string]*sync.Mutex
}

// New returns a Pipeline.
func New(o Options) *Pipeline {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = newUUIDv7
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New(nil)
	}
	if o.Background == nil {
		o.Background = context.Background()
	}
	return &Pipeline{o: o, queue: newQueue(), drains: map[string]*sync.Mutex{}}
}

// Process decides every alert of one webhook, in order. A malformed alert
// (webhook.Alert.Problem) is recorded as rejected with the reason and the
// rest are decided: one bad alert blocks nothing, and since a retry would
// not fix it, nothing asks Alertmanager to retry. An error means a decision
// could not be recorded: the caller answers 5xx and Alertmanager retries
// the whole group; alerts already decided are then deduped or in cooldown,
// so none is dispatched twice.
func (p *Pipeline) Process(ctx context.Context, m webhook.Message) ([]store.AlertDecision, error) {
	out := make([]store.AlertDecision, 0, len(m.Alerts))
	p.o.Metrics.WebhookAlerts.Add(float64(len(m.Alerts)))
	for i, a := range m.Alerts {
		if why := a.Problem(); why != "" {
			d, err := p.reject(ctx, i, a, why)
			if err != nil {
				p.o.Metrics.StoreErrors.WithLabelValues("record_decision").Inc()
				return out, fmt.Errorf("alerts[%d]: record rejection: %w", i, err)
			}
			out = append(out, d)
			continue
		}
		d, err := p.one(ctx, a)
		if err != nil {
			p.o.Metrics.StoreErrors.WithLabelValues("apply_alert").Inc()
			return out, fmt.Errorf("alerts[%d] (fingerprint %s): record decision: %w", i, a.Fingerprint, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// reject records a rejected alert's decision. What it echoes of the alert
// is escaped and bounded: the reason says what was wrong, the record holds
// no control character and no megabyte label.
func (p *Pipeline) reject(ctx context.Context, i int, a webhook.Alert, why string) (store.AlertDecision, error) {
	d := store.AlertDecision{
		ID:          p.o.NewID(),
		Fingerprint: webhook.Printable(a.Fingerprint, webhook.MaxFingerprint),
		Alertname:   webhook.Printable(a.Labels["alertname"], 256),
		Status:      webhook.Printable(a.Status, 32),
		Decision:    store.DecisionRejected,
		Reason:      fmt.Sprintf("rejected alerts[%d]: %s", i, why),
		At:          p.o.Now(),
	}
	if err := p.o.Store.RecordDecision(ctx, d); err != nil {
		return store.AlertDecision{}, err
	}
	p.o.Metrics.Decisions.WithLabelValues(d.Decision).Inc()
	p.o.Log.Warn("alert rejected", zap.String("fingerprint", d.Fingerprint), zap.String("alertname", d.Alertname), zap.String("reason", d.Reason))
	return d, nil
}

func (p *Pipeline) one(ctx context.Context, a webhook.Alert) (store.AlertDecision, error) {
	target := p.o.Routes.Match(a.Labels)
	// The hash sees the whole alert (a changed annotation is new
	// information); what is kept — queued, stored, sent — is bounded.
	hash := a.ContentHash()
	a = Bound(a)
	in := decide.Input{
		Alert: decide.Alert{Fingerprint: a.Fingerprint, Alertname: a.Alertname(), Status: a.Status, Hash: hash},
		Route: decide.Route{Agent: target.Agent, Cooldown: target.Cooldown, MaxInFlight: target.MaxInFlight,
			Ignored: target.Ignored, IgnoreReason: target.Reason},
		Now:        p.o.Now(),
		DecisionID: p.o.NewID(),
		NewID:      p.o.NewID(),
		StaleAfter: p.o.StaleAfter,
	}
	fn := func(prev store.AlertState, ok bool, n int) (store.AlertDecision, store.AlertState) {
		in := in
		in.Prev, in.Known, in.AgentInFlight = prev, ok, n
		return decide.Decide(in)
	}
	// The body is remembered before deciding: a slot freed while this
	// decision is recorded may retry the alert before ApplyAlert returns.
	if a.Status == decide.StatusFiring && !target.Ignored {
		p.queue.put(a.Fingerprint, queued{alert: a, target: target, hash: hash})
	}
	d, err := p.o.Store.ApplyAlert(ctx, a.Fingerprint, target.Agent, fn, p.mkInv(a, in.Now))
	if err != nil {
		return store.AlertDecision{}, err
	}
	p.o.Metrics.Decisions.WithLabelValues(d.Decision).Inc()
	p.o.Log.Debug("alert decided", zap.String("fingerprint", d.Fingerprint), zap.String("alertname", d.Alertname),
		zap.String("decision", d.Decision), zap.String("agent", d.Agent), zap.String("reason", d.Reason))
	if d.Decision != decide.Busy {
		p.queue.del(a.Fingerprint)
	}
	if d.Decision == decide.Dispatched {
		p.start(d, a)
	}
	if d.Decision == decide.Resolved && p.o.Resolved != nil {
		p.o.Resolved.Resolved(a.Fingerprint)
	}
	if d.Decision == decide.Resolved && p.o.Escalate != nil {
		p.o.Escalate.AlertResolved(ctx, a.Fingerprint)
	}
	return d, nil
}

func (p *Pipeline) mkInv(a webhook.Alert, now time.Time) func(store.AlertDecision) *store.Investigation {
	return func(d store.AlertDecision) *store.Investigation {
		return &store.Investigation{
			Alertname: d.Alertname,
			Agent:     d.Agent,
			Status:    "running",
			Alert:     AlertJSON(a),
			StartedAt: now,
		}
	}
}

func (p *Pipeline) start(d store.AlertDecision, a webhook.Alert) {
	p.o.Starter.Start(dispatch.Job{
		InvestigationID: d.InvestigationID,
		Agent:           d.Agent,
		Fingerprint:     a.Fingerprint,
		Alertname:       a.Alertname(),
		Task:            Task(a),
		Alert:           AlertJSON(a),
		Context: map[string]string{
			"alertname":        a.Alertname(),
			"namespace":        a.Namespace(),
			"fingerprint":      a.Fingerprint,
			"alert":            AlertContext(a),
			"investigation_id": d.InvestigationID,
		},
		Done: p.drainAfter,
	})
}

// drainAfter offers the slot a finished investigation freed to agent's
// queued alerts.
func (p *Pipeline) drainAfter(agent string) { p.Drain(p.o.Background, agent) }

func (p *Pipeline) drainLock(agent string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.drains[agent]
	if !ok {
		l = &sync.Mutex{}
		p.drains[agent] = l
	}
	return l
}

// Drain offers agent's free slots to its queued alerts, oldest first, until
// the agent is busy again or nothing is queued.
func (p *Pipeline) Drain(ctx context.Context, agent string) {
	l := p.drainLock(agent)
	l.Lock()
	defer l.Unlock()
	pend, err := p.o.Store.PendingAlerts(ctx, agent)
	if err != nil {
		p.o.Metrics.StoreErrors.WithLabelValues("pending_alerts").Inc()
		p.o.Log.Warn("could not list queued alerts", zap.String("agent", agent), zap.Error(err))
		return
	}
	for _, st := range pend {
		q, ok := p.queue.get(st.Fingerprint)
		if !ok {
			// Queued by another replica (or past the bound): dispatch from
			// the state alone.
			q = queued{
				alert: webhook.Alert{Status: decide.StatusFiring, Fingerprint: st.Fingerprint,
					Labels: map[string]string{"alertname": st.Alertname}},
				target: route.Target{Agent: agent, Cooldown: p.o.Routes.Default.Cooldown, MaxInFlight: p.o.Routes.MaxInFlightOf(agent)},
			}
		}
		a := q.alert
		a.Status = decide.StatusFiring
		in := decide.Input{
			Alert: decide.Alert{Fingerprint: st.Fingerprint, Alertname: st.Alertname, Status: decide.StatusFiring, Hash: q.hash},
			Route: decide.Route{Agent: agent, Cooldown: q.target.Cooldown, MaxInFlight: q.target.MaxInFlight},
			Now:   p.o.Now(), DecisionID: p.o.NewID(), NewID: p.o.NewID(), StaleAfter: p.o.StaleAfter,
		}
		if !ok {
			in.Alert.Hash = st.ContentHash
		}
		fn := func(prev store.AlertState, known bool, n int) (store.AlertDecision, store.AlertState) {
			in := in
			in.Prev, in.Known, in.AgentInFlight = prev, known, n
			return decide.Retry(in)
		}
		d, err := p.o.Store.ApplyAlert(ctx, st.Fingerprint, agent, fn, p.mkInv(a, in.Now))
		if err != nil {
			p.o.Metrics.StoreErrors.WithLabelValues("apply_alert").Inc()
			p.o.Log.Warn("could not retry a queued alert", zap.String("agent", agent), zap.String("fingerprint", st.Fingerprint), zap.Error(err))
			return
		}
		p.o.Metrics.Decisions.WithLabelValues(d.Decision).Inc()
		switch d.Decision {
		case decide.Dispatched:
			p.queue.del(st.Fingerprint)
			p.start(d, a)
		case decide.Busy:
			return // the agent is full again
		}
	}
}

// DrainAll drains every agent alerts can reach (at start-up, and on a timer
// so slots freed by another replica are used too).
func (p *Pipeline) DrainAll(ctx context.Context) {
	for _, a := range p.o.Routes.Agents() {
		p.Drain(ctx, a)
	}
}

// Queued is how many queued alert bodies this process remembers.
func (p *Pipeline) Queued() int { return p.queue.len() }

// QueuedBytes is the text those bodies hold (each bounded by Bound).
func (p *Pipeline) QueuedBytes() int { return p.queue.size() }

// newUUIDv7 returns a time-ordered id (a random one if the clock fails).
func newUUIDv7() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}
