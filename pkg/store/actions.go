package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ActionsState is the fleet's kill switch (docs/MANUAL.md, "The action
// envelope"): while Paused, every mutating primitive refuses. The zero value
// — never set — is not paused.
type ActionsState struct {
	Paused bool
	Reason string
	By     string
	At     time.Time
}

// Action outcomes an ActionRecord carries.
const (
	ActionDone        = "done"        // the change was made
	ActionProposed    = "proposed"    // shadow mode: prepared, not made
	ActionRecommended = "recommended" // over a budget: left for a human
	ActionRefused     = "refused"     // paused or outside the opted-in namespaces
)

// ActionRecord is one decision of the action envelope on one mutating
// primitive: what was (or would have been) changed, and why.
type ActionRecord struct {
	ID        string
	Agent     string
	RunID     string
	Action    string // e.g. k8s.rollout.restart, gitops.pr.open
	Namespace string
	Kind      string
	Name      string
	Container string
	Outcome   string // done|proposed|recommended|refused
	Old, New  string // a memory bump's values
	Change    string // the exact change: the PR diff, the restart patch
	Why       string
	At        time.Time
}

// ActionFilter narrows ListActions. Empty fields match everything; Since
// zero means all time.
type ActionFilter struct {
	Agent, Action, Namespace, Kind, Name, Container, Outcome string
	Since                                                    time.Time
}

func (f ActionFilter) match(r ActionRecord) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.Agent, r.Agent) && eq(f.Action, r.Action) && eq(f.Namespace, r.Namespace) && eq(f.Kind, r.Kind) &&
		eq(f.Name, r.Name) && eq(f.Container, r.Container) && eq(f.Outcome, r.Outcome) &&
		(f.Since.IsZero() || !r.At.Before(ts(f.Since)))
}

// Actions keeps the kill switch and the history the budgets count.
type Actions interface {
	// ActionsState returns the kill switch; the zero value when never set.
	ActionsState(ctx context.Context) (ActionsState, error)
	SetActionsState(ctx context.Context, s ActionsState) error
	// RecordAction stores r (an id and a time are assigned when empty).
	RecordAction(ctx context.Context, r ActionRecord) error
	// ListActions lists matching records, newest first, at most limit
	// (<= 0: DefaultLimit; capped at MaxLimit).
	ListActions(ctx context.Context, f ActionFilter, limit int) ([]ActionRecord, error)
}

var validOutcome = map[string]bool{ActionDone: true, ActionProposed: true, ActionRecommended: true, ActionRefused: true}

func prepAction(r ActionRecord, now func() time.Time) (ActionRecord, error) {
	if r.ID == "" {
		r.ID = newID()
	}
	for _, f := range []struct{ what, v string }{{"action agent", r.Agent}, {"action", r.Action}, {"action id", r.ID}} {
		if err := required(f.what, f.v); err != nil {
			return ActionRecord{}, err
		}
	}
	if !validOutcome[r.Outcome] {
		return ActionRecord{}, invalidf("action outcome %q is not one of done|proposed|recommended|refused", r.Outcome)
	}
	if r.At.IsZero() {
		r.At = now()
	}
	r.At = ts(r.At)
	for _, p := range []*string{&r.RunID, &r.Namespace, &r.Kind, &r.Name, &r.Container, &r.Old, &r.New, &r.Change, &r.Why} {
		*p = clean(*p)
	}
	return r, nil
}

func prepActionsState(s ActionsState, now func() time.Time) ActionsState {
	if s.At.IsZero() {
		s.At = now()
	}
	s.At = ts(s.At)
	s.Reason, s.By = clean(s.Reason), clean(s.By)
	return s
}

func actionLimit(n int) int { return Page{Limit: n}.limit() }

// ---- Switch ----

// ActionsState implements Actions. Serving from memory during a Postgres
// outage, a kill switch nobody set meanwhile is the last state Postgres
// gave: an outage never un-pauses the fleet.
func (s *Switch) ActionsState(ctx context.Context) (ActionsState, error) {
	st, err := run(s, ctx, "actions state", func(ctx context.Context, st fullStore) (ActionsState, error) { return st.ActionsState(ctx) }, nil)
	if err != nil {
		return st, err
	}
	s.actMu.Lock()
	defer s.actMu.Unlock()
	if st.At.IsZero() && s.url != "" {
		return s.lastActions, nil
	}
	s.lastActions = st
	return st, nil
}

// SetActionsState implements Actions.
func (s *Switch) SetActionsState(ctx context.Context, as ActionsState) error {
	as = prepActionsState(as, s.o.now)
	err := run0(s, ctx, "set actions state", func(ctx context.Context, st fullStore) error { return st.SetActionsState(ctx, as) }, nil)
	if err == nil {
		s.actMu.Lock()
		s.lastActions = as
		s.actMu.Unlock()
	}
	return err
}

// RecordAction implements Actions.
func (s *Switch) RecordAction(ctx context.Context, r ActionRecord) error {
	r, err := prepAction(r, s.o.now)
	if err != nil {
		return err
	}
	return run0(s, ctx, "record action", func(ctx context.Context, st fullStore) error { return st.RecordAction(ctx, r) }, nil)
}

