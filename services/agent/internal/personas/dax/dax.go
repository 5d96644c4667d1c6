// Package dax is Dax (cicd-engineer) in code: without a model his
// playbook is the deploy-path review of the GitOps repository (the task's
// path when it names one that exists, else the whole repository); with a
// model the same review is his first tool, review_deploy_path. pkg/
// deployreview holds the rules, personas/repoview the playbook.
package dax

import (
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/repoview"
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

// Playbook is the deploy-path review.
func (d *Dax) Playbook() engine.Playbook {
	return repoview.Playbook(d.repo, repoview.Review{Tool: deployreview.ToolName, Title: "Deploy-path review",
		Reads: "Dockerfile, manifest or CI workflow", Run: deployreview.Review})
}
