package store

// The alerts firing: each alert's newest decision, kept when it says the
// alert still fires. The core's dashboard shows them (docs/MANUAL.md,
// "Dashboard"); reading them in the store keeps the list whole however
// many decisions a storm recorded. The state the decisions are made from
// (alert_state) is the incident's, one row per correlation key, so the
// per-alert truth is the alert's own newest decision.

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// FiringLister lists the alerts firing.
type FiringLister interface {
	// ListFiring lists every alert (fingerprint) whose newest decision
	// has status firing and a decision other than resolved or rejected,
	// that decision each, newest first (by time, then id), and how many
	// there are in all.
	ListFiring(ctx context.Context, p Page) (items []AlertDecision, next string, total int, err error)
}

// stillFiring reports whether an alert's newest decision says it fires.
func stillFiring(d AlertDecision) bool {
	return d.Fingerprint != "" && d.Status == "firing" && d.Decision != DecisionResolved && d.Decision != DecisionRejected
}

// ListFiring implements FiringLister.
func (m *Memory) ListFiring(ctx context.Context, p Page) ([]AlertDecision, string, int, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", 0, err
	}
	m.mu.Lock()
	newest := map[string]AlertDecision{}
	for _, d := range m.decisions {
		if n, ok := newest[d.Fingerprint]; !ok || newerFirst(d.At, d.ID, n.At, n.ID) {
			newest[d.Fingerprint] = d
		}
	}
	m.mu.Unlock()
	var all []AlertDecision
	total := 0
	for _, d := range newest {
		if !stillFiring(d) {
			continue
		}
		total++
		if c.after(d.At, d.ID) {
			all = append(all, d)
		}
	}
	items, next, err := page(all, p.limit(), func(d AlertDecision) (time.Time, string) { return d.At, d.ID })
	return items, next, total, err
}

// firingQuery walks the distinct fingerprints of alert_decisions through
// the alert_decisions_fingerprint index (one descent each, however many
// decisions an alert has: migration 00009), reads each one's newest
// decision, and keeps those still firing. $1..$3 are the cursor, $4 the
// page size; the total rides on every row.
const firingQuery = `WITH RECURSIVE fps AS (
		(SELECT fingerprint FROM alert_decisions WHERE fingerprint > '' ORDER BY fingerprint LIMIT 1)
		UNION ALL
		SELECT (SELECT d.fingerprint FROM alert_decisions d WHERE d.fingerprint > fps.fingerprint ORDER BY d.fingerprint LIMIT 1)
		FROM fps WHERE fps.fingerprint IS NOT NULL),
	firing AS MATERIALIZED (
		SELECT l.* FROM fps CROSS JOIN LATERAL (
			SELECT ` + decisionCols + ` FROM alert_decisions d WHERE d.fingerprint = fps.fingerprint
			ORDER BY d.at DESC, d.id DESC LIMIT 1) l
		WHERE fps.fingerprint IS NOT NULL AND l.status = 'firing' AND l.decision NOT IN ('resolved', 'rejected'))
	SELECT ` + decisionCols + `, (SELECT count(*) FROM firing) FROM firing
	WHERE (NOT $1 OR (at, id) < ($2, $3))
	ORDER BY at DESC, id DESC LIMIT $4`

// ListFiring implements FiringLister.
func (p *Postgres) ListFiring(ctx context.Context, pg Page) ([]AlertDecision, string, int, error) {
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	if err := p.flushPending(ctx); err != nil {
		return nil, "", 0, err
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, firingQuery, c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", 0, pgErr("list firing", err)
	}
	total := 0
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AlertDecision, error) { return scanDecision(row, &total) })
	if err != nil {
		return nil, "", 0, pgErr("list firing", err)
	}
	if len(out) == 0 && c.ok {
		// Past the last page no row carries the total: the first one does.
		_, err := scanDecision(p.pool.QueryRow(ctx, firingQuery, false, time.Time{}, "", 1), &total)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, "", 0, pgErr("count firing", err)
		}
	}
	items, next, err := cut(out, limit, func(d AlertDecision) (time.Time, string) { return d.At, d.ID })
	return items, next, total, err
}

// ListFiring implements FiringLister.
func (s *Switch) ListFiring(ctx context.Context, p Page) ([]AlertDecision, string, int, error) {
	type firingPage struct {
		listed[AlertDecision]
		total int
	}
	l, err := run(s, ctx, "list firing", func(ctx context.Context, st fullStore) (firingPage, error) {
		items, next, total, err := st.ListFiring(ctx, p)
		return firingPage{listed[AlertDecision]{items, next}, total}, err
	}, nil)
	return l.items, l.next, l.total, err
}
