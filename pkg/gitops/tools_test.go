package gitops

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// The schemas the model is sent, as a golden file.
func TestToolSpecsGolden(t *testing.T) {
	t.Parallel()
	set := tools.Set(Tools(nil, "k8s-engineer", Options{}))
	want := []string{ToolBumpWorkloadMemory, ToolListAgentPRs, ToolGetPR, ToolReviewPR, ToolMergeIfTrivial, ToolReadRepoFile, ToolListRepoFiles, ToolSearchRepo}
	if strings.Join(set.Names(), ",") != strings.Join(want, ",") {
		t.Fatalf("tools %v", set.Names())
	}
	mutating := map[string]bool{ToolBumpWorkloadMemory: true, ToolReviewPR: true, ToolMergeIfTrivial: true}
	for _, tl := range set {
		if tl.Mutating() != mutating[tl.Name()] {
			t.Errorf("%s: mutating = %v", tl.Name(), tl.Mutating())
		}
		if !tools.AutonomousTools[tl.Name()] {
			t.Errorf("%s is not on the autonomous allowlist", tl.Name())
		}
	}
	b, err := json.MarshalIndent(set.Specs(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tool_specs.golden.json", append(b, '\n'))
}

// A diff too long to show: get_pr says so loudly at both ends, and
// approving it is refused while a reasoned request for changes is not.
func TestTruncatedDiffCannotBeApproved(t *testing.T) {
	t.Parallel()
	var big strings.Builder
	for i := range 400 {
		big.WriteString("line: " + strings.Repeat("x", i%50) + "\n")
	}
	l, _, clk := newLocalRepo(t, map[string][]byte{"apps/big/config.yaml": []byte(big.String())})
	pr, err := l.OpenPR(context.Background(), "agent/fix/big", "apps/big/config.yaml", []byte(strings.ReplaceAll(big.String(), "x", "y")), "big", "change: 1Mi -> 2Mi\nfinding-key: big", "k8s-engineer")
	if err != nil {
		t.Fatal(err)
	}
	vera := newAgent(t, l, "code-reviewer", Options{Now: clk.Now, DiffMaxChars: 2000})
	out := vera.call(ToolGetPR, map[string]any{"number": pr.Number})
	if !strings.HasPrefix(out, TruncatedBanner) || strings.Count(out, TruncatedBanner) < 2 {
		t.Fatalf("truncation is not loud:\n%.400s", out)
	}
	mustContain(t, out, "Do not approve", "suggested verdict: request_changes", "5. the whole diff was seen — FAIL")
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": pr.Number, "verdict": "approve", "body": "looks fine"}),
		"ERROR", "approval refused", "nobody has seen all of it")
	mustContain(t, vera.call(ToolReviewPR, map[string]any{"number": pr.Number, "verdict": "request_changes",
		"body": "This rewrites hundreds of lines; a memory bump changes one."}), "Review submitted")
	rv, _ := l.Reviews(context.Background(), pr.Number)
	if len(rv) != 1 || rv[0].Verdict != VerdictRequestChanges || rv[0].Reviewer != "code-reviewer" {
		t.Errorf("reviews %+v", rv)
	}
}

func TestReadTools(t *testing.T) {
	t.Parallel()
	l, _, _ := newLocalRepo(t, map[string][]byte{"apps/a/d.yaml": []byte("kind: Deployment\n"), "apps/b/s.yaml": []byte("kind: Service\n")})
	dax := newAgent(t, l, "", Options{}) // read-only tools need no identity
	mustContain(t, dax.call(ToolReadRepoFile, map[string]any{"path": "apps/a/d.yaml"}), "kind: Deployment")
	mustContain(t, dax.call(ToolReadRepoFile, map[string]any{"path": "apps/none.yaml"}), "ERROR", "not found")
	mustContain(t, dax.call(ToolReadRepoFile, map[string]any{"path": "../../etc/passwd"}), "ERROR", "invalid repository path")
	out := dax.call(ToolListRepoFiles, map[string]any{"dir": "apps"})
	if out != "apps/a/d.yaml\napps/b/s.yaml" {
		t.Errorf("list_repo_files = %q", out)
	}
	mustContain(t, dax.call(ToolListRepoFiles, map[string]any{"dir": "nothing"}), "No files")
}
