package gitops

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func newGitHubPair(t *testing.T, files map[string]string) (*fakeGitHub, *GitHub, *GitHub, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: t0}
	fake := newFakeGitHub(t, files, clk.Now)
	sol, err := NewGitHub("acme", "gitops", "main", "sol-token", fake.srv.URL, fake.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	vera, err := NewGitHub("acme", "gitops", "main", "vera-token", fake.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fake, sol, vera, clk
}

func assertCalls(t *testing.T, fake *fakeGitHub, want ...string) {
	t.Helper()
	got := fake.Calls()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("REST calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	fake.ResetCalls()
}

func TestGitHubForgeReadList(t *testing.T) {
	t.Parallel()
	fake, sol, _, _ := newGitHubPair(t, map[string]string{"apps/a/d.yaml": "x: 1\n", "apps/b/d.yaml": "y\n", "README.md": "r"})
	ctx := context.Background()
	b, err := sol.ReadFile(ctx, "apps/a/d.yaml")
	if err != nil || string(b) != "x: 1\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := sol.ReadFile(ctx, "apps/none.yaml"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing file: %v", err)
	}
	files, err := sol.ListFiles(ctx, "apps")
	if err != nil || strings.Join(files, ",") != "apps/a/d.yaml,apps/b/d.yaml" {
		t.Errorf("ListFiles = %v, %v", files, err)
	}
	assertCalls(t, fake,
		"GET /repos/acme/gitops/contents/apps/a/d.yaml?ref=main",
		"GET /repos/acme/gitops/contents/apps/none.yaml?ref=main",
		"GET /repos/acme/gitops/git/trees/main?recursive=1",
	)
	if _, err := NewGitHub("acme", "gitops", "main", "", "", nil); err == nil {
		t.Error("no token accepted")
	}
	if _, err := NewGitHub("acme", "gitops", "main", "t", "ftp://x", nil); err == nil {
		t.Error("bad API URL accepted")
	}
	bad, _ := NewGitHub("acme", "gitops", "main", "stolen", fake.srv.URL, nil)
	if _, err := bad.ReadFile(ctx, "README.md"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("bad credentials: %v", err)
	}
}

