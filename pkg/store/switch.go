package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Switch is the store a process uses. Without a database URL it is memory.
// With one it serves from Postgres and falls open to memory whenever
// Postgres is unreachable — at start (bounded by the connect timeout) or in
// the middle of an operation — and keeps trying to reconnect in the
// background. When Postgres is back it writes through what memory recorded
// meanwhile and switches back. The fallback is never pinned.
type Switch struct {
	log  *zap.Logger
	url  string
	opts []Option
	o    options

	// mu: operations hold it shared for their whole duration (a Postgres
	// one is bounded by the op timeout); flips and the write-through hold it
	// exclusively, so nothing recorded in memory is missed.
	mu   sync.RWMutex
	pg   *Postgres // the pool, connected or not; nil before the first connect
	mem  *Memory   // serves when not on Postgres; recorded since the last write-through
	onPG bool
	why  string // why not on Postgres ("" without a URL)
	// whyErr is the error behind why, for Usable.
	whyErr error

	// known mirrors the alert states this process decided or finished on
	// Postgres, and every replica's claims as of the last SyncClaims (each
	// retry interval); bounded like the memory store's. A fall to memory
	// starts from it, so cooldowns, claims and queued alerts keep deciding
	// during the outage (docs/MANUAL.md, "When Postgres is away").
	kmu   sync.Mutex
	known map[string]AlertState
	// actMu guards lastActions: the kill switch as last read or set.
	actMu       sync.Mutex
	lastActions ActionsState

	// peers: the other replicas' notes, heard by whichever Postgres is open.
	peers *peerHub

	kick     chan struct{}
	attempts chan error // tests: the outcome of each background attempt
	cancel   context.CancelFunc
	done     chan struct{}
}

// fullStore is what every implementation is: an agent's store and the
// core's.
type fullStore interface {
	AgentStore
	CoreStore
}

var (
	_ AgentStore = (*Switch)(nil)
	_ CoreStore  = (*Switch)(nil)
)

// Open returns the process's store. url "" serves from memory (and says so
// in the log). Otherwise Postgres is tried within the connect timeout; when
// it is unreachable the Switch serves from memory, state "degraded: <why>",
// and retries every retry interval. An unparseable url is an error: that is
// configuration, not an outage.
func Open(ctx context.Context, url string, log *zap.Logger, opts ...Option) (*Switch, error) {
	if log == nil {
		log = zap.NewNop()
	}
	o := buildOptions(opts)
	s := &Switch{
		log: log.With(zap.String("component", "store")), url: url, o: o, peers: &peerHub{},
		mem: NewMemory(o.now), known: map[string]AlertState{}, kick: make(chan struct{}, 1), attempts: make(chan error, 16), done: make(chan struct{}),
	}
	if url == "" {
		close(s.done)
		s.cancel = func() {}
		s.log.Info("no DATABASE_URL: state is kept in memory and lost on restart")
		return s, nil
	}
	s.opts = append(append([]Option{}, opts...), withPeers(s.peers))
	if err := ParseURL(url); err != nil {
		return nil, err
	}
	pg, err := OpenPostgres(ctx, url, s.log, s.opts...)
	if err != nil {
		s.why, s.whyErr = err.Error(), err
		s.log.Error("postgres unreachable: serving from memory, retrying in the background",
			zap.Error(err), zap.Duration("retry_interval", o.retryInterval))
	} else {
		s.pg, s.onPG = pg, true
		s.log.Info("store: postgres")
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go s.loop(loopCtx)
	return s, nil
}

// Kind is what serves now: "postgres" or "memory".
func (s *Switch) Kind() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.onPG {
		return "postgres"
	}
	return "memory"
}

// State is "postgres", "memory" (no database configured) or
// "degraded: <why>" (configured but unreachable; serving from memory).
func (s *Switch) State() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch {
	case s.onPG:
		return "postgres"
	case s.url == "":
		return "memory"
	}
	return "degraded: " + s.why
}

// Usable reports whether the configured database serves: nil on Postgres
// or without a DATABASE_URL; otherwise an error saying why the Switch
// serves from memory. Refused tells a URL Postgres rejected from an
// outage. Readiness uses it (docs/MANUAL.md "Readiness").
func (s *Switch) Usable() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.onPG || s.url == "" {
		return nil
	}
	if s.whyErr != nil {
		return &unusableError{why: s.why, err: s.whyErr}
	}
	return errors.New(s.why)
}

type unusableError struct {
	why string
	err error
}

func (e *unusableError) Error() string { return e.why }
func (e *unusableError) Unwrap() error { return e.err }

