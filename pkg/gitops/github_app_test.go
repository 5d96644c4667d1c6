package gitops

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveApp answers the App endpoints with their documented shapes: GET /app
// and POST /app/installations/{id}/access_tokens, both only with an App JWT
// (RS256, iss = the App id).
func (f *fakeGitHub) serveApp(w http.ResponseWriter, r *http.Request) {
	jwt := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	parts := strings.Split(jwt, ".")
	var head struct{ Alg string }
	var claims struct{ Iss string }
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[min(1, len(parts)-1)])
	if len(parts) != 3 || err1 != nil || err2 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil || head.Alg != "RS256" || claims.Iss != "4242" {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "A JSON web token could not be decoded", "status": "401"})
		return
	}
	var id int64
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/app":
		writeJSON(w, http.StatusOK, map[string]any{"id": 4242, "slug": f.apps[42], "name": "Kubecrew Vera", "owner": map[string]any{"login": f.owner}})
	case r.Method == http.MethodPost && fmt.Sprint(sscan(r.URL.Path, "/app/installations/%d/access_tokens", &id)) == "1" && f.apps[id] != "":
		token := fmt.Sprintf("ghs_installation_%d", id)
		f.users[token] = f.apps[id] + "[bot]"
		writeJSON(w, http.StatusCreated, map[string]any{"token": token, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			"permissions": map[string]string{"contents": "write", "pull_requests": "write"}, "repository_selection": "selected"})
	default:
		ghError(w, http.StatusNotFound, "Not Found")
	}
}

func sscan(s, format string, id *int64) int {
	n, _ := fmt.Sscanf(s, format, id)
	return n
}

func writeAppKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "github-app.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Vera as a GitHub App installation: her own identity ("<slug>[bot]",
// from GET /app), so her approval is taken and merge_if_trivial merges.
func TestGitHubAppIdentity(t *testing.T) {
	t.Parallel()
	key := writeAppKey(t)
	files := map[string]string{}
	for k, v := range e2eRepo(t) {
		files[k] = string(v)
	}
	clk := &fakeClock{t: t0}
	fake := newFakeGitHub(t, files, clk.Now)
	fake.apps = map[int64]string{42: "kubecrew-vera"}
	solF, err := NewGitHub("acme", "gitops", "main", "sol-token", fake.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	veraF, err := NewForge(ForgeSettings{Kind: "github", Repo: "acme/gitops", GitHubAPIURL: fake.srv.URL,
		GitHubApp: GitHubApp{AppID: 4242, InstallationID: 42, PrivateKeyFile: key}}, &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: clk.Now}
	mustContain(t, newAgent(t, solF, "k8s-engineer", opts).call(ToolBumpWorkloadMemory, bumpArgsFor(oomFinding)), "Opened PR #1")
	vera := newAgent(t, veraF, "code-reviewer", opts)
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": 1, "verdict": "approve", "body": "All five checks pass."}), ": approve.")
	mustContain(t, vera.call(ToolMergeIfTrivial, map[string]any{"number": 1}), "MERGED PR #1")
	if acct, err := veraF.(AccountForge).Account(t.Context()); err != nil || acct != "kubecrew-vera[bot]" {
		t.Errorf("Account = %q, %v", acct, err)
	}
	fake.mu.Lock()
	rv := fake.prs[0].Reviews
	fake.mu.Unlock()
	if len(rv) != 1 || rv[0].User != "kubecrew-vera[bot]" || rv[0].State != "APPROVED" {
		t.Errorf("reviews %+v", rv)
	}
	calls := fake.Calls()
	if countCalls(calls, "GET /app") != 1 || countCalls(calls, "POST /app/installations/42/access_tokens") != 1 {
		t.Errorf("App calls (one identity read, one token minted and reused): %q", calls)
	}

	for _, tc := range []struct {
		name string
		s    ForgeSettings
		want string
	}{
		{"token and App", ForgeSettings{Kind: "github", Repo: "acme/gitops", GitHubToken: "t", GitHubApp: GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: key}}, "give this agent one identity"},
		{"App without its key", ForgeSettings{Kind: "github", Repo: "acme/gitops", GitHubApp: GitHubApp{AppID: 1, InstallationID: 2}}, "GITHUB_APP_PRIVATE_KEY_FILE"},
		{"key file missing", ForgeSettings{Kind: "github", Repo: "acme/gitops", GitHubApp: GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: "/nonexistent/app.pem"}}, "GITHUB_APP_PRIVATE_KEY_FILE=/nonexistent/app.pem"},
	} {
		if _, err := NewForge(tc.s, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	env := map[string]string{"GITOPS_FORGE": "github", "GITOPS_REPO": "acme/gitops", "GITHUB_APP_ID": "x1"}
	if _, err := ForgeFromEnv(func(k string) string { return env[k] }, nil); err == nil || !strings.Contains(err.Error(), `GITHUB_APP_ID="x1"`) {
		t.Errorf("bad GITHUB_APP_ID: %v", err)
	}
}
