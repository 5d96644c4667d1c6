package config

import (
	"strings"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// Agent is one persona of the fleet: its slug (the service name is
// agent-{slug}) and its persona name, which is an alias for the slug.
type Agent struct {
	Slug    string
	Persona string
}

// Fleet is every agent the core knows, in display order.
var Fleet = func() []Agent {
	out := make([]Agent, len(persona.All))
	for i, p := range persona.All {
		out[i] = Agent{Slug: p.Slug, Persona: p.Name}
	}
	return out
}()

// DefaultAlertAgent triages alerts: Noor, read-only. Alerts never go straight
// to the actor.
const DefaultAlertAgent = persona.SlugNoor

// ActorAgent is Sol, who acts on Noor's delegations — never on raw alerts.
const ActorAgent = persona.SlugSol

// ForgeAgents hold forge identities: Sol opens the pull requests, Vera
// reviews and merges them. The core asks them what is open on the forge
// (GET /api/v1/prs).
var ForgeAgents = []string{persona.SlugSol, persona.SlugVera}

// ResolveAgent maps a slug, persona name or service name (agent-{slug}),
// any case, to the slug. ok is false for anything else.
func ResolveAgent(name string) (slug string, ok bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "agent-")
	p, ok := persona.Lookup(n)
	return p.Slug, ok
}

// PersonaOf returns the persona name of slug ("" when unknown).
func PersonaOf(slug string) string {
	if p, ok := persona.Lookup(slug); ok {
		return p.Name
	}
	return ""
}
