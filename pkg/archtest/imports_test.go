package archtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/kubecrew/kubecrew/"

// deps lists the packages that the packages of dir (a module of the
// workspace) link, with their tests' when tests is set.
func deps(t *testing.T, dir string, tests bool, patterns ...string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tests {
		args = append(args, "-test")
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = filepath.Join("..", "..", dir)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr)
	}
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, mod) {
			ours = append(ours, strings.TrimSuffix(strings.Fields(p)[0], ".test"))
		}
	}
	return ours
}

func forbid(t *testing.T, who string, got []string, forbidden ...string) {
	t.Helper()
	for _, p := range got {
		for _, f := range forbidden {
			if p == mod+f || strings.HasPrefix(p, mod+f+"/") {
				t.Errorf("%s links %s (docs/ARCHITECTURE.md, Dependency rules)", who, p)
			}
		}
	}
}

// The dependency rules of docs/ARCHITECTURE.md.
func TestDependencyRules(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over every module: not in -short")
	}
	t.Run("pkg never imports services", func(t *testing.T) {
		forbid(t, "pkg", deps(t, "pkg", true, "./..."), "services")
	})
	t.Run("the core never links pkg/llm or pkg/kube", func(t *testing.T) {
		forbid(t, "the core", deps(t, "services/core", false, "./..."), "pkg/llm", "pkg/kube")
	})
	t.Run("pkg/kube and pkg/gitops never import pkg/llm", func(t *testing.T) {
		forbid(t, "pkg/kube, pkg/gitops", deps(t, "pkg", false, "./kube/...", "./gitops/..."), "pkg/llm")
	})
	t.Run("agents imports nothing of ours", func(t *testing.T) {
		for _, p := range deps(t, "agents", true, "./...") {
			if p != mod+"agents" {
				t.Errorf("agents links %s (docs/ARCHITECTURE.md, Dependency rules)", p)
			}
		}
	})
}
