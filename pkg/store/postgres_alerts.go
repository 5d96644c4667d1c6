package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockKey maps a name to a transaction advisory lock key.
func lockKey(kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("kubecrew-" + kind + ":" + name))
	return int64(h.Sum64())
}

const alertCols = `fingerprint, alertname, agent, firing, content_hash, first_seen, last_seen, last_investigated,
	investigations, in_flight, investigation_id, pending`

func scanAlertState(row pgx.Row) (AlertState, error) {
	var s AlertState
	var last *time.Time
	err := row.Scan(&s.Fingerprint, &s.Alertname, &s.Agent, &s.Firing, &s.ContentHash, &s.FirstSeen, &s.LastSeen, &last,
		&s.Investigations, &s.InFlight, &s.InvestigationID, &s.Pending)
	if last != nil {
		s.LastInvestigated = *last
	}
	return normAlertState(s), err
}

// ApplyAlert decides one alert in one transaction. It takes transaction
// advisory locks on the agent, then on the fingerprint (always in that
// order, so two deciders cannot deadlock), reads the state and the agent's
// in-flight count, calls fn, and writes the state, the decision and, on a
// dispatch, the investigation. Core replicas sharing the database therefore
// dispatch each alert once and keep one alert run per agent.
//
// The agent lock serialises every decision for one agent, and in a storm
// almost none of them need it: only dispatched and busy depend on the
// agent's in-flight count. So a first attempt locks the fingerprint alone;
// when fn decides dispatched or busy, it is rolled back and fn runs again
// (it is pure) under both locks.
func (p *Postgres) ApplyAlert(ctx context.Context, fingerprint, agent string, fn DecideFunc, mkInv func(AlertDecision) *Investigation) (AlertDecision, error) {
	d, _, err := p.applyAlertState(ctx, fingerprint, agent, fn, mkInv)
	return d, err
}

// applyAlertState is ApplyAlert that also returns the state it stored (a
// Switch remembers it, to decide from during an outage).
func (p *Postgres) applyAlertState(ctx context.Context, fingerprint, agent string, fn DecideFunc, mkInv func(AlertDecision) *Investigation) (AlertDecision, AlertState, error) {
	if err := required("fingerprint", fingerprint); err != nil {
		return AlertDecision{}, AlertState{}, err
	}
	if err := required("agent", agent); err != nil {
		return AlertDecision{}, AlertState{}, err
	}
	if p.rep != nil {
		if d, st, ok := p.rep.try(fingerprint, agent, fn, p.now); ok {
			return d, st, nil
		}
		if d, st, ok, err := p.tryRead(ctx, fingerprint, agent, fn); ok || err != nil {
			return d, st, err
		}
	}
	d, st, again, err := p.applyAlert(ctx, fingerprint, agent, fn, mkInv, false)
	if err != nil || !again {
		return d, st, err
	}
	d, st, _, err = p.applyAlert(ctx, fingerprint, agent, fn, mkInv, true)
	return d, st, err
}

