package a2aserver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// BenchmarkAskRoundTrip measures one ask between two agents on loopback in
// deterministic mode: Noor's client → HTTP/JSON-RPC → Sol's handler (depth
// and cycle rules, audit record) → a run on Sol's engine (no playbook: it
// answers at once) → the task back → Noor's audit update. Everything but
// the callee's thinking is overhead, so the figure is the A2A overhead.
// Reports p50/p90/p99 in milliseconds.
func BenchmarkAskRoundTrip(b *testing.B) {
	nodes := startFleet(b, fleetOpts{token: "bench"}, map[string]engine.Playbook{"noor": nil, "sol": nil})
	c := nodes[persona.SlugNoor].out.Sender()
	ctx := context.Background()
	call := a2a.Call{To: "sol", Verb: a2a.VerbAsk, Text: "are you there?", CallerRunID: "bench-run"}
	// Warm the connection pool.
	if _, err := c.Send(ctx, call); err != nil {
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := c.Send(ctx, call)
		durations = append(durations, time.Since(start))
		if err != nil || res.Outcome != a2a.OutcomeCompleted {
			b.Fatalf("ask: %v %+v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.90), "p90-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
