package store

import (
	"context"
	"time"
)

// Prune implements Pruner.
func (m *Memory) Prune(ctx context.Context, scope Scope, before time.Time, limit int) (Pruned, error) {
	if err := checkPrune(scope, before, limit); err != nil {
		return Pruned{}, err
	}
	if err := ctx.Err(); err != nil {
		return Pruned{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// A zero time is a record kept during an outage for one Postgres holds
	// (an update of a run, an outcome of an investigation): it is written
	// through, never pruned here.
	old := func(t time.Time) bool { return !t.IsZero() && t.Before(before) }
	var n Pruned
	if scope == AgentData {
		for _, id := range oldestKeys(m.runs, limit, func(r Run) time.Time { return r.StartedAt }, func(r Run) bool { return old(r.StartedAt) }) {
			n.Runs++
			n.Events += len(m.events[id])
			delete(m.runs, id)
			delete(m.events, id)
		}
		m.findings, n.Findings = dropOld(m.findings, limit, func(f FindingRecord) bool { return old(f.At) })
		for _, id := range oldestKeys(m.a2a, limit, func(e A2AEntry) time.Time { return e.At }, func(e A2AEntry) bool { return old(e.At) }) {
			n.A2A++
			delete(m.a2a, id)
		}
		return n, nil
	}
	m.decisions, n.Decisions = dropOld(m.decisions, limit, func(d AlertDecision) bool { return old(d.At) })
	for _, id := range oldestKeys(m.invs, limit, func(i Investigation) time.Time { return i.StartedAt }, func(i Investigation) bool { return old(i.StartedAt) && i.FinishedAt != nil }) {
		n.Investigations++
		delete(m.invs, id)
	}
	for _, fp := range oldestKeys(m.alerts, limit, func(s AlertState) time.Time { return s.LastSeen }, func(s AlertState) bool { return old(s.LastSeen) && !s.InFlight }) {
		n.AlertState++
		delete(m.alerts, fp)
	}
	return n, nil
}

// dropOld removes up to limit items for which old holds, keeping the order
// of the rest (a new backing array, so the dropped ones are freed).
func dropOld[T any](items []T, limit int, old func(T) bool) ([]T, int) {
	n := 0
	for _, it := range items {
		if n < limit && old(it) {
			n++
		}
	}
	if n == 0 {
		return items, 0
	}
	out, dropped := make([]T, 0, len(items)-n), 0
	for _, it := range items {
		if dropped < n && old(it) {
			dropped++
			continue
		}
		out = append(out, it)
	}
	return out, n
}
