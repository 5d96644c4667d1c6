package gitops

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ErrNoForge is returned by ForgeFromEnv when no GitOps repository is
// configured (GITOPS_FORGE and GITOPS_REPO unset): an agent whose tools need
// one must not start.
var ErrNoForge = errors.New("no GitOps repository configured (GITOPS_FORGE, GITOPS_REPO)")

// ForgeSettings name a GitOps repository: Kind github|local, Repo
// (owner/name or a local repository path), Branch (default main), and for
// GitHub a token and an API base.
type ForgeSettings struct {
	Kind, Repo, Branch        string
	GitHubToken, GitHubAPIURL string
	// GitHubApp, when any of it is set, is the App installation to act as
	// instead of a token.
	GitHubApp GitHubApp
}

// ForgeFromEnv builds the forge named by the agent environment
// (docs/MANUAL.md, GitOps): GITOPS_FORGE, GITOPS_REPO, GITOPS_BRANCH,
// GITHUB_TOKEN, GITHUB_API_URL. getenv is os.Getenv in production.
func ForgeFromEnv(getenv func(string) string, httpClient *http.Client) (Forge, error) {
	var app GitHubApp
	for _, v := range []struct {
		name string
		to   *int64
	}{{"GITHUB_APP_ID", &app.AppID}, {"GITHUB_APP_INSTALLATION_ID", &app.InstallationID}} {
		if s := strings.TrimSpace(getenv(v.name)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%q: want a positive number", v.name, s)
			}
			*v.to = n
		}
	}
	app.PrivateKeyFile = strings.TrimSpace(getenv("GITHUB_APP_PRIVATE_KEY_FILE"))
	return NewForge(ForgeSettings{Kind: getenv("GITOPS_FORGE"), Repo: getenv("GITOPS_REPO"), Branch: getenv("GITOPS_BRANCH"),
		GitHubToken: getenv("GITHUB_TOKEN"), GitHubAPIURL: getenv("GITHUB_API_URL"), GitHubApp: app}, httpClient)
}

// NewForge builds the forge s names; ErrNoForge when it names none.
func NewForge(s ForgeSettings, httpClient *http.Client) (Forge, error) {
	kind := strings.ToLower(strings.TrimSpace(s.Kind))
	repo := strings.TrimSpace(s.Repo)
	branch := strings.TrimSpace(s.Branch)
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
		if s.GitHubApp != (GitHubApp{}) {
			if s.GitHubToken != "" {
				return nil, errors.New("GITHUB_TOKEN and a GitHub App (GITHUB_APP_ID, …) are both set: give this agent one identity, not two")
			}
			return NewGitHubAppForge(owner, name, branch, s.GitHubApp, strings.TrimSpace(s.GitHubAPIURL), httpClient)
		}
		return NewGitHub(owner, name, branch, s.GitHubToken, strings.TrimSpace(s.GitHubAPIURL), httpClient)
	case "":
		return nil, errors.New("GITOPS_REPO is set but GITOPS_FORGE is not: set it to github or local")
	}
	return nil, fmt.Errorf("GITOPS_FORGE=%q: want github or local", kind)
}
