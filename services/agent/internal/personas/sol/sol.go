// Package sol is Sol (k8s-engineer) in code: his plan for a delegated
// finding (which ONE action, if any) and the playbook that takes it.
// pkg/gitops and pkg/kube supply the mechanisms (the memory-bump PR, the
// rollout restart); the choice is his.
package sol

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Slug is Sol's.
const Slug = persona.SlugSol

// ReviewerSlug is who Sol tells about a new PR.
const ReviewerSlug = persona.SlugVera

// The registry tools Sol's playbook calls.
const (
	ToolBumpMemory = "bump_workload_memory"
	ToolRollout    = "k8s_rollout"
	ToolNotify     = "notify_agent"
)

// Sol is his code. He needs no dependencies of his own: his playbook acts
// through the run's tools.
type Sol struct{}

// New returns Sol.
func New() *Sol { return &Sol{} }

// Slug is Sol's slug.
func (*Sol) Slug() string { return Slug }

// Tools are the registry tools his playbook calls by name.
func (*Sol) Tools() []string { return []string{ToolBumpMemory, ToolRollout, ToolNotify} }

// Playbook is act: the delegated finding → ONE action.
func (*Sol) Playbook() engine.Playbook { return engine.PlaybookFunc(act) }

// Prepare: Sol has none (the delegated finding is his whole task).
func (*Sol) Prepare() engine.Prepare { return nil }

// His plans for a delegated finding.
const (
	// PlanMemoryPR: propose a memory bump (bump_workload_memory).
	PlanMemoryPR = "memory_pr"
	// PlanRestart: a rollout restart (k8s_rollout restart).
	PlanRestart = "restart"
	// PlanRecommend: change nothing; answer with a recommendation.
	PlanRecommend = "recommend"
)

// Plan maps a finding to the one action Sol's playbook takes:
//
//   - reason OOMKilled with a named container and a workload kind that has
//     a pod template → PlanMemoryPR. Exit 137 with reason Error is a liveness
//     kill, not an OOM: it is not matched.
//   - reason CrashLoopBackOff with the diagnosis's evidence that the pods
//     predate a configuration change (f.ConfigChange: a ConfigMap they
//     reference was written after they started, computed by pkg/kube) →
//     PlanRestart: the pods must start on the new configuration. Words
//     are not evidence: a detail, remediation or alert text that speaks
//     of a config change does not count, and a code bug (the config
//     untouched since the pods started) gets a recommendation.
//   - anything else → PlanRecommend: no change without a known-safe action.
//
// Sol acts on a delegated finding without re-judging whether it is worth
// fixing, so Remediable and Severity are not consulted.
func Plan(f api.Finding) (action string) {
	reason := strings.ToLower(strings.TrimSpace(f.Reason))
	switch {
	case reason == "oomkilled" || reason == "oom-killed" || reason == "oom_killed":
		if f.Container != "" && gitops.CanonicalKind(f.Kind) != "" && gitops.CanonicalKind(f.Kind) != "Pod" {
			return PlanMemoryPR
		}
		return PlanRecommend
	case reason == "crashloopbackoff":
		if f.ConfigChange.After() {
			return PlanRestart
		}
	}
	return PlanRecommend
}

