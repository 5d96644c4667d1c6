package playbook

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Reviewer is what Vera's pass uses (gitops.Service).
type Reviewer interface {
	ReviewOldest(ctx context.Context) (*gitops.ReviewOutcome, error)
	GetPR(ctx context.Context, number int) (*gitops.PRView, error)
	Review(ctx context.Context, number int, verdict, body string) (gitops.PR, error)
	MergeIfTrivial(ctx context.Context, number int) (*gitops.MergeResult, error)
}

var prRef = regexp.MustCompile(`(?i)(?:#|\bPR\s*#?|pull request\s*#?)(\d{1,9})\b`)

// prNumber finds the PR a run is about: context.pr, else "#N" / "PR N" in
// the task.
func prNumber(r *engine.Run) (int, bool) {
	if v := strings.TrimSpace(r.Req.Context["pr"]); v != "" {
		if n, err := strconv.Atoi(strings.TrimPrefix(v, "#")); err == nil && n > 0 {
			return n, true
		}
	}
	if m := prRef.FindStringSubmatch(r.Req.Task); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, n > 0
	}
	return 0, false
}

// veraReview: one PR per run — the one named, else the oldest open agent PR
// she has not reviewed — the five checks, one verdict, and merge_if_trivial
// after an approval.
func veraReview(ctx context.Context, r *engine.Run, d Deps) error {
	n, named := prNumber(r)
	var out *gitops.ReviewOutcome
	var err error
	if named {
		out, err = reviewOne(ctx, r, d.Reviewer, n)
	} else {
		_, err = traced(ctx, r, "playbook-1", "review_oldest_agent_pr", map[string]string{}, func() (string, error) {
			var e error
			out, e = d.Reviewer.ReviewOldest(ctx)
			if e != nil {
				return "", e
			}
			if out == nil {
				return "no open agent PR waiting for my review", nil
			}
			return describeReview(out), nil
		})
	}
	if err != nil {
		return err
	}
	if out == nil {
		r.SetAnswer("Nothing to review: no open agent PR is waiting for my review.")
		r.SetVerdict("nothing_to_review")
		return nil
	}
	r.SetAnswer(describeReview(out))
	r.SetVerdict(out.Verdict)
	return nil
}

func reviewOne(ctx context.Context, r *engine.Run, rv Reviewer, n int) (*gitops.ReviewOutcome, error) {
	args := map[string]int{"number": n}
	var view *gitops.PRView
	if _, err := traced(ctx, r, "playbook-1", "get_pr", args, func() (string, error) {
		var err error
		view, err = rv.GetPR(ctx, n)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("#%d %q by %s on %s: %d diff chars (truncated %v); checks say %s", n, view.PR.Title, view.PR.Author,
			view.PR.Branch, view.FullChars, view.Truncated, view.SuggestedVerdict), nil
	}); err != nil {
		return nil, err
	}
	out := &gitops.ReviewOutcome{PR: view.PR, Verdict: view.SuggestedVerdict, Body: view.SuggestedBody}
	if _, err := traced(ctx, r, "playbook-2", "review_pr", map[string]any{"number": n, "verdict": out.Verdict}, func() (string, error) {
		_, err := rv.Review(ctx, n, out.Verdict, out.Body)
		return "submitted " + out.Verdict, err
	}); err != nil {
		return nil, err
	}
	if out.Verdict == gitops.VerdictApprove {
		if _, err := traced(ctx, r, "playbook-3", "merge_if_trivial", args, func() (string, error) {
			m, err := rv.MergeIfTrivial(ctx, n)
			out.Merge = m
			if err != nil {
				return "", err
			}
			if m.Merged {
				return fmt.Sprintf("merged #%d (%s → %s)", n, m.Old, m.New), nil
			}
			return "left for a human: " + m.Reason, nil
		}); err != nil {
			return out, err
		}
	}
	return out, nil
}

func describeReview(o *gitops.ReviewOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Reviewed #%d (%s, by %s): %s.", o.PR.Number, o.PR.Branch, o.PR.Author, o.Verdict)
	if o.Merge != nil {
		if o.Merge.Merged {
			fmt.Fprintf(&b, " merge_if_trivial merged it (memory %s → %s).", o.Merge.Old, o.Merge.New)
		} else {
			fmt.Fprintf(&b, " Not merged automatically: %s — left for a human.", o.Merge.Reason)
		}
	}
	if body := strings.TrimSpace(o.Body); body != "" {
		b.WriteString("\n" + body)
	}
	return b.String()
}
