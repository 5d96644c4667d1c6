package store

import (
	"context"
	"time"
)

// Prune implements Pruner: for each kind, one statement deletes the
// oldest limit rows older than before, found through the kind's time index
// (migrations 00001 and 00003), each in its own short transaction. A run
// goes with its trace events (found through their primary key).
func (p *Postgres) Prune(ctx context.Context, scope Scope, before time.Time, limit int) (Pruned, error) {
	if err := checkPrune(scope, before, limit); err != nil {
		return Pruned{}, err
	}
	var n Pruned
	one := func(what, q string, dst ...*int) error {
		args := make([]any, len(dst))
		for i := range dst {
			args[i] = dst[i]
		}
		return pgErr("prune "+what, p.pool.QueryRow(ctx, q, before, limit).Scan(args...))
	}
	if scope == AgentData {
		if err := one("runs", `WITH gone AS (
				DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE started_at < $1 ORDER BY started_at LIMIT $2) RETURNING id),
			ev AS (DELETE FROM run_events WHERE run_id IN (SELECT id FROM gone) RETURNING 1)
			SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM ev)`, &n.Runs, &n.Events); err != nil {
			return n, err
		}
		if err := one("findings", `WITH gone AS (
				DELETE FROM findings WHERE id IN (SELECT id FROM findings WHERE at < $1 ORDER BY at LIMIT $2) RETURNING 1)
			SELECT count(*) FROM gone`, &n.Findings); err != nil {
			return n, err
		}
		err := one("a2a log", `WITH gone AS (
				DELETE FROM a2a_log WHERE id IN (SELECT id FROM a2a_log WHERE at < $1 ORDER BY at LIMIT $2) RETURNING 1)
			SELECT count(*) FROM gone`, &n.A2A)
		return n, err
	}
	if err := one("decisions", `WITH gone AS (
			DELETE FROM alert_decisions WHERE id IN (SELECT id FROM alert_decisions WHERE at < $1 ORDER BY at LIMIT $2) RETURNING 1)
		SELECT count(*) FROM gone`, &n.Decisions); err != nil {
		return n, err
	}
	if err := one("investigations", `WITH gone AS (
			DELETE FROM investigations WHERE id IN (SELECT id FROM investigations
				WHERE started_at < $1 AND finished_at IS NOT NULL ORDER BY started_at LIMIT $2) RETURNING 1)
		SELECT count(*) FROM gone`, &n.Investigations); err != nil {
		return n, err
	}
	err := one("alert states", `WITH gone AS (
			DELETE FROM alert_state WHERE fingerprint IN (SELECT fingerprint FROM alert_state
				WHERE last_seen < $1 AND NOT in_flight ORDER BY last_seen LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING 1)
		SELECT count(*) FROM gone`, &n.AlertState)
	return n, err
}
