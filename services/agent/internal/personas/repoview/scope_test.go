package repoview

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

type repo []string

func (r repo) ListFiles(_ context.Context, dir string) ([]string, error) {
	var out []string
	for _, f := range r {
		if dir == "" || strings.HasPrefix(f, dir+"/") {
			out = append(out, f)
		}
	}
	return out, nil
}

func (repo) ReadFile(context.Context, string) ([]byte, error) {
	return nil, errors.New("not read here")
}

func TestScope(t *testing.T) {
	t.Parallel()
	r := repo{"apps/shop/Dockerfile", "apps/shop/cart.yaml", "apps/payments/api.yaml", ".github/workflows/deploy.yaml"}
	tests := []struct{ task, want string }{
		{"Review our deploy path.", ""},
		{"How should we promote image tags from staging to production?", ""},
		{"Review apps/shop please", "apps/shop"},
		{"Is apps/payments/api.yaml safe to deploy?", "apps/payments"},
		{"look at .github/workflows/", ".github/workflows"},
		{"check staging/production and then apps/shop/", "apps/shop"}, // a path with no files is not a scope
		{"see https://example.com/apps/shop", ""},
		{"../../etc/passwd", ""},
	}
	for _, tc := range tests {
		if got := Scope(context.Background(), r, tc.task); got != tc.want {
			t.Errorf("Scope(%q) = %q, want %q", tc.task, got, tc.want)
		}
	}
}

// A playbook run's status follows what the review could read: no
// repository fails, unreadable files end partial with the findings that
// were read, a full read completes.
func TestPlaybookStatus(t *testing.T) {
	t.Parallel()
	rv := Review{Tool: deployreview.APIToolName, Title: "API design review", Reads: "OpenAPI document", Run: deployreview.ReviewAPI}
	good := memRepo{"api/a.yaml": "openapi: 3.0.0\npaths:\n  /a:\n    post:\n      responses: {'200': {description: ok}}\n"}
	broken := memRepo{"api/a.yaml": good["api/a.yaml"], "api/b.yaml": unreadable}
	tests := []struct {
		name     string
		repo     memRepo
		status   string
		findings int
		errHas   string
	}{
		{"no repository", nil, api.StatusFailed, 0, "no GitOps repository is configured"},
		{"read whole", good, api.StatusCompleted, 2, ""},
		{"a file unreadable", broken, api.StatusPartial, 2, "api/b.yaml (unreadable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var repo deployreview.Repo
			if tc.repo != nil {
				repo = tc.repo
			}
			res := runPlaybook(t, Playbook(repo, rv), deployreview.APITool(tc.repo), api.RunRequest{Task: "review the API"})
			if res.Status != tc.status || len(res.Findings) != tc.findings || !strings.Contains(res.Error, tc.errHas) {
				t.Fatalf("status %s, %d findings, error %q; want %s, %d, %q", res.Status, len(res.Findings), res.Error, tc.status, tc.findings, tc.errHas)
			}
		})
	}
}

// unreadable is content memRepo refuses to read.
const unreadable = "\x00unreadable"

// memRepo is a repository in memory, listed recursively and sorted.
type memRepo map[string]string

func (m memRepo) ListFiles(_ context.Context, dir string) ([]string, error) {
	var out []string
	for p := range m {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (m memRepo) ReadFile(_ context.Context, p string) ([]byte, error) {
	if s, ok := m[p]; ok && s != unreadable {
		return []byte(s), nil
	}
	return nil, errors.New("forge: 502 Bad Gateway")
}

// runPlaybook runs pb as Ada's deterministic run on an engine without a
// model and returns the result.
func runPlaybook(t *testing.T, pb engine.Playbook, tool tools.Tool, req api.RunRequest) api.RunResult {
	t.Helper()
	return runPlaybookOn(t, store.NewMemory(nil), pb, tool, req)
}

func runPlaybookOn(t *testing.T, st store.AgentStore, pb engine.Playbook, tool tools.Tool, req api.RunRequest) api.RunResult {
	t.Helper()
	p, err := persona.Load(agents.FS, persona.NameAda)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(tool)
	set, err := reg.Resolve(reg.Names())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Agent: p.Info, Persona: func() (*persona.Persona, error) { return p, nil },
		Tools: set, Playbook: pb, Store: st, RunTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run, err := eng.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
