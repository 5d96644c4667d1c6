package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Memory is the in-memory store: the default without a DATABASE_URL and the
// fallback during a Postgres outage. It is safe for concurrent use; records
// are copied in and out, so callers never share a slice or map with it.
type Memory struct {
	mu   sync.Mutex
	now  func() time.Time
	caps memoryCaps

	runs      map[string]Run
	events    map[string]map[int]Event
	findings  []FindingRecord
	pulse     map[agentKey]PulseState
	locks     map[string]pulseLock
	files     map[agentKey]MemoryFile
	a2a       map[string]A2AEntry
	stamps    map[stampKey]DeliveryStamp
	alerts    map[string]AlertState
	inFlight  map[string]map[string]struct{} // agent → fingerprints in flight
	decisions []AlertDecision
	invs      map[string]Investigation

	actionsState ActionsState
	actions      []ActionRecord

	lives  map[lifeKey]FindingState // the findings' lifecycle
	checks []ActionCheck
	pages  map[string]PageRecord
}

type agentKey struct{ agent, key string }
type stampKey struct{ agent, task, target string }

type pulseLock struct {
	holder  string
	expires time.Time
}

var (
	_ AgentStore = (*Memory)(nil)
	_ CoreStore  = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store. now is its clock (nil:
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{
		now:      now,
		caps:     defaultCaps,
		runs:     map[string]Run{},
		events:   map[string]map[int]Event{},
		pulse:    map[agentKey]PulseState{},
		locks:    map[string]pulseLock{},
		files:    map[agentKey]MemoryFile{},
		a2a:      map[string]A2AEntry{},
		stamps:   map[stampKey]DeliveryStamp{},
		alerts:   map[string]AlertState{},
		inFlight: map[string]map[string]struct{}{},
		invs:     map[string]Investigation{},
		pages:    map[string]PageRecord{},
	}
}

// Kind reports "memory".
func (m *Memory) Kind() string { return "memory" }

// Ping always succeeds.
func (m *Memory) Ping(ctx context.Context) error { return ctx.Err() }

// ---- runs ----

// CreateRun stores a new run; an existing id is ErrConflict.
func (m *Memory) CreateRun(ctx context.Context, r Run) error {
	r, err := prepRun(r, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[r.ID]; ok {
		return fmt.Errorf("run %s: %w", r.ID, ErrConflict)
	}
	m.runs[r.ID] = r
	m.trimRunsLocked()
	return nil
}

// UpdateRun replaces the mutable fields (status, answer, verdict, findings,
// iterations, tokens, error, delegation, finished_at) of an existing run.
func (m *Memory) UpdateRun(ctx context.Context, r Run) error {
	r, err := prepRunUpdate(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.runs[r.ID]
	if !ok {
		return fmt.Errorf("run %s: %w", r.ID, ErrNotFound)
	}
	m.runs[r.ID] = mergeRun(old, r)
	return nil
}

// mergeRun keeps old's immutable fields and takes r's mutable ones.
func mergeRun(old, r Run) Run {
	old.Status = r.Status
	old.Answer = r.Answer
	old.Verdict = r.Verdict
	old.Findings = r.Findings
	old.Iterations = r.Iterations
	old.Tokens = r.Tokens
	old.Error = r.Error
	old.Delegation = r.Delegation
	old.FinishedAt = r.FinishedAt
	return old
}

// GetRun returns one run or ErrNotFound.
func (m *Memory) GetRun(ctx context.Context, id string) (Run, error) {
	if err := checkKey("run id", id); err != nil {
		return Run{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return normRun(r), nil
}

// ListRuns lists runs newest first (by start time, then id).
func (m *Memory) ListRuns(ctx context.Context, f RunFilter, p Page) ([]Run, string, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var all []Run
	for _, r := range m.runs {
		if (f.Agent == "" || r.Agent == f.Agent) && (f.WorkflowType == "" || r.WorkflowType == f.WorkflowType) &&
			(f.Status == "" || r.Status == f.Status) && c.after(r.StartedAt, r.ID) {
			all = append(all, normRun(r))
		}
	}
	m.mu.Unlock()
	return page(all, p.limit(), func(r Run) (time.Time, string) { return r.StartedAt, r.ID })
}

// page sorts items newest first and cuts one page.
func page[T any](items []T, limit int, key func(T) (time.Time, string)) ([]T, string, error) {
	slices.SortFunc(items, func(a, b T) int {
		at, aid := key(a)
		bt, bid := key(b)
		if c := bt.Compare(at); c != 0 {
			return c
		}
		return cmp.Compare(bid, aid)
	})
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	at, id := key(items[limit-1])
	return items, encodeCursor(at, id), nil
}

// AppendEvents stores trace events. An event whose (run, seq) is stored
// already is kept as it was: appends are idempotent, so retries are safe.
func (m *Memory) AppendEvents(ctx context.Context, evs ...Event) error {
	evs, err := prepEvents(evs, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range evs {
		byseq := m.events[e.RunID]
		if byseq == nil {
			byseq = map[int]Event{}
			m.events[e.RunID] = byseq
		}
		if _, ok := byseq[e.Seq]; !ok {
			byseq[e.Seq] = e
		}
	}
	return nil
}

// Events returns a run's events by seq (none: an empty list).
func (m *Memory) Events(ctx context.Context, runID string) ([]Event, error) {
	if err := checkKey("run id", runID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Event, 0, len(m.events[runID]))
	for _, e := range m.events[runID] {
		out = append(out, normEvent(e))
	}
	slices.SortFunc(out, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// ---- findings ----

// RecordFindings stores fs as found by agent's run at at (zero: now).
func (m *Memory) RecordFindings(ctx context.Context, runID, agent string, at time.Time, fs []api.Finding) error {
	recs, err := prepFindings(runID, agent, at, fs, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.findings = append(m.findings, recs...)
	m.trimFindingsLocked()
	return nil
}

// ListFindings lists findings newest first; agent "" lists every agent's.
func (m *Memory) ListFindings(ctx context.Context, agent string, p Page) ([]FindingRecord, string, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var all []FindingRecord
	for _, f := range m.findings {
		if (agent == "" || f.Agent == agent) && c.after(f.At, f.ID) {
			all = append(all, f)
		}
	}
	m.mu.Unlock()
	return page(all, p.limit(), func(f FindingRecord) (time.Time, string) { return f.At, f.ID })
}

// ---- pulse ----

// PulseStates returns agent's pulse states by task.
func (m *Memory) PulseStates(ctx context.Context, agent string) ([]PulseState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []PulseState{}
	for k, s := range m.pulse {
		if k.agent == agent {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b PulseState) int { return cmp.Compare(a.Task, b.Task) })
	return out, nil
}

// SetPulseState upserts one task's state.
func (m *Memory) SetPulseState(ctx context.Context, s PulseState) error {
	s, err := prepPulseState(s)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pulse[agentKey{s.Agent, s.Task}] = s
	return nil
}

// TryPulseLock takes agent's pulse leadership for ttl when it is free,
// expired or already holder's. A ttl <= 0 releases it if holder has it
// (and reports false).
func (m *Memory) TryPulseLock(ctx context.Context, agent, holder string, ttl time.Duration) (bool, error) {
	if err := prepPulseLock(agent, holder); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := ts(m.now())
	cur, held := m.locks[agent]
	if ttl <= 0 {
		if held && cur.holder == holder {
			delete(m.locks, agent)
		}
		return false, nil
	}
	if held && cur.holder != holder && cur.expires.After(now) {
		return false, nil
	}
	m.locks[agent] = pulseLock{holder: holder, expires: ts(now.Add(ttl))}
	return true, nil
}

// ---- memory files ----

// ReadMemory returns one memory file or ErrNotFound.
func (m *Memory) ReadMemory(ctx context.Context, agent, path string) (MemoryFile, error) {
	if err := ValidateMemoryPath(path); err != nil {
		return MemoryFile{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[agentKey{agent, path}]
	if !ok {
		return MemoryFile{}, fmt.Errorf("memory %s %s: %w", agent, path, ErrNotFound)
	}
	return f, nil
}

// WriteMemory creates or replaces a memory file (UpdatedAt zero: now).
func (m *Memory) WriteMemory(ctx context.Context, f MemoryFile) error {
	f, err := prepMemoryFile(f, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[agentKey{f.Agent, f.Path}] = f
	return nil
}

// ListMemory lists agent's memory files by path.
func (m *Memory) ListMemory(ctx context.Context, agent string) ([]MemoryFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []MemoryFile{}
	for k, f := range m.files {
		if k.agent == agent {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b MemoryFile) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// ---- A2A audit ----

// RecordA2A stores one audit entry (ID empty: a new id); an existing id is
// ErrConflict.
func (m *Memory) RecordA2A(ctx context.Context, e A2AEntry) error {
	e, err := prepA2A(e, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.a2a[e.ID]; ok {
		return fmt.Errorf("a2a entry %s: %w", e.ID, ErrConflict)
	}
	m.a2a[e.ID] = e
	m.trimA2ALocked()
	return nil
}

// UpdateA2A replaces the outcome fields (outcome, error, callee run id,
// answer, data, finished_at) of an existing entry.
func (m *Memory) UpdateA2A(ctx context.Context, e A2AEntry) error {
	e, err := prepA2AUpdate(e)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.a2a[e.ID]
	if !ok {
		return fmt.Errorf("a2a entry %s: %w", e.ID, ErrNotFound)
	}
	m.a2a[e.ID] = mergeA2A(old, e)
	return nil
}

func mergeA2A(old, e A2AEntry) A2AEntry {
	old.Outcome = e.Outcome
	old.Error = e.Error
	old.CalleeRunID = e.CalleeRunID
	old.Answer = e.Answer
	old.Data = e.Data
	old.FinishedAt = e.FinishedAt
	return old
}

// ListA2A lists agent's entries newest first; agent "" lists all.
func (m *Memory) ListA2A(ctx context.Context, agent string, p Page) ([]A2AEntry, string, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var all []A2AEntry
	for _, e := range m.a2a {
		if (agent == "" || e.Agent == agent) && c.after(e.At, e.ID) {
			all = append(all, normA2A(e))
		}
	}
	m.mu.Unlock()
	return page(all, p.limit(), func(e A2AEntry) (time.Time, string) { return e.At, e.ID })
}

// ---- delivery stamps ----

// LastDelivery returns the stamp of (agent, task, target) or ErrNotFound.
func (m *Memory) LastDelivery(ctx context.Context, agent, task, target string) (DeliveryStamp, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.stamps[stampKey{agent, task, target}]
	if !ok {
		return DeliveryStamp{}, fmt.Errorf("delivery %s/%s/%s: %w", agent, task, target, ErrNotFound)
	}
	return s, nil
}

// StampDelivery upserts the stamp of (agent, task, target).
func (m *Memory) StampDelivery(ctx context.Context, s DeliveryStamp) error {
	s, err := prepStamp(s, m.now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stamps[stampKey{s.Agent, s.Task, s.Target}] = s
	return nil
}
