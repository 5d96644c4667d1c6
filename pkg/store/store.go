// Package store keeps the fleet's state: runs and their traces, findings,
// alert decisions and claims, investigations, pulse state, agent memory
// files, the A2A audit log and delivery stamps. Two implementations pass one
// contract suite: Memory (the default, and the fallback) and Postgres.
//
// Processes use Open, which returns a Switch: memory without a URL;
// otherwise Postgres, falling open to memory when Postgres is unreachable
// (at start or mid-operation) and switching back — with what was recorded
// meanwhile written through — once it answers again. The fallback is
// never pinned. State() says which: "postgres", "memory" or
// "degraded: <why>".
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// ErrNotFound is returned when a record does not exist. See also
// ErrInvalid (bad input: a 400) and ErrConflict (a duplicate id).
var ErrNotFound = errors.New("not found")

// Page asks for one page of a list. Cursor is opaque: pass the Next of the
// previous page. Limit <= 0 means DefaultLimit; it is capped at MaxLimit.
type Page struct {
	Limit  int
	Cursor string
}

const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Run is a run record.
type Run struct {
	ID           string
	Agent        string // slug
	WorkflowType string
	Task         string
	Context      map[string]string
	Caller       string
	SocialDepth  int
	DiscussionID string
	Status       string
	Answer       string
	Verdict      string
	Findings     []api.Finding
	Iterations   int
	Tokens       api.Tokens
	Error        string
	Delegation   *api.Delegation
	StartedAt    time.Time
	FinishedAt   *time.Time
}

// Event is one line of a run's JSONL trace: the wire type of pkg/api, kept
// as it is.
type Event = api.TraceEvent

// RunFilter narrows ListRuns. Empty fields match everything.
type RunFilter struct {
	Agent        string
	WorkflowType string
	Status       string
}

// Runs stores runs and their traces. Lists are newest first.
type Runs interface {
	CreateRun(ctx context.Context, r Run) error
	// UpdateRun replaces the mutable fields of an existing run.
	UpdateRun(ctx context.Context, r Run) error
	GetRun(ctx context.Context, id string) (Run, error)
	ListRuns(ctx context.Context, f RunFilter, p Page) (runs []Run, next string, err error)
	// AppendEvents adds trace events; Seq is assigned by the caller. An
	// event whose (RunID, Seq) is stored already is kept: retries are safe.
	AppendEvents(ctx context.Context, evs ...Event) error
	Events(ctx context.Context, runID string) ([]Event, error)
}

// FindingRecord is a finding as stored: which run of which agent made it.
type FindingRecord struct {
	ID      string
	RunID   string
	Agent   string
	Finding api.Finding
	At      time.Time
}

// Findings stores findings. Lists are newest first.
type Findings interface {
	RecordFindings(ctx context.Context, runID, agent string, at time.Time, fs []api.Finding) error
	// ListFindings lists agent's findings ("" = every agent's).
	ListFindings(ctx context.Context, agent string, p Page) ([]FindingRecord, string, error)
}

// Pulse state: the last run of one task of one agent.
type PulseState struct {
	Agent   string
	Task    string // the task's stable key (its text hash or its text)
	LastRun time.Time
	Outcome string // completed|partial|failed
	RunID   string
}

// PulseStore persists last-run times, so a restart neither re-runs a weekly
// task nor forgets a daily one.
type PulseStore interface {
	PulseStates(ctx context.Context, agent string) ([]PulseState, error)
	SetPulseState(ctx context.Context, s PulseState) error
	// TryPulseLock takes the agent's pulse leadership for ttl if free,
	// expired or already holder's; ttl <= 0 releases it (when holder has
	// it) and reports false. Without a shared database it is per process.
	TryPulseLock(ctx context.Context, agent, holder string, ttl time.Duration) (bool, error)
}

// MemoryFile is an agent memory file, /memories/<name>.md.
type MemoryFile struct {
	Agent     string
	Path      string
	Content   string
	UpdatedAt time.Time
}

// Memories stores agent memory files, namespaced by agent.
type Memories interface {
	ReadMemory(ctx context.Context, agent, path string) (MemoryFile, error)
	WriteMemory(ctx context.Context, f MemoryFile) error
	ListMemory(ctx context.Context, agent string) ([]MemoryFile, error)
}

// A2AEntry is one message an agent sent or received.
type A2AEntry struct {
	ID           string
	Agent        string // whose log this is
	Direction    string // sent|received
	Verb         string // ask|notify|delegate
	Caller       string
	Callee       string
	Depth        int
	DiscussionID string
	TraceID      string
	Text         string // the full message text
	Data         json.RawMessage
	Outcome      string // accepted|completed|failed|refused
	Error        string
	CallerRunID  string
	CalleeRunID  string
	Answer       string
	At           time.Time
	FinishedAt   *time.Time
}

// Audit is the A2A audit log. Lists are newest first.
type Audit interface {
	RecordA2A(ctx context.Context, e A2AEntry) error
	UpdateA2A(ctx context.Context, e A2AEntry) error
	// ListA2A lists agent's entries ("" = every agent's).
	ListA2A(ctx context.Context, agent string, p Page) ([]A2AEntry, string, error)
}

// Delivery stamps: the last body posted for one task to one target.
type DeliveryStamp struct {
	Agent    string
	Task     string
	Target   string
	BodyHash string
	At       time.Time
	// Thread is the chat's thread or message the post opened (a Discord
	// thread id), where a follow-up goes; "" when the chat has none.
	Thread string
}

// Deliveries stores delivery stamps for report dedupe.
type Deliveries interface {
	LastDelivery(ctx context.Context, agent, task, target string) (DeliveryStamp, error)
	StampDelivery(ctx context.Context, s DeliveryStamp) error
}

// AgentStore is everything an agent process needs.
type AgentStore interface {
	Runs
	Findings
	PulseStore
	Memories
	Audit
	Deliveries
	// Pruner applies RETENTION to the agent's records (AgentData).
	Pruner
	Actions
	Lifecycle
	Escalations
	// Kind is "memory" or "postgres" (what /info and /ready report).
	Kind() string
	Ping(ctx context.Context) error
}
