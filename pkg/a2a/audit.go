package a2a

import (
	"encoding/json"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// Directions of an audit entry.
const (
	DirectionSent     = "sent"
	DirectionReceived = "received"
)

// Outcomes of an audit entry.
const (
	// OutcomePending: sent, no answer yet (or the sender died waiting).
	OutcomePending = "pending"
	// OutcomeAccepted: the callee started a run and the sender did not wait
	// (notify, non-blocking send), or the receiver's run is in progress.
	OutcomeAccepted  = "accepted"
	OutcomeCompleted = "completed"
	OutcomePartial   = "partial"
	OutcomeFailed    = "failed"
	OutcomeCanceled  = "canceled"
	// OutcomeRefused: the depth or cycle rule, or an invalid message.
	OutcomeRefused = "refused"
	// OutcomeBusy: the callee was at capacity and started nothing
	// (api.BusyError); the message may be sent again later.
	OutcomeBusy = "busy"
)

// AuditItem is one audit entry on the wire (GET /a2a/log, the core's
// /api/v1/audit).
type AuditItem struct {
	ID           string          `json:"id"`
	Agent        string          `json:"agent"`
	Direction    string          `json:"direction"`
	Verb         string          `json:"verb"`
	Caller       string          `json:"caller"`
	Callee       string          `json:"callee"`
	Depth        int             `json:"depth"`
	DiscussionID string          `json:"discussion_id"`
	TraceID      string          `json:"trace_id"`
	Text         string          `json:"text"`
	Data         json.RawMessage `json:"data,omitempty"`
	Outcome      string          `json:"outcome"`
	Error        string          `json:"error,omitempty"`
	CallerRunID  string          `json:"caller_run_id"`
	CalleeRunID  string          `json:"callee_run_id"`
	Answer       string          `json:"answer"`
	At           time.Time       `json:"at"`
	FinishedAt   *time.Time      `json:"finished_at,omitempty"`
}

// AuditItemOf converts a stored entry.
func AuditItemOf(e store.A2AEntry) AuditItem {
	return AuditItem{
		ID: e.ID, Agent: e.Agent, Direction: e.Direction, Verb: e.Verb, Caller: e.Caller, Callee: e.Callee,
		Depth: e.Depth, DiscussionID: e.DiscussionID, TraceID: e.TraceID, Text: e.Text, Data: e.Data,
		Outcome: e.Outcome, Error: e.Error, CallerRunID: e.CallerRunID, CalleeRunID: e.CalleeRunID,
		Answer: e.Answer, At: e.At, FinishedAt: e.FinishedAt,
	}
}

// AuditPage is one page of the audit log.
type AuditPage struct {
	Items      []AuditItem `json:"items"`
	NextCursor string      `json:"next_cursor"`
}

// AuditPageOf converts a page of stored entries.
func AuditPageOf(es []store.A2AEntry, next string) AuditPage {
	p := AuditPage{Items: make([]AuditItem, 0, len(es)), NextCursor: next}
	for _, e := range es {
		p.Items = append(p.Items, AuditItemOf(e))
	}
	return p
}
