package pipeline

import (
	"context"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/decide"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// kick asks for a drain of agent's queue after a slot freed. It never
// waits: at most one drain per agent runs (as the starter's background
// work), and a kick while it runs makes it go round once more. Before,
// every finished investigation waited for the drain lock inside its own
// goroutine, so a burst parked one goroutine per queued alert and
// investigations_in_flight read in the hundreds with one slot.
func (p *Pipeline) kick(agent string) {
	p.mu.Lock()
	if p.draining[agent] {
		p.again[agent] = true
		p.mu.Unlock()
		return
	}
	p.draining[agent] = true
	p.mu.Unlock()
	ok := p.o.Starter.Go(func() {
		for {
			p.Drain(p.o.Background, agent)
			p.mu.Lock()
			if !p.again[agent] {
				p.draining[agent] = false
				p.mu.Unlock()
				return
			}
			p.again[agent] = false
			p.mu.Unlock()
		}
	})
	if !ok { // shutting down: the next process drains
		p.mu.Lock()
		p.draining[agent], p.again[agent] = false, false
		p.mu.Unlock()
	}
}

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

// Drain offers agent's free slots to its queued incidents, oldest first
// (the store's order, which every replica shares), until the agent is busy
// again or nothing is queued.
func (p *Pipeline) Drain(ctx context.Context, agent string) {
	l := p.drainLock(agent)
	l.Lock()
	defer l.Unlock()
	defer func() { p.o.Metrics.Queued.WithLabelValues(agent).Set(float64(p.queue.lenOf(agent))) }()
	before := p.queue.now()
	pend, err := p.o.Store.PendingAlerts(ctx, agent)
	if err != nil {
		p.o.Metrics.StoreErrors.WithLabelValues("pending_alerts").Inc()
		p.o.Log.Warn("could not list queued incidents", zap.String("agent", agent), zap.Error(err))
		return
	}
	pending := make(map[string]bool, len(pend))
	for _, st := range pend {
		pending[st.Fingerprint] = true
	}
	// What this replica queued that the store no longer holds pending was
	// resolved or dispatched elsewhere.
	p.queue.sweep(agent, before, func(key string) bool { return pending[key] })
	for _, st := range pend {
		if !p.retry(ctx, agent, st) {
			return
		}
	}
}

// slugOf is the agent's slug without its cluster; clusterOf its cluster.
func slugOf(agent string) string {
	_, slug, ok := strings.Cut(agent, "/")
	if !ok {
		return agent
	}
	return slug
}

func clusterOf(agent string) string {
	c, _, _ := strings.Cut(agent, "/")
	if c == agent {
		return ""
	}
	return c
}

// retry decides one queued incident again; false when the agent is full
// (or the store failed) and the drain should stop.
func (p *Pipeline) retry(ctx context.Context, agent string, st store.AlertState) bool {
	key := st.Fingerprint
	q, ok := p.queue.get(agent, key)
	if !ok {
		q, ok = p.decidingBody(key)
	}
	if !ok {
		// Queued by another replica (or dropped from memory): dispatch
		// from the state alone.
		q = queued{
			key: key,
			alert: webhook.Alert{Status: decide.StatusFiring, Fingerprint: key,
				Labels: map[string]string{"alertname": st.Alertname}},
			target:  route.Target{Agent: agent, Cooldown: p.o.Routes.Default.Cooldown, MaxInFlight: p.o.Routes.MaxInFlightOf(slugOf(agent))},
			cluster: clusterOf(agent),
			hash:    st.ContentHash,
		}
		q.inc.add(memberLine(q.alert), p.o.Routes.Correlation.MaxListed)
	}
	a := q.alert
	a.Status = decide.StatusFiring
	q.alert = a
	in := decide.Input{
		Alert: decide.Alert{Fingerprint: a.Fingerprint, Alertname: st.Alertname, Status: decide.StatusFiring, Hash: q.hash},
		Route: decide.Route{Agent: agent, Cooldown: q.target.Cooldown, MaxInFlight: q.target.MaxInFlight},
		Key:   key,
		Now:   p.o.Now(), DecisionID: p.o.NewID(), NewID: p.o.NewID(), StaleAfter: p.o.StaleAfter,
	}
	fn := func(prev store.AlertState, known bool, n int) (store.AlertDecision, store.AlertState) {
		in := in
		in.Prev, in.Known, in.AgentInFlight = prev, known, n
		return decide.Retry(in)
	}
	d, err := p.o.Store.ApplyAlert(ctx, key, agent, fn, p.mkInv(a, in.Now))
	if err != nil {
		p.o.Metrics.StoreErrors.WithLabelValues("apply_alert").Inc()
		p.o.Log.Warn("could not retry a queued incident", zap.String("agent", agent), zap.String("incident", key), zap.Error(err))
		return false
	}
	p.o.Metrics.Decisions.WithLabelValues(d.Decision).Inc()
	switch d.Decision {
	case decide.Dispatched:
		p.queue.del(agent, key)
		p.running.add(key, d.InvestigationID, a.Fingerprint, in.Now)
		p.start(d, q)
	case decide.Busy:
		return false // the agent is full again
	case decide.Deduped:
		p.queue.del(agent, key) // no longer queued
	}
	return true
}
