package pipeline

import (
	"sync"

	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// maxQueued bounds the alerts remembered for busy retries; each body is
// bounded too (Bound), so the queue holds a few tens of MB at most.
const maxQueued = 2000

type queued struct {
	alert  webhook.Alert // bounded (Bound)
	target route.Target
	hash   string // of the whole alert
}

// queue remembers the last body of each alert decided busy, so a freed
// slot can dispatch it with its labels. The store holds which alerts are
// queued; this is only their content. Another replica's queued alert (or
// one past the bound) is dispatched from its state alone.
type queue struct {
	mu    sync.Mutex
	m     map[string]queued
	bytes int // the bodies' text, see size
}

func newQueue() *queue { return &queue{m: map[string]queued{}} }

func (q *queue) put(fp string, v queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	old, ok := q.m[fp]
	if !ok && len(q.m) >= maxQueued {
		return
	}
	q.bytes += v.size() - old.size()
	q.m[fp] = v
}

// size is the text a queued body holds (strings of labels, annotations,
// URL, fingerprint): what the bound is about.
func (v queued) size() int {
	n := len(v.alert.Fingerprint) + len(v.alert.GeneratorURL) + len(v.hash)
	for k, s := range v.alert.Labels {
		n += len(k) + len(s)
	}
	for k, s := range v.alert.Annotations {
		n += len(k) + len(s)
	}
	return n
}

func (q *queue) get(fp string) (queued, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.m[fp]
	return v, ok
}

func (q *queue) del(fp string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bytes -= q.m[fp].size()
	delete(q.m, fp)
}

func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m)
}
