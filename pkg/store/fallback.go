package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// snapshot is what a Memory recorded, to write through to Postgres once it
// is back.
type snapshot struct {
	runs       []Run
	events     []Event
	findings   []FindingRecord
	pulse      []PulseState
	files      []MemoryFile
	a2a        []A2AEntry
	stamps     []DeliveryStamp
	decisions  []AlertDecision
	invs       []Investigation
	alerts     []AlertState
	pulseLocks int
	actions    []ActionRecord
	// actionsState was set during the outage (At not zero).
	actionsState ActionsState
	checks       []ActionCheck
	pages        []PageRecord
}

func (m *Memory) snapshot() snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s snapshot
	for _, r := range m.runs {
		s.runs = append(s.runs, normRun(r))
	}
	for _, byseq := range m.events {
		for _, e := range byseq {
			s.events = append(s.events, normEvent(e))
		}
	}
	s.findings = append(s.findings, m.findings...)
	for _, p := range m.pulse {
		s.pulse = append(s.pulse, p)
	}
	for _, f := range m.files {
		s.files = append(s.files, f)
	}
	for _, e := range m.a2a {
		s.a2a = append(s.a2a, normA2A(e))
	}
	for _, st := range m.stamps {
		s.stamps = append(s.stamps, st)
	}
	s.decisions = append(s.decisions, m.decisions...)
	for _, i := range m.invs {
		s.invs = append(s.invs, normInvestigation(i))
	}
	for _, st := range m.alerts {
		s.alerts = append(s.alerts, st)
	}
	s.actions = append(s.actions, m.actions...)
	s.actionsState = m.actionsState
	s.checks = append(s.checks, m.checks...)
	for _, p := range m.pages {
		s.pages = append(s.pages, p)
	}
	s.pulseLocks = len(m.locks)
	return s
}

