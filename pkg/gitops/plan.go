package gitops

import (
	"regexp"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Sol's plans for a delegated finding.
const (
	// PlanMemoryPR: propose a memory bump (bump_workload_memory).
	PlanMemoryPR = "memory_pr"
	// PlanRestart: a rollout restart (k8s_rollout restart).
	PlanRestart = "restart"
	// PlanRecommend: change nothing; answer with a recommendation.
	PlanRecommend = "recommend"
)

var configChangeRE = regexp.MustCompile(`(?i)\b(config\s*map|configmap|secret|config(uration)?|env(ironment)?)\b[^.\n]{0,80}\b(chang|updat|edit|modif|rotat|roll)|\b(chang|updat|edit|modif|rotat)\w*\b[^.\n]{0,80}\b(config\s*map|configmap|secret|config(uration)?)\b`)

// SolPlan maps a finding to the one action Sol's deterministic playbook
// takes (the lead wires playbooks; this is the decision only):
//
//   - reason OOMKilled with a named container and a workload kind that has
//     a pod template → PlanMemoryPR. Exit 137 with reason Error is a liveness
//     kill, not an OOM (seed §20): it is not matched.
//   - reason CrashLoopBackOff whose detail or remediation says a ConfigMap,
//     Secret or configuration changed recently → PlanRestart (the pods
//     must pick the new configuration up).
//   - anything else → PlanRecommend: no change without a known-safe action.
//
// Sol acts on a delegated finding without re-judging whether it is worth
// fixing, so Remediable and Severity are not consulted.
func SolPlan(f api.Finding) (action string) {
	reason := strings.ToLower(strings.TrimSpace(f.Reason))
	switch {
	case reason == "oomkilled" || reason == "oom-killed" || reason == "oom_killed":
		if f.Container != "" && CanonicalKind(f.Kind) != "" && CanonicalKind(f.Kind) != "Pod" {
			return PlanMemoryPR
		}
		return PlanRecommend
	case reason == "crashloopbackoff":
		if configChangeRE.MatchString(f.Detail + "\n" + f.Remediation) {
			return PlanRestart
		}
	}
	return PlanRecommend
}
