package api

import "time"

// Lifecycle changes of one finding (docs/MANUAL.md, "Findings have a life").
const (
	ChangeNew      = "new"      // first seen by this sweep
	ChangeOpen     = "open"     // still open since FirstSeen
	ChangeReopened = "reopened" // back after it was resolved
	ChangeResolved = "resolved" // a sweep that covered it no longer sees it
)

// Lifecycle is what a run's sweep did to the findings' lives: one change
// per finding it saw, and one per open finding of its scope it no longer
// sees. Complete false means the sweep did not cover its scope (a List was
// forbidden or failed): it resolved nothing.
type Lifecycle struct {
	Cluster  string            `json:"cluster"`
	Scope    string            `json:"scope"` // a namespace, or "" for the whole cluster
	Complete bool              `json:"complete"`
	Changes  []LifecycleChange `json:"changes"`
}

// LifecycleChange is one finding's change.
type LifecycleChange struct {
	Change     string     `json:"change"` // new|open|reopened|resolved
	Finding    Finding    `json:"finding"`
	FirstSeen  time.Time  `json:"first_seen"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// Of returns the change of the finding with key, if any.
func (l *Lifecycle) Of(key string) (LifecycleChange, bool) {
	if l == nil {
		return LifecycleChange{}, false
	}
	for _, c := range l.Changes {
		if c.Finding.Key == key {
			return c, true
		}
	}
	return LifecycleChange{}, false
}

// Resolved returns the findings the sweep resolved.
func (l *Lifecycle) Resolved() []LifecycleChange {
	if l == nil {
		return nil
	}
	var out []LifecycleChange
	for _, c := range l.Changes {
		if c.Change == ChangeResolved {
			out = append(out, c)
		}
	}
	return out
}

// FindingStateView is one finding's life as the APIs show it (an agent's
// GET /findings/lifecycle, the core's GET /api/v1/findings/lifecycle).
type FindingStateView struct {
	Cluster    string     `json:"cluster"`
	Key        string     `json:"key"`
	State      string     `json:"state"` // open|resolved
	Finding    Finding    `json:"finding"`
	Agent      string     `json:"agent"`
	RunID      string     `json:"run_id"`
	Reopened   int        `json:"reopened"`
	FirstSeen  time.Time  `json:"first_seen"`
	LastSeen   time.Time  `json:"last_seen"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}
