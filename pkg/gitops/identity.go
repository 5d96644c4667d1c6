package gitops

import (
	"strings"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// CanonicalAgent returns the comparable form of an identity: a persona name
// or slug (with or without the "agent-" service prefix) becomes the slug, so
// "Sol", "sol", "agent-k8s-engineer" and "k8s-engineer" are one agent and
// "Sol" reviewing k8s-engineer's PR is self-review. Other identities (a
// GitHub login, a person) are lower-cased and trimmed. "" stays "": an
// unknown identity, which every guard refuses.
func CanonicalAgent(id string) string {
	s := strings.ToLower(strings.TrimSpace(id))
	if p, ok := persona.Lookup(strings.TrimPrefix(s, "agent-")); ok {
		return p.Slug
	}
	return s
}
