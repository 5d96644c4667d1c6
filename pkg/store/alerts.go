package store

import (
	"context"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// AlertState is the standing state of one incident: the alerts that share
// a correlation key (docs/MANUAL.md, "Storms"); Fingerprint holds the key.
type AlertState struct {
	Fingerprint      string
	Alertname        string
	Agent            string
	Firing           bool
	ContentHash      string // labels+annotations: a change is new information
	FirstSeen        time.Time
	LastSeen         time.Time
	LastInvestigated time.Time // zero: never
	Investigations   int       // how many times investigated in this firing period
	InFlight         bool
	InvestigationID  string
	Pending          bool // decided busy: retried when the agent frees up
}

// AlertDecision is one recorded decision.
type AlertDecision struct {
	ID              string
	Fingerprint     string
	Alertname       string
	Status          string // firing|resolved
	Decision        string // dispatched|deduped|cooldown|busy|ignored|resolved|rejected|joined|dropped
	Agent           string
	InvestigationID string
	Reason          string
	At              time.Time // the last (or only) time it was decided
	// Count is how many times it was decided: 1, or more for an aggregated
	// row of repeats (docs/MANUAL.md, "Repeats are counted, not written"), whose
	// first is FirstAt (equal to At for a single decision).
	Count   int
	FirstAt time.Time
}

// DecideFunc is called with the alert's previous state (ok=false when new)
// and how many alert runs the target agent has in flight. It returns the
// decision and the new state. It must be pure: the store may call it again.
// Postgres decides a repeat of a known alert from the state it remembers
// (docs/MANUAL.md, "Repeats are counted, not written") and passes 0 in flight then:
// deduped, cooldown and ignored must not depend on the agent's load.
type DecideFunc func(prev AlertState, ok bool, agentInFlight int) (AlertDecision, AlertState)

// Investigation is one dispatched alert investigation.
type Investigation struct {
	ID          string
	Fingerprint string
	Alertname   string
	Agent       string
	RunID       string
	Status      string // running|completed|partial|failed
	Findings    []api.Finding
	Answer      string
	Error       string
	Alert       []byte // the alert as JSON
	StartedAt   time.Time
	FinishedAt  *time.Time
}

// Alerts is the core's state. ApplyAlert is atomic across core replicas that
// share the store: two replicas deciding the same fingerprint, or the same
// agent's in-flight slot, serialise, so each alert is dispatched once.
type Alerts interface {
	// ApplyAlert runs fn under the fingerprint's and the agent's lock, stores
	// the new state and the decision; when the decision is dispatched it also
	// creates inv (with the decision's InvestigationID) in the same
	// transaction.
	ApplyAlert(ctx context.Context, fingerprint, agent string, fn DecideFunc, inv func(AlertDecision) *Investigation) (AlertDecision, error)
	// RecordDecision records a decision that changes no alert state: an
	// alert rejected as malformed (decision rejected). The fingerprint may
	// be blank; text is cleaned like every other record's.
	RecordDecision(ctx context.Context, d AlertDecision) error
	// FinishInvestigation records the outcome and frees the agent's slot.
	FinishInvestigation(ctx context.Context, inv Investigation) error
	GetInvestigation(ctx context.Context, id string) (Investigation, error)
	ListInvestigations(ctx context.Context, p Page) ([]Investigation, string, error)
	ListDecisions(ctx context.Context, p Page) ([]AlertDecision, string, error)
	// PendingAlerts lists alerts decided busy for agent, oldest first.
	PendingAlerts(ctx context.Context, agent string) ([]AlertState, error)
	GetAlertState(ctx context.Context, fingerprint string) (AlertState, error)
}

// CoreStore is everything the core process needs.
type CoreStore interface {
	Alerts
	DecisionCounter
	FiringLister
	// Pruner applies RETENTION to the core's records (CoreData).
	Pruner
	Actions
	Escalations
	Kind() string
	Ping(ctx context.Context) error
}
