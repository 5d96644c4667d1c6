package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

const lifeCols = `cluster, key, agent, run_id, state, reopened, finding, first_seen, last_seen, resolved_at`

// lifeID is the state's cursor id in SQL (stateCursorID).
const lifeID = `((cluster || chr(31) || key) COLLATE "C")`

func scanLife(row pgx.CollectableRow) (FindingState, error) {
	var s FindingState
	var fj []byte
	if err := row.Scan(&s.Cluster, &s.Key, &s.Agent, &s.RunID, &s.State, &s.Reopened, &fj, &s.FirstSeen, &s.LastSeen, &s.ResolvedAt); err != nil {
		return s, err
	}
	if err := json.Unmarshal(fj, &s.Finding); err != nil {
		return s, fmt.Errorf("finding state %s: %w", s.ID(), err)
	}
	s.FirstSeen, s.LastSeen, s.ResolvedAt = ts(s.FirstSeen), ts(s.LastSeen), tsPtr(s.ResolvedAt)
	return s, nil
}

// ObserveFindings implements Lifecycle: one transaction, serialised per
// cluster (an alert run and a pulse sweep may observe at once).
func (p *Postgres) ObserveFindings(ctx context.Context, o Observation) ([]FindingChange, error) {
	o, err := prepObservation(o, p.now)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(o.Findings))
	for i, f := range o.Findings {
		keys[i] = f.Key
	}
	var changes []FindingChange
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('kubecrew.finding_states'), hashtext($1))`, o.Cluster); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+lifeCols+` FROM finding_states
			WHERE cluster = $1 AND (key = ANY($2) OR ($3 AND state = 'open' AND ($4 = '' OR namespace = $4)))`,
			o.Cluster, keys, o.Complete, o.Namespace)
		if err != nil {
			return err
		}
		prevs, err := pgx.CollectRows(rows, scanLife)
		if err != nil {
			return err
		}
		prev := make(map[string]FindingState, len(prevs))
		for _, s := range prevs {
			prev[s.Key] = s
		}
		changes = observe(prev, o)
		b := &pgx.Batch{}
		for _, c := range changes {
			s := c.State
			fj, err := json.Marshal(s.Finding)
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO finding_states (`+lifeCols+`, namespace, kind, reason, severity)
				VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)
				ON CONFLICT (cluster, key) DO UPDATE SET agent=EXCLUDED.agent, run_id=EXCLUDED.run_id, state=EXCLUDED.state,
				  reopened=EXCLUDED.reopened, finding=EXCLUDED.finding, last_seen=EXCLUDED.last_seen, resolved_at=EXCLUDED.resolved_at,
				  namespace=EXCLUDED.namespace, kind=EXCLUDED.kind, reason=EXCLUDED.reason, severity=EXCLUDED.severity`,
				s.Cluster, s.Key, s.Agent, s.RunID, s.State, s.Reopened, fj, s.FirstSeen, s.LastSeen, s.ResolvedAt,
				s.Finding.Namespace, s.Finding.Kind, s.Finding.Reason, s.Finding.Severity)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, pgErr("observe findings", err)
	}
	return changes, nil
}

// ListFindingStates implements Lifecycle.
func (p *Postgres) ListFindingStates(ctx context.Context, f LifecycleFilter, pg Page) ([]FindingState, string, error) {
	if err := validLifecycleFilter(f); err != nil {
		return nil, "", err
	}
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		v := ts(t)
		return &v
	}
	sev := f.Severities
	if sev == nil {
		sev = []string{}
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, `SELECT `+lifeCols+` FROM finding_states
		WHERE ($1 = '' OR state = $1) AND ($2 = '' OR cluster = $2) AND ($3 = '' OR namespace = $3) AND ($4 = '' OR kind = $4)
		  AND ($5 = '' OR reason = $5) AND ($6 = '' OR agent = $6) AND (cardinality($7::text[]) = 0 OR severity = ANY($7))
		  AND ($8::timestamptz IS NULL OR first_seen >= $8) AND ($9::timestamptz IS NULL OR resolved_at >= $9)
		  AND (NOT $10 OR (first_seen, `+lifeID+`) < ($11, $12::text COLLATE "C"))
		ORDER BY first_seen DESC, `+lifeID+` DESC LIMIT $13`,
		f.State, f.Cluster, f.Namespace, f.Kind, f.Reason, f.Agent, sev, opt(f.FirstSeenSince), opt(f.ResolvedSince),
		c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", pgErr("list finding states", err)
	}
	out, err := pgx.CollectRows(rows, scanLife)
	if err != nil {
		return nil, "", pgErr("list finding states", err)
	}
	return cut(out, limit, func(s FindingState) (time.Time, string) { return s.FirstSeen, stateCursorID(s) })
}
