// Package persona names the five kubecrew personas and loads a persona's
// files (AGENTS.md, Identity.md, PULSE.md, agent.env, skills/<name>/SKILL.md)
// from any fs.FS whose root holds one directory per persona name — the
// embedded agents.FS or os.DirFS(PERSONA_DIR). Every validation error names
// the file and, where there is one, the line.
package persona

import (
	"errors"
	"fmt"
	"strings"
)

// Info names one persona: Name is the alias people and models use ("noor"),
// Slug the service identity ("platform-sre", service agent-platform-sre).
type Info struct {
	Name string `json:"persona"`
	Slug string `json:"slug"`
}

// The personas' slugs: the one spelling of each service identity. Code that
// names a persona uses these, never the string.
const (
	SlugNoor = "platform-sre"
	SlugSol  = "k8s-engineer"
	SlugVera = "code-reviewer"
	SlugDax  = "cicd-engineer"
	SlugAda  = "backend-architect"
)

// The personas' names (the directory under agents/, the alias people use).
const (
	NameNoor = "noor"
	NameSol  = "sol"
	NameVera = "vera"
	NameDax  = "dax"
	NameAda  = "ada"
)

// Noor, Sol, Vera, Dax and Ada are the five personas.
var (
	Noor = Info{Name: NameNoor, Slug: SlugNoor}
	Sol  = Info{Name: NameSol, Slug: SlugSol}
	Vera = Info{Name: NameVera, Slug: SlugVera}
	Dax  = Info{Name: NameDax, Slug: SlugDax}
	Ada  = Info{Name: NameAda, Slug: SlugAda}
)

// All is the five personas, in the fleet's order.
var All = []Info{Noor, Sol, Vera, Dax, Ada}

// ErrUnknownPersona is wrapped by every "no such persona" error.
var ErrUnknownPersona = errors.New("unknown persona")

// Lookup resolves a persona by name or slug, ignoring case and surrounding
// space: "Sol", "sol" and "k8s-engineer" are the same persona.
func Lookup(nameOrSlug string) (Info, bool) {
	s := strings.ToLower(strings.TrimSpace(nameOrSlug))
	if s == "" {
		return Info{}, false
	}
	for _, p := range All {
		if s == p.Name || s == p.Slug {
			return p, true
		}
	}
	return Info{}, false
}

// Resolve is Lookup with an error that lists the valid choices.
func Resolve(nameOrSlug string) (Info, error) {
	if p, ok := Lookup(nameOrSlug); ok {
		return p, nil
	}
	return Info{}, fmt.Errorf("%w %q: valid personas are %s", ErrUnknownPersona, nameOrSlug, validList())
}

func validList() string {
	parts := make([]string, len(All))
	for i, p := range All {
		parts[i] = p.Name + " (" + p.Slug + ")"
	}
	return strings.Join(parts, ", ")
}
