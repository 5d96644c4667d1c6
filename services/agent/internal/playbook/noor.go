package playbook

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Cluster is what Noor's sweep reads.
type Cluster interface {
	ClusterProblems(ctx context.Context, opts kube.ProblemOptions) (*kube.ProblemReport, error)
}

// Deps are the playbooks' dependencies; nil ones disable what needs them.
type Deps struct {
	Cluster  Cluster
	Reviewer Reviewer
}

// DelegateTo is the agent Noor hands remediable findings to.
const DelegateTo = "k8s-engineer"

// noorSweep: cluster_problems → findings (severity by rule) → the single
// most serious remediable finding → delegated to k8s-engineer. A healthy
// cluster gives verdict healthy and no findings. With report=false (the
// model-mode backstop) it neither reports findings nor answers when the
// model already did.
func noorSweep(ctx context.Context, r *engine.Run, d Deps, deterministic bool) error {
	opts := kube.ProblemOptions{Namespace: r.Req.Context["namespace"]}
	var rep *kube.ProblemReport
	_, err := traced(ctx, r, "playbook-1", "cluster_problems", map[string]string{"namespace": opts.Namespace}, func() (string, error) {
		var err error
		rep, err = d.Cluster.ClusterProblems(ctx, opts)
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
	chosen, ok := kube.ChooseDelegation(fs)
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
			fmt.Fprintf(&b, "Delegated %s to %s (their run %s): %s", del.Finding.Key, del.To, del.RunID, firstLine(del.Result))
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

// NoorBackstop is Noor's backstop in model mode: for sweeps and alerts,
// when the model did not delegate, the sweep's choice is delegated in code;
// when it recorded no findings, the sweep's are recorded.
func NoorBackstop(d Deps) engine.Backstop {
	if d.Cluster == nil {
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
		return noorSweep(ctx, r, d, false)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