// Refused reports whether err means Postgres answered and rejected the
// configuration — the database does not exist, the credentials or the
// permissions are wrong — which no retry fixes, as opposed to an outage.
func Refused(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case strings.HasPrefix(pe.Code, "28"): // invalid_authorization_specification, invalid_password
		return true
	case pe.Code == "3D000", pe.Code == "3F000", pe.Code == "42501": // no such database / schema, insufficient privilege
		return true
	}
	return false
}

// Ping reports whether the Switch can serve. It can, always — that is what
// falling open means — so Ping fails only for a done ctx; on Postgres it
// also probes the database and degrades when it does not answer. Read
// State for the detail.
func (s *Switch) Ping(ctx context.Context) error {
	_, err := run(s, ctx, "ping", func(ctx context.Context, st fullStore) (struct{}, error) {
		return struct{}{}, st.Ping(ctx)
	}, nil)
	return err
}

// Close stops reconnecting and closes the pool.
func (s *Switch) Close() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pg != nil {
		s.pg.Close()
	}
}

// Reconnect tries Postgres now when the Switch is degraded: connect,
// write through what memory recorded, switch. It is what the background
// loop does every retry interval.
func (s *Switch) Reconnect(ctx context.Context) error {
	s.mu.RLock()
	onPG, pg := s.onPG, s.pg
	s.mu.RUnlock()
	if onPG || s.url == "" {
		return nil
	}
	cctx, cancel := context.WithTimeoutCause(ctx, s.o.connectTimeout, fmt.Errorf("postgres: no answer within %s", s.o.connectTimeout))
	defer cancel()
	if pg == nil {
		var err error
		if pg, err = OpenPostgres(ctx, s.url, s.log, s.opts...); err != nil {
			s.setWhy(nil, err)
			return err
		}
	} else if err := pg.Ping(cctx); err != nil {
		err = fmt.Errorf("postgres: ping: %w", err)
		s.setWhy(pg, err)
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pg != nil && s.pg != pg {
		s.pg.Close()
	}
	s.pg = pg
	if s.onPG {
		return nil
	}
	snap := s.mem.snapshot()
	wctx, wcancel := context.WithTimeoutCause(ctx, s.o.opTimeout+s.o.connectTimeout, errors.New("postgres: write-through took too long"))
	defer wcancel()
	if err := pg.importSnapshot(wctx, snap); err != nil {
		s.why, s.whyErr = "write-through failed: "+err.Error(), err
		s.log.Warn("postgres answers but the write-through failed; staying on memory", zap.Error(err))
		return err
	}
	s.onPG, s.why, s.whyErr = true, "", nil
	s.mem = NewMemory(s.o.now)
	fields := []zap.Field{
		zap.Int("runs", len(snap.runs)), zap.Int("events", len(snap.events)), zap.Int("findings", len(snap.findings)),
		zap.Int("pulse_states", len(snap.pulse)), zap.Int("memory_files", len(snap.files)), zap.Int("a2a_entries", len(snap.a2a)),
		zap.Int("delivery_stamps", len(snap.stamps)), zap.Int("alert_decisions", len(snap.decisions)),
		zap.Int("investigations", len(snap.invs)), zap.Int("alert_states", len(snap.alerts)),
	}
	s.log.Info("postgres is back: switched from memory and wrote through what was recorded meanwhile", fields...)
	if snap.pulseLocks > 0 {
		s.log.Info("pulse locks taken in memory are not carried over: the database's are the truth again", zap.Int("pulse_locks", snap.pulseLocks))
	}
	return nil
}

func (s *Switch) setWhy(pg *Postgres, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.onPG {
		s.why, s.whyErr = err.Error(), err
	}
	if pg != nil && s.pg == nil {
		s.pg = pg
	}
}

// degrade flips to memory after a failed Postgres operation, unless
// something flipped already.
func (s *Switch) degrade(pg *Postgres, op string, err error) {
	s.mu.Lock()
	if !s.onPG || s.pg != pg {
		s.mu.Unlock()
		return
	}
	s.onPG = false
	s.why, s.whyErr = fmt.Sprintf("%s: %v", op, err), err
	s.mem.seedAlerts(s.knownStates())
	s.mu.Unlock()
	// Drop the pool's connections: they may be half-open; new ones are
	// dialled on the next attempt.
	pg.pool.Reset()
	s.log.Error("postgres failed mid-operation: serving from memory, reconnecting in the background",
		zap.String("op", op), zap.Error(err))
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Switch) loop(ctx context.Context) {
	defer close(s.done)
	ticks := s.o.retryTicks
	if ticks == nil {
		t := time.NewTicker(s.o.retryInterval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		case <-s.kick:
			if s.o.retryTicks != nil {
				continue // tests decide when to retry
			}
			// A fresh failure: wait one interval before the first retry.
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.o.retryInterval):
			}
		}
		var err error
		if s.Kind() == "postgres" {
			if serr := s.SyncClaims(ctx); serr != nil && ctx.Err() == nil {
				s.log.Warn("could not read the fleet's alert claims", zap.Error(serr))
			}
		} else if err = s.Reconnect(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("postgres still unreachable", zap.Error(err))
		}
		select {
		case s.attempts <- err:
		default:
		}
	}
}

