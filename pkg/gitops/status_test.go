package gitops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPRStatus: on both forges, the open agent PRs with their newest
// review, and a PR merged by a person on the forge (no agent's tool) as
// merged, newest change first; a human's own PR is not listed.
func TestPRStatus(t *testing.T) {
	t.Parallel()
	const manifest = "apps/a/d.yaml"
	files := map[string]string{manifest: "limits:\n  memory: 32Mi\n", "apps/b/d.yaml": "limits:\n  memory: 64Mi\n"}
	type setup struct {
		sol, vera Forge
		// humanMerge merges PR n as a person on the forge.
		humanMerge func(n int) error
		clk        *fakeClock
	}
	forges := []struct {
		name string
		new  func(t *testing.T) setup
	}{
		{"local", func(t *testing.T) setup {
			bs := map[string][]byte{}
			for k, v := range files {
				bs[k] = []byte(v)
			}
			l, _, clk := newLocalRepo(t, bs)
			return setup{l, l, func(n int) error { return l.Merge(context.Background(), n, "merge") }, clk}
		}},
		{"github", func(t *testing.T) setup {
			fake, sol, vera, clk := newGitHubPair(t, files)
			alice, err := NewGitHub("acme", "gitops", "main", "alice-token", fake.srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			return setup{sol, vera, func(n int) error { return alice.Merge(context.Background(), n, "merge") }, clk}
		}},
	}
	for _, fc := range forges {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := fc.new(t)
			open := func(branch, path, content, author string) PR {
				t.Helper()
				s.clk.Advance(time.Minute)
				pr, err := s.sol.OpenPR(ctx, branch, path, []byte(content), "raise "+path, "why", author)
				if err != nil {
					t.Fatal(err)
				}
				return pr
			}
			a := open("agent/fix/a", manifest, "limits:\n  memory: 48Mi\n", "k8s-engineer")
			b := open("agent/fix/b", "apps/b/d.yaml", "limits:\n  memory: 96Mi\n", "k8s-engineer")
			open("alice/tweak", "apps/b/d.yaml", "limits:\n  memory: 80Mi\n", "alice") // not an agent's
			s.clk.Advance(time.Minute)
			if err := s.vera.SubmitReview(ctx, a.Number, Review{Reviewer: "code-reviewer", Verdict: VerdictRequestChanges, Body: "more than the limit changes"}); err != nil {
				t.Fatal(err)
			}
			s.clk.Advance(time.Minute)
			if err := s.humanMerge(b.Number); err != nil {
				t.Fatal(err)
			}
			got, err := NewService(s.vera, "code-reviewer", Options{Now: s.clk.Now}).PRStatus(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, p := range got {
				line := fmt.Sprintf("#%d %s %s", p.Number, p.Branch, p.State)
				if p.Review != nil {
					line += fmt.Sprintf(" %s:%s (%d)", p.Review.Reviewer, p.Review.Verdict, p.Reviews)
				}
				if updated(p.PR).IsZero() {
					line += " no-time"
				}
				lines = append(lines, line)
			}
			want := fmt.Sprintf("#%d agent/fix/b merged\n#%d agent/fix/a open code-reviewer:request_changes (1)", b.Number, a.Number)
			if strings.Join(lines, "\n") != want {
				t.Errorf("PRStatus:\n%s\nwant:\n%s", strings.Join(lines, "\n"), want)
			}
			if got, err := NewService(s.vera, "code-reviewer", Options{}).PRStatus(ctx, 0); err != nil || len(got) != 1 || got[0].Number != a.Number {
				t.Errorf("open only: %+v %v", got, err)
			}
		})
	}
}
