package vera

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/persona"
)

// repo is a real local GitOps repository (bare git) holding the OOM-killed
// fixture and a CronJob whose memory grows without bound.
func repo(t *testing.T) (*gitops.Local, *time.Time) {
	t.Helper()
	files := map[string][]byte{}
	for path, name := range map[string]string{"fixtures/kubecrew/oomkill.yaml": "oomkill.yaml", "apps/cache-warmer/cronjob.yaml": "cache-warmer.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files[path] = b
	}
	dir := filepath.Join(t.TempDir(), "gitops.git")
	if err := gitops.InitLocalRepo(dir, files); err != nil {
		t.Fatal(err)
	}
	clk := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) // the test moves it; nothing runs concurrently
	l, err := gitops.NewLocal(dir, "main", gitops.WithLocalClock(func() time.Time { return clk }))
	if err != nil {
		t.Fatal(err)
	}
	return l, &clk
}

func TestReviewOldest(t *testing.T) {
	t.Parallel()
	l, clk := repo(t)
	now := func() time.Time { return *clk }
	ctx := context.Background()
	sol := gitops.NewService(l, persona.SlugSol, gitops.Options{Now: now})
	vera := gitops.NewService(l, persona.SlugVera, gitops.Options{Now: now})
	// Nothing to do yet.
	if out, err := ReviewOldest(ctx, vera); out != nil || err != nil {
		t.Fatalf("empty pass: %+v %v", out, err)
	}
	// The cache-warmer grows forever: changes requested. The oomkill bump
	// is fine: approved and merged. Oldest first.
	if _, err := sol.ProposeMemoryBump(ctx, gitops.BumpRequest{Namespace: "shop", Kind: "CronJob", Name: "cache-warmer", Container: "warmer"}); err != nil {
		t.Fatal(err)
	}
	*clk = clk.Add(time.Minute)
	if _, err := sol.ProposeMemoryBump(ctx, gitops.BumpRequest{Namespace: "kubecrew-fixtures", Kind: "Deployment", Name: "oomkill", Container: "app"}); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := NextPR(ctx, vera); err != nil || !ok || p.Number != 1 {
		t.Fatalf("next PR: #%d %v %v, want #1", p.Number, ok, err)
	}
	first, err := ReviewOldest(ctx, vera)
	if err != nil || first.PR.Number != 1 || first.Verdict != gitops.VerdictRequestChanges || first.Merge != nil {
		t.Fatalf("first pass: %+v %v", first, err)
	}
	second, err := ReviewOldest(ctx, vera)
	if err != nil || second.PR.Number != 2 || second.Verdict != gitops.VerdictApprove || second.Merge == nil || !second.Merge.Merged {
		t.Fatalf("second pass: %+v %v", second, err)
	}
	if out, err := ReviewOldest(ctx, vera); out != nil || err != nil {
		t.Fatalf("third pass found work: %+v %v", out, err)
	}
	// Sol's own pass never reviews his PRs.
	if out, err := ReviewOldest(ctx, sol); out != nil || err != nil {
		t.Fatalf("Sol reviewed: %+v %v", out, err)
	}
	if p, _ := l.GetPR(ctx, 1); p.State != gitops.StateOpen {
		t.Errorf("the cache-warmer PR is %s", p.State)
	}
	// An agent with no identity cannot pick.
	if _, _, err := NextPR(ctx, gitops.NewService(l, "", gitops.Options{})); err == nil {
		t.Error("an agent without identity picked a PR")
	}
}

// One forge account for Sol and Vera: her answer says plainly that the
// approval went in as a comment and that the PR waits for a person.
func TestDescribeReviewSharedIdentity(t *testing.T) {
	t.Parallel()
	o := &gitops.ReviewOutcome{PR: gitops.PR{Number: 7, Branch: "agent/fix/k", Author: persona.SlugSol}, Verdict: gitops.VerdictApprove,
		Submitted: gitops.VerdictComment, Note: "Not approved: I (code-reviewer) act as the forge account kubecrew-bot, the same account that opened this pull request.",
		Merge: &gitops.MergeResult{Reason: "one shared identity: this agent (code-reviewer) acts as the forge account kubecrew-bot, which also opened the PR"}}
	got := describeReview(o)
	for _, want := range []string{"Reviewed #7 (agent/fix/k, by k8s-engineer): approve.", "Submitted as a comment: Not approved: I (code-reviewer) act as the forge account kubecrew-bot",
		"Not merged automatically: one shared identity: this agent (code-reviewer) acts as the forge account kubecrew-bot, which also opened the PR — left for a human."} {
		if !strings.Contains(got, want) {
			t.Errorf("answer lacks %q:\n%s", want, got)
		}
	}
}
