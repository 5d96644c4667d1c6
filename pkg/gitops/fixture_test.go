package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The project's broken-workload fixtures (a copy of hack/fixtures/
// broken-workloads.yaml): seven documents, oomkill first, no namespaces.
func TestBumpOnProjectFixture(t *testing.T) {
	t.Parallel()
	src := readTestdata(t, "fixtures/broken-workloads.yaml")
	out, old, nv, err := BumpMemory(src, "Deployment", "oomkill", "app", 0)
	if err != nil {
		t.Fatal(err)
	}
	ol, nl := changedLines(t, src, out)
	if old != "32Mi" || nv != "48Mi" || len(ol) != 1 || ol[0] != "              memory: 32Mi\n" || nl[0] != "              memory: 48Mi\n" {
		t.Fatalf("%s → %s, lines -%q +%q", old, nv, ol, nl)
	}
	// Every other workload's limit is untouched.
	for _, name := range []string{"crashloop", "imagepull", "configerror"} {
		if _, o, _, err := BumpMemory(out, "Deployment", name, "app", 0); err != nil || o != "64Mi" {
			t.Errorf("%s: %s %v", name, o, err)
		}
	}
	// The whole loop on a repository holding the file where a GitOps repo
	// would not (no convention names it: found by scanning).
	l, _, clk := newLocalRepo(t, map[string][]byte{"hack/fixtures/broken-workloads.yaml": src})
	ctx := context.Background()
	sol := NewService(l, "k8s-engineer", Options{Now: clk.Now})
	vera := NewService(l, "code-reviewer", Options{Now: clk.Now})
	r, err := sol.ProposeMemoryBump(ctx, BumpRequest{Namespace: "kubecrew-fixtures", Kind: "Deployment", Name: "oomkill", Container: "app", FindingKey: oomFinding.DeriveKey()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "hack/fixtures/broken-workloads.yaml" || strings.Count(r.Diff, "\n-") != 2 || strings.Count(r.Diff, "\n+") != 2 {
		t.Fatalf("proposal %+v", r)
	}
	v, err := vera.GetPR(ctx, r.PR.Number)
	if err != nil || v.SuggestedVerdict != VerdictApprove {
		t.Fatalf("get_pr: %+v %v", v, err)
	}
	if _, err := vera.Review(ctx, r.PR.Number, v.SuggestedVerdict, v.SuggestedBody); err != nil {
		t.Fatal(err)
	}
	if m, err := vera.MergeIfTrivial(ctx, r.PR.Number); err != nil || !m.Merged {
		t.Fatalf("merge: %+v %v", m, err)
	}
	onMain, _ := l.ReadFile(ctx, "hack/fixtures/broken-workloads.yaml")
	if string(onMain) != string(out) {
		t.Error("main does not hold exactly the +1/-1 edit")
	}
}

// The live fixture, when present, must still be what the copy above tests.
func TestProjectFixtureStillBumpable(t *testing.T) {
	t.Parallel()
	live := filepath.Join("..", "..", "hack", "fixtures", "broken-workloads.yaml")
	src, err := os.ReadFile(live)
	if os.IsNotExist(err) {
		t.Skipf("%s is not in this checkout", live)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, old, nv, err := BumpMemory(src, "Deployment", "oomkill", "app", 0)
	if err != nil || old != "32Mi" || nv != "48Mi" {
		t.Fatalf("the oomkill fixture changed shape (%s → %s, %v); update testdata/fixtures and the flows that rely on 32Mi", old, nv, err)
	}
	if ol, _ := changedLines(t, src, out); len(ol) != 1 {
		t.Fatalf("%d lines changed", len(ol))
	}
}
