package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Check statuses an ActionCheck carries.
const (
	CheckFixed    = "fixed"     // the problem stopped and the workload is available
	CheckNotFixed = "not_fixed" // the problem goes on after the action
	CheckUnknown  = "unknown"   // the check could not tell (the workload is gone, the cluster did not answer)
)

// ActionCheck is one follow-up check of an action that was done (docs/MANUAL.md,
// "The action envelope": verify, then escalate): did the problem stop, is
// the workload available, and whether a human was paged or told it is over.
type ActionCheck struct {
	ID                               string
	ActionID                         string // the ActionRecord checked
	Agent                            string
	Namespace, Kind, Name, Container string
	Status                           string // fixed|not_fixed|unknown
	Detail                           string // the evidence the status rests on
	PageKey                          string // the incident's correlation key ("" = none)
	// Paged is what this check did to the incident: "" (nothing),
	// "triggered", "resolved", or "failed: <why>".
	Paged string
	At    time.Time
}

// CheckFilter narrows ListChecks; empty fields match everything.
type CheckFilter struct {
	ActionID, Agent, Namespace, Kind, Name, Status string
}

func (f CheckFilter) match(c ActionCheck) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.ActionID, c.ActionID) && eq(f.Agent, c.Agent) && eq(f.Namespace, c.Namespace) && eq(f.Kind, c.Kind) &&
		eq(f.Name, c.Name) && eq(f.Status, c.Status)
}

// PageRecord is one incident in the paging ledger: open while ResolvedAt
// is nil.
type PageRecord struct {
	Key        string // the correlation key (PagerDuty dedup_key, Opsgenie alias)
	Target     string // pagerduty|opsgenie|webhook
	Origin     string // what opened it: "action <id>", "alert <fingerprint>"
	Summary    string
	Link       string
	OpenedAt   time.Time
	ResolvedAt *time.Time
	Note       string // why it was resolved
}

// Escalations keeps the follow-up checks of actions and the paging ledger.
type Escalations interface {
	// RecordCheck stores c (an id and a time are assigned when empty; a
	// stored id is kept, so retries are safe).
	RecordCheck(ctx context.Context, c ActionCheck) error
	// ListChecks lists matching checks, newest first, at most limit.
	ListChecks(ctx context.Context, f CheckFilter, limit int) ([]ActionCheck, error)
	// ClaimPage opens the incident p.Key: true when this call opened it
	// (new, or reopened after a resolve), false when it is open already —
	// whoever claimed it pages, everyone else does not.
	ClaimPage(ctx context.Context, p PageRecord) (bool, error)
	// ReleasePage forgets an open claim whose trigger was never delivered,
	// so a later attempt claims it again.
	ReleasePage(ctx context.Context, key string) error
	// ResolvePage closes the incident: true when this call closed it, false
	// when it was not open.
	ResolvePage(ctx context.Context, key, note string, at time.Time) (bool, error)
	// GetPage returns the incident (ErrNotFound when never opened).
	GetPage(ctx context.Context, key string) (PageRecord, error)
	// ListPages lists incidents, open ones only when open, newest first.
	ListPages(ctx context.Context, open bool, limit int) ([]PageRecord, error)
}

var validCheck = map[string]bool{CheckFixed: true, CheckNotFixed: true, CheckUnknown: true}

func prepCheck(c ActionCheck, now func() time.Time) (ActionCheck, error) {
	if c.ID == "" {
		c.ID = newID()
	}
	for _, f := range []struct{ what, v string }{{"check id", c.ID}, {"check action id", c.ActionID}, {"check agent", c.Agent}} {
		if err := required(f.what, f.v); err != nil {
			return ActionCheck{}, err
		}
	}
	if !validCheck[c.Status] {
		return ActionCheck{}, invalidf("check status %q is not one of fixed|not_fixed|unknown", c.Status)
	}
	if c.At.IsZero() {
		c.At = now()
	}
	c.At = ts(c.At)
	for _, p := range []*string{&c.Namespace, &c.Kind, &c.Name, &c.Container, &c.Detail, &c.PageKey, &c.Paged} {
		*p = clean(*p)
	}
	return c, nil
}

func prepPage(p PageRecord, now func() time.Time) (PageRecord, error) {
	if err := required("page key", p.Key); err != nil {
		return PageRecord{}, err
	}
	if p.OpenedAt.IsZero() {
		p.OpenedAt = now()
	}
	p.OpenedAt, p.ResolvedAt = ts(p.OpenedAt), nil
	for _, s := range []*string{&p.Key, &p.Target, &p.Origin, &p.Summary, &p.Link, &p.Note} {
		*s = clean(*s)
	}
	return p, nil
}

// ---- Switch ----

