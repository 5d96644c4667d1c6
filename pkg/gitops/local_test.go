package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newLocalRepo(t *testing.T, files map[string][]byte) (*Local, string, *fakeClock) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gitops.git")
	if err := InitLocalRepo(dir, files); err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: t0}
	l, err := NewLocal(dir, "main", WithLocalClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	return l, dir, clk
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestLocalForgeReadAndList(t *testing.T) {
	t.Parallel()
	l, _, _ := newLocalRepo(t, map[string][]byte{
		"apps/base/api/deployment.yaml": []byte("a\n"),
		"apps/base/api/service.yaml":    []byte("b\n"),
		"apps/web/kustomization.yaml":   []byte("c\n"),
		"README.md":                     []byte("d\n"),
	})
	ctx := context.Background()
	got, err := l.ReadFile(ctx, "apps/base/api/service.yaml")
	if err != nil || string(got) != "b\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if _, err := l.ReadFile(ctx, "apps/nope.yaml"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing file: %v, want ErrNotFound", err)
	}
	if _, err := l.ReadFile(ctx, "../etc/passwd"); err == nil {
		t.Error("a path outside the repository was read")
	}
	if _, err := l.ReadFile(ctx, "apps/base"); err == nil {
		t.Error("a directory was read as a file")
	}
	files, err := l.ListFiles(ctx, "apps/base")
	if err != nil || strings.Join(files, ",") != "apps/base/api/deployment.yaml,apps/base/api/service.yaml" {
		t.Errorf("ListFiles(apps/base) = %v, %v", files, err)
	}
	all, err := l.ListFiles(ctx, "")
	if err != nil || len(all) != 4 {
		t.Errorf("ListFiles('') = %v, %v", all, err)
	}
	if none, err := l.ListFiles(ctx, "apps/bas"); err != nil || len(none) != 0 {
		t.Errorf("a prefix that is not a directory matched: %v, %v", none, err)
	}
}

func TestLocalForgePRLifecycle(t *testing.T) {
	t.Parallel()
	src := readTestdata(t, "bump/oomkill.yaml")
	l, dir, clk := newLocalRepo(t, map[string][]byte{"apps/oomkill/deployment.yaml": src})
	ctx := context.Background()
	out, _, _, err := BumpMemory(src, "Deployment", "oomkill", "app", 0)
	if err != nil {
		t.Fatal(err)
	}
	baseBefore := gitOut(t, dir, "rev-parse", "main")
	pr, err := l.OpenPR(ctx, "agent/fix/k", "apps/oomkill/deployment.yaml", out, "raise memory", "body\nfinding-key: k", "k8s-engineer")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 1 || pr.State != StateOpen || pr.Author != "k8s-engineer" || !pr.CreatedAt.Equal(t0) || pr.Base != "main" {
		t.Errorf("PR = %+v", pr)
	}
	if got := gitOut(t, dir, "rev-parse", "main"); got != baseBefore {
		t.Error("opening a PR moved the base branch")
	}
	if got := gitOut(t, dir, "rev-parse", "agent/fix/k^"); got != baseBefore {
		t.Error("the branch is not one commit on top of the base")
	}
	if got := gitOut(t, dir, "log", "-1", "--format=%an", "agent/fix/k"); got != "k8s-engineer" {
		t.Errorf("commit author %q", got)
	}
	diff, err := l.Diff(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "\n-              memory: 32Mi\n+              memory: 48Mi\n") || strings.Count(diff, "\n-") != 2 || strings.Count(diff, "\n+") != 2 {
		t.Errorf("diff is not +1/-1:\n%s", diff)
	}

	// same branch again: no second PR
	again, err := l.OpenPR(ctx, "agent/fix/k", "apps/oomkill/deployment.yaml", out, "raise memory", "body", "k8s-engineer")
	var exists *PRExistsError
	if !errors.As(err, &exists) || !errors.Is(err, ErrPRExists) || again.Number != 1 || exists.PR.Number != 1 {
		t.Fatalf("second OpenPR = %+v, %v; want ErrPRExists with #1", again, err)
	}
	if prs, _ := l.ListPRs(ctx, StateOpen); len(prs) != 1 {
		t.Fatalf("%d open PRs, want 1", len(prs))
	}
	// nothing to change
	if _, err := l.OpenPR(ctx, "agent/fix/same", "apps/oomkill/deployment.yaml", src, "t", "b", "k8s-engineer"); err == nil {
		t.Error("a PR without a change was opened")
	}

	clk.Advance(time.Hour)
	if err := l.SubmitReview(ctx, pr.Number, Review{Reviewer: "code-reviewer", Verdict: VerdictApprove, Body: "fine"}); err != nil {
		t.Fatal(err)
	}
	if err := l.SubmitReview(ctx, pr.Number, Review{Reviewer: "code-reviewer", Verdict: "lgtm"}); err == nil {
		t.Error("an unknown verdict was recorded")
	}
	rv, err := l.Reviews(ctx, pr.Number)
	if err != nil || len(rv) != 1 || !rv[0].At.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Reviews = %+v, %v", rv, err)
	}
	if err := l.Merge(ctx, pr.Number, ""); err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, dir, "rev-list", "--parents", "-1", "main"); len(strings.Fields(got)) != 3 {
		t.Errorf("merge is not a merge commit: %s", got)
	}
	onMain, _ := l.ReadFile(ctx, "apps/oomkill/deployment.yaml")
	if string(onMain) != string(out) {
		t.Errorf("main does not hold the merged file")
	}
	merged, _ := l.GetPR(ctx, pr.Number)
	if merged.State != StateMerged {
		t.Errorf("state %q after merge", merged.State)
	}
	if d2, err := l.Diff(ctx, pr.Number); err != nil || d2 != diff {
		t.Errorf("diff of the merged PR changed:\n%s\n%v", d2, err)
	}
	if err := l.Merge(ctx, pr.Number, ""); err == nil {
		t.Error("merged twice")
	}
	if err := l.SubmitReview(ctx, pr.Number, Review{Reviewer: "x", Verdict: VerdictComment, Body: "late"}); err == nil {
		t.Error("reviewed a merged PR")
	}
	// the branch can be proposed again once its PR is merged
	out2, _, _, _ := BumpMemory(out, "Deployment", "oomkill", "app", 0)
	pr2, err := l.OpenPR(ctx, "agent/fix/k", "apps/oomkill/deployment.yaml", out2, "again", "b", "k8s-engineer")
	if err != nil || pr2.Number != 2 {
		t.Fatalf("re-proposal: %+v %v", pr2, err)
	}
	if _, err := l.GetPR(ctx, 99); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetPR(99): %v", err)
	}
}

