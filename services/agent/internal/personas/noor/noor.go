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
	"github.com/kubecrew/kubecrew/pkg/safetext"
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

// Tools are the registry tools her code calls: cluster_problems (through
// the run's gated path, for its structured report); she delegates through
// the engine.
func (*Noor) Tools() []string { return []string{"cluster_problems"} }

// Playbook is the sweep, or nil without a cluster.
func (n *Noor) Playbook() engine.Playbook {
	if n.cluster == nil {
		return nil
	}
	return engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error { return n.sweep(ctx, r, true) })
}

// sweep: cluster_problems → findings (severity by rule) → the single
// most serious remediable finding → delegated to k8s-engineer. An alert
// run sweeps with the alerted object in focus: the report opens with it
// (broken, looks recovered with the evidence, or missing), and only a
// problem of that object is delegated. The verdict follows the sweep's
// coverage: healthy only when every check ran and found nothing; unknown
// or partial, with what was not checked and why, otherwise. With
// deterministic=false (the model-mode backstop) it neither reports
// findings nor answers when the model already did, but an incomplete
// sweep still sets the verdict.
func (n *Noor) sweep(ctx context.Context, r *engine.Run, deterministic bool) error {
	opts, args := sweepOptions(r)
	var rep *kube.ProblemReport
	_, err := playbook.Traced(ctx, r, "playbook-1", "cluster_problems", args, func() (string, error) {
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
	// The lifecycle sees the sweep's problems, in both modes, never the
	// alerted object's own status line (a recovered object is no problem).
	r.Observe(engine.Sweep{Namespace: opts.Namespace, Complete: rep.Complete(), Findings: fs})
	if f, ok := focusFinding(rep.Focus); ok {
		fs = append(fs, f)
	}
	if deterministic || len(r.Reported()) == 0 {
		for _, f := range fs {
			r.ReportFinding(f)
		}
	}
	var chosen api.Finding
	var ok bool
	if rep.Focus != nil { // an alert run acts on the alerted object or on nothing
		chosen, ok = ChooseDelegationFor(fs, rep.Focus.Owner)
	} else {
		chosen, ok = ChooseDelegation(fs)
	}
	var del *api.Delegation
	if ok && r.Delegation() == nil && r.Calls("delegate_task") == 0 {
		instruction := fmt.Sprintf("Fix %s %s/%s (container %s): %s — %s. Remediation: %s. Finding key %s. Act on it without re-judging it; ONE action, then stop.",
			chosen.Kind, chosen.Namespace, chosen.Name, orDash(chosen.Container), chosen.Reason, chosen.Detail, chosen.Remediation, chosen.Key)
		dd := r.Delegate(ctx, DelegateTo, chosen, instruction)
		del = &dd
	}
	v := rep.Verdict()
	if !deterministic {
		if v == kube.VerdictUnknown || v == kube.VerdictPartial {
			// a model's all-clear over a sweep that could not check is not the
			// answer; its text stays in the trace
			r.SetVerdict(v)
			r.SetAnswer(sweepAnswer(rep, fs, del))
		}
		return nil
	}
	r.SetAnswer(sweepAnswer(rep, fs, del))
	switch {
	case v == kube.VerdictUnknown || v == kube.VerdictPartial:
		r.SetVerdict(v)
	case del != nil:
		// delegated only when Sol acted; refused or failed otherwise (pkg/api)
		r.SetVerdict(del.Outcome())
	case len(rep.Problems) == 0 && rep.Focus != nil && rep.Focus.State == "recovered":
		r.SetVerdict("recovered")
	case len(fs) == 0:
		r.SetVerdict("healthy")
	default:
		r.SetVerdict("issues_found")
	}
	return nil
}

// sweepOptions are the sweep's options and its traced arguments: the run's
// namespace, and on an alert run the alerted object in focus.
func sweepOptions(r *engine.Run) (kube.ProblemOptions, map[string]string) {
	opts := kube.ProblemOptions{Namespace: r.Req.Context["namespace"]}
	args := map[string]string{"namespace": opts.Namespace}
	if r.Req.WorkflowType == api.WorkflowAlert {
		if ref, ok := kube.AlertTargetJSON(r.Req.Context["alert"]); ok {
			opts.Focus = &ref
			args["alerted"] = ref.String()
		}
	}
	return opts, args
}

// Reasons of the finding an alert run reports about its object when the
// sweep found no problem on it.
const (
	ReasonAlertRecovered     = "AlertRecovered"
	ReasonAlertTargetMissing = "AlertTargetMissing"
)

// focusFinding is the alerted object's finding when it has no problem now:
// it looks recovered (low, with the evidence) or does not exist (medium:
// the alert points at nothing). An alert is never answered with silence.
func focusFinding(fs *kube.FocusStatus) (api.Finding, bool) {
	if fs == nil {
		return api.Finding{}, false
	}
	o := fs.Owner
	if o.Name == "" {
		o = fs.Ref
	}
	f := api.Finding{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Confidence: 0.8}
	detail := fs.Summary
	if len(fs.Evidence) > 0 {
		detail += "; evidence: " + strings.Join(fs.Evidence, "; ")
	}
	switch fs.State {
	case "recovered":
		f.Severity, f.Reason = api.SeverityLow, ReasonAlertRecovered
		f.Remediation = "the alerted condition has cleared: check the evidence for a cause that will recur before closing the alert"
	case "missing":
		f.Severity, f.Reason = api.SeverityMedium, ReasonAlertTargetMissing
		f.Remediation = "the alert names an object that does not exist: check the alert rule's labels, or whether it was deleted"
	default:
		return api.Finding{}, false
	}
	f.Detail = safetext.Clean(detail, 600)
	f.Key = f.DeriveKey()
	return f, true
}

func sweepAnswer(rep *kube.ProblemReport, fs []api.Finding, del *api.Delegation) string {
	var b strings.Builder
	switch rep.Verdict() {
	case kube.VerdictUnknown:
		fmt.Fprintf(&b, "UNKNOWN — nothing could be checked, so this is not an all-clear. Not checked: %s.\n", strings.Join(rep.NotChecked(), "; "))
	case kube.VerdictPartial:
		fmt.Fprintf(&b, "PARTIAL — no problem found by the checks that ran, but not checked: %s.\n", strings.Join(rep.NotChecked(), "; "))
	default:
		if nc := rep.NotChecked(); len(nc) > 0 {
			fmt.Fprintf(&b, "Partial sweep — not checked: %s.\n", strings.Join(nc, "; "))
		}
	}
	if f := rep.Focus; f != nil {
		fmt.Fprintf(&b, "Alerted object %s: %s\n", f.Ref, f.Summary)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "  evidence: %s\n", e)
		}
	}
	switch {
	case len(fs) > 0:
		fmt.Fprintf(&b, "%d finding(s):\n", len(fs))
		b.WriteString(report.Render(report.Report{Findings: fs, MaxFindings: 10}).Body())
	case rep.Verdict() == kube.VerdictHealthy:
		fmt.Fprintf(&b, "Healthy: all %d checks of cluster_problems ran and found nothing wrong.", len(rep.Coverage.ChecksRun))
	}
	if c := rep.Churn; c.Events > 0 {
		fmt.Fprintf(&b, "\nChurn (not problems): %d Warning events within %s about objects healthy now or gone.", c.Events, rep.Coverage.Window)
	}
	if del != nil {
		b.WriteString("\n")
		switch {
		case del.Busy:
			fmt.Fprintf(&b, "Chose %s for %s, which is busy and started nothing (not a failure; the next sweep hands it over again): %s", del.Finding.Key, del.To, del.Error)
		case del.Outcome() == api.VerdictDelegationRefused:
			fmt.Fprintf(&b, "Asked %s to fix %s; it did not act (verdict %s, their run %s): %s", del.To, del.Finding.Key, del.Verdict, del.RunID, playbook.FirstLine(del.Result))
		case del.Sent && del.Error == "" && del.Verdict == api.VerdictActionFailed:
			fmt.Fprintf(&b, "Asked %s to fix %s; its action failed (their run %s): %s", del.To, del.Finding.Key, del.RunID, playbook.FirstLine(del.Result))
		case del.Sent && del.Error == "":
			fmt.Fprintf(&b, "Delegated %s to %s (their run %s): %s", del.Finding.Key, del.To, del.RunID, playbook.FirstLine(del.Result))
		case del.Sent:
			fmt.Fprintf(&b, "Delegated %s to %s, which answered with an error: %s", del.Finding.Key, del.To, del.Error)
		default:
			fmt.Fprintf(&b, "Chose %s for %s but could not send it: %s", del.Finding.Key, del.To, del.Error)
		}
	} else if rep.Focus != nil && len(fs) > 0 {
		fmt.Fprintf(&b, "\nNothing delegated: the alerted object %s has no problem Sol can fix (an OOM kill, a crash loop or failing probes on a workload).", rep.Focus.Owner)
	}
	cov := rep.Coverage
	fmt.Fprintf(&b, "\nCoverage: %d checks run, %d skipped, %d partial lists.", len(cov.ChecksRun), len(cov.ChecksSkipped), len(cov.Partial))
	return b.String()
}

// Backstop is Noor's backstop in model mode: for every autonomous run
// (pulse, alert, a peer's delegation or question), when the model did not
// delegate, the sweep's choice is delegated in code; when it recorded no
// findings, the sweep's are recorded. A manual run is a person's: what it
// asks for is theirs to decide. nil without a cluster.
func (n *Noor) Backstop() engine.Backstop {
	if n.cluster == nil {
		return nil
	}
	return func(ctx context.Context, r *engine.Run) error {
		if !api.Autonomous(r.Req.WorkflowType) {
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

// ChooseDelegationFor is ChooseDelegation restricted to the findings about
// owner (an alert's object, resolved to its owner): an alert run acts on
// the alerted workload or on nothing. ok is false when that owner has no
// delegable finding.
func ChooseDelegationFor(fs []api.Finding, owner kube.ObjectRef) (api.Finding, bool) {
	var mine []api.Finding
	for _, f := range fs {
		if f.Namespace == owner.Namespace && f.Kind == owner.Kind && f.Name == owner.Name {
			mine = append(mine, f)
		}
	}
	return ChooseDelegation(mine)
}
