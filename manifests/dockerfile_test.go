package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfile checks the repository's own Dockerfile: Docker cannot run
// here, so this is what stands between a renamed directory and a broken image.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	probs, bins, err := CheckDockerfile(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	for _, b := range []string{"/usr/local/bin/agent", "/usr/local/bin/core"} {
		if !bins[b] {
			t.Errorf("the image does not ship %s (ships %s)", b, keys(bins))
		}
	}
}

// fakeRepo writes a minimal repository shaped like ours, with the real
// Dockerfile and .dockerignore, then applies edits (path → content; "" deletes).
func fakeRepo(t *testing.T, edits map[string]string) string {
	t.Helper()
	realDF, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	realIgn, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Dockerfile":                         string(realDF),
		".dockerignore":                      string(realIgn),
		"go.work":                            "go 1.26.0\n\nuse (\n\t./agents\n\t./pkg\n\t./services/agent\n\t./services/core\n)\n",
		"go.work.sum":                        "",
		"pkg/go.mod":                         "module github.com/kubecrew/kubecrew/pkg\n",
		"pkg/go.sum":                         "",
		"pkg/x/x.go":                         "package x\n",
		"agents/go.mod":                      "module github.com/kubecrew/kubecrew/agents\n",
		"agents/embed.go":                    "package agents\n",
		"agents/noor/AGENTS.md":              "# Noor\n",
		"agents/noor/skills/triage/SKILL.md": "# triage\n",
		"services/agent/go.mod":              "module github.com/kubecrew/kubecrew/services/agent\n",
		"services/agent/main.go":             "package main\n",
		"pkg/buildinfo/buildinfo.go":         "package buildinfo\n\n// Version is set at build time.\nvar Version = \"dev\"\n",
		"services/core/go.mod":               "module github.com/kubecrew/kubecrew/services/core\n",
		"services/core/go.sum":               "",
		"services/core/main.go":              "package main\n",
	}
	for k, v := range edits {
		if v == "" {
			delete(files, k)
		} else {
			files[k] = v
		}
	}
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCheckDockerfileCatches(t *testing.T) {
	t.Parallel()
	realDF, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(realDF)
	replace := func(old, new string) string {
		t.Helper()
		if !strings.Contains(df, old) {
			t.Fatalf("the Dockerfile no longer contains %q; update this test", old)
		}
		return strings.Replace(df, old, new, 1)
	}
	cases := []struct {
		name  string
		edits map[string]string
		want  string // "" = no problem expected
	}{
		{"the real Dockerfile on a repository shaped like ours", nil, ""},
		{"a module directory renamed", map[string]string{
			"services/core/go.mod": "", "services/core/main.go": "", "services/core/go.sum": "",
			"services/hub/go.mod": "module x\n", "services/hub/main.go": "package main\n",
			"go.work": "go 1.26.0\n\nuse (\n\t./agents\n\t./pkg\n\t./services/agent\n\t./services/hub\n)\n",
		}, "COPY services/core/go.mod: not in the repository"},
		{"a new module not copied", map[string]string{
			"tools/go.mod": "module x\n",
			"go.work":      "go 1.26.0\n\nuse (\n\t./agents\n\t./pkg\n\t./services/agent\n\t./services/core\n\t./tools\n)\n",
		}, "module tools (go.work) is not copied"},
		{"persona markdown ignored", map[string]string{".dockerignore": "*.md\n**/*.md\n"}, ".dockerignore excludes agents/noor/AGENTS.md"},
		{"skills ignored", map[string]string{".dockerignore": "**/skills\n"}, ".dockerignore excludes agents/noor/skills/triage/SKILL.md"},
		{"a copied tree ignored", map[string]string{".dockerignore": "services\n"}, "COPY services/: excluded by .dockerignore"},
		{"an exception re-includes", map[string]string{".dockerignore": "**/*.md\n!agents\n"}, ""},
		{"the builder's Go behind go.work", map[string]string{"Dockerfile": replace("ARG GO_VERSION=1.26", "ARG GO_VERSION=1.25")}, "builder Go \"1.25\", go.work wants go 1.26"},
		{"a build directory without main", map[string]string{"services/agent/main.go": "", "services/agent/agent.go": "package main\n"}, "go build in services/agent: no main.go"},
		{"the version variable moved", map[string]string{"pkg/buildinfo/buildinfo.go": "package buildinfo\n"}, "no `var Version` in pkg/buildinfo"},
		{"root user", map[string]string{"Dockerfile": replace("USER 65532:65532", "USER root")}, "non-root USER"},
		{"entrypoint not shipped", map[string]string{"Dockerfile": replace(`ENTRYPOINT ["/usr/local/bin/agent"]`, `ENTRYPOINT ["/app/agent"]`)}, "ENTRYPOINT [\"/app/agent\"] is not a binary the image ships"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			probs, _, err := CheckDockerfile(fakeRepo(t, tc.edits))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(probs) > 0 {
					t.Errorf("want no problems, got %q", probs)
				}
				return
			}
			for _, p := range probs {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Errorf("want a problem containing %q, got %q", tc.want, probs)
		})
	}
}

func TestDockerIgnore(t *testing.T) {
	t.Parallel()
	ign, err := ParseDockerIgnore([]byte("# c\n.git\nbin\n**/*.test\n/tmp\nhack\n!hack/keep.sh\n"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		".git":                   true,
		".git/HEAD":              true,
		"bin/agent":              true,
		"pkg/kube/kube.test":     true,
		"x.test":                 true,
		"tmp/a":                  true,
		"hack/run.sh":            true,
		"hack/keep.sh":           false,
		"pkg/bin.go":             false,
		"agents/noor/AGENTS.md":  false,
		"services/agent/main.go": false,
	} {
		if got := ign.Excluded(path); got != want {
			t.Errorf("Excluded(%q) = %v, want %v", path, got, want)
		}
	}
	if _, err := ParseDockerIgnore([]byte("a/**/b\n")); err == nil {
		t.Error("a mid-path ** is not supported and must be refused, not misread")
	}
}

func TestParseDockerfile(t *testing.T) {
	t.Parallel()
	ins, err := ParseDockerfile([]byte("# syntax=docker/dockerfile:1\nARG A=1\nFROM x AS b\nRUN a \\\n  # note\n  && b\nCOPY --from=b /o/a /o/b /bin/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 4 || ins[2].Cmd != "RUN" || ins[2].Args != "a  && b" || ins[2].Line != 4 {
		t.Fatalf("got %+v", ins)
	}
	cps, err := Copies(ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 1 || cps[0].From != "b" || len(cps[0].Sources) != 2 || cps[0].Dest != "/bin/" {
		t.Fatalf("got %+v", cps)
	}
	if _, err := ParseDockerfile([]byte("FROM x\nRUN a \\\n")); err == nil {
		t.Error("a trailing continuation must be an error")
	}
}
