package store

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPruneMillionDecisions measures retention on a table of a million
// alert decisions spread over 58 days (about 480,000 older than the 30-day
// cutoff) in the local Postgres: one op is one Prune batch of PruneBatch
// rows, found through alert_decisions_newest and deleted by primary key.
// After the loop the rest of the backlog is pruned with PruneOlder and its
// wall time reported (backlog-s), with how many rows it deleted.
func BenchmarkPruneMillionDecisions(b *testing.B) {
	ctx := context.Background()
	p := newTestPostgres(b, time.Now)
	fill := func(from, to int) {
		b.Helper()
		// One row every 5 s back from now; reasons as long as real ones.
		if _, err := p.pool.Exec(ctx, `INSERT INTO alert_decisions (id, fingerprint, alertname, status, decision, agent, investigation_id, reason, at)
			SELECT 'd-' || g, 'fp-' || (g % 5000), 'KubePodCrashLooping', 'firing', 'deduped', 'platform-sre', '',
				'investigation 0193a1b2 of this alert in flight for 3m12s', now() - g * interval '5 seconds'
			FROM generate_series($1::int, $2::int) g`, from, to); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	fill(1, 1_000_000)
	if _, err := p.pool.Exec(ctx, `VACUUM ANALYZE alert_decisions`); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled 1,000,000 decisions in %s", time.Since(start).Round(time.Millisecond))
	cutoff := time.Now().Add(-DefaultRetention)
	deleted := 0
	for b.Loop() {
		n, err := p.Prune(ctx, CoreData, cutoff, PruneBatch)
		if err != nil {
			b.Fatal(err)
		}
		deleted += n.Decisions
		if n.Decisions < PruneBatch {
			b.Fatalf("backlog ran out after %d rows: run with a smaller -benchtime", deleted)
		}
	}
	b.ReportMetric(float64(PruneBatch)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.StopTimer()
	start = time.Now()
	n, err := PruneOlder(ctx, p, CoreData, cutoff, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "backlog-s")
	b.ReportMetric(float64(n.Decisions), "backlog-rows")
	var left, old int
	if err := p.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE at < $1) FROM alert_decisions`, cutoff).Scan(&left, &old); err != nil {
		b.Fatal(err)
	}
	if old != 0 {
		b.Fatalf("%d rows older than the cutoff left", old)
	}
	b.Logf("batches in the loop deleted %d rows, PruneOlder %d more in %s; %d rows kept", deleted, n.Decisions, time.Since(start).Round(time.Millisecond), left)
}
