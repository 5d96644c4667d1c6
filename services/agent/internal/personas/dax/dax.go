// Package dax is Dax (cicd-engineer) in code: without a model his
// playbook is the deploy-path review of the GitOps repository (the task's
// path when it names one that exists, else the whole repository); with a
// model the same review is his first tool, review_deploy_path. pkg/
// deployreview holds the rules; what he reports is here.
package dax

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Slug is Dax's.
const Slug = persona.SlugDax

// Dax is his code over the GitOps repository (nil: none configured, and
// every review run fails saying so).
type Dax struct{ repo deployreview.Repo }

// New returns Dax reading repo.
func New(repo deployreview.Repo) *Dax { return &Dax{repo: repo} }

// Slug is Dax's slug.
func (*Dax) Slug() string { return Slug }

// Tools are the registry tools his code names: the review.
func (*Dax) Tools() []string { return []string{deployreview.ToolName} }

// Backstop: none; his model calls the review itself.
func (*Dax) Backstop() engine.Backstop { return nil }

// Prepare: none; review_deploy_path is his model's first tool.
func (*Dax) Prepare() engine.Prepare { return nil }

// Playbook is the review.
func (d *Dax) Playbook() engine.Playbook { return engine.PlaybookFunc(d.review) }

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

// review: the deploy-path review → one finding per rule broken, the
// report as the answer. No repository, or one that cannot be read, fails
// the run with the reason: "no findings" is never claimed unread.
func (d *Dax) review(ctx context.Context, r *engine.Run) error {
	if d.repo == nil {
		return fmt.Errorf("%s: no GitOps repository is configured (GITOPS_FORGE, GITOPS_REPO), so there is nothing to review", deployreview.ToolName)
	}
	scope := Scope(ctx, d.repo, r.Req.Task)
	var rep *deployreview.Report
	_, err := playbook.Traced(ctx, r, "playbook-1", deployreview.ToolName, map[string]string{"path": scope}, func() (string, error) {
		var err error
		rep, err = deployreview.Review(ctx, d.repo, scope)
		if err != nil {
			return "", err
		}
		return rep.Render(), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", deployreview.ToolName, err)
	}
	for _, f := range rep.ToFindings() {
		r.ReportFinding(f)
	}
	var b strings.Builder
	switch {
	case rep.Files == 0:
		fmt.Fprintf(&b, "Deploy-path review (no change made): nothing to review in %s — no Dockerfile, manifest or CI workflow there.\n", where(scope))
		r.SetVerdict("unknown")
	case len(rep.Findings) == 0:
		fmt.Fprintf(&b, "Deploy-path review (no change made): %d files in %s, no rule broken.\n", rep.Files, where(scope))
		r.SetVerdict("healthy")
	default:
		fmt.Fprintf(&b, "Deploy-path review (no change made): %d findings in %s. Fix them in Git; each line names the rule, file:line and the fix.\n", len(rep.Findings), where(scope))
		r.SetVerdict("issues_found")
	}
	if len(rep.Skipped) > 0 {
		r.SetVerdict(VerdictPartial)
	}
	b.WriteString(rep.Render())
	r.SetAnswer(b.String())
	return nil
}

// VerdictPartial: some files could not be reviewed (named in the answer).
const VerdictPartial = "partial"

func where(scope string) string {
	if scope == "" {
		return "the GitOps repository"
	}
	return scope + "/"
}
