// Package repoview is the playbook Dax and Ada share: a deterministic
// review of the GitOps repository (pkg/deployreview), of the path a task
// names or else the whole repository, reported as findings with the
// rendered report as the answer. Each persona picks its review.
package repoview

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Review is one persona's review.
type Review struct {
	Tool  string // the tool the review is (review_deploy_path, review_api_design)
	Title string // "Deploy-path review"
	// Reads is what the review looks at, for "nothing to review in …".
	Reads string
	Run   func(ctx context.Context, repo deployreview.Repo, dir string) (*deployreview.Report, error)
}

// VerdictPartial: some files could not be reviewed (named in the answer).
const VerdictPartial = "partial"

// Playbook runs rv over repo (nil: none configured, and every run fails
// saying so). A review that could not read every file it should have ends
// the run partial, naming them: "no findings" is never claimed unread.
func Playbook(repo deployreview.Repo, rv Review) engine.Playbook {
	return inCode{engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error {
		if repo == nil {
			return fmt.Errorf("%s: no GitOps repository is configured (GITOPS_FORGE, GITOPS_REPO), so there is nothing to review", rv.Tool)
		}
		// A pulse run is the weekly review of the whole repository, and
		// reports what changed since the last one (changes.go).
		weekly := inCode{}.InCode(r.Req)
		scope := ""
		if !weekly {
			scope = Scope(ctx, repo, r.Req.Task)
		}
		var rep *deployreview.Report
		_, err := playbook.Traced(ctx, r, "playbook-1", rv.Tool, map[string]string{"path": scope}, func() (string, error) {
			var err error
			rep, err = rv.Run(ctx, repo, scope)
			if err != nil {
				return "", err
			}
			return rep.Render(), nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", rv.Tool, err)
		}
		partial := func() error {
			if len(rep.Skipped) == 0 {
				return nil
			}
			r.SetVerdict(VerdictPartial)
			return &engine.Partial{Reason: fmt.Sprintf("%s: %d files could not be reviewed: %s", rv.Tool, len(rep.Skipped), strings.Join(rep.Skipped, "; "))}
		}
		if weekly {
			if err := reportChanges(ctx, r, rv, rep); err != nil {
				return fmt.Errorf("%s: %w", rv.Tool, err)
			}
			return partial()
		}
		for _, f := range rep.ToFindings() {
			r.ReportFinding(f)
		}
		var b strings.Builder
		switch {
		case rep.Files == 0:
			fmt.Fprintf(&b, "%s (no change made): nothing to review in %s — no %s there.\n", rv.Title, where(scope), rv.Reads)
			r.SetVerdict("unknown")
		case len(rep.Findings) == 0:
			fmt.Fprintf(&b, "%s (no change made): %d files in %s, no rule broken.\n", rv.Title, rep.Files, where(scope))
			r.SetVerdict("healthy")
		default:
			fmt.Fprintf(&b, "%s (no change made): %d findings in %s. Fix them in Git; each line names the rule, file:line and the fix.\n", rv.Title, len(rep.Findings), where(scope))
			r.SetVerdict("issues_found")
		}
		b.WriteString(rep.Render())
		r.SetAnswer(b.String())
		return partial()
	})}
}

// WeeklyTitle opens the PULSE.md task that is the weekly review: code
// runs it, with or without a model, and reports what changed.
const WeeklyTitle = "Weekly review"

// inCode runs the weekly review in code even with a model (engine.InCode).
type inCode struct{ engine.PlaybookFunc }

func (inCode) InCode(req api.RunRequest) bool {
	return req.WorkflowType == api.WorkflowPulseTask && strings.HasPrefix(strings.TrimSpace(req.Task), WeeklyTitle)
}

// pathRE is a repository path named in a task: a token with a slash.
var pathRE = regexp.MustCompile(`(?:^|[\s"'(])((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]*)`)

// Scope is the directory a task asks about: the first path it names that
// holds files ("" = the whole repository). A named file reviews its
// directory.
func Scope(ctx context.Context, repo deployreview.Repo, task string) string {
	for _, m := range pathRE.FindAllStringSubmatch(task, 5) {
		p := strings.TrimSuffix(strings.Trim(m[1], "/"), ".")
		if p == "" || strings.Contains(p, "..") || strings.Contains(p, "://") {
			continue
		}
		if files, err := repo.ListFiles(ctx, p); err == nil && len(files) > 0 {
			return p
		}
		if i := strings.LastIndex(p, "/"); i > 0 {
			if files, err := repo.ListFiles(ctx, p[:i]); err == nil && len(files) > 0 {
				return p[:i]
			}
		}
	}
	return ""
}

func where(scope string) string {
	if scope == "" {
		return "the GitOps repository"
	}
	return scope + "/"
}
