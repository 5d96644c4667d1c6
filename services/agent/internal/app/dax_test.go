package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
)

// plantedRepo is a local GitOps repository holding the deploy-path
// review's planted testdata (pkg/deployreview/testdata/repo).
func plantedRepo(t *testing.T) string {
	t.Helper()
	return localRepo(t, "repo")
}

// localRepo is a local GitOps repository holding one of pkg/deployreview's
// testdata repositories.
func localRepo(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join("..", "..", "..", "..", "pkg", "deployreview", "testdata", dir)
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "gitops")
	if err := gitops.InitLocalRepo(repo, files); err != nil {
		t.Fatal(err)
	}
	return repo
}

func runTask(t *testing.T, url, task string) api.RunResult {
	t.Helper()
	body, _ := json.Marshal(api.RunRequest{Task: task})
	code, b := do(t, "POST", url+"/run", string(body))
	if code != 200 {
		t.Fatalf("POST /run = %d %s", code, b)
	}
	var res api.RunResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDaxReviewsTheDeployPath: Dax without a model answers /run with the
// deploy-path review of the GitOps repository — findings with rule,
// file:line and fix; a task naming a directory reviews only that one —
// and a Dax without a repository fails the run, saying what to configure.
func TestDaxReviewsTheDeployPath(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "dax", "GITOPS_FORGE": "local", "GITOPS_REPO": plantedRepo(t)})
	has := func(res api.RunResult, kind, name, reason string) bool {
		for _, f := range res.Findings {
			if f.Kind == kind && f.Name == name && f.Reason == reason && f.Remediation != "" {
				return true
			}
		}
		return false
	}
	all := runTask(t, a.url, "Review our deploy path, please.")
	if all.Status != api.StatusCompleted || all.Verdict != "issues_found" || len(all.Findings) != 17 {
		t.Fatalf("whole repository: status %s verdict %s, %d findings; answer:\n%s", all.Status, all.Verdict, len(all.Findings), all.Answer)
	}
	for _, w := range [][3]string{{"Workflow", ".github/workflows/deploy.yaml:18", "CI002"}, {"Dockerfile", "apps/shop/Dockerfile:7", "DF002"},
		{"Deployment", "apps/shop/cart.yaml:15", "KM009"}, {"Deployment", "apps/payments/api.yaml:33", "KM007"}} {
		if !has(all, w[0], w[1], w[2]) {
			t.Errorf("whole repository: no %s %s %s", w[0], w[2], w[1])
		}
	}
	if !strings.Contains(all.Answer, "rules off (.kubecrew/review.yaml): DF006") {
		t.Errorf("answer does not name the rules switched off:\n%s", all.Answer)
	}

	one := runTask(t, a.url, "Is apps/payments/api.yaml safe to deploy?")
	if len(one.Findings) == 0 || !has(one, "Deployment", "apps/payments/api.yaml:27", "KM005") {
		t.Fatalf("apps/payments: %+v", one.Findings)
	}
	for _, f := range one.Findings {
		if !strings.HasPrefix(f.Name, "apps/payments/") {
			t.Errorf("a review of apps/payments reported %s", f.Name)
		}
	}

	none := start(t, map[string]string{"AGENT_PERSONA": "dax"})
	res := runTask(t, none.url, "Review our deploy path, please.")
	if res.Status != api.StatusFailed || !strings.Contains(res.Error, "GITOPS_FORGE") {
		t.Fatalf("without a repository: status %s error %q answer %q; want failed naming GITOPS_FORGE", res.Status, res.Error, res.Answer)
	}
}

// TestAdaReviewsTheAPIDesign: Ada without a model answers /run with the
// API design review — OpenAPI and Service findings with rule, file:line and
// fix — and her weekly pulse task reports only what changed since the
// last one: everything at first, then nothing.
func TestAdaReviewsTheAPIDesign(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "ada", "GITOPS_FORGE": "local", "GITOPS_REPO": localRepo(t, "apirepo")})
	all := runTask(t, a.url, "Is our orders API well designed?")
	if all.Status != api.StatusCompleted || all.Verdict != "issues_found" || len(all.Findings) != 8 {
		t.Fatalf("whole repository: status %s verdict %s, %d findings; answer:\n%s", all.Status, all.Verdict, len(all.Findings), all.Answer)
	}
	want := map[string]bool{"OA004 api/orders.openapi.yaml:35": false, "OA002 api/orders.openapi.yaml:7": false, "SV001 apps/orders/orders.yaml:19": false}
	for _, f := range all.Findings {
		if _, ok := want[f.Reason+" "+f.Name]; ok && f.Remediation != "" {
			want[f.Reason+" "+f.Name] = true
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("no finding %s", k)
		}
	}
	pulse := func() map[string]any {
		code, b := do(t, "POST", a.url+"/pulse?task=0", "")
		if code != 200 {
			t.Fatalf("POST /pulse?task=0 = %d %s", code, b)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first, second := pulse(), pulse()
	findings := func(m map[string]any) int {
		res, _ := m["result"].(map[string]any)
		fs, _ := res["findings"].([]any)
		return len(fs)
	}
	if findings(first) != 8 || findings(second) != 0 || second["outcome"] != "unchanged" {
		t.Fatalf("weekly review: first %d findings, second %d findings outcome %v\n%v", findings(first), findings(second), second["outcome"], second)
	}
}
