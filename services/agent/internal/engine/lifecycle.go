package engine

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// Sweep is what one sweep of the cluster saw (docs/MANUAL.md, "Findings have a
// life"): every problem found now in its scope, and whether it covered
// that scope completely. Only a complete sweep resolves the open findings
// of its scope it no longer sees; one with a forbidden or failed List
// resolves nothing.
type Sweep struct {
	Namespace string // "" = the whole cluster
	Complete  bool
	Findings  []api.Finding
}

// observe applies the run's sweep to the findings' lifecycle in the store
// and returns what changed; nil when the run swept nothing or the store
// failed (logged: a lost observation is made good by the next sweep).
func (e *Engine) observe(ctx context.Context, r *Run, at time.Time) *api.Lifecycle {
	r.mu.Lock()
	sw := r.sweep
	r.mu.Unlock()
	if sw == nil {
		return nil
	}
	changes, err := e.opts.Store.ObserveFindings(ctx, store.Observation{
		Cluster: e.opts.Cluster, Agent: e.opts.Agent.Slug, RunID: r.ID, At: at,
		Namespace: sw.Namespace, Complete: sw.Complete, Findings: sw.Findings,
	})
	if err != nil {
		r.log.Warn("finding lifecycle not updated", zap.Error(err))
		return nil
	}
	out := &api.Lifecycle{Cluster: e.opts.Cluster, Scope: sw.Namespace, Complete: sw.Complete, Changes: make([]api.LifecycleChange, 0, len(changes))}
	for _, c := range changes {
		out.Changes = append(out.Changes, api.LifecycleChange{Change: c.Change, Finding: c.State.Finding,
			FirstSeen: c.State.FirstSeen, ResolvedAt: c.State.ResolvedAt})
	}
	return out
}

// lifecycle is the run's Lifecycle: what its sweep changed in the store,
// else the comparison its code made itself (SetChanges), else nil.
func (e *Engine) lifecycle(ctx context.Context, r *Run, at time.Time) *api.Lifecycle {
	if l := e.observe(ctx, r, at); l != nil {
		return l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changes
}
