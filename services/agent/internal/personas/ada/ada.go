// Package ada is Ada (backend-architect) in code: without a model her
// playbook is the API design review of the GitOps repository — OpenAPI
// documents, and the Services with the workloads behind them — of the
// task's path when it names one that exists, else the whole repository;
// with a model the same review is her first tool, review_api_design.
// pkg/deployreview holds the rules, personas/repoview the playbook.
package ada

import (
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/repoview"
)

// Slug is Ada's.
const Slug = persona.SlugAda

// Ada is her code over the GitOps repository (nil: none configured, and
// every review run fails saying so).
type Ada struct{ repo deployreview.Repo }

// New returns Ada reading repo.
func New(repo deployreview.Repo) *Ada { return &Ada{repo: repo} }

// Slug is Ada's slug.
func (*Ada) Slug() string { return Slug }

// Tools are the registry tools her code names: the review.
func (*Ada) Tools() []string { return []string{deployreview.APIToolName} }

// Backstop: none; her model calls the review itself.
func (*Ada) Backstop() engine.Backstop { return nil }

// Prepare: none; review_api_design is her model's first tool.
func (*Ada) Prepare() engine.Prepare { return nil }

// Playbook is the API design review.
func (a *Ada) Playbook() engine.Playbook {
	return repoview.Playbook(a.repo, repoview.Review{Tool: deployreview.APIToolName, Title: "API design review",
		Reads: "OpenAPI document or Service", Run: deployreview.ReviewAPI})
}