// RecordCheck implements Escalations.
func (s *Switch) RecordCheck(ctx context.Context, c ActionCheck) error {
	c, err := prepCheck(c, s.o.now)
	if err != nil {
		return err
	}
	return run0(s, ctx, "record check", func(ctx context.Context, st fullStore) error { return st.RecordCheck(ctx, c) }, nil)
}

// ListChecks implements Escalations.
func (s *Switch) ListChecks(ctx context.Context, f CheckFilter, limit int) ([]ActionCheck, error) {
	return run(s, ctx, "list checks", func(ctx context.Context, st fullStore) ([]ActionCheck, error) {
		return st.ListChecks(ctx, f, limit)
	}, nil)
}

// ClaimPage implements Escalations. During an outage the claim is in
// memory and written through later: a replica that cannot reach the
// ledger may page a key another one paged — PagerDuty and Opsgenie then
// fold the two by the key.
func (s *Switch) ClaimPage(ctx context.Context, p PageRecord) (bool, error) {
	return run(s, ctx, "claim page", func(ctx context.Context, st fullStore) (bool, error) { return st.ClaimPage(ctx, p) }, nil)
}

// ReleasePage implements Escalations.
func (s *Switch) ReleasePage(ctx context.Context, key string) error {
	return run0(s, ctx, "release page", func(ctx context.Context, st fullStore) error { return st.ReleasePage(ctx, key) }, nil)
}

// ResolvePage implements Escalations.
func (s *Switch) ResolvePage(ctx context.Context, key, note string, at time.Time) (bool, error) {
	return run(s, ctx, "resolve page", func(ctx context.Context, st fullStore) (bool, error) {
		return st.ResolvePage(ctx, key, note, at)
	}, nil)
}

// GetPage implements Escalations.
func (s *Switch) GetPage(ctx context.Context, key string) (PageRecord, error) {
	return run(s, ctx, "get page", func(ctx context.Context, st fullStore) (PageRecord, error) { return st.GetPage(ctx, key) }, nil)
}

// ListPages implements Escalations.
func (s *Switch) ListPages(ctx context.Context, open bool, limit int) ([]PageRecord, error) {
	return run(s, ctx, "list pages", func(ctx context.Context, st fullStore) ([]PageRecord, error) {
		return st.ListPages(ctx, open, limit)
	}, nil)
}

// ---- Memory ----