// applyAlert is one attempt. Without lockAgent it gives up (again=true)
// before writing a decision that depends on the agent's in-flight count.
func (p *Postgres) applyAlert(ctx context.Context, fingerprint, agent string, fn DecideFunc, mkInv func(AlertDecision) *Investigation, lockAgent bool) (_ AlertDecision, _ AlertState, again bool, _ error) {
	// BEGIN rides with the reads and COMMIT with the writes: two round
	// trips. A connection left inside a transaction (an error, a cancelled
	// ctx, a retry under both locks) is rolled back here, or destroyed by
	// the pool on release.
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return AlertDecision{}, AlertState{}, false, pgErr("apply alert", err)
	}
	defer conn.Release()
	committed := false
	defer func() {
		if !committed && conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = conn.Exec(rctx, "ROLLBACK")
		}
	}()

	readAt := p.now()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	execs := 2
	if lockAgent {
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, lockKey("agent", agent))
		execs++
	}
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, lockKey("alert", fingerprint))
	// FOR UPDATE: FinishInvestigation frees the slot without the advisory
	// locks; the row lock orders it against this read-modify-write, else a
	// concurrent decision writes back in_flight=true and jams the agent.
	b.Queue(`SELECT `+alertCols+` FROM alert_state WHERE fingerprint=$1 FOR UPDATE`, fingerprint)
	b.Queue(`SELECT count(*) FROM alert_state WHERE agent=$1 AND in_flight`, agent)
	br := conn.SendBatch(ctx, b)
	var prev AlertState
	var inFlight int
	ok := true
	for range execs {
		if err == nil {
			_, err = br.Exec()
		}
	}
	if err == nil {
		prev, err = scanAlertState(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			prev, ok, err = AlertState{}, false, nil
		}
	}
	if err == nil {
		err = br.QueryRow().Scan(&inFlight)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return AlertDecision{}, AlertState{}, false, pgErr("apply alert "+fingerprint, err)
	}

	d, st, inv, err := decide(fingerprint, agent, prev, ok, inFlight, fn, mkInv, p.now)
	if err != nil {
		return AlertDecision{}, AlertState{}, false, err
	}
	if !lockAgent && (d.Decision == DecisionDispatched || d.Decision == DecisionBusy) {
		return AlertDecision{}, AlertState{}, true, nil // rolled back by the deferred func
	}
	if p.rep != nil && isRepeat(prev, ok, d, st) {
		p.rep.count(d, st, readAt) // the read is rolled back by the deferred func
		return d, st, false, nil
	}
	b = &pgx.Batch{}
	if d.Decision == DecisionCooldown || d.Decision == DecisionDeduped || d.Decision == DecisionIgnored {
		// A suppressed repeat changes nothing but last_seen: its record
		// need not wait for the WAL flush (a database crash may lose the
		// last fraction of a second of them, never a claim or a dispatch).
		b.Queue(`SET LOCAL synchronous_commit TO off`)
	}
	queueAlertState(b, st)
	b.Queue(`SELECT pg_notify('`+stateChannel+`', $1)`, p.notifyArg(fingerprint))
	queueDecision(b, d, false)
	p.queuePeerNote(b, fingerprint, d)
	if inv != nil {
		if err := queueInvestigation(b, *inv, false); err != nil {
			return AlertDecision{}, AlertState{}, false, err
		}
	}
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return AlertDecision{}, AlertState{}, false, pgErr("apply alert "+fingerprint, err)
	}
	committed = true
	if p.rep != nil {
		p.rep.cache(st, readAt)
	}
	return d, st, false, nil
}

// RecordDecision records a rejected alert's decision.
func (p *Postgres) RecordDecision(ctx context.Context, d AlertDecision) error {
	d, err := prepDecision(d, p.now)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	queueDecision(b, d, false)
	return pgErr("record decision", p.pool.SendBatch(ctx, b).Close())
}

