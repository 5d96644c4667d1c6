package store

// Postgres for an agent's own state: pulse runs and locks, memory files, the
// A2A audit log and report delivery stamps.
import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ---- pulse ----

// PulseStates returns agent's pulse states by task.
func (p *Postgres) PulseStates(ctx context.Context, agent string) ([]PulseState, error) {
	rows, err := p.pool.Query(ctx, `SELECT agent, task, last_run, outcome, run_id FROM pulse_state WHERE agent=$1 ORDER BY task`, agent)
	if err != nil {
		return nil, pgErr("pulse states", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PulseState, error) {
		var s PulseState
		err := row.Scan(&s.Agent, &s.Task, &s.LastRun, &s.Outcome, &s.RunID)
		s.LastRun = ts(s.LastRun)
		return s, err
	})
	return out, pgErr("pulse states", err)
}

// SetPulseState upserts one task's state.
func (p *Postgres) SetPulseState(ctx context.Context, s PulseState) error {
	s, err := prepPulseState(s)
	if err != nil {
		return err
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO pulse_state (agent, task, last_run, outcome, run_id) VALUES ($1,$2,$3,$4,$5)
		ON CONFLICT (agent, task) DO UPDATE SET last_run=EXCLUDED.last_run, outcome=EXCLUDED.outcome, run_id=EXCLUDED.run_id`,
		s.Agent, s.Task, s.LastRun, s.Outcome, s.RunID)
	return pgErr("pulse state", err)
}

// TryPulseLock takes agent's pulse leadership for ttl when it is free,
// expired or already holder's; ttl <= 0 releases it if holder has it. Expiry
// is judged by the store's clock, which replicas must keep in sync (NTP).
func (p *Postgres) TryPulseLock(ctx context.Context, agent, holder string, ttl time.Duration) (bool, error) {
	if err := prepPulseLock(agent, holder); err != nil {
		return false, err
	}
	now := ts(p.now())
	if ttl <= 0 {
		_, err := p.pool.Exec(ctx, `DELETE FROM pulse_lock WHERE agent=$1 AND holder=$2`, agent, holder)
		return false, pgErr("pulse lock", err)
	}
	tag, err := p.pool.Exec(ctx, `INSERT INTO pulse_lock (agent, holder, expires_at) VALUES ($1,$2,$3)
		ON CONFLICT (agent) DO UPDATE SET holder=EXCLUDED.holder, expires_at=EXCLUDED.expires_at
		WHERE pulse_lock.holder = EXCLUDED.holder OR pulse_lock.expires_at <= $4`,
		agent, holder, ts(now.Add(ttl)), now)
	if err != nil {
		return false, pgErr("pulse lock", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ---- memory files ----

// ReadMemory returns one memory file or ErrNotFound.
func (p *Postgres) ReadMemory(ctx context.Context, agent, path string) (MemoryFile, error) {
	if err := ValidateMemoryPath(path); err != nil {
		return MemoryFile{}, err
	}
	var f MemoryFile
	err := p.pool.QueryRow(ctx, `SELECT agent, path, content, updated_at FROM memory_files WHERE agent=$1 AND path=$2`, agent, path).
		Scan(&f.Agent, &f.Path, &f.Content, &f.UpdatedAt)
	f.UpdatedAt = ts(f.UpdatedAt)
	return f, pgErr(fmt.Sprintf("memory %s %s", agent, path), err)
}

// WriteMemory creates or replaces a memory file (UpdatedAt zero: now).
func (p *Postgres) WriteMemory(ctx context.Context, f MemoryFile) error {
	f, err := prepMemoryFile(f, p.now)
	if err != nil {
		return err
	}
	return p.upsertMemory(ctx, f, false)
}

func (p *Postgres) upsertMemory(ctx context.Context, f MemoryFile, onlyNewer bool) error {
	q := `INSERT INTO memory_files (agent, path, content, updated_at) VALUES ($1,$2,$3,$4)
		ON CONFLICT (agent, path) DO UPDATE SET content=EXCLUDED.content, updated_at=EXCLUDED.updated_at`
	if onlyNewer {
		q += ` WHERE memory_files.updated_at <= EXCLUDED.updated_at`
	}
	_, err := p.pool.Exec(ctx, q, f.Agent, f.Path, f.Content, f.UpdatedAt)
	return pgErr("memory "+f.Path, err)
}

// ListMemory lists agent's memory files by path.
func (p *Postgres) ListMemory(ctx context.Context, agent string) ([]MemoryFile, error) {
	rows, err := p.pool.Query(ctx, `SELECT agent, path, content, updated_at FROM memory_files WHERE agent=$1 ORDER BY path`, agent)
	if err != nil {
		return nil, pgErr("list memory", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (MemoryFile, error) {
		var f MemoryFile
		err := row.Scan(&f.Agent, &f.Path, &f.Content, &f.UpdatedAt)
		f.UpdatedAt = ts(f.UpdatedAt)
		return f, err
	})
	return out, pgErr("list memory", err)
}

// ---- A2A audit ----

const a2aCols = `id, agent, direction, verb, caller, callee, depth, discussion_id, trace_id, text, data,
	outcome, error, caller_run_id, callee_run_id, answer, at, finished_at`

// RecordA2A stores one audit entry (ID empty: a new id).
func (p *Postgres) RecordA2A(ctx context.Context, e A2AEntry) error {
	e, err := prepA2A(e, p.now)
	if err != nil {
		return err
	}
	return p.insertA2A(ctx, e, false)
}

func (p *Postgres) insertA2A(ctx context.Context, e A2AEntry, upsert bool) error {
	q := `INSERT INTO a2a_log (` + a2aCols + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11::json,$12,$13,$14,$15,$16,$17,$18)`
	if upsert {
		q += ` ON CONFLICT (id) DO UPDATE SET outcome=EXCLUDED.outcome, error=EXCLUDED.error, callee_run_id=EXCLUDED.callee_run_id,
			answer=EXCLUDED.answer, data=EXCLUDED.data, finished_at=EXCLUDED.finished_at`
	}
	_, err := p.pool.Exec(ctx, q, e.ID, e.Agent, e.Direction, e.Verb, e.Caller, e.Callee, e.Depth, e.DiscussionID, e.TraceID, e.Text,
		bytesArg(e.Data), e.Outcome, e.Error, e.CallerRunID, e.CalleeRunID, e.Answer, e.At, e.FinishedAt)
	return pgErr("a2a entry "+e.ID, err)
}

// UpdateA2A replaces the outcome fields of an existing entry.
func (p *Postgres) UpdateA2A(ctx context.Context, e A2AEntry) error {
	e, err := prepA2AUpdate(e)
	if err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `UPDATE a2a_log SET outcome=$2, error=$3, callee_run_id=$4, answer=$5, data=$6::json, finished_at=$7 WHERE id=$1`,
		e.ID, e.Outcome, e.Error, e.CalleeRunID, e.Answer, bytesArg(e.Data), e.FinishedAt)
	if err != nil {
		return pgErr("a2a entry "+e.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("a2a entry %s: %w", e.ID, ErrNotFound)
	}
	return nil
}

// ListA2A lists agent's entries newest first; agent "" lists all.
func (p *Postgres) ListA2A(ctx context.Context, agent string, pg Page) ([]A2AEntry, string, error) {
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, `SELECT `+a2aCols+` FROM a2a_log
		WHERE ($1 = '' OR agent = $1) AND (NOT $2 OR (at, id) < ($3, $4))
		ORDER BY at DESC, id DESC LIMIT $5`, agent, c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", pgErr("list a2a", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (A2AEntry, error) {
		var e A2AEntry
		var data *string
		err := row.Scan(&e.ID, &e.Agent, &e.Direction, &e.Verb, &e.Caller, &e.Callee, &e.Depth, &e.DiscussionID, &e.TraceID, &e.Text,
			&data, &e.Outcome, &e.Error, &e.CallerRunID, &e.CalleeRunID, &e.Answer, &e.At, &e.FinishedAt)
		if data != nil {
			e.Data = json.RawMessage(*data)
		}
		return normA2A(e), err
	})
	if err != nil {
		return nil, "", pgErr("list a2a", err)
	}
	return cut(out, limit, func(e A2AEntry) (time.Time, string) { return e.At, e.ID })
}