// RecordCheck implements Escalations.
func (m *Memory) RecordCheck(ctx context.Context, c ActionCheck) error {
	c, err := prepCheck(c, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, old := range m.checks {
		if old.ID == c.ID {
			return nil
		}
	}
	m.checks = append(m.checks, c)
	return ctx.Err()
}

// ListChecks implements Escalations.
func (m *Memory) ListChecks(ctx context.Context, f CheckFilter, limit int) ([]ActionCheck, error) {
	limit = actionLimit(limit)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ActionCheck
	for i := len(m.checks) - 1; i >= 0 && len(out) < limit; i-- {
		if f.match(m.checks[i]) {
			out = append(out, m.checks[i])
		}
	}
	return out, ctx.Err()
}

// ClaimPage implements Escalations.
func (m *Memory) ClaimPage(ctx context.Context, p PageRecord) (bool, error) {
	p, err := prepPage(p, m.now)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.pages[p.Key]; ok && old.ResolvedAt == nil {
		return false, ctx.Err()
	}
	m.pages[p.Key] = p
	return true, ctx.Err()
}

// ReleasePage implements Escalations.
func (m *Memory) ReleasePage(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.pages[key]; ok && old.ResolvedAt == nil {
		delete(m.pages, key)
	}
	return ctx.Err()
}

// ResolvePage implements Escalations.
func (m *Memory) ResolvePage(ctx context.Context, key, note string, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pages[key]
	if !ok || p.ResolvedAt != nil {
		return false, ctx.Err()
	}
	t := ts(at)
	p.ResolvedAt, p.Note = &t, clean(note)
	m.pages[key] = p
	return true, ctx.Err()
}

// GetPage implements Escalations.
func (m *Memory) GetPage(ctx context.Context, key string) (PageRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pages[key]
	if !ok {
		return PageRecord{}, ErrNotFound
	}
	return p, ctx.Err()
}

// ListPages implements Escalations.
func (m *Memory) ListPages(ctx context.Context, open bool, limit int) ([]PageRecord, error) {
	limit = actionLimit(limit)
	m.mu.Lock()
	var out []PageRecord
	for _, p := range m.pages {
		if !open || p.ResolvedAt == nil {
			out = append(out, p)
		}
	}
	m.mu.Unlock()
	sortPages(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, ctx.Err()
}

func sortPages(ps []PageRecord) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && (ps[j].OpenedAt.After(ps[j-1].OpenedAt) ||
			(ps[j].OpenedAt.Equal(ps[j-1].OpenedAt) && ps[j].Key > ps[j-1].Key)); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// ---- Postgres ----

const (
	checkCols = `id, action_id, agent, namespace, kind, name, container, status, detail, page_key, paged, at`
	pageCols  = `key, target, origin, summary, link, opened_at, resolved_at, note`
)

// RecordCheck implements Escalations.
func (p *Postgres) RecordCheck(ctx context.Context, c ActionCheck) error {
	c, err := prepCheck(c, p.now)
	if err != nil {
		return err
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO action_checks (`+checkCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)
		ON CONFLICT (id) DO NOTHING`, c.ID, c.ActionID, c.Agent, c.Namespace, c.Kind, c.Name, c.Container, c.Status,
		c.Detail, c.PageKey, c.Paged, c.At)
	return pgErr("record check", err)
}

// ListChecks implements Escalations.
func (p *Postgres) ListChecks(ctx context.Context, f CheckFilter, limit int) ([]ActionCheck, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+checkCols+` FROM action_checks
		WHERE ($1 = '' OR action_id = $1) AND ($2 = '' OR agent = $2) AND ($3 = '' OR namespace = $3) AND ($4 = '' OR kind = $4)
		  AND ($5 = '' OR name = $5) AND ($6 = '' OR status = $6)
		ORDER BY at DESC, id DESC LIMIT $7`, f.ActionID, f.Agent, f.Namespace, f.Kind, f.Name, f.Status, actionLimit(limit))
	if err != nil {
		return nil, pgErr("list checks", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ActionCheck, error) {
		var c ActionCheck
		err := row.Scan(&c.ID, &c.ActionID, &c.Agent, &c.Namespace, &c.Kind, &c.Name, &c.Container, &c.Status,
			&c.Detail, &c.PageKey, &c.Paged, &c.At)
		c.At = ts(c.At)
		return c, err
	})
	return out, pgErr("list checks", err)
}

// ClaimPage implements Escalations: one statement, so of two replicas
// claiming one key exactly one gets true.
func (p *Postgres) ClaimPage(ctx context.Context, pr PageRecord) (bool, error) {
	pr, err := prepPage(pr, p.now)
	if err != nil {
		return false, err
	}
	var key string
	err = p.pool.QueryRow(ctx, `INSERT INTO pages (`+pageCols+`) VALUES ($1,$2,$3,$4,$5,$6,NULL,'')
		ON CONFLICT (key) DO UPDATE SET target=EXCLUDED.target, origin=EXCLUDED.origin, summary=EXCLUDED.summary,
			link=EXCLUDED.link, opened_at=EXCLUDED.opened_at, resolved_at=NULL, note=''
		WHERE pages.resolved_at IS NOT NULL
		RETURNING key`, pr.Key, pr.Target, pr.Origin, pr.Summary, pr.Link, pr.OpenedAt).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, pgErr("claim page", err)
}

// ReleasePage implements Escalations.
func (p *Postgres) ReleasePage(ctx context.Context, key string) error {
	_, err := p.pool.Exec(ctx, `DELETE FROM pages WHERE key = $1 AND resolved_at IS NULL`, key)
	return pgErr("release page", err)
}

// ResolvePage implements Escalations.
func (p *Postgres) ResolvePage(ctx context.Context, key, note string, at time.Time) (bool, error) {
	tag, err := p.pool.Exec(ctx, `UPDATE pages SET resolved_at = $2, note = $3 WHERE key = $1 AND resolved_at IS NULL`,
		key, ts(at), clean(note))
	if err != nil {
		return false, pgErr("resolve page", err)
	}
	return tag.RowsAffected() == 1, nil
}

// GetPage implements Escalations.
func (p *Postgres) GetPage(ctx context.Context, key string) (PageRecord, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+pageCols+` FROM pages WHERE key = $1`, key)
	if err != nil {
		return PageRecord{}, pgErr("get page", err)
	}
	pr, err := pgx.CollectExactlyOneRow(rows, scanPage)
	if errors.Is(err, pgx.ErrNoRows) {
		return PageRecord{}, ErrNotFound
	}
	return pr, pgErr("get page", err)
}

// ListPages implements Escalations.
func (p *Postgres) ListPages(ctx context.Context, open bool, limit int) ([]PageRecord, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+pageCols+` FROM pages WHERE NOT $1 OR resolved_at IS NULL
		ORDER BY opened_at DESC, key DESC LIMIT $2`, open, actionLimit(limit))
	if err != nil {
		return nil, pgErr("list pages", err)
	}
	out, err := pgx.CollectRows(rows, scanPage)
	return out, pgErr("list pages", err)
}

func scanPage(row pgx.CollectableRow) (PageRecord, error) {
	var pr PageRecord
	err := row.Scan(&pr.Key, &pr.Target, &pr.Origin, &pr.Summary, &pr.Link, &pr.OpenedAt, &pr.ResolvedAt, &pr.Note)
	pr.OpenedAt, pr.ResolvedAt = ts(pr.OpenedAt), tsPtr(pr.ResolvedAt)
	return pr, err
}
