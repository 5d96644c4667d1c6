package playbook

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// ReviewerSlug is who Sol tells about a new PR.
const ReviewerSlug = "code-reviewer"

// rolloutKinds maps a finding's workload kind to k8s_rollout's kind.
var rolloutKinds = map[string]string{"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}

// solAct: the delegated finding → ONE action, then stop. OOMKilled → a
// memory-limit PR (bump_workload_memory, never a cluster change); a crash
// loop after a recent config change → rollout restart; anything else → a
// written recommendation. Sol does not re-judge a delegated finding, and
// makes no diagnostic reads of his own here: the finding is the evidence.
func solAct(ctx context.Context, r *engine.Run) error {
	f, ok, err := findingFromContext(r)
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
	switch gitops.SolPlan(f) {
	case gitops.PlanMemoryPR:
		out, okCall := call(ctx, r, 1, "bump_workload_memory", map[string]any{
			"namespace": f.Namespace, "kind": gitops.CanonicalKind(f.Kind), "name": f.Name, "container": f.Container,
			"finding_key": f.Key, "reason": strings.TrimSpace(f.Reason + ": " + f.Detail),
		})
		if !okCall {
			r.SetAnswer("Could not open the memory-limit PR for " + target(f) + ": " + out)
			r.SetVerdict("action_failed")
			return nil
		}
		// Tell the reviewer; fire and forget (a failure does not undo the PR).
		msg := fmt.Sprintf("I opened a memory-limit PR for %s (finding %s). Please review it.\n%s", target(f), f.Key, firstLine(out))
		if note, sent := call(ctx, r, 2, "notify_agent", map[string]string{"agent_slug": ReviewerSlug, "message": msg}); !sent {
			r.Log().Info("reviewer not notified: " + note)
		}
		r.SetAnswer("Action: proposed a memory-limit increase as a pull request (no cluster change).\n" + out)
		r.SetVerdict("action_taken")
	case gitops.PlanRestart:
		kind, known := rolloutKinds[gitops.CanonicalKind(f.Kind)]
		if !known {
			recommend(r, f, "a rollout restart needs a Deployment, StatefulSet or DaemonSet")
			return nil
		}
		out, okCall := call(ctx, r, 1, "k8s_rollout", map[string]any{"action": "restart", "kind": kind, "namespace": f.Namespace, "name": f.Name})
		if !okCall {
			r.SetAnswer("Could not restart " + target(f) + ": " + out)
			r.SetVerdict("action_failed")
			return nil
		}
		r.SetAnswer("Action: rollout restart of " + target(f) + " so its pods pick up the changed configuration.\n" + out)
		r.SetVerdict("action_taken")
	default:
		recommend(r, f, "")
	}
	return nil
}

func recommend(r *engine.Run, f api.Finding, why string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Recommendation (no change made): %s — %s.", target(f), f.Reason)
	if why != "" {
		fmt.Fprintf(&b, " I did not act because %s.", why)
	} else {
		b.WriteString(" This is not in the class I may fix (a memory-limit PR for an OOMKill, a restart after a config change).")
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