// putRun records an update of a run this memory never saw (it was created
// in Postgres before the outage): the whole record is kept, and written
// through as an update once Postgres is back.
func (m *Memory) putRun(r Run) {
	r = normRun(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.runs[r.ID]; ok {
		r = mergeRun(old, r)
	}
	m.runs[r.ID] = r
}

func (m *Memory) putA2A(e A2AEntry) {
	e = normA2A(e)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.a2a[e.ID]; ok {
		e = mergeA2A(old, e)
	}
	m.a2a[e.ID] = e
}

func (m *Memory) putInvestigation(i Investigation) {
	i = normInvestigation(i)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.invs[i.ID]; ok {
		i = mergeInvestigation(old, i)
	}
	m.invs[i.ID] = i
}

// importSnapshot writes what memory recorded during an outage into
// Postgres, in one transaction. Every write is idempotent (upserts, or
// inserts that keep an existing row), so a write-through cut short is
// simply repeated. Alert states merge with the database's (only what memory
// saw later wins, and a claim in the database is never undone: memory never
// dispatches); pulse locks are not carried over.
func (p *Postgres) importSnapshot(ctx context.Context, s snapshot) error {
	b := &pgx.Batch{}
	for _, r := range s.runs {
		args, err := runArgs(r)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO runs (`+runCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)
			ON CONFLICT (id) DO UPDATE SET status=EXCLUDED.status, answer=EXCLUDED.answer, verdict=EXCLUDED.verdict,
				findings=EXCLUDED.findings, iterations=EXCLUDED.iterations, prompt_tokens=EXCLUDED.prompt_tokens,
				completion_tokens=EXCLUDED.completion_tokens, error=EXCLUDED.error, delegation=EXCLUDED.delegation,
				finished_at=EXCLUDED.finished_at`, args...)
	}
	for _, e := range s.events {
		b.Queue(`INSERT INTO run_events (run_id, seq, at, type, data) VALUES ($1,$2,$3,$4,$5::json) ON CONFLICT DO NOTHING`,
			e.RunID, e.Seq, e.Time, e.Type, bytesArg(e.Data))
	}
	for _, f := range s.findings {
		fj, err := jsonArg(f.Finding, false)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO findings (id, run_id, agent, finding, at) VALUES ($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING`,
			f.ID, f.RunID, f.Agent, fj, f.At)
	}
	for _, ps := range s.pulse {
		b.Queue(`INSERT INTO pulse_state (agent, task, last_run, outcome, run_id) VALUES ($1,$2,$3,$4,$5)
			ON CONFLICT (agent, task) DO UPDATE SET last_run=EXCLUDED.last_run, outcome=EXCLUDED.outcome, run_id=EXCLUDED.run_id
			WHERE pulse_state.last_run <= EXCLUDED.last_run`, ps.Agent, ps.Task, ps.LastRun, ps.Outcome, ps.RunID)
	}
	for _, f := range s.files {
		b.Queue(`INSERT INTO memory_files (agent, path, content, updated_at) VALUES ($1,$2,$3,$4)
			ON CONFLICT (agent, path) DO UPDATE SET content=EXCLUDED.content, updated_at=EXCLUDED.updated_at
			WHERE memory_files.updated_at <= EXCLUDED.updated_at`, f.Agent, f.Path, f.Content, f.UpdatedAt)
	}
	for _, e := range s.a2a {
		b.Queue(`INSERT INTO a2a_log (`+a2aCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11::json,$12,$13,$14,$15,$16,$17,$18)
			ON CONFLICT (id) DO UPDATE SET outcome=EXCLUDED.outcome, error=EXCLUDED.error, callee_run_id=EXCLUDED.callee_run_id,
				answer=EXCLUDED.answer, data=EXCLUDED.data, finished_at=EXCLUDED.finished_at`,
			e.ID, e.Agent, e.Direction, e.Verb, e.Caller, e.Callee, e.Depth, e.DiscussionID, e.TraceID, e.Text,
			bytesArg(e.Data), e.Outcome, e.Error, e.CallerRunID, e.CalleeRunID, e.Answer, e.At, e.FinishedAt)
	}
	for _, st := range s.stamps {
		b.Queue(`INSERT INTO delivery_stamps (agent, task, target, body_hash, at, thread) VALUES ($1,$2,$3,$4,$5,$6)
			ON CONFLICT (agent, task, target) DO UPDATE SET body_hash=EXCLUDED.body_hash, at=EXCLUDED.at, thread=EXCLUDED.thread
			WHERE delivery_stamps.at <= EXCLUDED.at`, st.Agent, st.Task, st.Target, st.BodyHash, st.At, st.Thread)
	}
	for _, r := range s.actions {
		b.Queue(`INSERT INTO actions (`+actionCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) ON CONFLICT (id) DO NOTHING`,
			r.ID, r.Agent, r.RunID, r.Action, r.Namespace, r.Kind, r.Name, r.Container, r.Outcome, r.Old, r.New, r.Change, r.Why, r.At)
	}
	if as := s.actionsState; !as.At.IsZero() {
		b.Queue(`INSERT INTO actions_state (id, paused, reason, by_whom, at) VALUES (1,$1,$2,$3,$4)
			ON CONFLICT (id) DO UPDATE SET paused=EXCLUDED.paused, reason=EXCLUDED.reason, by_whom=EXCLUDED.by_whom, at=EXCLUDED.at
			WHERE actions_state.at IS NULL OR actions_state.at <= EXCLUDED.at`, as.Paused, as.Reason, as.By, as.At)
	}
	for _, c := range s.checks {
		b.Queue(`INSERT INTO action_checks (`+checkCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) ON CONFLICT (id) DO NOTHING`,
			c.ID, c.ActionID, c.Agent, c.Namespace, c.Kind, c.Name, c.Container, c.Status, c.Detail, c.PageKey, c.Paged, c.At)
	}
	for _, p := range s.pages { // a resolve made during the outage wins; an open claim never reopens a resolved one
		b.Queue(`INSERT INTO pages (`+pageCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)
			ON CONFLICT (key) DO UPDATE SET resolved_at = COALESCE(pages.resolved_at, EXCLUDED.resolved_at),
				note = CASE WHEN pages.resolved_at IS NULL THEN EXCLUDED.note ELSE pages.note END`,
			p.Key, p.Target, p.Origin, p.Summary, p.Link, p.OpenedAt, p.ResolvedAt, p.Note)
	}
	for _, d := range s.decisions {
		queueDecision(b, d, true)
	}
	for _, st := range s.alerts {
		queueMergeAlertState(b, st)
	}
	for _, i := range s.invs {
		if err := queueInvestigation(b, i, true); err != nil {
			return err
		}
		if i.FinishedAt != nil {
			// Finished during the outage: free the slot its alert holds in
			// the database, if it holds one.
			b.Queue(`UPDATE alert_state SET in_flight=false WHERE in_flight AND investigation_id=$1`, i.ID)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	b.Queue(`SELECT pg_notify('`+stateChannel+`', $1)`, p.notifyArg("*")) // other replicas forget the states they remember
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("write-through: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write-through: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("write-through: %w", err)
	}
	p.forgetStates()
	return nil
}

// connFailure reports whether err (from an operation made with ctx) says
// the database is unreachable or unusable, rather than that the operation
// itself was wrong. The caller's own cancellation is not a failure.
func connFailure(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case len(pe.Code) >= 2 && pe.Code[:2] == "08", // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, cannot connect now
			len(pe.Code) >= 2 && pe.Code[:2] == "53",                   // insufficient resources
			pe.Code == "57014",                                         // canceled by our op timeout
			pe.Code == "25006",                                         // read-only transaction: a failover in progress
			pe.Code == "3D000", pe.Code == "3F000", pe.Code == "42P01": // database, schema or table gone
			return true
		}
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), // our op timeout
		pgconn.Timeout(err), pgconn.SafeToRetry(err), errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, pgconn.ErrConnClosed), strings.Contains(err.Error(), "closed pool"):
		return true
	}
	return false
}

// queueMergeAlertState writes an alert state decided in memory during an
// outage over the database's, when memory saw the alert later: its firing
// status, its firing period, and whether it is queued — except that an
// alert in flight in the database stays in flight and is not queued (a
// replica dispatched it before the outage; memory never dispatches), nor is
// one investigated since what memory knew. The investigation count and
// last investigation stay the database's.
func queueMergeAlertState(b *pgx.Batch, s AlertState) {
	var last any
	if !s.LastInvestigated.IsZero() {
		last = s.LastInvestigated
	}
	b.Queue(`INSERT INTO alert_state (`+alertCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)
		ON CONFLICT (fingerprint) DO UPDATE SET alertname=EXCLUDED.alertname,
			agent=CASE WHEN alert_state.in_flight THEN alert_state.agent ELSE EXCLUDED.agent END,
			first_seen=CASE WHEN alert_state.firing AND EXCLUDED.firing THEN alert_state.first_seen ELSE EXCLUDED.first_seen END,
			investigations=CASE WHEN EXCLUDED.firing THEN alert_state.investigations ELSE 0 END,
			firing=EXCLUDED.firing, last_seen=EXCLUDED.last_seen,
			-- queued only if memory knew the last investigation: one it
			-- never saw (another replica's) makes its decision stale.
			pending=EXCLUDED.pending AND EXCLUDED.firing AND NOT alert_state.in_flight
				AND coalesce(alert_state.last_investigated, '-infinity') <= coalesce(EXCLUDED.last_investigated, '-infinity')
		WHERE alert_state.last_seen < EXCLUDED.last_seen`,
		s.Fingerprint, s.Alertname, s.Agent, s.Firing, s.ContentHash, s.FirstSeen, s.LastSeen, last,
		s.Investigations, s.InFlight, s.InvestigationID, s.Pending)
}