// ListActions implements Actions.
func (s *Switch) ListActions(ctx context.Context, f ActionFilter, limit int) ([]ActionRecord, error) {
	return run(s, ctx, "list actions", func(ctx context.Context, st fullStore) ([]ActionRecord, error) {
		return st.ListActions(ctx, f, limit)
	}, nil)
}

// ---- Memory ----

// ActionsState implements Actions.
func (m *Memory) ActionsState(ctx context.Context) (ActionsState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.actionsState, ctx.Err()
}

// SetActionsState implements Actions.
func (m *Memory) SetActionsState(ctx context.Context, s ActionsState) error {
	s = prepActionsState(s, m.now)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.actionsState = s
	return ctx.Err()
}

// RecordAction implements Actions; a stored id is kept (retries are safe).
func (m *Memory) RecordAction(ctx context.Context, r ActionRecord) error {
	r, err := prepAction(r, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, old := range m.actions {
		if old.ID == r.ID {
			return nil
		}
	}
	m.actions = append(m.actions, r)
	return ctx.Err()
}

// ListActions implements Actions.
func (m *Memory) ListActions(ctx context.Context, f ActionFilter, limit int) ([]ActionRecord, error) {
	limit = actionLimit(limit)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ActionRecord
	for i := len(m.actions) - 1; i >= 0 && len(out) < limit; i-- {
		if f.match(m.actions[i]) {
			out = append(out, m.actions[i])
		}
	}
	sortActions(out)
	return out, ctx.Err()
}

func sortActions(rs []ActionRecord) {
	for i := 1; i < len(rs); i++ { // insertion: already nearly ordered
		for j := i; j > 0 && actionAfter(rs[j], rs[j-1]); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func actionAfter(a, b ActionRecord) bool {
	if !a.At.Equal(b.At) {
		return a.At.After(b.At)
	}
	return a.ID > b.ID
}

// ---- Postgres ----

const actionCols = `id, agent, run_id, action, namespace, kind, name, container, outcome, old_value, new_value, change, why, at`

// ActionsState implements Actions.
func (p *Postgres) ActionsState(ctx context.Context) (ActionsState, error) {
	var s ActionsState
	var at *time.Time
	err := p.pool.QueryRow(ctx, `SELECT paused, reason, by_whom, at FROM actions_state WHERE id = 1`).Scan(&s.Paused, &s.Reason, &s.By, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return ActionsState{}, nil
	}
	if err != nil {
		return ActionsState{}, pgErr("actions state", err)
	}
	if at != nil {
		s.At = ts(*at)
	}
	return s, nil
}

// SetActionsState implements Actions.
func (p *Postgres) SetActionsState(ctx context.Context, s ActionsState) error {
	s = prepActionsState(s, p.now)
	_, err := p.pool.Exec(ctx, `INSERT INTO actions_state (id, paused, reason, by_whom, at) VALUES (1,$1,$2,$3,$4)
		ON CONFLICT (id) DO UPDATE SET paused=EXCLUDED.paused, reason=EXCLUDED.reason, by_whom=EXCLUDED.by_whom, at=EXCLUDED.at`,
		s.Paused, s.Reason, s.By, s.At)
	return pgErr("set actions state", err)
}

// RecordAction implements Actions; a stored id is kept (retries are safe).
func (p *Postgres) RecordAction(ctx context.Context, r ActionRecord) error {
	r, err := prepAction(r, p.now)
	if err != nil {
		return err
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO actions (`+actionCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)
		ON CONFLICT (id) DO NOTHING`, r.ID, r.Agent, r.RunID, r.Action, r.Namespace, r.Kind, r.Name, r.Container,
		r.Outcome, r.Old, r.New, r.Change, r.Why, r.At)
	return pgErr("record action", err)
}

// ListActions implements Actions.
func (p *Postgres) ListActions(ctx context.Context, f ActionFilter, limit int) ([]ActionRecord, error) {
	var since *time.Time
	if !f.Since.IsZero() {
		t := ts(f.Since)
		since = &t
	}
	rows, err := p.pool.Query(ctx, `SELECT `+actionCols+` FROM actions
		WHERE ($1 = '' OR agent = $1) AND ($2 = '' OR action = $2) AND ($3 = '' OR namespace = $3) AND ($4 = '' OR kind = $4)
		  AND ($5 = '' OR name = $5) AND ($6 = '' OR container = $6) AND ($7 = '' OR outcome = $7)
		  AND ($8::timestamptz IS NULL OR at >= $8)
		ORDER BY at DESC, id DESC LIMIT $9`,
		f.Agent, f.Action, f.Namespace, f.Kind, f.Name, f.Container, f.Outcome, since, actionLimit(limit))
	if err != nil {
		return nil, pgErr("list actions", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ActionRecord, error) {
		var r ActionRecord
		err := row.Scan(&r.ID, &r.Agent, &r.RunID, &r.Action, &r.Namespace, &r.Kind, &r.Name, &r.Container,
			&r.Outcome, &r.Old, &r.New, &r.Change, &r.Why, &r.At)
		r.At = ts(r.At)
		return r, err
	})
	if err != nil {
		return nil, pgErr("list actions", err)
	}
	return out, nil
}
