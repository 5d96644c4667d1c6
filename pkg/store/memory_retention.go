package store

import (
	"slices"
	"time"
)

// Memory keeps at most this many records of each kind; past a cap it drops
// the oldest tenth (runs and investigations only once finished, with a
// run's events). Without a database an agent runs for weeks: its memory
// must not grow until the pod is killed.
const (
	MemoryMaxRuns           = 5000
	MemoryMaxFindings       = 20000
	MemoryMaxA2A            = 20000
	MemoryMaxDecisions      = 20000
	MemoryMaxInvestigations = 5000
	// MemoryMaxAlerts caps alert states (one per fingerprint ever seen):
	// past it the oldest by last seen go, idle ones first, then queued
	// (busy) ones; an alert in flight is never dropped (it holds a slot).
	MemoryMaxAlerts = 20000
)

type memoryCaps struct {
	runs, findings, a2a, decisions, invs, alerts int
}

var defaultCaps = memoryCaps{MemoryMaxRuns, MemoryMaxFindings, MemoryMaxA2A, MemoryMaxDecisions, MemoryMaxInvestigations, MemoryMaxAlerts}

// tenth is how many to drop once n passed limit.
func tenth(n, limit int) int {
	if limit <= 0 || n <= limit { // no cap, or under it
		return 0
	}
	return n - limit + max(limit/10, 1)
}

// oldestKeys returns up to k keys of items, oldest first, among those
// evictable.
func oldestKeys[V any](items map[string]V, k int, at func(V) time.Time, evictable func(V) bool) []string {
	if k <= 0 {
		return nil // under the cap: no scan, no sort (this runs on every insert)
	}
	type kv struct {
		key string
		at  time.Time
	}
	var c []kv
	for key, v := range items {
		if evictable(v) {
			c = append(c, kv{key, at(v)})
		}
	}
	slices.SortFunc(c, func(a, b kv) int {
		if r := a.at.Compare(b.at); r != 0 {
			return r
		}
		if a.key < b.key {
			return -1
		}
		return 1
	})
	out := make([]string, 0, min(k, len(c)))
	for i := 0; i < k && i < len(c); i++ {
		out = append(out, c[i].key)
	}
	return out
}

func (m *Memory) trimRunsLocked() {
	k := tenth(len(m.runs), m.caps.runs)
	if k == 0 {
		return
	}
	for _, id := range oldestKeys(m.runs, k, func(r Run) time.Time { return r.StartedAt },
		func(r Run) bool { return r.FinishedAt != nil || r.Status != "running" }) {
		delete(m.runs, id)
		delete(m.events, id)
	}
}

func (m *Memory) trimFindingsLocked() {
	if k := tenth(len(m.findings), m.caps.findings); k > 0 {
		m.findings = slices.Clone(m.findings[k:])
	}
}

func (m *Memory) trimDecisionsLocked() {
	if k := tenth(len(m.decisions), m.caps.decisions); k > 0 {
		// In place: this runs on every decision, and a copy to a new
		// array (which the next append then doubles) allocated ~5 KB per
		// decision (BenchmarkWebhookLoadgen in services/core).
		n := copy(m.decisions, m.decisions[k:])
		clear(m.decisions[n:])
		m.decisions = m.decisions[:n]
	}
}

func (m *Memory) trimA2ALocked() {
	k := tenth(len(m.a2a), m.caps.a2a)
	for _, id := range oldestKeys(m.a2a, k, func(e A2AEntry) time.Time { return e.At }, func(A2AEntry) bool { return true }) {
		delete(m.a2a, id)
	}
}

func (m *Memory) trimInvestigationsLocked() {
	k := tenth(len(m.invs), m.caps.invs)
	for _, id := range oldestKeys(m.invs, k, func(i Investigation) time.Time { return i.StartedAt },
		func(i Investigation) bool { return i.FinishedAt != nil }) {
		delete(m.invs, id)
	}
}

func (m *Memory) trimAlertsLocked() {
	k := tenth(len(m.alerts), m.caps.alerts)
	if k == 0 {
		return
	}
	lastSeen := func(s AlertState) time.Time { return s.LastSeen }
	idle := oldestKeys(m.alerts, k, lastSeen, func(s AlertState) bool { return !s.InFlight && !s.Pending })
	for _, fp := range idle {
		delete(m.alerts, fp)
	}
	for _, fp := range oldestKeys(m.alerts, k-len(idle), lastSeen, func(s AlertState) bool { return !s.InFlight }) {
		delete(m.alerts, fp)
	}
}