func queueAlertState(b *pgx.Batch, s AlertState) {
	var last any
	if !s.LastInvestigated.IsZero() {
		last = s.LastInvestigated
	}
	b.Queue(`INSERT INTO alert_state (`+alertCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)
		ON CONFLICT (fingerprint) DO UPDATE SET alertname=EXCLUDED.alertname, agent=EXCLUDED.agent, firing=EXCLUDED.firing,
			content_hash=EXCLUDED.content_hash, first_seen=EXCLUDED.first_seen, last_seen=EXCLUDED.last_seen,
			last_investigated=EXCLUDED.last_investigated, investigations=EXCLUDED.investigations, in_flight=EXCLUDED.in_flight,
			investigation_id=EXCLUDED.investigation_id, pending=EXCLUDED.pending`,
		s.Fingerprint, s.Alertname, s.Agent, s.Firing, s.ContentHash, s.FirstSeen, s.LastSeen, last,
		s.Investigations, s.InFlight, s.InvestigationID, s.Pending)
}

const decisionCols = `id, fingerprint, alertname, status, decision, agent, investigation_id, reason, at, count, first_at`

func queueDecision(b *pgx.Batch, d AlertDecision, ignoreDup bool) {
	d = normDecision(d)
	q := `INSERT INTO alert_decisions (` + decisionCols + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`
	if ignoreDup {
		q += ` ON CONFLICT DO NOTHING`
	}
	b.Queue(q, d.ID, d.Fingerprint, d.Alertname, d.Status, d.Decision, d.Agent, d.InvestigationID, d.Reason, d.At, d.Count, d.FirstAt)
}

const invCols = `id, fingerprint, alertname, agent, run_id, status, findings, answer, error, alert, started_at, finished_at`

func queueInvestigation(b *pgx.Batch, i Investigation, upsert bool) error {
	fj, err := jsonArg(i.Findings, len(i.Findings) == 0)
	if err != nil {
		return err
	}
	q := `INSERT INTO investigations (` + invCols + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`
	if upsert {
		q += ` ON CONFLICT (id) DO UPDATE SET run_id=EXCLUDED.run_id, status=EXCLUDED.status, findings=EXCLUDED.findings,
			answer=EXCLUDED.answer, error=EXCLUDED.error, finished_at=EXCLUDED.finished_at`
	}
	b.Queue(q, i.ID, i.Fingerprint, i.Alertname, i.Agent, i.RunID, i.Status, fj, i.Answer, i.Error, bytesArg(i.Alert), i.StartedAt, i.FinishedAt)
	return nil
}

func scanInvestigation(row pgx.Row) (Investigation, error) {
	var i Investigation
	var fj []byte
	err := row.Scan(&i.ID, &i.Fingerprint, &i.Alertname, &i.Agent, &i.RunID, &i.Status, &fj, &i.Answer, &i.Error, &i.Alert, &i.StartedAt, &i.FinishedAt)
	if err != nil {
		return Investigation{}, err
	}
	if len(fj) > 0 {
		if err := json.Unmarshal(fj, &i.Findings); err != nil {
			return Investigation{}, fmt.Errorf("investigation %s findings: %w", i.ID, err)
		}
	}
	return normInvestigation(i), nil
}

// FinishInvestigation records the outcome of inv and, in the same
// statement, frees the agent's slot held by the alert that dispatched it.
func (p *Postgres) FinishInvestigation(ctx context.Context, inv Investigation) error {
	inv, err := prepFinish(inv, p.now)
	if err != nil {
		return err
	}
	fj, err := jsonArg(inv.Findings, len(inv.Findings) == 0)
	if err != nil {
		return err
	}
	var fp string
	err = p.pool.QueryRow(ctx, `WITH inv AS (
			UPDATE investigations SET status=$2, findings=$3, answer=$4, error=$5, finished_at=$6,
				run_id=CASE WHEN $7 = '' THEN run_id ELSE $7 END
			WHERE id=$1 RETURNING id, fingerprint),
		freed AS (UPDATE alert_state SET in_flight=false WHERE in_flight AND investigation_id IN (SELECT id FROM inv) RETURNING 1)
		SELECT fingerprint, CASE WHEN octet_length(fingerprint) < $10 THEN
				pg_notify('`+peerChannel+`', json_build_object('r', $9::text, 's', $11::text, 'k', fingerprint, 'i', id, 'e', true)::text) END
		FROM inv, pg_notify('`+stateChannel+`', $8 || fingerprint)`,
		inv.ID, inv.Status, fj, inv.Answer, inv.Error, inv.FinishedAt, inv.RunID, p.notifyArg(""), p.replicaID, maxPeerPayload-200, p.schema).Scan(&fp, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("investigation %s: %w", inv.ID, ErrNotFound)
	}
	if err != nil {
		return pgErr("investigation "+inv.ID, err)
	}
	if p.rep != nil {
		p.rep.forget(fp) // its slot is free: the next decision reads the state
	}
	return nil
}

// GetInvestigation returns one investigation or ErrNotFound.
func (p *Postgres) GetInvestigation(ctx context.Context, id string) (Investigation, error) {
	if err := checkKey("investigation id", id); err != nil {
		return Investigation{}, err
	}
	i, err := scanInvestigation(p.pool.QueryRow(ctx, `SELECT `+invCols+` FROM investigations WHERE id=$1`, id))
	return i, pgErr("investigation "+id, err)
}

// ListInvestigations lists investigations newest first (by start, then id).
func (p *Postgres) ListInvestigations(ctx context.Context, pg Page) ([]Investigation, string, error) {
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, `SELECT `+invCols+` FROM investigations WHERE (NOT $1 OR (started_at, id) < ($2, $3))
		ORDER BY started_at DESC, id DESC LIMIT $4`, c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", pgErr("list investigations", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Investigation, error) { return scanInvestigation(row) })
	if err != nil {
		return nil, "", pgErr("list investigations", err)
	}
	return cut(out, limit, func(i Investigation) (time.Time, string) { return i.StartedAt, i.ID })
}

// ListDecisions lists decisions newest first (by time, then id).
func (p *Postgres) ListDecisions(ctx context.Context, pg Page) ([]AlertDecision, string, error) {
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	if err := p.flushPending(ctx); err != nil {
		return nil, "", err
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, `SELECT `+decisionCols+` FROM alert_decisions WHERE (NOT $1 OR (at, id) < ($2, $3))
		ORDER BY at DESC, id DESC LIMIT $4`, c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", pgErr("list decisions", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AlertDecision, error) { return scanDecision(row) })
	if err != nil {
		return nil, "", pgErr("list decisions", err)
	}
	return cut(out, limit, func(d AlertDecision) (time.Time, string) { return d.At, d.ID })
}

// scanDecision reads the decisionCols of a row, then the columns after
// them into more.
func scanDecision(row pgx.Row, more ...any) (AlertDecision, error) {
	var d AlertDecision
	var first *time.Time
	err := row.Scan(append([]any{&d.ID, &d.Fingerprint, &d.Alertname, &d.Status, &d.Decision, &d.Agent, &d.InvestigationID, &d.Reason, &d.At, &d.Count, &first}, more...)...)
	if first != nil {
		d.FirstAt = *first
	}
	return normDecision(d), err
}

// PendingAlerts lists agent's alerts decided busy, oldest first.
func (p *Postgres) PendingAlerts(ctx context.Context, agent string) ([]AlertState, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+alertCols+` FROM alert_state WHERE agent=$1 AND pending
		ORDER BY first_seen, fingerprint`, agent)
	if err != nil {
		return nil, pgErr("pending alerts", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AlertState, error) { return scanAlertState(row) })
	return out, pgErr("pending alerts", err)
}

// GetAlertState returns one alert's state or ErrNotFound.
func (p *Postgres) GetAlertState(ctx context.Context, fingerprint string) (AlertState, error) {
	if err := checkKey("fingerprint", fingerprint); err != nil {
		return AlertState{}, err
	}
	if err := p.flushPending(ctx); err != nil {
		return AlertState{}, err
	}
	s, err := scanAlertState(p.pool.QueryRow(ctx, `SELECT `+alertCols+` FROM alert_state WHERE fingerprint=$1`, fingerprint))
	return s, pgErr("alert "+fingerprint, err)
}

// claimStates lists the alert states a replica needs to keep deciding
// during an outage: in flight, queued, or investigated within the longest
// backoff (two days), newest first, at most limit.
func (p *Postgres) claimStates(ctx context.Context, limit int) ([]AlertState, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+alertCols+` FROM alert_state
		WHERE in_flight OR pending OR last_investigated > now() - interval '48 hours'
		ORDER BY last_seen DESC LIMIT $1`, limit)
	if err != nil {
		return nil, pgErr("claim states", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AlertState, error) { return scanAlertState(row) })
	return out, pgErr("claim states", err)
}
