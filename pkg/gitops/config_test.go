package gitops

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestForgeFromEnv(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo.git")
	if err := InitLocalRepo(dir, map[string][]byte{"a.yaml": []byte("a: 1\n")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		env     map[string]string
		want    string // type name, or error substring
		wantErr bool
	}{
		{map[string]string{}, "no GitOps repository", true},
		{map[string]string{"GITOPS_FORGE": "local", "GITOPS_REPO": dir}, "*gitops.Local", false},
		{map[string]string{"GITOPS_FORGE": "local", "GITOPS_REPO": dir, "GITOPS_BRANCH": "dev"}, "does not exist", true},
		{map[string]string{"GITOPS_FORGE": "github", "GITOPS_REPO": "acme/gitops", "GITHUB_TOKEN": "t"}, "*gitops.GitHub", false},
		{map[string]string{"GITOPS_FORGE": "GitHub", "GITOPS_REPO": "acme/gitops", "GITHUB_TOKEN": "t", "GITHUB_API_URL": "https://ghe.example/api/v3"}, "*gitops.GitHub", false},
		{map[string]string{"GITOPS_FORGE": "github", "GITOPS_REPO": "acme/gitops"}, "token is required", true},
		{map[string]string{"GITOPS_FORGE": "github", "GITOPS_REPO": "gitops", "GITHUB_TOKEN": "t"}, "owner/name", true},
		{map[string]string{"GITOPS_FORGE": "gitlab", "GITOPS_REPO": "acme/gitops"}, "want github or local", true},
		{map[string]string{"GITOPS_REPO": "acme/gitops"}, "GITOPS_FORGE is not", true},
		{map[string]string{"GITOPS_FORGE": "local"}, "needs GITOPS_REPO", true},
	}
	for _, c := range tests {
		f, err := ForgeFromEnv(func(k string) string { return c.env[k] }, nil)
		if c.wantErr {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: err %v, want %q", c.env, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		if got := typeName(f); got != c.want {
			t.Errorf("%v: %s", c.env, got)
		}
	}
	if _, err := ForgeFromEnv(func(string) string { return "" }, nil); !errors.Is(err, ErrNoForge) {
		t.Errorf("unconfigured: %v", err)
	}
}

func typeName(f Forge) string {
	switch f.(type) {
	case *Local:
		return "*gitops.Local"
	case *GitHub:
		return "*gitops.GitHub"
	}
	return "?"
}
