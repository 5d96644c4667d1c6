package config

import "strings"

// Agent is one persona of the fleet: its slug (the service name is
// agent-{slug}) and its persona name, which is an alias for the slug.
type Agent struct {
	Slug    string `json:"slug"`
	Persona string `json:"persona"`
}

// Fleet is every agent the core knows, in display order.
var Fleet = []Agent{
	{Slug: "platform-sre", Persona: "noor"},
	{Slug: "k8s-engineer", Persona: "sol"},
	{Slug: "code-reviewer", Persona: "vera"},
	{Slug: "cicd-engineer", Persona: "dax"},
	{Slug: "backend-architect", Persona: "ada"},
}

// DefaultAlertAgent triages alerts: Noor, read-only. Alerts never go straight
// to the actor (seed §17).
const DefaultAlertAgent = "platform-sre"

// ResolveAgent maps a slug or persona name (any case, surrounding space
// ignored) to the slug. ok is false for anything else.
func ResolveAgent(name string) (slug string, ok bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "agent-")
	for _, a := range Fleet {
		if n == a.Slug || n == a.Persona {
			return a.Slug, true
		}
	}
	return "", false
}

// PersonaOf returns the persona name of slug ("" when unknown).
func PersonaOf(slug string) string {
	for _, a := range Fleet {
		if a.Slug == slug {
			return a.Persona
		}
	}
	return ""
}
