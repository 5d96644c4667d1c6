package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// GitHubApp names a GitHub App installation to act as: the App's id, the
// installation's id on the repository's owner, and the App's private key
// (a PEM file). Each agent may have its own (docs/MANUAL.md, "Give Vera her own
// forge identity").
type GitHubApp struct {
	AppID, InstallationID int64
	PrivateKeyFile        string
}

// NewGitHubAppForge returns a forge for owner/repo acting as a GitHub App
// installation. Installation tokens are minted and renewed by
// ghinstallation (a JWT signed with the App's key, POST
// /app/installations/{id}/access_tokens); the account it acts as is the
// App's bot, "<app-slug>[bot]", read once from GET /app.
func NewGitHubAppForge(owner, repo, base string, app GitHubApp, apiURL string, httpClient *http.Client) (*GitHub, error) {
	if app.AppID <= 0 || app.InstallationID <= 0 || strings.TrimSpace(app.PrivateKeyFile) == "" {
		return nil, errors.New("github forge: a GitHub App needs GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID and GITHUB_APP_PRIVATE_KEY_FILE")
	}
	if apiURL != "" {
		if err := validAPIURL(apiURL); err != nil {
			return nil, err
		}
	}
	base0 := http.DefaultTransport
	var hc http.Client
	if httpClient != nil {
		hc = *httpClient
		if httpClient.Transport != nil {
			base0 = httpClient.Transport
		}
	}
	atr, err := ghinstallation.NewAppsTransportKeyFromFile(base0, app.AppID, app.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("github forge: GITHUB_APP_PRIVATE_KEY_FILE=%s: %w", app.PrivateKeyFile, err)
	}
	if apiURL != "" {
		atr.BaseURL = strings.TrimRight(apiURL, "/")
	}
	itr := ghinstallation.NewFromAppsTransport(atr, app.InstallationID)
	installation, apps := hc, hc
	installation.Transport, apps.Transport = itr, atr
	c, err := githubClient(apiURL, &installation)
	if err != nil {
		return nil, err
	}
	ac, err := githubClient(apiURL, &apps)
	if err != nil {
		return nil, err
	}
	return newGitHub(owner, repo, base, c, func(ctx context.Context) (string, error) {
		a, resp, err := ac.Apps.Get(ctx, "")
		if err != nil {
			return "", ghErr("asking which App these credentials are (GET /app)", resp, err)
		}
		if a.GetSlug() == "" {
			return "", errors.New("github: GET /app named no slug")
		}
		return a.GetSlug() + "[bot]", nil
	})
}
