package sandbox

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/persona"
)

// PlantedDir holds the GitOps repository's planted deploy-path and API
// design mistakes (Dockerfile, CI workflow, OpenAPI document, Service,
// review config), copied next to the fixtures.
const PlantedDir = "hack/fixtures/gitops"

// PlantedFiles reads PlantedDir under root as repository path → content.
func PlantedFiles(root string) (map[string][]byte, error) {
	dir := filepath.Join(root, PlantedDir)
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	return out, err
}

// initRepo creates the run's GitOps repository: the fixtures' manifest at
// manifestPath and the planted files.
func initRepo(o Options, manifestPath string) (string, error) {
	manifests, err := os.ReadFile(filepath.Join(o.Root, kubetest.FixtureManifest))
	if err != nil {
		return "", err
	}
	files, err := PlantedFiles(o.Root)
	if err != nil {
		return "", err
	}
	files[manifestPath] = manifests
	repo := filepath.Join(o.RunDir, "gitops.git")
	if err := gitops.InitLocalRepo(repo, files); err != nil {
		return "", fmt.Errorf("creating the GitOps repository: %w", err)
	}
	return repo, nil
}

// showReview asks Dax for the deploy-path review and Ada for the API
// design review (POST /run, no model needed) and prints their first
// findings: what `make run` shows of them.
func showReview(ctx context.Context, out io.Writer, f *Fleet) {
	showOne(ctx, out, f, persona.NameDax, "Dax", "deploy-path review", "Review the deploy path of the GitOps repository")
	showOne(ctx, out, f, persona.NameAda, "Ada", "API design review", "Review the API design in the GitOps repository")
}

func showOne(ctx context.Context, out io.Writer, f *Fleet, who, display, what, task string) {
	p := func(format string, args ...any) { fmt.Fprintf(out, "[kubecrew] "+format+"\n", args...) }
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var res api.RunResult
	code, err := PostJSON(ctx, f.URL(who)+"/run", api.RunRequest{Task: task}, &res)
	if err != nil || code != 200 {
		p("%s's %s did not answer (%d, %v)", display, what, code, err)
		return
	}
	p("%s's %s of the GitOps repository: %s, verdict %s, %d findings", display, what, res.Status, res.Verdict, len(res.Findings))
	for i, fd := range res.Findings {
		if i == 6 {
			fmt.Fprintf(out, "    … %d more (curl -s %s/runs/%s | jq '.findings[] | \"\\(.severity) \\(.reason) \\(.name)\"')\n",
				len(res.Findings)-6, f.URL(who), res.RunID)
			break
		}
		fmt.Fprintf(out, "    %s %s %s — %s\n", fd.Severity, fd.Reason, fd.Name, strings.TrimSpace(fd.Remediation))
	}
}