// ---- delivery stamps ----

// LastDelivery returns the stamp of (agent, task, target) or ErrNotFound.
func (p *Postgres) LastDelivery(ctx context.Context, agent, task, target string) (DeliveryStamp, error) {
	var s DeliveryStamp
	err := p.pool.QueryRow(ctx, `SELECT agent, task, target, body_hash, at, thread FROM delivery_stamps WHERE agent=$1 AND task=$2 AND target=$3`,
		agent, task, target).Scan(&s.Agent, &s.Task, &s.Target, &s.BodyHash, &s.At, &s.Thread)
	s.At = ts(s.At)
	return s, pgErr(fmt.Sprintf("delivery %s/%s/%s", agent, task, target), err)
}

// StampDelivery upserts the stamp of (agent, task, target).
func (p *Postgres) StampDelivery(ctx context.Context, s DeliveryStamp) error {
	s, err := prepStamp(s, p.now)
	if err != nil {
		return err
	}
	return p.upsertStamp(ctx, s, false)
}

func (p *Postgres) upsertStamp(ctx context.Context, s DeliveryStamp, onlyNewer bool) error {
	q := `INSERT INTO delivery_stamps (agent, task, target, body_hash, at, thread) VALUES ($1,$2,$3,$4,$5,$6)
		ON CONFLICT (agent, task, target) DO UPDATE SET body_hash=EXCLUDED.body_hash, at=EXCLUDED.at, thread=EXCLUDED.thread`
	if onlyNewer {
		q += ` WHERE delivery_stamps.at <= EXCLUDED.at`
	}
	_, err := p.pool.Exec(ctx, q, s.Agent, s.Task, s.Target, s.BodyHash, s.At, s.Thread)
	return pgErr("delivery stamp", err)
}
