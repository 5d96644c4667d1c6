package store

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Postgres is the shared store: every agent and core replica of the fleet
// can use one database.
type Postgres struct {
	pool *pgxpool.Pool
	now  func() time.Time
	log  *zap.Logger
	rep  *repeats // nil: every decision is written at once
	// replicaID names this process in alert-state notifications.
	replicaID string
	peers     *peerHub // hears the other replicas' notes (postgres_peers.go)
	// schema is the current schema: notifications reach every schema of
	// the database, and a note of another schema's replicas is not ours.
	schema string
}

var (
	_ AgentStore = (*Postgres)(nil)
	_ CoreStore  = (*Postgres)(nil)
)

// OpenPostgres connects to url within the connect timeout (default 5s; TCP
// keepalives on) and applies the embedded migrations under an advisory lock,
// so processes starting together against an empty database all start.
func OpenPostgres(ctx context.Context, url string, log *zap.Logger, opts ...Option) (*Postgres, error) {
	o := buildOptions(opts)
	if log == nil {
		log = zap.NewNop()
	}
	cfg, err := poolConfig(url, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.connectTimeout+30*time.Second, errors.New("postgres: connect and migrate took too long"))
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pctx, pcancel := context.WithTimeoutCause(ctx, o.connectTimeout, fmt.Errorf("postgres: no connection within %s", o.connectTimeout))
	err = pool.Ping(pctx)
	pcancel()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", pgAddress(cfg), err)
	}
	schema, err := migrate(ctx, pool, log)
	if err != nil {
		pool.Close()
		return nil, err
	}
	p := &Postgres{pool: pool, now: o.now, log: log, replicaID: newID(), schema: schema, peers: o.peers}
	if p.peers == nil {
		p.peers = &peerHub{}
	}
	if o.flushInterval > 0 {
		p.rep = newRepeats(o.flushInterval)
		go p.flushLoop()
		lctx, cancel := context.WithCancel(context.Background())
		p.rep.stopListen = cancel
		go p.listenLoop(lctx)
	}
	return p, nil
}

// ParseURL checks a DATABASE_URL without connecting.
func ParseURL(url string) error {
	_, err := poolConfig(url, buildOptions(nil))
	return err
}

func poolConfig(url string, o options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, invalidf("DATABASE_URL is not a valid Postgres URL or DSN")
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout <= 0 || cc.ConnectTimeout > o.connectTimeout {
		cc.ConnectTimeout = o.connectTimeout
	}
	dialer := &net.Dialer{
		Timeout: cc.ConnectTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3,
		},
	}
	cc.DialFunc = dialer.DialContext
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	return cfg, nil
}