func TestLocalForgeMergeMethodsAndConflicts(t *testing.T) {
	t.Parallel()
	l, dir, _ := newLocalRepo(t, map[string][]byte{"a.yaml": []byte("x: 1\ny: 1\n"), "b.yaml": []byte("z: 1\n")})
	ctx := context.Background()
	p1, err := l.OpenPR(ctx, "agent/fix/one", "a.yaml", []byte("x: 2\ny: 1\n"), "one", "", "sol")
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := l.OpenPR(ctx, "agent/fix/two", "a.yaml", []byte("x: 3\ny: 1\n"), "two", "", "sol")
	p3, _ := l.OpenPR(ctx, "agent/fix/three", "b.yaml", []byte("z: 2\n"), "three", "", "sol")
	if err := l.Merge(ctx, p1.Number, "fast-forward"); err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, dir, "rev-parse", "main"); got != gitOut(t, dir, "rev-parse", "agent/fix/one") {
		t.Error("fast-forward did not move main to the branch")
	}
	if err := l.Merge(ctx, p2.Number, "merge"); err == nil || !strings.Contains(err.Error(), "conflicts") {
		t.Errorf("conflicting merge: %v", err)
	}
	if err := l.Merge(ctx, p3.Number, "fast-forward"); err == nil {
		t.Error("fast-forwarded over a moved base")
	}
	if err := l.Merge(ctx, p3.Number, "squash"); err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, dir, "rev-list", "--parents", "-1", "main"); len(strings.Fields(got)) != 2 {
		t.Errorf("squash made a merge commit: %s", got)
	}
	b, _ := l.ReadFile(ctx, "b.yaml")
	a, _ := l.ReadFile(ctx, "a.yaml")
	if string(a) != "x: 2\ny: 1\n" || string(b) != "z: 2\n" {
		t.Errorf("main: a=%q b=%q", a, b)
	}
	if err := l.Merge(ctx, p2.Number, "rebase"); err == nil {
		t.Error("unknown method accepted")
	}
}

// Agents in several goroutines (or processes) share one repository.
func TestLocalForgeConcurrentOpen(t *testing.T) {
	t.Parallel()
	l, _, _ := newLocalRepo(t, map[string][]byte{"a.yaml": []byte("x: 1\n")})
	l2, err := NewLocal(l.git.repo, "main") // a second process's view
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := l
			if i%2 == 1 {
				f = l2
			}
			_, err := f.OpenPR(ctx, fmt.Sprintf("agent/fix/k%d", i%4), "a.yaml", []byte(fmt.Sprintf("x: %d\n", i+2)), "t", "b", "sol")
			if err != nil && !errors.Is(err, ErrPRExists) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	prs, _ := l.ListPRs(ctx, "")
	if len(prs) != 4 {
		t.Fatalf("%d PRs; want one per branch (4)", len(prs))
	}
	for i, p := range prs {
		if p.Number != i+1 {
			t.Errorf("PR numbers %d at %d", p.Number, i)
		}
	}
}

// A non-bare repository: the forge never touches its working tree or index.
func TestLocalForgeLeavesWorkingTreeAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gitOut(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, "add", "a.yaml")
	gitOut(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
	l, err := NewLocal(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.OpenPR(context.Background(), "agent/fix/a", "a.yaml", []byte("x: 2\n"), "t", "b", "sol"); err != nil {
		t.Fatal(err)
	}
	if st := gitOut(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("working tree or index changed:\n%s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); string(b) != "x: 1\n" {
		t.Errorf("working tree file changed: %q", b)
	}
	if _, err := NewLocal(dir, "nope"); err == nil {
		t.Error("a missing base branch was accepted")
	}
	if _, err := NewLocal(t.TempDir(), "main"); err == nil {
		t.Error("a directory that is no repository was accepted")
	}
}
