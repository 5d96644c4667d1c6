package app_test

import (
	"encoding/json"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// A manual that names a tool the agent lacks teaches it to attempt work it
// cannot do. Every tool name any persona file mentions must be in
// that persona's resolved tool list — checked against the binary's real
// registry, not a copy of the names.
func TestManualsNameOnlyToolsTheAgentHas(t *testing.T) {
	for _, info := range persona.All {
		t.Run(info.Name, func(t *testing.T) {
			a := start(t, map[string]string{"AGENT_PERSONA": info.Name})
			universe := a.app.Registry.Names()
			if len(universe) != 27 {
				t.Fatalf("the registry knows only %d tools: %v", len(universe), universe)
			}
			_, body := do(t, "GET", a.url+"/info", "")
			var in struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(body, &in); err != nil {
				t.Fatal(err)
			}
			has := map[string]bool{}
			for _, tl := range in.Tools {
				has[tl.Name] = true
			}
			for _, doc := range a.app.Config.Persona.Documents() {
				for _, name := range persona.MentionedTools(doc.Text, universe) {
					if !has[name] {
						t.Errorf("%s names %s, which %s does not have", doc.Path, name, info.Name)
					}
				}
			}
			for _, name := range a.app.Config.Persona.DeclaredTools() {
				if !has[name] {
					t.Errorf("AGENT_TOOLS names %s but /info does not list it", name)
				}
			}
		})
	}
}
