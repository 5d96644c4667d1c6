package tools

import (
	"context"
	"errors"
	"fmt"
)

// Mode is how a run was started. It travels in the context so that every
// mutating primitive can check it at call time (the execution gate).
type Mode int

const (
	// ModeAutonomous: pulse tasks, alerts, delegations. The zero value, so a
	// context that carries no mode is autonomous: the gate fails closed.
	ModeAutonomous Mode = iota
	// ModeInteractive: a manual run a person asked for.
	ModeInteractive
)

func (m Mode) String() string {
	if m == ModeInteractive {
		return "interactive"
	}
	return "autonomous"
}

type modeKey struct{}

// WithMode returns ctx carrying the run mode.
func WithMode(ctx context.Context, m Mode) context.Context {
	return context.WithValue(ctx, modeKey{}, m)
}

// ModeFrom returns the run mode in ctx; ModeAutonomous when none was set.
func ModeFrom(ctx context.Context) Mode {
	if m, ok := ctx.Value(modeKey{}).(Mode); ok {
		return m
	}
	return ModeAutonomous
}

// Action names one mutating primitive, e.g. "k8s.rollout.restart".
type Action string

// Actions an autonomous run may perform. Everything else that mutates needs
// an interactive run.
var autonomousActions = map[Action]bool{
	"k8s.rollout.restart":    true,
	"gitops.pr.open":         true,
	"gitops.pr.review":       true,
	"gitops.pr.mergetrivial": true,
	"memory.write":           true,
}

// ErrDenied is wrapped by every gate refusal.
var ErrDenied = errors.New("denied by safety gate")

// Check is the execution gate: every mutating primitive calls it at call
// time, whatever tool name led there.
func Check(ctx context.Context, a Action) error {
	if ModeFrom(ctx) == ModeInteractive {
		return nil
	}
	if autonomousActions[a] {
		return nil
	}
	return fmt.Errorf("%w: %s is not allowed in an autonomous run", ErrDenied, a)
}

// AutonomousTools is the name gate's allowlist: the only tool names an
// autonomous run is given. A mutating tool is here only when every action
// it can take in an autonomous run is itself allowed by Check.
var AutonomousTools = map[string]bool{
	// built-ins
	"load_skill": true, "report_finding": true, "memory_read": true, "memory_write": true,
	"ask_agent": true, "notify_agent": true, "delegate_task": true, "post_report": true,
	// cluster, read-only
	"k8s_get_resources": true, "k8s_describe": true, "k8s_get_events": true, "k8s_get_pod_logs": true,
	"k8s_get_yaml": true, "k8s_api_resources": true, "k8s_nodes": true, "cluster_problems": true,
	// cluster, self-gating (status|history|restart only when autonomous)
	"k8s_rollout": true,
	// gitops
	"bump_workload_memory": true, "list_agent_prs": true, "get_pr": true, "review_pr": true,
	"merge_if_trivial": true, "read_repo_file": true, "list_repo_files": true, "search_repo": true,
	// reviews of the GitOps repository, read-only
	"review_deploy_path": true, "review_api_design": true,
}