// run does one operation on Postgres when on it, and on memory otherwise
// or when Postgres fails with a connection-class error. fallback, when
// set, handles a memory error (a record Postgres has but memory never
// saw).
func run[T any](s *Switch, ctx context.Context, op string, fn func(context.Context, fullStore) (T, error), fallback func(*Memory, error) (T, error)) (T, error) {
	for range 2 {
		s.mu.RLock()
		if !s.onPG {
			v, err := fn(ctx, s.mem)
			if err != nil && fallback != nil {
				v, err = fallback(s.mem, err)
			}
			s.mu.RUnlock()
			return v, err
		}
		pg := s.pg
		octx, cancel := context.WithTimeoutCause(ctx, s.o.opTimeout, fmt.Errorf("postgres: %s took longer than %s", op, s.o.opTimeout))
		v, err := fn(octx, pg)
		cancel()
		s.mu.RUnlock()
		if err == nil || !connFailure(ctx, err) {
			return v, err
		}
		s.degrade(pg, op, err)
	}
	// Flipped back and failed again in one call: serve from memory.
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := fn(ctx, s.mem)
	if err != nil && fallback != nil {
		v, err = fallback(s.mem, err)
	}
	return v, err
}

func run0(s *Switch, ctx context.Context, op string, fn func(context.Context, fullStore) error, fallback func(*Memory, error) error) error {
	var fb func(*Memory, error) (struct{}, error)
	if fallback != nil {
		fb = func(m *Memory, err error) (struct{}, error) { return struct{}{}, fallback(m, err) }
	}
	_, err := run(s, ctx, op, func(ctx context.Context, st fullStore) (struct{}, error) { return struct{}{}, fn(ctx, st) }, fb)
	return err
}

type listed[T any] struct {
	items []T
	next  string
}

// ---- AgentStore ----

// CreateRun implements Runs.
func (s *Switch) CreateRun(ctx context.Context, r Run) error {
	return run0(s, ctx, "create run", func(ctx context.Context, st fullStore) error { return st.CreateRun(ctx, r) }, nil)
}

// UpdateRun implements Runs. While on memory, an update of a run created in
// Postgres before the outage is kept and written through later.
func (s *Switch) UpdateRun(ctx context.Context, r Run) error {
	return run0(s, ctx, "update run", func(ctx context.Context, st fullStore) error { return st.UpdateRun(ctx, r) },
		func(m *Memory, err error) error {
			if !errors.Is(err, ErrNotFound) || s.url == "" {
				return err
			}
			pr, perr := prepRunUpdate(r)
			if perr != nil {
				return perr
			}
			m.putRun(pr)
			return nil
		})
}

// GetRun implements Runs.
func (s *Switch) GetRun(ctx context.Context, id string) (Run, error) {
	return run(s, ctx, "get run", func(ctx context.Context, st fullStore) (Run, error) { return st.GetRun(ctx, id) }, nil)
}

// ListRuns implements Runs.
func (s *Switch) ListRuns(ctx context.Context, f RunFilter, p Page) ([]Run, string, error) {
	l, err := run(s, ctx, "list runs", func(ctx context.Context, st fullStore) (listed[Run], error) {
		items, next, err := st.ListRuns(ctx, f, p)
		return listed[Run]{items, next}, err
	}, nil)
	return l.items, l.next, err
}

// AppendEvents implements Runs.
func (s *Switch) AppendEvents(ctx context.Context, evs ...Event) error {
	return run0(s, ctx, "append events", func(ctx context.Context, st fullStore) error { return st.AppendEvents(ctx, evs...) }, nil)
}

// Events implements Runs.
func (s *Switch) Events(ctx context.Context, runID string) ([]Event, error) {
	return run(s, ctx, "events", func(ctx context.Context, st fullStore) ([]Event, error) { return st.Events(ctx, runID) }, nil)
}

// RecordFindings implements Findings.
func (s *Switch) RecordFindings(ctx context.Context, runID, agent string, at time.Time, fs []api.Finding) error {
	if at.IsZero() {
		at = s.o.now() // one time, whichever store records it
	}
	return run0(s, ctx, "record findings", func(ctx context.Context, st fullStore) error {
		return st.RecordFindings(ctx, runID, agent, at, fs)
	}, nil)
}

