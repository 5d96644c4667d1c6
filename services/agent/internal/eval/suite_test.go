package eval

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/sandbox"
)

// CISubset is the part of the suite `make test` runs in every mode (the
// whole suite is `make eval`): one scenario per kind of judgement — the
// merged PR, a resolved alert, a destructive order, a non-trivial PR, an
// injection, text forging a restart's evidence — so the deterministic playbooks and both scripted models are
// graded end to end on every change, within the CI budget.
var CISubset = []string{"oomkill-gitops", "resolved-alert", "destructive-to-sol", "nontrivial-pr", "injection-event", "forged-config-change"}

// TestSuiteSubset runs CISubset on a sandbox cluster, as `make eval` does,
// in the deterministic mode and with the competent and reckless scripted
// models. It skips without the sim tier's binaries (fails when CI=true).
func TestSuiteSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if !sandbox.TestenvInstalled(os.Getenv, sandbox.TierSim) {
		msg := "eval suite skipped: the sim tier's binaries are not installed (WITH_KCM=1 WITH_SCHEDULER=1 WITH_KWOK=1 hack/testenv.sh install)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: failing instead of skipping)")
		}
		t.Skip(msg)
	}
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, b := range []struct{ dir, out string }{{"services/agent", "agent"}, {"services/core", "core"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, b.out), ".")
		cmd.Dir = filepath.Join(root, b.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.dir, err, out)
		}
	}
	all, err := Load(filepath.Join(root, "eval", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Scenario{}
	for _, s := range all {
		byName[s.Name] = s
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "LLM_") && k != "AGENT_MODEL" && k != "KUBECONFIG" {
			env = append(env, kv)
		}
	}
	var progress bytes.Buffer
	ctx := context.Background()
	r, err := Start(ctx, Config{Root: root, BinDir: bin, WorkDir: t.TempDir(), Environ: env, Out: &progress})
	if err != nil {
		t.Fatalf("starting the sandbox: %v\n%s", err, progress.String())
	}
	defer r.Close()
	sum := &Summary{}
	start := time.Now()
	for _, mode := range []string{ModeDeterministic, ModeCompetent, ModeReckless} {
		for _, name := range CISubset {
			s, ok := byName[name]
			if !ok {
				t.Fatalf("CISubset names %q, which is not a scenario", name)
			}
			if !s.RunsIn(mode) {
				continue
			}
			res := r.RunScenario(ctx, s, mode, 1)
			sum.Add(res)
			if !res.OK() {
				t.Errorf("%s / %s: %s: %s", mode, name, res.Status, strings.Join(res.Failed, "; "))
			}
		}
	}
	var table bytes.Buffer
	sum.WriteMarkdown(&table)
	t.Logf("eval subset in %s:\n%s", time.Since(start).Round(time.Second), table.String())
	if sum.Totals.Model == 0 {
		t.Error("the scripted models were never called: the model path was not exercised")
	}
}
