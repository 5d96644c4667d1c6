package gitops

import "strings"

// personaSlugs maps persona names to agent slugs (ARCHITECTURE §1): a PR
// proposed by "sol" was proposed by k8s-engineer, and "Sol" reviewing it is
// self-review.
var personaSlugs = map[string]string{
	"noor": "platform-sre",
	"sol":  "k8s-engineer",
	"vera": "code-reviewer",
	"dax":  "cicd-engineer",
	"ada":  "backend-architect",
}

// CanonicalAgent returns the comparable form of an identity: lower case,
// trimmed, without an "agent-" service prefix, persona names resolved to
// slugs. "" stays "" (an unknown identity, which every guard refuses).
func CanonicalAgent(id string) string {
	s := strings.ToLower(strings.TrimSpace(id))
	s = strings.TrimPrefix(s, "agent-")
	if slug, ok := personaSlugs[s]; ok {
		return slug
	}
	return s
}