func TestGitHubForgePRFlow(t *testing.T) {
	t.Parallel()
	fake, sol, vera, clk := newGitHubPair(t, map[string]string{"apps/a/d.yaml": "limits:\n  memory: 32Mi\n"})
	ctx := context.Background()
	body := "what\n\nfinding-key: k"
	pr, err := sol.OpenPR(ctx, "agent/fix/k", "apps/a/d.yaml", []byte("limits:\n  memory: 48Mi\n"), "raise", body, "k8s-engineer")
	if err != nil {
		t.Fatal(err)
	}
	assertCalls(t, fake,
		"GET /repos/acme/gitops/pulls?head=acme%3Aagent%2Ffix%2Fk&per_page=10&state=open",
		"GET /repos/acme/gitops/git/ref/heads/main",
		"GET /repos/acme/gitops/contents/apps/a/d.yaml?ref="+fake.branches["main"],
		"POST /repos/acme/gitops/git/refs",
		"PUT /repos/acme/gitops/contents/apps/a/d.yaml",
		"POST /repos/acme/gitops/pulls",
	)
	if pr.Number != 1 || pr.Author != "k8s-engineer" || pr.Branch != "agent/fix/k" || pr.State != StateOpen || !pr.CreatedAt.Equal(t0) || pr.HeadSHA == "" {
		t.Errorf("PR = %+v", pr)
	}
	if !strings.HasSuffix(pr.Body, "\nproposed-by: k8s-engineer\nfinding-key: k") {
		t.Errorf("body trailers: %q", pr.Body)
	}
	if main, _ := fake.file("main", "apps/a/d.yaml"); main != "limits:\n  memory: 32Mi\n" {
		t.Error("opening a PR changed main")
	}
	again, err := sol.OpenPR(ctx, "agent/fix/k", "apps/a/d.yaml", []byte("limits:\n  memory: 48Mi\n"), "raise", body, "k8s-engineer")
	if !errors.Is(err, ErrPRExists) || again.Number != 1 {
		t.Fatalf("second OpenPR: %+v %v", again, err)
	}
	assertCalls(t, fake, "GET /repos/acme/gitops/pulls?head=acme%3Aagent%2Ffix%2Fk&per_page=10&state=open")

	d, err := vera.Diff(ctx, 1)
	if err != nil || !strings.Contains(d, "-  memory: 32Mi\n+  memory: 48Mi\n") {
		t.Fatalf("diff %q %v", d, err)
	}
	got, _ := vera.GetPR(ctx, 1)
	clk.Advance(time.Hour)
	if err := sol.SubmitReview(ctx, 1, Review{Reviewer: "k8s-engineer", Verdict: VerdictApprove, Body: "mine"}); err == nil {
		t.Error("GitHub let the author's token approve")
	}
	if err := vera.SubmitReview(ctx, 1, Review{Reviewer: "code-reviewer", Verdict: VerdictApprove, Body: "five checks pass", Commit: got.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	rv, err := vera.Reviews(ctx, 1)
	if err != nil || len(rv) != 1 || rv[0].Reviewer != "code-reviewer" || rv[0].Verdict != VerdictApprove || rv[0].Commit != got.HeadSHA || !rv[0].At.Equal(t0.Add(time.Hour)) {
		t.Fatalf("reviews %+v %v", rv, err)
	}
	assertCalls(t, fake,
		"GET /repos/acme/gitops/pulls/1",
		"GET /repos/acme/gitops/pulls/1",
		"POST /repos/acme/gitops/pulls/1/reviews",
		"POST /repos/acme/gitops/pulls/1/reviews",
		"GET /repos/acme/gitops/pulls/1/reviews?per_page=100",
	)
	if err := vera.MergePinned(ctx, 1, "merge", "0000000000000000000000000000000000000bad"); !errors.Is(err, ErrHeadMoved) {
		t.Errorf("pinned merge on a moved head: %v", err)
	}
	if err := vera.MergePinned(ctx, 1, "merge", got.HeadSHA); err != nil {
		t.Fatal(err)
	}
	if main, _ := fake.file("main", "apps/a/d.yaml"); main != "limits:\n  memory: 48Mi\n" {
		t.Errorf("main after merge: %q", main)
	}
	merged, _ := vera.ListPRs(ctx, StateMerged)
	open, _ := vera.ListPRs(ctx, StateOpen)
	if len(merged) != 1 || len(open) != 0 || merged[0].State != StateMerged {
		t.Errorf("merged %+v open %+v", merged, open)
	}
	// The branch is left over; a new proposal for the same finding resets it.
	fake.ResetCalls()
	if _, err := sol.OpenPR(ctx, "agent/fix/k", "apps/a/d.yaml", []byte("limits:\n  memory: 72Mi\n"), "raise", body, "k8s-engineer"); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 7 || calls[3] != "POST /repos/acme/gitops/git/refs" || calls[4] != "PATCH /repos/acme/gitops/git/refs/heads/agent/fix/k" {
		t.Errorf("re-proposal calls: %q", calls)
	}
	if _, err := vera.GetPR(ctx, 42); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetPR(42): %v", err)
	}
}

func TestTrailers(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, key, value, want string }{
		{"text\n\nfinding-key: k", "proposed-by", "sol", "text\n\nproposed-by: sol\nfinding-key: k"},
		{"text", "reviewed-by", "vera", "text\n\nreviewed-by: vera"},
		{"", "reviewed-by", "vera", "reviewed-by: vera"},
		{"a\n\nproposed-by: sol\nfinding-key: k\n", "proposed-by", "sol", "a\n\nproposed-by: sol\nfinding-key: k\n"},
	}
	for _, c := range tests {
		if got := withTrailer(c.body, c.key, c.value); got != c.want {
			t.Errorf("withTrailer(%q) = %q; want %q", c.body, got, c.want)
		}
		if got := trailer(withTrailer(c.body, c.key, c.value), c.key); got != c.value {
			t.Errorf("trailer round trip %q", got)
		}
	}
	if trailer("proposed-by: mallory\n\nreal text", "proposed-by") != "" {
		t.Error("a trailer outside the trailing block was read")
	}
}