func pgAddress(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// migrate applies the embedded migrations with goose. The session lock id
// is derived from the current schema, so databases (and test schemas)
// migrate independently while two processes on one schema take turns.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *zap.Logger) (schema string, err error) {
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return "", fmt.Errorf("postgres: current schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("kubecrew-migrate:" + schema))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64()>>1)), lock.WithLockTimeout(1, 120))
	if err != nil {
		return "", fmt.Errorf("postgres: migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	fsys, err := fsSub(migrations, "migrations")
	if err != nil {
		return "", err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker), goose.WithTableName("kubecrew_schema_version"), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return "", fmt.Errorf("postgres: migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return "", fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, r := range res {
		log.Info("postgres migration applied", zap.String("schema", schema), zap.Int64("version", r.Source.Version), zap.Duration("took", r.Duration))
	}
	return schema, nil
}

// Kind reports "postgres".
func (p *Postgres) Kind() string { return "postgres" }

// Ping checks the database answers.
func (p *Postgres) Ping(ctx context.Context) error { return p.pool.Ping(ctx) }

// Close writes the pending repeat counters and closes the pool.
func (p *Postgres) Close() {
	if p.rep != nil {
		p.rep.closeOnce.Do(func() { close(p.rep.stop); p.rep.stopListen() })
		<-p.rep.done
		<-p.rep.listenDone
	}
	p.pool.Close()
}

// pgErr maps database errors to the store's errors.
func pgErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			return fmt.Errorf("%s: %w", what, ErrConflict)
		case "23514", "22P02", "22021", "22P05", "54000":
			return fmt.Errorf("%s: %w: %s", what, ErrInvalid, pe.Message)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func jsonArg(v any, empty bool) ([]byte, error) {
	if empty {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, invalidf("encode: %v", err)
	}
	return b, nil
}

func bytesArg(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// ---- runs ----

const runCols = `id, agent, workflow_type, task, context, caller, social_depth, discussion_id, status, answer, verdict,
	findings, iterations, prompt_tokens, completion_tokens, error, delegation, started_at, finished_at`

func runArgs(r Run) ([]any, error) {
	ctxJSON, err := jsonArg(r.Context, len(r.Context) == 0)
	if err != nil {
		return nil, err
	}
	fJSON, err := jsonArg(r.Findings, len(r.Findings) == 0)
	if err != nil {
		return nil, err
	}
	dJSON, err := jsonArg(r.Delegation, r.Delegation == nil)
	if err != nil {
		return nil, err
	}
	return []any{r.ID, r.Agent, r.WorkflowType, r.Task, ctxJSON, r.Caller, r.SocialDepth, r.DiscussionID, r.Status, r.Answer, r.Verdict,
		fJSON, r.Iterations, r.Tokens.Prompt, r.Tokens.Completion, r.Error, dJSON, r.StartedAt, r.FinishedAt}, nil
}

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	var ctxJSON, fJSON, dJSON []byte
	err := row.Scan(&r.ID, &r.Agent, &r.WorkflowType, &r.Task, &ctxJSON, &r.Caller, &r.SocialDepth, &r.DiscussionID, &r.Status, &r.Answer, &r.Verdict,
		&fJSON, &r.Iterations, &r.Tokens.Prompt, &r.Tokens.Completion, &r.Error, &dJSON, &r.StartedAt, &r.FinishedAt)
	if err != nil {
		return Run{}, err
	}
	if len(ctxJSON) > 0 {
		if err := json.Unmarshal(ctxJSON, &r.Context); err != nil {
			return Run{}, fmt.Errorf("run %s context: %w", r.ID, err)
		}
	}
	if len(fJSON) > 0 {
		if err := json.Unmarshal(fJSON, &r.Findings); err != nil {
			return Run{}, fmt.Errorf("run %s findings: %w", r.ID, err)
		}
	}
	if len(dJSON) > 0 {
		r.Delegation = new(api.Delegation)
		if err := json.Unmarshal(dJSON, r.Delegation); err != nil {
			return Run{}, fmt.Errorf("run %s delegation: %w", r.ID, err)
		}
	}
	return normRun(r), nil
}

// CreateRun stores a new run; an existing id is ErrConflict.
func (p *Postgres) CreateRun(ctx context.Context, r Run) error {
	r, err := prepRun(r, p.now)
	if err != nil {
		return err
	}
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO runs (`+runCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)`, args...)
	return pgErr("run "+r.ID, err)
}

// UpdateRun replaces the mutable fields of an existing run.
func (p *Postgres) UpdateRun(ctx context.Context, r Run) error {
	r, err := prepRunUpdate(r)
	if err != nil {
		return err
	}
	fJSON, err := jsonArg(r.Findings, len(r.Findings) == 0)
	if err != nil {
		return err
	}
	dJSON, err := jsonArg(r.Delegation, r.Delegation == nil)
	if err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `UPDATE runs SET status=$2, answer=$3, verdict=$4, findings=$5, iterations=$6, prompt_tokens=$7,
		completion_tokens=$8, error=$9, delegation=$10, finished_at=$11 WHERE id=$1`,
		r.ID, r.Status, r.Answer, r.Verdict, fJSON, r.Iterations, r.Tokens.Prompt, r.Tokens.Completion, r.Error, dJSON, r.FinishedAt)
	if err != nil {
		return pgErr("run "+r.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("run %s: %w", r.ID, ErrNotFound)
	}
	return nil
}

// GetRun returns one run or ErrNotFound.
func (p *Postgres) GetRun(ctx context.Context, id string) (Run, error) {
	if err := checkKey("run id", id); err != nil {
		return Run{}, err
	}
	r, err := scanRun(p.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id=$1`, id))
	return r, pgErr("run "+id, err)
}

// ListRuns lists runs newest first (by start time, then id).
func (p *Postgres) ListRuns(ctx context.Context, f RunFilter, pg Page) ([]Run, string, error) {
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, `SELECT `+runCols+` FROM runs
		WHERE ($1 = '' OR agent = $1) AND ($2 = '' OR workflow_type = $2) AND ($3 = '' OR status = $3)
		  AND (NOT $4 OR (started_at, id) < ($5, $6))
		ORDER BY started_at DESC, id DESC LIMIT $7`,
		f.Agent, f.WorkflowType, f.Status, c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", pgErr("list runs", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Run, error) { return scanRun(row) })
	if err != nil {
		return nil, "", pgErr("list runs", err)
	}
	return cut(runs, limit, func(r Run) (time.Time, string) { return r.StartedAt, r.ID })
}

// cut trims a limit+1 result to one page and its next cursor.
func cut[T any](items []T, limit int, key func(T) (time.Time, string)) ([]T, string, error) {
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	at, id := key(items[limit-1])
	return items, encodeCursor(at, id), nil
}

// AppendEvents stores trace events; a (run, seq) already stored is kept.
func (p *Postgres) AppendEvents(ctx context.Context, evs ...Event) error {
	evs, err := prepEvents(evs, p.now)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, e := range evs {
		b.Queue(`INSERT INTO run_events (run_id, seq, at, type, data) VALUES ($1,$2,$3,$4,$5::json) ON CONFLICT DO NOTHING`,
			e.RunID, e.Seq, e.Time, e.Type, bytesArg(e.Data))
	}
	return pgErr("append events", p.pool.SendBatch(ctx, b).Close())
}

// Events returns a run's events by seq.
func (p *Postgres) Events(ctx context.Context, runID string) ([]Event, error) {
	if err := checkKey("run id", runID); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, `SELECT run_id, seq, at, type, data::text FROM run_events WHERE run_id=$1 ORDER BY seq`, runID)
	if err != nil {
		return nil, pgErr("events", err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		var data *string
		err := row.Scan(&e.RunID, &e.Seq, &e.Time, &e.Type, &data)
		if data != nil {
			e.Data = json.RawMessage(*data)
		}
		return normEvent(e), err
	})
	if err != nil {
		return nil, pgErr("events", err)
	}
	return evs, nil
}

// ---- findings ----

// RecordFindings stores fs as found by agent's run at at (zero: now).
func (p *Postgres) RecordFindings(ctx context.Context, runID, agent string, at time.Time, fs []api.Finding) error {
	recs, err := prepFindings(runID, agent, at, fs, p.now)
	if err != nil || len(recs) == 0 {
		return err
	}
	return p.insertFindings(ctx, recs, false)
}

func (p *Postgres) insertFindings(ctx context.Context, recs []FindingRecord, ignoreDup bool) error {
	q := `INSERT INTO findings (id, run_id, agent, finding, at) VALUES ($1,$2,$3,$4,$5)`
	if ignoreDup {
		q += ` ON CONFLICT DO NOTHING`
	}
	b := &pgx.Batch{}
	for _, r := range recs {
		fj, err := json.Marshal(r.Finding)
		if err != nil {
			return invalidf("encode finding: %v", err)
		}
		b.Queue(q, r.ID, r.RunID, r.Agent, fj, r.At)
	}
	// One batch is one implicit transaction: all findings or none.
	return pgErr("record findings", p.pool.SendBatch(ctx, b).Close())
}

// ListFindings lists findings newest first; agent "" lists every agent's.
func (p *Postgres) ListFindings(ctx context.Context, agent string, pg Page) ([]FindingRecord, string, error) {
	c, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pg.limit()
	rows, err := p.pool.Query(ctx, `SELECT id, run_id, agent, finding, at FROM findings
		WHERE ($1 = '' OR agent = $1) AND (NOT $2 OR (at, id) < ($3, $4))
		ORDER BY at DESC, id DESC LIMIT $5`, agent, c.ok, c.at, c.id, limit+1)
	if err != nil {
		return nil, "", pgErr("list findings", err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FindingRecord, error) {
		var r FindingRecord
		var fj []byte
		if err := row.Scan(&r.ID, &r.RunID, &r.Agent, &fj, &r.At); err != nil {
			return r, err
		}
		if err := json.Unmarshal(fj, &r.Finding); err != nil {
			return r, fmt.Errorf("finding %s: %w", r.ID, err)
		}
		return normFinding(r), nil
	})
	if err != nil {
		return nil, "", pgErr("list findings", err)
	}
	return cut(recs, limit, func(r FindingRecord) (time.Time, string) { return r.At, r.ID })
}
