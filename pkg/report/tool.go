package report

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ToolName is the reporting tool's canonical name.
const ToolName = "post_report"

// ManualTask is the dedupe key of reports posted outside a pulse task.
const ManualTask = "post_report"

// RunInfo is what post_report needs of the run it is called in.
type RunInfo struct {
	// Task is the pulse task's key (context "pulse_task"), or "" outside
	// the pulse.
	Task string
	// TaskText is the run's task, for the title.
	TaskText string
	// Findings are the findings recorded so far (report_finding).
	Findings []api.Finding
}

type postArgs struct {
	Summary string `json:"summary" description:"outcome first, one line per problem"`
}

// PostReportTool is post_report: it posts the run's recorded findings,
// sorted by severity in code, and the summary, through d — the same path
// and dedupe as the pulse. info returns the calling run (false outside a
// run). The pulse does not post again for a target this call reached.
func PostReportTool(d *Deliverer, info func(ctx context.Context) (RunInfo, bool)) tools.Tool {
	return tools.New(ToolName,
		"Post your report (your recorded findings and this summary) to the team channel.",
		false,
		func(ctx context.Context, a postArgs) (string, error) {
			ri, ok := info(ctx)
			if !ok {
				return "", errors.New("post_report only works inside a run")
			}
			rep := Report{
				Title:       Title(ri.TaskText, ri.Findings),
				Findings:    ri.Findings,
				Notes:       summaryNotes(a.Summary, len(ri.Findings) > 0),
				MaxFindings: SweepLines,
			}
			if Render(rep).Empty() {
				return "", errors.New("nothing to post: record problems with report_finding first, or give a summary")
			}
			if len(d.targets) == 0 {
				return "No report target is configured (DISCORD_WEBHOOK_URL, SLACK_WEBHOOK_URL, REPORT_WEBHOOK_URL): nothing was posted. Do not call post_report again in this run.", nil
			}
			task := ri.Task
			if task == "" {
				task = ManualTask
			}
			return describe(d.Deliver(ctx, task, rep, DeliverOptions{TouchDuplicate: true})), nil
		})
}

// summaryNotes is the summary without its bullet lines when findings were
// recorded: those are the findings again, and the findings are rendered in
// code, sorted. What remains is the outcome line and what was not checked.
func summaryNotes(summary string, haveFindings bool) string {
	if !haveFindings {
		return summary
	}
	var keep []string
	for _, l := range strings.Split(summary, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "• ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// describe tells the model what happened, in one line per target.
func describe(ocs []Outcome) string {
	var b strings.Builder
	failed := false
	for _, o := range ocs {
		switch o.Status {
		case StatusDelivered:
			fmt.Fprintf(&b, "%s: posted (%d message(s)).\n", o.Target, o.Messages)
		case StatusPartial:
			fmt.Fprintf(&b, "%s: partly posted (%d message(s) before an error).\n", o.Target, o.Messages)
		case StatusDuplicate:
			fmt.Fprintf(&b, "%s: identical to the last report for this task; not posted again.\n", o.Target)
		case StatusFailed:
			failed = true
			fmt.Fprintf(&b, "%s: delivery failed (%s).\n", o.Target, o.Error)
		default:
			fmt.Fprintf(&b, "%s: %s.\n", o.Target, o.Status)
		}
	}
	if failed {
		b.WriteString("A failed target is retried after a pulse run ends; do not call post_report again in this run.")
	} else {
		b.WriteString("Done; do not call post_report again in this run.")
	}
	return b.String()
}
