// Package noor is Noor (platform-sre) in code: the sweep that is her
// deterministic playbook, the same sweep as her backstop in model mode, and
// her delegation choice (which ONE finding Sol gets). pkg/kube supplies the
// mechanism (cluster_problems, findings); the choice is hers.
package noor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Slug is Noor's.
const Slug = persona.SlugNoor

// DelegateTo is the agent Noor hands remediable findings to.
const DelegateTo = persona.SlugSol

// Cluster is what Noor's sweep reads.
type Cluster interface {
	ClusterProblems(ctx context.Context, opts kube.ProblemOptions) (*kube.ProblemReport, error)
}

// Noor is her code; a nil cluster disables the sweep and the backstop.
type Noor struct{ cluster Cluster }

// New returns Noor reading cluster (nil: none configured).
func New(cluster Cluster) *Noor { return &Noor{cluster: cluster} }

// Slug is Noor's slug.
func (*Noor) Slug() string { return Slug }

// Tools are the registry tools her code calls by name: none (the sweep
// reads the cluster directly and delegates through the engine).
func (*Noor) Tools() []string { return nil }

// Playbook is the sweep, or nil without a cluster.
func (n *Noor) Playbook() engine.Playbook {
	if n.cluster == nil {
		return nil
	}
	return engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error { return n.sweep(ctx, r, true) })
}

// sweep: cluster_problems → findings (severity by rule) → the single
// most serious remediable finding → delegated to k8s-engineer. A healthy
// cluster gives verdict healthy and no findings. With report=false (the
// model-mode backstop) it neither reports findings nor answers when the
// model already did.
func (n *Noor) sweep(ctx context.Context, r *engine.Run, deterministic bool) error {
	opts := kube.ProblemOptions{Namespace: r.Req.Context["namespace"]}
	var rep *kube.ProblemReport
	_, err := playbook.Traced(ctx, r, "playbook-1", "cluster_problems", map[string]string{"namespace": opts.Namespace}, func() (string, error) {
		var err error
		rep, err = n.cluster.ClusterProblems(ctx, opts)
		if err != nil {
			return "", err
		}
		return rep.Render(), nil
	})
	if err != nil {
		return fmt.Errorf("cluster_problems: %w", err)
	}
	fs := kube.ProblemsToFindings(rep)
	if deterministic || len(r.Reported()) == 0 {
		for _, f := range fs {
			r.ReportFinding(f)
		}
	}
	chosen, ok := ChooseDelegation(fs)
	var del *api.Delegation
	if ok && r.Delegation() == nil && r.Calls("delegate_task") == 0 {
		instruction := fmt.Sprintf("Fix %s %s/%s (container %s): %s — %s. Remediation: %s. Finding key %s. Act on it without re-judging it; ONE action, then stop.",
			chosen.Kind, chosen.Namespace, chosen.Name, orDash(chosen.Container), chosen.Reason, chosen.Detail, chosen.Remediation, chosen.Key)
		dd := r.Delegate(ctx, DelegateTo, chosen, instruction)
		del = &dd
	}
	if !deterministic {
		return nil
	}
	r.SetAnswer(sweepAnswer(rep, fs, del))
	switch {
	case len(fs) == 0:
		r.SetVerdict("healthy")
	case del != nil:
		r.SetVerdict("delegated")
	default:
		r.SetVerdict("issues_found")
	}
	return nil
}

func sweepAnswer(rep *kube.ProblemReport, fs []api.Finding, del *api.Delegation) string {
	var b strings.Builder
	if len(fs) == 0 {
		b.WriteString("Healthy: cluster_problems found nothing wrong.")
	} else {
		fmt.Fprintf(&b, "%d problem(s) found:\n", len(fs))
		b.WriteString(report.Render(report.Report{Findings: fs, MaxFindings: 10}).Body())
	}
	if del != nil {
		b.WriteString("\n")
		switch {
		case del.Sent && del.Error == "":
			fmt.Fprintf(&b, "Delegated %s to %s (their run %s): %s", del.Finding.Key, del.To, del.RunID, playbook.FirstLine(del.Result))
		case del.Sent:
			fmt.Fprintf(&b, "Delegated %s to %s, which answered with an error: %s", del.Finding.Key, del.To, del.Error)
		default:
			fmt.Fprintf(&b, "Chose %s for %s but could not send it: %s", del.Finding.Key, del.To, del.Error)
		}
	}
	cov := rep.Coverage
	fmt.Fprintf(&b, "\nCoverage: %d checks run, %d skipped, %d partial lists.", len(cov.ChecksRun), len(cov.ChecksSkipped), len(cov.Partial))
	return b.String()
}

// Backstop is Noor's backstop in model mode: for sweeps and alerts, when
// the model did not delegate, the sweep's choice is delegated in code; when
// it recorded no findings, the sweep's are recorded. nil without a cluster.
func (n *Noor) Backstop() engine.Backstop {
	if n.cluster == nil {
		return nil
	}
	return func(ctx context.Context, r *engine.Run) error {
		switch r.Req.WorkflowType {
		case api.WorkflowPulseTask, api.WorkflowAlert:
		default:
			return nil
		}
		if r.Delegation() != nil || r.Calls("delegate_task") > 0 {
			return nil
		}
		return n.sweep(ctx, r, false)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// delegable reasons, most urgent first: what Sol can fix on a live workload.
var delegable = map[string]int{kube.ReasonOOMKilled: 0, kube.ReasonCrashLoopBackOff: 1, kube.ReasonProbeFailure: 2}

// delegableKinds are the workloads Sol may act on.
var delegableKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true}

// ChooseDelegation picks the single most serious remediable finding to hand
// to Sol: an OOM kill, a crash loop or failing probes on a Deployment,
// StatefulSet or DaemonSet (never a Job, a bare pod, a scheduling or image
// problem). Order: severity, then OOMKilled > CrashLoopBackOff >
// ProbeFailure, then key, so the choice is deterministic. ok is false when
// nothing qualifies. Remediable is trusted only together with the reason
// and kind: a finding from another source claiming remediable=true for a
// Job is still refused.
func ChooseDelegation(fs []api.Finding) (api.Finding, bool) {
	var cands []api.Finding
	for _, f := range fs {
		if _, ok := delegable[f.Reason]; !ok || !f.Remediable || !delegableKinds[f.Kind] || f.Namespace == "" || f.Name == "" {
			continue
		}
		if f.Key == "" {
			f.Key = f.DeriveKey()
		}
		cands = append(cands, f)
	}
	if len(cands) == 0 {
		return api.Finding{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if ra, rb := api.SeverityRank(a.Severity), api.SeverityRank(b.Severity); ra != rb {
			return ra < rb
		}
		if delegable[a.Reason] != delegable[b.Reason] {
			return delegable[a.Reason] < delegable[b.Reason]
		}
		return a.Key < b.Key
	})
	return cands[0], true
}
