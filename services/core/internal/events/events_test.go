package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/events"
)

// TestStorePublishes: what the store records is published once it is
// recorded — never a refused write — and a full subscriber misses events
// instead of holding up the writer.
func TestStorePublishes(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	b := events.NewBroker()
	st := events.Store{CoreStore: store.NewMemory(func() time.Time { return now }), B: b}
	ch, cancel := b.Subscribe()
	defer cancel()
	ctx := context.Background()
	d := store.AlertDecision{Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Status: "firing", Decision: store.DecisionDispatched,
		Agent: "platform-sre", InvestigationID: "inv1", Reason: "new alert", At: now}
	_, err := st.ApplyAlert(ctx, "fp1", "platform-sre", func(store.AlertState, bool, int) (store.AlertDecision, store.AlertState) {
		return d, store.AlertState{Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Agent: "platform-sre", FirstSeen: now, LastSeen: now, InFlight: true, InvestigationID: "inv1"}
	}, func(d store.AlertDecision) *store.Investigation {
		return &store.Investigation{ID: "inv1", Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Agent: "platform-sre", Status: "running", StartedAt: now}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDecision(ctx, store.AlertDecision{Decision: store.DecisionIgnored}); err == nil {
		t.Fatal("the memory store took an ignored decision without state")
	}
	if err := st.FinishInvestigation(ctx, store.Investigation{ID: "inv1", Fingerprint: "fp1", Alertname: "KubePodOOMKilled", Agent: "platform-sre", Status: "completed", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, status string }{{"decision", "firing"}, {"investigation", "running"}, {"investigation", "completed"}}
	for _, w := range want {
		e := <-ch
		var m struct{ Status string }
		if err := json.Unmarshal(e.Data, &m); err != nil || e.Kind != w.kind || m.Status != w.status {
			t.Fatalf("event %s %s, want %s %s", e.Kind, e.Data, w.kind, w.status)
		}
	}
	select {
	case e := <-ch:
		t.Fatalf("a refused write was published: %s %s", e.Kind, e.Data)
	default:
	}
	for range events.Buffer + 10 {
		b.Publish(events.Event{Kind: "decision", Data: json.RawMessage(`{}`)})
	}
	if b.Dropped() != 10 {
		t.Errorf("dropped %d, want 10", b.Dropped())
	}
	b.Close()
	n := 0
	for range ch {
		n++
	}
	if n != events.Buffer {
		t.Errorf("read %d buffered events after Close, want %d", n, events.Buffer)
	}
}

// TestActiveFollowsSubscribers: with nobody subscribed a change is not
// encoded at all (Store.publish); a subscriber makes the broker active
// until it cancels or the broker closes.
func TestActiveFollowsSubscribers(t *testing.T) {
	b := events.NewBroker()
	if b.Active() {
		t.Fatal("active with no subscriber")
	}
	_, cancel := b.Subscribe()
	_, cancel2 := b.Subscribe()
	cancel()
	if !b.Active() {
		t.Fatal("not active with one subscriber left")
	}
	cancel2()
	if b.Active() {
		t.Fatal("active after every subscriber cancelled")
	}
	b.Subscribe()
	b.Close()
	if b.Active() {
		t.Fatal("active after Close")
	}
}
