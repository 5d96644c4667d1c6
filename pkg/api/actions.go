package api

import "time"

// ActionsSwitch is the kill switch as the agent's /actions and the core's
// /api/v1/actions show it, and the body of a PUT to either (docs/MANUAL.md, "The
// action envelope"). On a PUT, paused is required and a pause needs a
// reason; by names who (default: the caller's route).
type ActionsSwitch struct {
	Paused *bool      `json:"paused"`
	Reason string     `json:"reason,omitempty"`
	By     string     `json:"by,omitempty"`
	At     *time.Time `json:"at,omitempty"`
	// Line is how the refusals read: "paused by <who> at <when>: <reason>".
	Line string `json:"line,omitempty"`
}

// ActionView is one decision of the action envelope: a change made,
// proposed (shadow mode), recommended for a human (over a budget) or
// refused.
type ActionView struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	RunID     string    `json:"run_id,omitempty"`
	Action    string    `json:"action"`
	Namespace string    `json:"namespace,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	Name      string    `json:"name,omitempty"`
	Container string    `json:"container,omitempty"`
	Outcome   string    `json:"outcome"`
	Old       string    `json:"old,omitempty"`
	New       string    `json:"new,omitempty"`
	Change    string    `json:"change,omitempty"`
	Why       string    `json:"why,omitempty"`
	At        time.Time `json:"at"`
	// Checks are the follow-up checks of a change that was made, newest
	// first (docs/MANUAL.md, "The action envelope": verify, then escalate).
	Checks []CheckView `json:"checks,omitempty"`
}

// CheckView is one follow-up check of an action: did the problem stop, is
// the workload available, and whether a human was paged.
type CheckView struct {
	ID        string    `json:"id"`
	ActionID  string    `json:"action_id"`
	Agent     string    `json:"agent"`
	Namespace string    `json:"namespace,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	Name      string    `json:"name,omitempty"`
	Container string    `json:"container,omitempty"`
	Status    string    `json:"status"` // fixed|not_fixed|unknown
	Detail    string    `json:"detail"`
	PageKey   string    `json:"page_key,omitempty"`
	Paged     string    `json:"paged,omitempty"` // triggered|resolved|already open|failed: …
	At        time.Time `json:"at"`
}
