package api

import (
	"encoding/json"
	"time"
)

// The views below are the other wire answers both sides read: what the
// core's webhook and investigations API answer, and an agent's GET
// /runs/{id}. The serving side fills them; clients (the sandbox, the eval
// runner, the core's chain report) decode the same types.

// AlertDecision is one alert's decision as the core's webhook (POST
// /api/v1/alerts) answers it.
type AlertDecision struct {
	Fingerprint     string `json:"fingerprint"`
	Alertname       string `json:"alertname"`
	Status          string `json:"status"`
	Decision        string `json:"decision"`
	Agent           string `json:"agent"`
	InvestigationID string `json:"investigation_id"`
	Reason          string `json:"reason"`
}

// AlertsAnswer is the body of the webhook's 200 answer.
type AlertsAnswer struct {
	Decisions []AlertDecision `json:"decisions"`
}

// Investigation is one alert investigation: the core's GET
// /api/v1/investigations/{id} and the items of its list.
type Investigation struct {
	ID              string          `json:"id"`
	Fingerprint     string          `json:"fingerprint"`
	Alertname       string          `json:"alertname"`
	Agent           string          `json:"agent"`
	RunID           string          `json:"run_id"`
	Status          string          `json:"status"`
	Findings        []Finding       `json:"findings"`
	Answer          string          `json:"answer"`
	Error           string          `json:"error"`
	Alert           json.RawMessage `json:"alert"`
	StartedAt       time.Time       `json:"started_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	DurationSeconds *float64        `json:"duration_seconds"`
}

// TraceEvent is one line of a run's trace (run_start, llm_request,
// llm_response, tool_call, tool_result, guard_denied, a2a_send,
// run_finish); the store keeps them as they are.
type TraceEvent struct {
	RunID string          `json:"run_id"`
	Seq   int             `json:"seq"`
	Time  time.Time       `json:"time"`
	Type  string          `json:"type"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// RunView is an agent's GET /runs/{id}: the result and the full trace.
type RunView struct {
	RunResult
	Task         string            `json:"task"`
	Context      map[string]string `json:"context,omitempty"`
	Caller       string            `json:"caller,omitempty"`
	SocialDepth  int               `json:"social_depth"`
	DiscussionID string            `json:"discussion_id,omitempty"`
	Trace        []TraceEvent      `json:"trace"`
}

// Finished reports whether the run has ended.
func (r RunView) Finished() bool { return r.Status != "" && r.Status != StatusRunning }
