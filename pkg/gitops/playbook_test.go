package gitops

import (
	"context"
	"testing"
	"time"
)

func TestReviewOldest(t *testing.T) {
	t.Parallel()
	l, _, clk := newLocalRepo(t, e2eRepo(t))
	ctx := context.Background()
	sol := NewService(l, "k8s-engineer", Options{Now: clk.Now})
	vera := NewService(l, "code-reviewer", Options{Now: clk.Now})
	// Nothing to do yet.
	if out, err := vera.ReviewOldest(ctx); out != nil || err != nil {
		t.Fatalf("empty pass: %+v %v", out, err)
	}
	// The cache-warmer grows forever: changes requested. The oomkill bump
	// is fine: approved and merged. Oldest first.
	if _, err := sol.ProposeMemoryBump(ctx, BumpRequest{Namespace: "shop", Kind: "CronJob", Name: "cache-warmer", Container: "warmer"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := sol.ProposeMemoryBump(ctx, BumpRequest{Namespace: "kubecrew-fixtures", Kind: "Deployment", Name: "oomkill", Container: "app"}); err != nil {
		t.Fatal(err)
	}
	first, err := vera.ReviewOldest(ctx)
	if err != nil || first.PR.Number != 1 || first.Verdict != VerdictRequestChanges || first.Merge != nil {
		t.Fatalf("first pass: %+v %v", first, err)
	}
	second, err := vera.ReviewOldest(ctx)
	if err != nil || second.PR.Number != 2 || second.Verdict != VerdictApprove || second.Merge == nil || !second.Merge.Merged {
		t.Fatalf("second pass: %+v %v", second, err)
	}
	if out, err := vera.ReviewOldest(ctx); out != nil || err != nil {
		t.Fatalf("third pass found work: %+v %v", out, err)
	}
	// Sol's own pass never reviews his PRs.
	if out, err := sol.ReviewOldest(ctx); out != nil || err != nil {
		t.Fatalf("Sol reviewed: %+v %v", out, err)
	}
	if p, _ := l.GetPR(ctx, 1); p.State != StateOpen {
		t.Errorf("the cache-warmer PR is %s", p.State)
	}
}
