package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	runContract(t, func(t *testing.T, now func() time.Time) fullStore { return NewMemory(now) })
}

func TestMemoryRetention(t *testing.T) {
	t.Parallel()
	c := newClock()
	m := NewMemory(c.Now)
	m.caps = memoryCaps{runs: 10, findings: 10, a2a: 10, decisions: 10, invs: 10, alerts: 10}
	ctx := context.Background()
	fin := c.Now()
	// The oldest run is still running: it survives every trim.
	mustNil(t, m.CreateRun(ctx, Run{ID: "running", Agent: "a", StartedAt: c.Now().Add(-time.Hour)}))
	for i := range 30 {
		c.Advance(time.Second)
		id := fmt.Sprintf("r%02d", i)
		mustNil(t, m.CreateRun(ctx, Run{ID: id, Agent: "a", Status: "completed", FinishedAt: &fin}))
		mustNil(t, m.AppendEvents(ctx, Event{RunID: id, Type: "run_start"}))
		mustNil(t, m.RecordFindings(ctx, id, "a", time.Time{}, []api.Finding{{Key: id}}))
		mustNil(t, m.RecordA2A(ctx, A2AEntry{ID: id, Agent: "a"}))
		d, err := m.ApplyAlert(ctx, id, fmt.Sprintf("agent%d", i), decider(c.Now, nil), nil)
		mustNil(t, err)
		mustNil(t, m.FinishInvestigation(ctx, Investigation{ID: d.InvestigationID, Status: "completed"}))
	}
	for what, n := range map[string]int{"runs": len(m.runs), "events": len(m.events), "findings": len(m.findings), "a2a": len(m.a2a), "decisions": len(m.decisions), "investigations": len(m.invs), "alert states": len(m.alerts)} {
		if n > 10 || n < 5 {
			t.Errorf("%s: %d kept, want between 5 and 10", what, n)
		}
	}
	// Decisions are trimmed in place: the newest kept, in order, and the
	// array never grows past twice the cap.
	if last := m.decisions[len(m.decisions)-1]; last.Fingerprint != "r29" || cap(m.decisions) > 20 ||
		!slices.IsSortedFunc(m.decisions, func(a, b AlertDecision) int { return a.At.Compare(b.At) }) {
		t.Errorf("decisions kept: last %s of %d (cap %d), in order: %v", last.Fingerprint, len(m.decisions), cap(m.decisions),
			slices.IsSortedFunc(m.decisions, func(a, b AlertDecision) int { return a.At.Compare(b.At) }))
	}
	if _, err := m.GetRun(ctx, "running"); err != nil {
		t.Fatalf("a running run was evicted: %v", err)
	}
	if _, err := m.GetRun(ctx, "r29"); err != nil {
		t.Fatalf("the newest run was evicted: %v", err)
	}
	if _, err := m.GetRun(ctx, "r00"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the oldest finished run was kept: %v", err)
	}
	if evs, _ := m.Events(ctx, "r00"); len(evs) != 0 {
		t.Fatalf("events of an evicted run kept: %v", evs)
	}
	fs, _, _ := m.ListFindings(ctx, "", Page{Limit: 1})
	if fs[0].Finding.Key != "r29" {
		t.Fatalf("newest finding evicted: %+v", fs)
	}
}

// TestMemoryTrimsAlertStates: past the cap the oldest idle alert states go
// first, then queued ones; one in flight is never dropped (its agent's
// slot would leak).
func TestMemoryTrimsAlertStates(t *testing.T) {
	t.Parallel()
	c := newClock()
	m := NewMemory(c.Now)
	m.caps = defaultCaps
	m.caps.alerts = 20
	ctx := context.Background()
	// The oldest alert is dispatched and stays in flight; the next two are
	// queued behind it (same agent), the rest are idle on other agents.
	_, err := m.ApplyAlert(ctx, "inflight", "busy-agent", decider(c.Now, nil), nil)
	mustNil(t, err)
	for _, fp := range []string{"queued1", "queued2"} {
		c.Advance(time.Second)
		d, err := m.ApplyAlert(ctx, fp, "busy-agent", decider(c.Now, nil), nil)
		mustNil(t, err)
		if d.Decision != DecisionBusy {
			t.Fatalf("%s: %s", fp, d.Decision)
		}
	}
	for i := range 200 {
		c.Advance(time.Second)
		d, err := m.ApplyAlert(ctx, fmt.Sprintf("idle%03d", i), fmt.Sprintf("agent%03d", i), decider(c.Now, nil), nil)
		mustNil(t, err)
		mustNil(t, m.FinishInvestigation(ctx, Investigation{ID: d.InvestigationID, Status: "completed"}))
	}
	if n := len(m.alerts); n > 20 {
		t.Fatalf("%d alert states kept, cap 20", n)
	}
	for _, fp := range []string{"inflight", "queued1", "queued2", "idle199"} {
		if _, err := m.GetAlertState(ctx, fp); err != nil {
			t.Errorf("%s dropped: %v", fp, err)
		}
	}
	if _, err := m.GetAlertState(ctx, "idle000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest idle state was kept")
	}
	if m.inFlightLocked("busy-agent") != 1 {
		t.Errorf("in-flight index: %v", m.inFlight)
	}
}
