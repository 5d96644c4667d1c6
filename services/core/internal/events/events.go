// Package events publishes the core's changes as they happen — each alert
// decision recorded, each investigation started or finished — to
// subscribers: GET /api/v1/events streams them as Server-Sent Events and
// the dashboard refreshes on them (docs/MANUAL.md, "Dashboard").
package events

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// Event is one change.
type Event struct {
	// Kind is "decision" or "investigation".
	Kind string
	// Data is the change as JSON: the decision as GET /api/v1/alerts lists
	// it, or the investigation's id, alert, agent and status.
	Data json.RawMessage
}

// Buffer is how many events a subscriber may lag behind before it misses
// some (a slow reader never holds up the webhook).
const Buffer = 256

// Broker fans events out to subscribers.
type Broker struct {
	mu     sync.Mutex
	subs   map[chan Event]struct{}
	closed bool
	// dropped counts events a full subscriber missed.
	dropped int
	// n is len(subs), read without the lock: with no subscriber a change
	// is not even encoded (the webhook's hot path).
	n atomic.Int32
}

// Active reports whether anyone is subscribed.
func (b *Broker) Active() bool { return b.n.Load() > 0 }

// Dropped is how many events full subscribers missed so far.
func (b *Broker) Dropped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// NewBroker returns a broker with no subscribers.
func NewBroker() *Broker { return &Broker{subs: map[chan Event]struct{}{}} }

// Subscribe returns a channel of events from now on and a cancel func; the
// channel is closed by cancel or by Close.
func (b *Broker) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, Buffer)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch, func() {}
	}
	b.subs[ch] = struct{}{}
	b.n.Store(int32(len(b.subs)))
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			b.n.Store(int32(len(b.subs)))
			close(ch)
		}
	}
}

// Publish sends e to every subscriber that has room.
func (b *Broker) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			b.dropped++
		}
	}
}

// Close ends every subscription (the server is shutting down: streams
// return so the HTTP server can stop).
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
	b.n.Store(0)
}

// Decision is the "decision" event's data (GET /api/v1/alerts' item).
type Decision struct {
	ID              string    `json:"id"`
	Fingerprint     string    `json:"fingerprint"`
	Alertname       string    `json:"alertname"`
	Status          string    `json:"status"`
	Decision        string    `json:"decision"`
	Agent           string    `json:"agent"`
	InvestigationID string    `json:"investigation_id,omitempty"`
	Reason          string    `json:"reason"`
	At              time.Time `json:"at"`
}

// Investigation is the "investigation" event's data.
type Investigation struct {
	ID        string `json:"id"`
	Alertname string `json:"alertname"`
	Agent     string `json:"agent"`
	Status    string `json:"status"`
}

// Store is a core store that publishes what it records.
type Store struct {
	store.CoreStore
	B *Broker
}

func (s Store) publish(kind string, v any) {
	if !s.B.Active() {
		return
	}
	raw, err := json.Marshal(v)
	if err == nil {
		s.B.Publish(Event{Kind: kind, Data: raw})
	}
}

func (s Store) decided(d store.AlertDecision) {
	if !s.B.Active() {
		return // not even the event's value is built
	}
	s.publish("decision", Decision{ID: d.ID, Fingerprint: d.Fingerprint, Alertname: d.Alertname, Status: d.Status, Decision: d.Decision,
		Agent: d.Agent, InvestigationID: d.InvestigationID, Reason: d.Reason, At: d.At.UTC()})
	if d.InvestigationID != "" && d.Decision == store.DecisionDispatched {
		s.publish("investigation", Investigation{ID: d.InvestigationID, Alertname: d.Alertname, Agent: d.Agent, Status: "running"})
	}
}

// ApplyAlert records the decision and publishes it (and the investigation
// it started).
func (s Store) ApplyAlert(ctx context.Context, fingerprint, agent string, fn store.DecideFunc, inv func(store.AlertDecision) *store.Investigation) (store.AlertDecision, error) {
	d, err := s.CoreStore.ApplyAlert(ctx, fingerprint, agent, fn, inv)
	if err == nil {
		s.decided(d)
	}
	return d, err
}

// RecordDecision records a decision that changes no state and publishes it.
func (s Store) RecordDecision(ctx context.Context, d store.AlertDecision) error {
	if err := s.CoreStore.RecordDecision(ctx, d); err != nil {
		return err
	}
	if d.At.IsZero() {
		d.At = time.Now()
	}
	s.decided(d)
	return nil
}

// FinishInvestigation records the outcome and publishes it.
func (s Store) FinishInvestigation(ctx context.Context, inv store.Investigation) error {
	if err := s.CoreStore.FinishInvestigation(ctx, inv); err != nil {
		return err
	}
	s.publish("investigation", Investigation{ID: inv.ID, Alertname: inv.Alertname, Agent: inv.Agent, Status: inv.Status})
	return nil
}
