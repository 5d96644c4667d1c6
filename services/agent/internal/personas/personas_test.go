package personas

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/a2aclient"
	"github.com/kubecrew/kubecrew/services/agent/internal/builtin"
)

// Every persona has a home whose slug is its own, and every tool its code
// calls by name is granted by its shipped agent.env or given to all.
func TestEveryPersonaHasAHome(t *testing.T) {
	t.Parallel()
	everyone := append(append([]string{}, builtin.Names...), a2aclient.ToolAsk, a2aclient.ToolNotify, a2aclient.ToolDelegate)
	for _, info := range persona.All {
		t.Run(info.Name, func(t *testing.T) {
			t.Parallel()
			code := For(info.Slug, Deps{})
			if code.Slug() != info.Slug {
				t.Fatalf("For(%q).Slug() = %q", info.Slug, code.Slug())
			}
			p, err := persona.Load(agents.FS, info.Name)
			if err != nil {
				t.Fatal(err)
			}
			var granted []string
			for _, e := range p.Env {
				if e.Key == "AGENT_TOOLS" {
					granted = strings.Split(e.Value, ",")
				}
			}
			for _, tool := range code.Tools() {
				if !slices.Contains(granted, tool) && !slices.Contains(everyone, tool) {
					t.Errorf("%s's code calls %s, which agents/%s/agent.env does not grant", info.Name, tool, info.Name)
				}
			}
		})
	}
}

// Without what they need, the personas have no code to run: no cluster, no
// sweep; no GitOps repository, no review pass. Dax and Ada are the
// exception: their review without a repository is a run that fails saying
// what to set (docs/MANUAL.md, "Deploy-path review", "API design review"),
// never a "completed" non-answer.
func TestUnconfiguredPersonasHaveNoPlaybook(t *testing.T) {
	t.Parallel()
	for _, slug := range []string{persona.SlugNoor, persona.SlugVera} {
		if c := For(slug, Deps{}); c.Playbook() != nil || c.Backstop() != nil {
			t.Errorf("%s has code without its dependencies", slug)
		}
	}
	if For(persona.SlugSol, Deps{}).Playbook() == nil {
		t.Error("Sol acts through his tools and needs no dependency of his own")
	}
	for _, slug := range []string{persona.SlugDax, persona.SlugAda} {
		if For(slug, Deps{}).Playbook() == nil {
			t.Errorf("%s without a repository must fail the run, not fall back to 'no playbook'", slug)
		}
	}
}
