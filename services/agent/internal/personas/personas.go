// Package personas is where each persona's code lives, one package per
// persona: noor (the sweep, her backstop and her delegation choice), sol
// (his plan and the one action), vera (her PR pick and review pass), dax
// (the deploy-path review), ada (the API design review); the last two
// share personas/repoview.
// pkg/kube and pkg/gitops keep the mechanisms; the choices are here.
package personas

import (
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/ada"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/dax"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/noor"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/sol"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas/vera"
)

// Persona is one persona's behaviour in code.
type Persona interface {
	// Slug is the persona's slug (pkg/persona's constants).
	Slug() string
	// Playbook is the deterministic playbook, or nil when the persona has
	// none or what it needs is not configured.
	Playbook() engine.Playbook
	// Backstop runs after a model run, or is nil.
	Backstop() engine.Backstop
	// Prepare runs before a model run, or is nil.
	Prepare() engine.Prepare
	// Tools are the registry tools the persona's code calls, all through
	// the run's gated, counted path (its shipped AGENT_TOOLS grant them).
	Tools() []string
}

// Deps are what the personas' code reads; a nil one disables what needs it.
type Deps struct {
	Cluster  noor.Cluster
	Reviewer vera.Reviewer
	// Repo is the GitOps repository Dax and Ada review (nil: none configured).
	Repo deployreview.Repo
}

// For returns the persona with slug. Unknown slugs get one with no code
// of its own.
func For(slug string, d Deps) Persona {
	switch slug {
	case persona.SlugNoor:
		return noor.New(d.Cluster)
	case persona.SlugSol:
		return sol.New()
	case persona.SlugVera:
		return vera.New(d.Reviewer)
	case persona.SlugDax:
		return dax.New(d.Repo)
	case persona.SlugAda:
		return ada.New(d.Repo)
	}
	return advisor(slug)
}

// advisor is a persona that works through the model alone.
type advisor string

func (a advisor) Slug() string            { return string(a) }
func (advisor) Playbook() engine.Playbook { return nil }
func (advisor) Backstop() engine.Backstop { return nil }
func (advisor) Prepare() engine.Prepare   { return nil }
func (advisor) Tools() []string           { return nil }
