// Package api holds the wire types every kubecrew service shares: the run
// request and result of an agent's POST /run, and the Finding that travels
// between agents, the core and the store. These names are the public contract
// of docs/ARCHITECTURE.md; extend them, never rename them.
package api

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Workflow types. Every type but Manual is autonomous: its runs are limited
// by both safety gates.
const (
	WorkflowManual      = "manual"
	WorkflowPulseTask   = "pulse-task"
	WorkflowAlert       = "alert"
	WorkflowA2ADelegate = "a2a-delegate"
	WorkflowA2AAsk      = "a2a-ask"
)

// Workflows lists every accepted workflow_type.
var Workflows = []string{WorkflowManual, WorkflowPulseTask, WorkflowAlert, WorkflowA2ADelegate, WorkflowA2AAsk}

// ValidWorkflow reports whether w is a known workflow type.
func ValidWorkflow(w string) bool {
	for _, k := range Workflows {
		if k == w {
			return true
		}
	}
	return false
}

// Autonomous reports whether runs of workflow type w run without a human in
// the loop. Unknown types are autonomous: the guard fails closed.
func Autonomous(w string) bool {
	return w != WorkflowManual
}

// Run statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusPartial   = "partial"
	StatusFailed    = "failed"
)

// Severities, most severe first.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
)

// SeverityRank orders severities: lower is more severe; unknown sorts last.
func SeverityRank(s string) int {
	switch s {
	case SeverityCritical:
		return 0
	case SeverityHigh:
		return 1
	case SeverityMedium:
		return 2
	case SeverityLow:
		return 3
	}
	return 4
}

// SortFindings returns fs most severe first (sorted in code, never in the
// order a model happened to mention them); equal severities keep a stable
// order by namespace, kind, name, container and reason.
func SortFindings(fs []Finding) []Finding {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(SeverityRank(strings.ToLower(a.Severity)), SeverityRank(strings.ToLower(b.Severity))),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Container, b.Container),
			cmp.Compare(a.Reason, b.Reason),
		)
	})
	return out
}

// ValidSeverity reports whether s is one of the four severities.
func ValidSeverity(s string) bool { return SeverityRank(s) < 4 }

// Finding is one problem an agent found.
type Finding struct {
	Key         string  `json:"key"`
	Severity    string  `json:"severity"`
	Kind        string  `json:"kind"`
	Namespace   string  `json:"namespace"`
	Name        string  `json:"name"`
	Container   string  `json:"container,omitempty"`
	Reason      string  `json:"reason"`
	Detail      string  `json:"detail"`
	Remediation string  `json:"remediation"`
	Remediable  bool    `json:"remediable"`
	Confidence  float64 `json:"confidence"`
	// Cluster names the cluster it was found in (the agent's CLUSTER_NAME);
	// with the key it is the finding's identity in its lifecycle.
	Cluster string `json:"cluster,omitempty"`
	// ConfigChange is the diagnosis's evidence that the workload's running
	// pods predate a write to configuration they reference (nil: none
	// found). Set only by the cluster sweep (pkg/kube), never from a
	// model's words: FindingArgs has no such field.
	ConfigChange *ConfigChange `json:"config_change,omitempty"`
	// OOMKill is the diagnosis's evidence of an OOM kill (which container
	// of which pod, at which memory limit), set the same way and never
	// from words. Neither field is ever taken on trust: the write
	// primitives read the cluster again right before they act.
	OOMKill *OOMKill `json:"oom_kill,omitempty"`
}

// DeriveKey returns the finding's stable key, namespace/kind/name/reason in
// lower case with the container when present. Same problem, same key: it
// names the GitOps branch, so it must not depend on free text.
func (f Finding) DeriveKey() string {
	k := fmt.Sprintf("%s-%s-%s", f.Namespace, f.Kind, f.Name)
	if f.Container != "" {
		k += "-" + f.Container
	}
	k += "-" + f.Reason
	return slug(k)
}

func slug(s string) string {
	out := make([]byte, 0, len(s))
	dash := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
			fallthrough
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
			dash = false
		default:
			if !dash && len(out) > 0 {
				out = append(out, '-')
				dash = true
			}
		}
	}
	for len(out) > 0 && out[len(out)-1] == '-' {
		out = out[:len(out)-1]
	}
	if len(out) > 100 {
		out = out[:100]
	}
	return string(out)
}