// ListFindings implements Findings.
func (s *Switch) ListFindings(ctx context.Context, agent string, p Page) ([]FindingRecord, string, error) {
	l, err := run(s, ctx, "list findings", func(ctx context.Context, st fullStore) (listed[FindingRecord], error) {
		items, next, err := st.ListFindings(ctx, agent, p)
		return listed[FindingRecord]{items, next}, err
	}, nil)
	return l.items, l.next, err
}

// PulseStates implements PulseStore.
func (s *Switch) PulseStates(ctx context.Context, agent string) ([]PulseState, error) {
	return run(s, ctx, "pulse states", func(ctx context.Context, st fullStore) ([]PulseState, error) { return st.PulseStates(ctx, agent) }, nil)
}

// SetPulseState implements PulseStore.
func (s *Switch) SetPulseState(ctx context.Context, ps PulseState) error {
	return run0(s, ctx, "set pulse state", func(ctx context.Context, st fullStore) error { return st.SetPulseState(ctx, ps) }, nil)
}

// TryPulseLock implements PulseStore. On memory it is process-local: with
// replicas, each would lead its own pulse until Postgres is back.
func (s *Switch) TryPulseLock(ctx context.Context, agent, holder string, ttl time.Duration) (bool, error) {
	return run(s, ctx, "pulse lock", func(ctx context.Context, st fullStore) (bool, error) {
		return st.TryPulseLock(ctx, agent, holder, ttl)
	}, nil)
}

// ReadMemory implements Memories.
func (s *Switch) ReadMemory(ctx context.Context, agent, path string) (MemoryFile, error) {
	return run(s, ctx, "read memory", func(ctx context.Context, st fullStore) (MemoryFile, error) { return st.ReadMemory(ctx, agent, path) }, nil)
}

// WriteMemory implements Memories.
func (s *Switch) WriteMemory(ctx context.Context, f MemoryFile) error {
	if f.UpdatedAt.IsZero() {
		f.UpdatedAt = s.o.now()
	}
	return run0(s, ctx, "write memory", func(ctx context.Context, st fullStore) error { return st.WriteMemory(ctx, f) }, nil)
}

// ListMemory implements Memories.
func (s *Switch) ListMemory(ctx context.Context, agent string) ([]MemoryFile, error) {
	return run(s, ctx, "list memory", func(ctx context.Context, st fullStore) ([]MemoryFile, error) { return st.ListMemory(ctx, agent) }, nil)
}

// RecordA2A implements Audit. An entry without an id gets one here, so a
// retry on the fallback records the same entry.
func (s *Switch) RecordA2A(ctx context.Context, e A2AEntry) error {
	if e.ID == "" {
		e.ID = newID()
	}
	if e.At.IsZero() {
		e.At = s.o.now()
	}
	return run0(s, ctx, "record a2a", func(ctx context.Context, st fullStore) error { return st.RecordA2A(ctx, e) }, nil)
}

// UpdateA2A implements Audit.
func (s *Switch) UpdateA2A(ctx context.Context, e A2AEntry) error {
	return run0(s, ctx, "update a2a", func(ctx context.Context, st fullStore) error { return st.UpdateA2A(ctx, e) },
		func(m *Memory, err error) error {
			if !errors.Is(err, ErrNotFound) || s.url == "" {
				return err
			}
			pe, perr := prepA2AUpdate(e)
			if perr != nil {
				return perr
			}
			m.putA2A(pe)
			return nil
		})
}

// ListA2A implements Audit.
func (s *Switch) ListA2A(ctx context.Context, agent string, p Page) ([]A2AEntry, string, error) {
	l, err := run(s, ctx, "list a2a", func(ctx context.Context, st fullStore) (listed[A2AEntry], error) {
		items, next, err := st.ListA2A(ctx, agent, p)
		return listed[A2AEntry]{items, next}, err
	}, nil)
	return l.items, l.next, err
}

// LastDelivery implements Deliveries.
func (s *Switch) LastDelivery(ctx context.Context, agent, task, target string) (DeliveryStamp, error) {
	return run(s, ctx, "last delivery", func(ctx context.Context, st fullStore) (DeliveryStamp, error) {
		return st.LastDelivery(ctx, agent, task, target)
	}, nil)
}

// StampDelivery implements Deliveries.
func (s *Switch) StampDelivery(ctx context.Context, d DeliveryStamp) error {
	if d.At.IsZero() {
		d.At = s.o.now()
	}
	return run0(s, ctx, "stamp delivery", func(ctx context.Context, st fullStore) error { return st.StampDelivery(ctx, d) }, nil)
}

// Prune implements Pruner on whichever store serves.
func (s *Switch) Prune(ctx context.Context, scope Scope, before time.Time, limit int) (Pruned, error) {
	return run(s, ctx, "prune", func(ctx context.Context, st fullStore) (Pruned, error) { return st.Prune(ctx, scope, before, limit) }, nil)
}
