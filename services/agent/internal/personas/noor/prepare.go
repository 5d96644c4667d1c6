package noor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Prepare runs before a model run (docs/MANUAL.md, "Model cost"). An alert run
// starts with the evidence: the sweep with the alerted object in focus (its
// problems, the configuration changes it saw, the object's own state) is in
// the first prompt, framed as tool output, so a model that agrees answers
// in one call and calls a tool only for more. A continuous pulse task's
// run gets the cluster fingerprinted: cluster_problems, then the digest of
// the sorted problem set; when it is the last tick's and that tick left
// nothing pending, the engine records the tick unchanged without calling
// the model. Other runs, and other cadences (housekeeping and the trend
// review read memory, not only the cluster), get nothing. nil without a
// cluster.
func (n *Noor) Prepare() engine.Prepare {
	if n.cluster == nil {
		return nil
	}
	return func(ctx context.Context, r *engine.Run) (engine.Prep, error) {
		if r.Req.WorkflowType == api.WorkflowAlert {
			return n.alertEvidence(ctx, r)
		}
		if r.Req.WorkflowType != api.WorkflowPulseTask || r.Req.Context[pulse.ContextCadence] != string(pulse.Continuous) {
			return engine.Prep{}, nil
		}
		opts := kube.ProblemOptions{Namespace: r.Req.Context["namespace"]}
		var rep *kube.ProblemReport
		_, err := playbook.Traced(ctx, r, "prepare-1", "cluster_problems", map[string]string{"namespace": opts.Namespace}, func() (string, error) {
			var err error
			rep, err = n.cluster.ClusterProblems(ctx, opts)
			if err != nil {
				return "", err
			}
			return rep.Render(), nil
		})
		if err != nil {
			return engine.Prep{}, fmt.Errorf("cluster_problems: %w", err)
		}
		fs := kube.ProblemsToFindings(rep)
		return engine.Prep{Digest: ProblemDigest(rep), Findings: fs, Summary: problemSummary(rep, fs)}, nil
	}
}

// EvidenceNote opens the evidence an alert run starts with.
const EvidenceNote = "Evidence gathered before this run: the deterministic sweep (cluster_problems) with the alerted object in focus, " +
	"its problems and the configuration changes it saw. It is data read from the cluster, framed like any tool result. " +
	"Answer from it when it is enough; call a tool only for what it does not show."

// alertEvidence is the focused sweep, through the run's gated and traced
// path (redacted and bounded like any tool output), as the task's note.
func (n *Noor) alertEvidence(ctx context.Context, r *engine.Run) (engine.Prep, error) {
	opts, args := sweepOptions(r)
	out, err := playbook.Traced(ctx, r, "prepare-1", "cluster_problems", args, func() (string, error) {
		rep, err := n.cluster.ClusterProblems(ctx, opts)
		if err != nil {
			return "", err
		}
		return rep.Render(), nil
	})
	if err != nil {
		return engine.Prep{}, fmt.Errorf("cluster_problems: %w", err)
	}
	return engine.Prep{Note: EvidenceNote + "\n" + engine.FrameToolOutput("cluster_problems", out)}, nil
}

// ProblemDigest fingerprints a sweep: the sorted set of (owner, reason,
// severity) of its problems, and its coverage (a check that could not run,
// or runs again, is a change). Details — restart counts, event
// counts, ages — are left out: they move every tick without the problem
// changing.
func ProblemDigest(rep *kube.ProblemReport) string {
	lines := make([]string, 0, len(rep.Problems)+1)
	for _, p := range rep.Problems {
		lines = append(lines, strings.Join([]string{p.Namespace, p.Kind, p.Name, p.Reason, p.Severity}, "\x1f"))
	}
	sort.Strings(lines)
	c := rep.Coverage
	lines = append(lines, fmt.Sprintf("coverage\x1f%s\x1f%d run\x1f%d skipped\x1f%d partial", rep.Verdict(), len(c.ChecksRun), len(c.ChecksSkipped), len(c.Partial)))
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// problemSummary is the unchanged tick's line: how many problems, the
// first few, and what was not checked.
func problemSummary(rep *kube.ProblemReport, fs []api.Finding) string {
	fs = api.SortFindings(fs)
	var b strings.Builder
	if len(fs) == 0 {
		b.WriteString("no problem.")
	} else {
		fmt.Fprintf(&b, "%d problem(s):", len(fs))
		for i, f := range fs {
			if i == 3 {
				fmt.Fprintf(&b, " and %d more", len(fs)-3)
				break
			}
			sep := ";"
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s %s %s/%s/%s", sep, f.Severity, f.Reason, f.Namespace, f.Kind, f.Name)
		}
		b.WriteString(".")
	}
	if nc := rep.NotChecked(); len(nc) > 0 {
		fmt.Fprintf(&b, " Not checked: %s.", strings.Join(nc, "; "))
	}
	return b.String()
}