// RunRequest is the body of POST /run.
type RunRequest struct {
	Task         string     `json:"task"`
	WorkflowType string     `json:"workflow_type,omitempty"`
	Context      RunContext `json:"context,omitempty"`
	Caller       string     `json:"caller,omitempty"`
	SocialDepth  int        `json:"social_depth,omitempty"`
	DiscussionID string     `json:"discussion_id,omitempty"`
	// BudgetMS is the caller's time budget for the run in milliseconds
	// (budget.go): the run ends within it, less a margin, with its best
	// report. 0: the agent's RUN_TIMEOUT alone bounds it.
	BudgetMS int64 `json:"budget_ms,omitempty"`
	// Unattended: no person holding the write token stands behind the run
	// (docs/MANUAL.md, "Authentication"), so a manual run is autonomous — both
	// safety gates apply. The agent sets it for a POST /run not let in by
	// AUTH_TOKEN, the core for its API's runs likewise; a body may set it
	// (it only ever lowers what a run may do), never clear it.
	Unattended bool `json:"unattended,omitempty"`
}

// Tokens counts model tokens of one run.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

// RunResult is the answer of POST /run and the body of GET /runs/{id}.
type RunResult struct {
	RunID        string    `json:"run_id"`
	Agent        string    `json:"agent"`
	WorkflowType string    `json:"workflow_type"`
	Status       string    `json:"status"`
	Answer       string    `json:"answer"`
	Verdict      string    `json:"verdict"`
	Findings     []Finding `json:"findings"`
	Iterations   int       `json:"iterations"`
	Tokens       Tokens    `json:"tokens"`
	// ModelCalls counts the model calls that answered, loop and synthesis
	// (what Tokens was spent on).
	ModelCalls int        `json:"model_calls"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Error      string     `json:"error,omitempty"`
	// Delegation records a hand-off decided by the run (Noor's chosen
	// finding), whether or not it could be sent.
	Delegation *Delegation `json:"delegation,omitempty"`
	// Lifecycle is what the run's sweep did to the findings' lives (new,
	// still open since, resolved); nil when the run swept nothing.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
}

// Delegation is a decision to hand a finding to another agent.
type Delegation struct {
	To      string  `json:"to"`
	Finding Finding `json:"finding"`
	Sent    bool    `json:"sent"`
	RunID   string  `json:"run_id,omitempty"` // the callee's run id once sent
	Result  string  `json:"result,omitempty"`
	Error   string  `json:"error,omitempty"`
	// Verdict is the delegate's own verdict (action_taken, refused, …).
	Verdict string `json:"verdict,omitempty"`
	// Busy: the delegate was at capacity and started nothing (BusyError);
	// the finding may be handed over again later.
	Busy bool `json:"busy,omitempty"`
}

// Verdicts that say what came of a delegation, and the delegate's verdicts
// they are judged by (docs/MANUAL.md "Verdicts").
const (
	VerdictDelegated         = "delegated"          // the delegate accepted and acted
	VerdictDelegationRefused = "delegation_refused" // the delegate answered and did not act: refused, read-only, a recommendation only
	VerdictDelegationFailed  = "delegation_failed"  // not sent, the call failed, or the delegate's action failed
	VerdictDelegationBusy    = "delegation_busy"    // the delegate was at capacity and started nothing; hand it over again later
	VerdictActionTaken       = "action_taken"       // the delegate's: it acted
	VerdictActionFailed      = "action_failed"      // the delegate's: it tried and the action failed
	VerdictRefused           = "refused"            // the delegate's: it may not act (read-only, settle window, a gate)
	// VerdictUnchanged: a pulse run that found the same problems as the
	// last tick and so did not call the model.
	VerdictUnchanged = "unchanged"
)

// Outcome is the delegator's verdict for this delegation: delegated only
// when the delegate accepted and acted. A delegate that reports no verdict
// (an A2A agent outside the fleet) and completed counts as having acted.
func (d Delegation) Outcome() string {
	switch {
	case d.Busy:
		return VerdictDelegationBusy
	case !d.Sent || d.Error != "" || d.Verdict == VerdictActionFailed:
		return VerdictDelegationFailed
	case d.Verdict == VerdictActionTaken || d.Verdict == "":
		return VerdictDelegated
	}
	return VerdictDelegationRefused
}

// ErrorBody is every service's error answer: {"error": "message"}.
type ErrorBody struct {
	Error string `json:"error"`
}
