package store

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"
)

// contractDecisionCounts: counts by kind from a time on, the boundary
// included, older decisions left out.
func contractDecisionCounts(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	n := 0
	record := func(kind string) {
		t.Helper()
		n++
		d := AlertDecision{Fingerprint: fmt.Sprintf("fp-%d", n), Alertname: "KubePodOOMKilled", Status: "firing",
			Decision: kind, Agent: "platform-sre", Reason: "test"}
		if kind == DecisionRejected {
			mustNil(t, s.RecordDecision(ctx, d))
			return
		}
		_, err := s.ApplyAlert(ctx, d.Fingerprint, d.Agent, func(AlertState, bool, int) (AlertDecision, AlertState) {
			return d, AlertState{Fingerprint: d.Fingerprint, Alertname: d.Alertname, Agent: d.Agent, FirstSeen: c.Now(), LastSeen: c.Now()}
		}, nil)
		mustNil(t, err)
	}
	record(DecisionRejected) // an hour and a second before: left out
	c.Advance(time.Second)
	since := c.Now().Truncate(time.Microsecond) // stores keep microseconds
	for _, k := range []string{DecisionRejected, DecisionRejected, DecisionIgnored} {
		record(k)
	}
	c.Advance(59 * time.Minute)
	record(DecisionIgnored)
	tests := []struct {
		name  string
		since time.Time
		want  map[string]int
	}{
		{"from the boundary", since, map[string]int{DecisionRejected: 2, DecisionIgnored: 2}},
		{"everything", since.Add(-time.Hour), map[string]int{DecisionRejected: 3, DecisionIgnored: 2}},
		{"nothing yet", c.Now().Add(time.Minute), map[string]int{}},
	}
	for _, tc := range tests {
		got, err := s.CountDecisions(ctx, tc.since)
		mustNil(t, err)
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: CountDecisions = %v, want %v", tc.name, got, tc.want)
		}
	}
}
