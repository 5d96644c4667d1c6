// Package pipeline is the core's alert path, in stages: route → correlate
// → decide (pure, run atomically by the store) → record → dispatch. The
// alerts that share a correlation key are one incident (docs/MANUAL.md, "Storms"):
// one investigation with all of them in its context, later ones joining
// it. The webhook handler feeds it decoded messages; the dispatcher tells
// it when an agent frees a slot, and it dispatches the oldest queued
// incident.
package pipeline

import (
	"context"
	"fmt"
	"slices"
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
// Go runs fn in the background as part of the starter's work (waited for
// by the same Wait, refused once it is closed): the drains.
type Starter interface {
	Start(job dispatch.Job)
	Go(fn func()) bool
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
	// Clusters: the label naming an alert's cluster, the default cluster's
	// name and the other clusters that have agents (docs/MANUAL.md, "Many
	// clusters"). An alert of another cluster goes to that cluster's
	// agents, named "cluster/slug"; its incident key starts "cluster/".
	Clusters Clusters
	// Peers, when set, tells the other core replicas which nodes this one
	// marked lost (*store.Switch; peers.go). Their incidents' members and
	// lost nodes come in through Heard.
	Peers Peers
}

// Clusters says which cluster an alert is of.
type Clusters struct {
	Label   string   // CLUSTER_LABEL (default "cluster")
	Default string   // DEFAULT_CLUSTER
	Others  []string // clusters with agents of their own
}

// Of returns the cluster of labels ("" for the default one) and whether
// it has agents. With no other cluster configured, every alert is the
// default cluster's, whatever its label says (a single-cluster core).
func (c Clusters) Of(labels map[string]string) (cluster string, known bool) {
	label := "cluster"
	if c.Label != "" {
		label = c.Label
	}
	v := labels[label]
	if v == "" || v == c.Default || len(c.Others) == 0 {
		return "", true
	}
	return v, slices.Contains(c.Others, v)
}

// Agent qualifies slug with cluster ("cluster/slug"; the slug alone for
// the default cluster).
func Agent(cluster, slug string) string {
	if cluster == "" {
		return slug
	}
	return cluster + "/" + slug
}

// Pipeline decides and dispatches alerts.
type Pipeline struct {
	o       Options
	queue   *queue
	running running
	nodes   nodes
	mu      sync.Mutex
	drains  map[string]*sync.Mutex
	// draining: agents with a drain goroutine; again: asked once more.
	draining map[string]bool
	again    map[string]bool
	// deciding holds the body of each firing alert while it is decided,
	// so a slot freed meanwhile dispatches it with its labels.
	deciding map[string]queued
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
	return &Pipeline{o: o, queue: newQueue(o.Routes.QueueMax), drains: map[string]*sync.Mutex{},
		draining: map[string]bool{}, again: map[string]bool{}, deciding: map[string]queued{}}
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
	problems := make([]string, len(m.Alerts))
	for i, a := range m.Alerts {
		problems[i] = a.Problem()
	}
	incs := p.incidents(ctx, m, problems)
	p.truncated(m, incs)
	for i, a := range m.Alerts {
		if why := problems[i]; why != "" {
			d, err := p.reject(ctx, i, a, why)
			if err != nil {
				p.o.Metrics.StoreErrors.WithLabelValues("record_decision").Inc()
				return out, fmt.Errorf("alerts[%d]: record rejection: %w", i, err)
			}
			out = append(out, d)
			continue
		}
		d, err := p.one(ctx, a, incs[i])
		if err != nil {
			p.o.Metrics.StoreErrors.WithLabelValues("apply_alert").Inc()
			return out, fmt.Errorf("alerts[%d] (fingerprint %s): record decision: %w", i, a.Fingerprint, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// truncated honours Alertmanager's truncatedAlerts (a group past the
// route's max_alerts): the alerts it left out are counted in the group's
// largest firing incident, so its context says how many alerts the
// incident has, and logged (docs/MANUAL.md, "Storms").
func (p *Pipeline) truncated(m webhook.Message, incs []*incident) {
	if m.TruncatedAlerts <= 0 {
		return
	}
	var most *incident
	for _, inc := range incs {
		if inc != nil && inc.firing > 0 && (most == nil || inc.firing > most.firing) {
			most = inc
		}
	}
	key := ""
	if most != nil {
		most.inc.total += m.TruncatedAlerts
		key = most.key
	}
	p.o.Log.Warn("Alertmanager truncated the group: the alerts it left out are counted, not decided",
		zap.String("group_key", m.GroupKey), zap.Int("truncated_alerts", m.TruncatedAlerts), zap.Int("alerts", len(m.Alerts)),
		zap.String("counted_in", key))
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

func (p *Pipeline) one(ctx context.Context, a webhook.Alert, inc *incident) (store.AlertDecision, error) {
	target := inc.target
	// The hash sees the whole alert (a changed annotation is new
	// information); what is kept — queued, stored, sent — is bounded.
	hash := incidentHash(a, inc.kind)
	a = Bound(a)
	others := inc.firing
	if a.Status == decide.StatusFiring {
		others--
	}
	in := decide.Input{
		Alert: decide.Alert{Fingerprint: a.Fingerprint, Alertname: a.Alertname(), Status: a.Status, Hash: hash},
		Route: decide.Route{Agent: target.Agent, Cooldown: target.Cooldown, MaxInFlight: target.MaxInFlight,
			Ignored: target.Ignored, IgnoreReason: target.Reason},
		Key:          inc.key,
		OthersFiring: others,
		Now:          p.o.Now(),
		DecisionID:   p.o.NewID(),
		NewID:        p.o.NewID(),
		StaleAfter:   p.o.StaleAfter,
	}
	fn := func(prev store.AlertState, ok bool, n int) (store.AlertDecision, store.AlertState) {
		in := in
		in.Prev, in.Known, in.AgentInFlight = prev, ok, n
		// Known here when this process started it or heard of it (peers.go).
		in.NewMember = ok && prev.InFlight && p.running.joins(in.Key, prev.InvestigationID, in.Alert.Fingerprint)
		return decide.Decide(in)
	}
	body := queued{key: inc.key, cluster: inc.cluster, alert: a, target: target, hash: hash, inc: inc.inc, sev: inc.sev}
	// The body is remembered while deciding: a slot freed while this
	// decision is recorded may retry the incident before ApplyAlert returns.
	if a.Status == decide.StatusFiring && !target.Ignored {
		p.setDeciding(body)
		defer p.unsetDeciding(inc.key)
	}
	d, err := p.o.Store.ApplyAlert(ctx, inc.key, target.Agent, fn, p.mkInv(a, in.Now))
	if err != nil {
		return store.AlertDecision{}, err
	}
	p.o.Metrics.Decisions.WithLabelValues(d.Decision).Inc()
	if ce := p.o.Log.Check(zap.DebugLevel, "alert decided"); ce != nil { // no fields built per alert unless logged
		ce.Write(zap.String("fingerprint", d.Fingerprint), zap.String("alertname", d.Alertname), zap.String("incident", inc.key),
			zap.String("decision", d.Decision), zap.String("agent", d.Agent), zap.String("reason", d.Reason))
	}
	switch d.Decision {
	case decide.Dispatched:
		p.queue.del(target.Agent, inc.key)
		p.running.add(inc.key, d.InvestigationID, a.Fingerprint, in.Now)
		p.start(d, body)
	case decide.Joined:
		p.running.add(inc.key, d.InvestigationID, a.Fingerprint, in.Now)
	case decide.Busy:
		return p.enqueue(ctx, d, body)
	case decide.Resolved:
		if others <= 0 {
			p.queue.del(target.Agent, inc.key)
			p.closed(ctx, inc.key)
		}
	}
	return d, nil
}

// closed tells the chat follow-up and the escalation that an incident
// resolved (its key is what the investigation and its pages hold).
func (p *Pipeline) closed(ctx context.Context, key string) {
	if p.o.Resolved != nil {
		p.o.Resolved.Resolved(key)
	}
	if p.o.Escalate != nil {
		p.o.Escalate.AlertResolved(ctx, key)
	}
}

// enqueue puts a busy incident in its agent's queue. A full queue drops
// its lowest severity: this incident (its decision becomes dropped) or
// the one it displaces (which gets a dropped decision of its own).
func (p *Pipeline) enqueue(ctx context.Context, d store.AlertDecision, v queued) (store.AlertDecision, error) {
	agent := v.target.Agent
	victim, self := p.queue.put(agent, v, p.o.Routes.Correlation.MaxListed)
	defer func() { p.o.Metrics.Queued.WithLabelValues(agent).Set(float64(p.queue.lenOf(agent))) }()
	if self {
		return p.drop(ctx, v, fmt.Sprintf("busy queue of %s full (%d incidents, queue.max_per_agent): dropped, severity %q is the lowest", agent, p.queue.max, v.alert.Labels["severity"]))
	}
	if victim != nil {
		if _, err := p.drop(ctx, *victim, fmt.Sprintf("busy queue of %s full (%d incidents, queue.max_per_agent): dropped for incident %s of a higher severity", agent, p.queue.max, v.key)); err != nil {
			return d, err
		}
	}
	return d, nil
}

// drop records an incident dropped from a full queue: no longer pending,
// counted in kubecrew_core_queue_dropped_total.
func (p *Pipeline) drop(ctx context.Context, v queued, why string) (store.AlertDecision, error) {
	in := decide.Input{
		Alert: decide.Alert{Fingerprint: v.alert.Fingerprint, Alertname: v.alert.Alertname(), Status: decide.StatusFiring},
		Route: decide.Route{Agent: v.target.Agent}, Key: v.key, Now: p.o.Now(), DecisionID: p.o.NewID(),
	}
	fn := func(prev store.AlertState, ok bool, _ int) (store.AlertDecision, store.AlertState) {
		in := in
		in.Prev, in.Known = prev, ok
		return decide.Drop(in, why)
	}
	d, err := p.o.Store.ApplyAlert(ctx, v.key, v.target.Agent, fn, nil)
	if err != nil {
		return store.AlertDecision{}, err
	}
	p.o.Metrics.Decisions.WithLabelValues(d.Decision).Inc()
	if d.Decision == decide.Dropped {
		p.o.Metrics.QueueDropped.WithLabelValues("queue_full", severityLabel(v.alert.Labels["severity"])).Inc()
		p.o.Log.Warn("incident dropped from a full busy queue", zap.String("incident", v.key), zap.String("agent", v.target.Agent), zap.String("reason", why))
	}
	return d, nil
}

func (p *Pipeline) setDeciding(v queued) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deciding[v.key] = v
}

func (p *Pipeline) unsetDeciding(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.deciding, key)
}

func (p *Pipeline) decidingBody(key string) (queued, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.deciding[key]
	return v, ok
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

func (p *Pipeline) start(d store.AlertDecision, v queued) {
	a := v.alert
	key := v.key
	ctx := map[string]string{
		"alertname":        a.Alertname(),
		"namespace":        a.Namespace(),
		"fingerprint":      a.Fingerprint,
		"alert":            AlertContext(a),
		"investigation_id": d.InvestigationID,
		"correlation_key":  key,
		"incident":         incidentContext(key, v.inc),
	}
	if v.cluster != "" {
		ctx["cluster"] = v.cluster // docs/MANUAL.md, "Many clusters"
	}
	p.o.Starter.Start(dispatch.Job{
		InvestigationID: d.InvestigationID,
		Agent:           d.Agent,
		Fingerprint:     key,
		Alertname:       a.Alertname(),
		Task:            Task(a, v.inc),
		Alert:           AlertJSON(a),
		Context:         ctx,
		Done: func(agent string) {
			p.running.end(key, d.InvestigationID)
			p.kick(agent)
		},
	})
}

// DrainAll drains every agent alerts can reach (at start-up, and on a timer
// so slots freed by another replica are used too).
func (p *Pipeline) DrainAll(ctx context.Context) {
	for _, a := range p.Agents() {
		p.Drain(ctx, a)
	}
}

// Agents lists every agent alerts can reach, in every cluster.
func (p *Pipeline) Agents() []string {
	out := p.o.Routes.Agents()
	for _, c := range p.o.Clusters.Others {
		for _, a := range p.o.Routes.Agents() {
			out = append(out, Agent(c, a))
		}
	}
	return out
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
