package store

// Decision counts: how many decisions of each kind were recorded since a
// time. The core's dashboard overview shows the last hour's (docs/MANUAL.md,
// "Dashboard"); counting in the store keeps it one query however many
// decisions there are.

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// DecisionCounter counts recorded decisions by kind.
type DecisionCounter interface {
	// CountDecisions returns how many decisions of each kind (dispatched,
	// deduped, …) were recorded at or after since. Kinds with none are
	// absent.
	CountDecisions(ctx context.Context, since time.Time) (map[string]int, error)
}

// CountDecisions implements DecisionCounter.
func (m *Memory) CountDecisions(ctx context.Context, since time.Time) (map[string]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string]int{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.decisions {
		if !d.At.Before(since) {
			out[d.Decision] += max(d.Count, 1)
		}
	}
	return out, nil
}

// CountDecisions implements DecisionCounter (the alert_decisions_newest
// index bounds the scan to the window).
func (p *Postgres) CountDecisions(ctx context.Context, since time.Time) (map[string]int, error) {
	if err := p.flushPending(ctx); err != nil {
		return nil, err
	}
	// A row may count several repeats (docs/MANUAL.md, "Repeats are counted, not
	// written"); at is the last of them.
	rows, err := p.pool.Query(ctx, `SELECT decision, sum(count)::bigint FROM alert_decisions WHERE at >= $1 GROUP BY decision`, since.UTC())
	if err != nil {
		return nil, pgErr("count decisions", err)
	}
	out := map[string]int{}
	var kind string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&kind, &n}, func() error {
		out[kind] = n
		return nil
	})
	if err != nil {
		return nil, pgErr("count decisions", err)
	}
	return out, nil
}

// CountDecisions implements DecisionCounter.
func (s *Switch) CountDecisions(ctx context.Context, since time.Time) (map[string]int, error) {
	return run(s, ctx, "count decisions", func(ctx context.Context, st fullStore) (map[string]int, error) {
		return st.CountDecisions(ctx, since)
	}, nil)
}
