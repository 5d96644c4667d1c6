package pipeline

import (
	"sync"

	"github.com/kubecrew/kubecrew/services/core/internal/route"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// maxQueued bounds the alerts remembered for busy retries.
const maxQueued = 10000

type queued struct {
	alert  webhook.Alert
	target route.Target
}

// queue remembers the last body of each alert decided busy, so a freed
// slot can dispatch it with its labels. The store holds which alerts are
// queued; this is only their content. Another replica's queued alert (or
// one past the bound) is dispatched from its state alone.
type queue struct {
	mu sync.Mutex
	m  map[string]queued
}

func newQueue() *queue { return &queue{m: map[string]queued{}} }

func (q *queue) put(fp string, v queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.m[fp]; ok || len(q.m) < maxQueued {
		q.m[fp] = v
	}
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
	delete(q.m, fp)
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.m)
}