// rolloutKinds maps a finding's workload kind to k8s_rollout's kind.
var rolloutKinds = map[string]string{"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}

// act: the delegated finding → ONE action, then stop. OOMKilled → a
// memory-limit PR (bump_workload_memory, never a cluster change); a crash
// loop whose pods predate a config change (f.ConfigChange) → rollout
// restart; anything else → a
// written recommendation. Sol does not re-judge a delegated finding, and
// makes no diagnostic reads of his own here: the finding is the evidence.
func act(ctx context.Context, r *engine.Run) error {
	f, ok, err := playbook.FindingFromContext(r)
	if err != nil {
		return err
	}
	if !ok {
		r.SetAnswer("I act on a delegated finding (context.finding, or a data part over A2A) and none came with this task, so I changed nothing. " +
			"Send the finding — namespace, kind, name, container, reason — and I will take ONE action on it.")
		r.SetVerdict("no_finding")
		return nil
	}
	r.ReportFinding(f)
	switch Plan(f) {
	case PlanMemoryPR:
		if readOnly(r, f, ToolBumpMemory, "the memory-limit PR") {
			return nil
		}
		out, okCall := playbook.Call(ctx, r, 1, ToolBumpMemory, map[string]any{
			"namespace": f.Namespace, "kind": gitops.CanonicalKind(f.Kind), "name": f.Name, "container": f.Container,
			"finding_key": f.Key, "reason": strings.TrimSpace(f.Reason + ": " + f.Detail),
		})
		if !okCall {
			failed(r, f, "open the memory-limit PR for", out)
			return nil
		}
		if notMade(r, out) {
			return nil
		}
		// Tell the reviewer; fire and forget (a failure does not undo the PR).
		msg := reviewMessage(f, out)
		if note, sent := playbook.Call(ctx, r, 2, ToolNotify, map[string]string{"agent_slug": ReviewerSlug, "message": msg}); !sent {
			r.Log().Info("reviewer not notified: " + note)
		}
		r.SetAnswer("Action: proposed a memory-limit increase as a pull request (no cluster change).\n" + out)
		r.SetVerdict(api.VerdictActionTaken)
	case PlanRestart:
		kind, known := rolloutKinds[gitops.CanonicalKind(f.Kind)]
		if !known {
			recommend(r, f, "a rollout restart needs a Deployment, StatefulSet or DaemonSet")
			return nil
		}
		if readOnly(r, f, ToolRollout, "a rollout restart") {
			return nil
		}
		out, okCall := playbook.Call(ctx, r, 1, ToolRollout, map[string]any{"action": "restart", "kind": kind, "namespace": f.Namespace, "name": f.Name})
		if !okCall {
			failed(r, f, "restart", out)
			return nil
		}
		if notMade(r, out) {
			return nil
		}
		cc := f.ConfigChange
		r.SetAnswer(fmt.Sprintf("Action: rollout restart of %s so its pods start on the changed configuration (%s %s written %s, after the pods started %s).\n%s",
			target(f), cc.Kind, cc.Name, cc.ChangedAt.UTC().Format(time.RFC3339), cc.PodsStartedAt.UTC().Format(time.RFC3339), out))
		r.SetVerdict(api.VerdictActionTaken)
	default:
		recommend(r, f, "")
	}
	return nil
}

// readOnly says, in words, that actions are disabled when the run lacks
// the tool its plan needs (read-only: AGENT_TOOLS without it, or a run
// mode that does not allow it) — never an "unknown tool" error. It reports
// whether it did.
func readOnly(r *engine.Run, f api.Finding, tool, what string) bool {
	if _, ok := r.Tools.Get(tool); ok {
		return false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Refused: actions are disabled here (read-only) — this agent runs without %s, so I cannot make %s for %s. I changed nothing.",
		tool, what, target(f))
	b.WriteString(" To let me act, give me the tool (AGENT_TOOLS; make run: KUBECREW_ALLOW_ACTIONS=1 on your own cluster) and, for PRs, a GitOps repository (GITOPS_FORGE, GITOPS_REPO).")
	if f.Remediation != "" {
		fmt.Fprintf(&b, "\nSuggested fix for a human: %s", f.Remediation)
	}
	r.SetAnswer(b.String())
	r.SetVerdict(api.VerdictRefused)
	return true
}

// failed records a tool's refusal or failure: a refusal by rule (the GitOps
// settle window, the open-PR cap, no repository configured) is verdict
// refused, with the rule's words; anything else is action_failed.
func failed(r *engine.Run, f api.Finding, what, out string) {
	reason := strings.TrimPrefix(strings.TrimSpace(out), "ERROR: ")
	switch {
	case strings.Contains(out, gitops.ErrNoForge.Error()):
		r.SetAnswer(fmt.Sprintf("Refused: actions are disabled here (read-only) — %s, so I cannot %s %s. I changed nothing.", reason, what, target(f)))
		r.SetVerdict(api.VerdictRefused)
	case strings.Contains(out, tools.ErrDenied.Error()):
		// The action envelope or a gate refused: paused, a namespace that
		// did not opt in (docs/MANUAL.md, "The action envelope").
		r.SetAnswer(fmt.Sprintf("Refused to %s %s: %s. I changed nothing.", what, target(f), reason))
		r.SetVerdict(api.VerdictRefused)
	case strings.Contains(out, gitops.ErrRefused.Error()), strings.Contains(out, kube.ErrPrecondition.Error()),
		strings.Contains(out, "settle window"), strings.Contains(out, "agent PRs are open"):
		// a rule, or the primitive's precondition: what the cluster shows
		// right before the write does not justify it (docs/MANUAL.md, "The
		// action envelope")
		r.SetAnswer(fmt.Sprintf("Refused to %s %s: %s. I changed nothing.", what, target(f), reason))
		r.SetVerdict(api.VerdictRefused)
	default:
		r.SetAnswer(fmt.Sprintf("Could not %s %s: %s", what, target(f), out))
		r.SetVerdict(api.VerdictActionFailed)
	}
}

// notMade records a change the action envelope prepared but did not let
// be made — a proposal (shadow mode) or a recommendation (over a budget) —
// and reports whether it did: nothing changed, so no reviewer is told.
func notMade(r *engine.Run, out string) bool {
	if !strings.HasPrefix(out, envelope.ProposedPrefix) && !strings.HasPrefix(out, envelope.RecommendedPrefix) {
		return false
	}
	r.SetAnswer("No change made; left for a human.\n" + out)
	r.SetVerdict("recommendation")
	return true
}

func recommend(r *engine.Run, f api.Finding, why string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Recommendation (no change made): %s — %s.", target(f), f.Reason)
	if why != "" {
		fmt.Fprintf(&b, " I did not act because %s.", why)
	} else {
		b.WriteString(" This is not in the class I may fix (a memory-limit PR for an OOMKill, a restart when the configuration changed after the pods started).")
		if strings.EqualFold(strings.TrimSpace(f.Reason), "CrashLoopBackOff") {
			b.WriteString(" The diagnosis found no configuration written after the pods started, so a restart would only repeat the crash.")
		}
	}
	if f.Remediation != "" {
		fmt.Fprintf(&b, "\nSuggested fix for a human: %s", f.Remediation)
	}
	r.SetAnswer(b.String())
	r.SetVerdict("recommendation")
}

func target(f api.Finding) string {
	s := fmt.Sprintf("%s %s/%s", f.Kind, f.Namespace, f.Name)
	if f.Container != "" {
		s += " (container " + f.Container + ")"
	}
	return s
}
