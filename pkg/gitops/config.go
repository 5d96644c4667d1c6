package gitops

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrNoForge is returned by ForgeFromEnv when no GitOps repository is
// configured (GITOPS_FORGE and GITOPS_REPO unset): an agent whose tools need
// one must not start.
var ErrNoForge = errors.New("no GitOps repository configured (GITOPS_FORGE, GITOPS_REPO)")

// ForgeFromEnv builds the forge named by the agent environment
// (ARCHITECTURE §10): GITOPS_FORGE github|local, GITOPS_REPO (owner/name or
// a local repository path), GITOPS_BRANCH (default main), GITHUB_TOKEN,
// GITHUB_API_URL. getenv is os.Getenv in production.
func ForgeFromEnv(getenv func(string) string, httpClient *http.Client) (Forge, error) {
	kind := strings.ToLower(strings.TrimSpace(getenv("GITOPS_FORGE")))
	repo := strings.TrimSpace(getenv("GITOPS_REPO"))
	branch := strings.TrimSpace(getenv("GITOPS_BRANCH"))
	if branch == "" {
		branch = "main"
	}
	if kind == "" && repo == "" {
		return nil, ErrNoForge
	}
	if repo == "" {
		return nil, fmt.Errorf("GITOPS_FORGE=%s needs GITOPS_REPO", kind)
	}
	switch kind {
	case "local":
		return NewLocal(repo, branch)
	case "github":
		owner, name, ok := strings.Cut(repo, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("GITOPS_REPO=%q: want owner/name for the github forge", repo)
		}
		return NewGitHub(owner, name, branch, getenv("GITHUB_TOKEN"), strings.TrimSpace(getenv("GITHUB_API_URL")), httpClient)
	case "":
		return nil, errors.New("GITOPS_REPO is set but GITOPS_FORGE is not: set it to github or local")
	}
	return nil, fmt.Errorf("GITOPS_FORGE=%q: want github or local", kind)
}
