package api

import (
	"encoding/json"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// DecisionView is one recorded alert decision.
// It is the webhook's answer for the alert with the record's id and time.
// A row may stand for several repeats of one decision (docs/MANUAL.md, "Repeats
// are counted, not written"): Count of them, from FirstAt to At.
type DecisionView struct {
	ID string `json:"id"`
	kapi.AlertDecision
	At      time.Time `json:"at"`
	Count   int       `json:"count"`
	FirstAt time.Time `json:"first_at"`
}

func decisionView(d store.AlertDecision) DecisionView {
	v := DecisionView{ID: d.ID, AlertDecision: kapi.AlertDecision{Fingerprint: d.Fingerprint, Alertname: d.Alertname, Status: d.Status,
		Decision: d.Decision, Agent: d.Agent, InvestigationID: d.InvestigationID, Reason: d.Reason}, At: d.At.UTC(),
		Count: max(d.Count, 1), FirstAt: d.FirstAt.UTC()}
	if d.FirstAt.IsZero() {
		v.FirstAt = v.At
	}
	return v
}

func investigationView(i store.Investigation) kapi.Investigation {
	v := kapi.Investigation{ID: i.ID, Fingerprint: i.Fingerprint, Alertname: i.Alertname, Agent: i.Agent, RunID: i.RunID,
		Status: i.Status, Findings: i.Findings, Answer: i.Answer, Error: i.Error, StartedAt: i.StartedAt.UTC()}
	if v.Findings == nil {
		v.Findings = []kapi.Finding{}
	}
	if json.Valid(i.Alert) && len(i.Alert) > 0 {
		v.Alert = json.RawMessage(i.Alert)
	} else {
		v.Alert = json.RawMessage("null")
	}
	if i.FinishedAt != nil {
		f := i.FinishedAt.UTC()
		v.FinishedAt = &f
		d := f.Sub(i.StartedAt).Seconds()
		v.DurationSeconds = &d
	}
	return v
}

// FindingView is one finding with where it came from.
type FindingView struct {
	InvestigationID string       `json:"investigation_id"`
	Agent           string       `json:"agent"`
	RunID           string       `json:"run_id"`
	Fingerprint     string       `json:"fingerprint"`
	Alertname       string       `json:"alertname"`
	At              time.Time    `json:"at"`
	Finding         kapi.Finding `json:"finding"`
}

// ToolView is one tool an agent sends its model.
type ToolView struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Mutating    bool   `json:"mutating"`
}

// AgentView is one registered agent and its live state.
type AgentView struct {
	Slug           string          `json:"slug"`
	Persona        string          `json:"persona"`
	URL            string          `json:"url"`
	Status         string          `json:"status"` // up|down
	Error          string          `json:"error,omitempty"`
	LatencyMS      int64           `json:"latency_ms"`
	ReceivesAlerts bool            `json:"receives_alerts"`
	Model          string          `json:"model,omitempty"`
	Store          string          `json:"store,omitempty"`
	Version        string          `json:"version,omitempty"`
	Mode           string          `json:"mode,omitempty"`
	Tools          []ToolView      `json:"tools"`
	Pulse          []PulseView     `json:"pulse"`
	Settings       json.RawMessage `json:"settings,omitempty"`
}

// PulseView is one entry of an agent's pulse schedule (its /info).
type PulseView struct {
	Cadence string `json:"cadence"`
	Task    string `json:"task"`
}

// info is the part of an agent's GET /info the dashboard shows.
type info struct {
	Agent struct {
		Persona string `json:"persona"`
		Slug    string `json:"slug"`
	} `json:"agent"`
	Version  string          `json:"version"`
	Model    string          `json:"model"`
	Store    string          `json:"store"`
	Mode     string          `json:"mode"`
	Settings json.RawMessage `json:"settings"`
	Tools    []ToolView      `json:"tools"`
}

// AuditSource says how one agent's A2A log was fetched.
type AuditSource struct {
	Agent   string `json:"agent"`
	Status  string `json:"status"` // ok|unsupported|down
	Error   string `json:"error,omitempty"`
	Entries int    `json:"entries"`
}

// ListAnswer is a page of a list.
type ListAnswer[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}
