package pipeline

import (
	"strings"
	"sync"

	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// queued is one incident waiting for its agent: the body of the alert
// that queued it (bounded, Bound) and the incident's alerts so far.
type queued struct {
	key     string
	cluster string
	alert   webhook.Alert // bounded (Bound)
	target  route.Target
	hash    string
	inc     members
	sev     int
	seq     uint64 // order queued
}

// queue is the busy queue (docs/MANUAL.md, "Storms"): per agent, at most max
// incidents, one entry per correlation key (a new alert of a queued
// incident merges into its entry). Full, it drops the lowest severity
// first; between equals it keeps the one that waited longer. The store
// holds which incidents are pending (replicas share it); this holds their
// content, so waiting is a data structure, never a parked goroutine.
type queue struct {
	mu     sync.Mutex
	max    int
	agents map[string]map[string]*queued
	bytes  int
	seq    uint64
}

func newQueue(max int) *queue {
	if max <= 0 {
		max = route.DefaultQueueMax
	}
	return &queue{max: max, agents: map[string]map[string]*queued{}}
}

// put queues v for agent. It returns the entry dropped to make room
// (victim), or self=true when v itself is the lowest and is not queued.
func (q *queue) put(agent string, v queued, maxListed int) (victim *queued, self bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.agents[agent]
	if m == nil {
		m = map[string]*queued{}
		q.agents[agent] = m
	}
	if old, ok := m[v.key]; ok {
		q.bytes -= old.size()
		old.inc.merge(v.inc, maxListed)
		old.sev = max(old.sev, v.sev)
		q.bytes += old.size()
		return nil, false
	}
	if len(m) >= q.max {
		var low *queued
		for _, e := range m {
			if low == nil || e.sev < low.sev || (e.sev == low.sev && e.seq > low.seq) {
				low = e
			}
		}
		if low.sev >= v.sev {
			return nil, true
		}
		delete(m, low.key)
		q.bytes -= low.size()
		victim = low
	}
	q.seq++
	v.seq = q.seq
	m[v.key] = &v
	q.bytes += v.size()
	return victim, false
}

// size is the text an entry holds: what the bound is about.
func (v *queued) size() int {
	n := len(v.key) + len(v.alert.Fingerprint) + len(v.alert.GeneratorURL) + len(v.hash)
	for k, s := range v.alert.Labels {
		n += len(k) + len(s)
	}
	for k, s := range v.alert.Annotations {
		n += len(k) + len(s)
	}
	for _, s := range v.inc.listed {
		n += len(s)
	}
	return n
}

func (q *queue) get(agent, key string) (queued, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.agents[agent][key]
	if !ok {
		return queued{}, false
	}
	return *v, true
}

func (q *queue) del(agent, key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if v, ok := q.agents[agent][key]; ok {
		q.bytes -= v.size()
		delete(q.agents[agent], key)
	}
}

// sweep forgets agent's entries queued before seq that keep is false for
// (no longer pending in the store: resolved or dispatched elsewhere).
func (q *queue) sweep(agent string, before uint64, keep func(key string) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, v := range q.agents[agent] {
		if v.seq < before && !keep(k) {
			q.bytes -= v.size()
			delete(q.agents[agent], k)
		}
	}
}

func (q *queue) now() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.seq + 1
}

func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, m := range q.agents {
		n += len(m)
	}
	return n
}

func (q *queue) lenOf(agent string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.agents[agent])
}

// severityRank orders the severity label: what a full queue drops first.
func severityRank(s string) int {
	switch strings.ToLower(s) {
	case "critical", "page", "p1", "emergency", "fatal":
		return 5
	case "error", "high", "major", "p2":
		return 4
	case "warning", "warn", "medium", "minor", "p3":
		return 3
	case "":
		return 2
	default: // info, low, none, and the unknown
		return 1
	}
}

// severityLabel is the metric's severity value.
func severityLabel(s string) string {
	switch s = strings.ToLower(s); s {
	case "critical", "error", "warning", "info", "none":
		return s
	case "":
		return "none"
	}
	return "other"
}
