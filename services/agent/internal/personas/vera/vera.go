// Package vera is Vera (code-reviewer) in code: which PR she reviews (the
// one named, else the oldest open agent PR she has not reviewed on its
// current head) and the review pass — the five checks, one verdict, and
// merge_if_trivial after an approval. pkg/gitops supplies the mechanisms
// (the checks, the review, the merge gate); the pick is hers.
package vera

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/playbook"
)

// Slug is Vera's.
const Slug = persona.SlugVera

// Reviewer is what Vera's pass uses (gitops.Service).
type Reviewer interface {
	Identity() (string, error)
	ListAgentPRs(ctx context.Context, state string) ([]gitops.PR, error)
	Reviews(ctx context.Context, number int) ([]gitops.Review, error)
	GetPR(ctx context.Context, number int) (*gitops.PRView, error)
	Review(ctx context.Context, number int, verdict, body string) (*gitops.ReviewResult, error)
	MergeIfTrivial(ctx context.Context, number int) (*gitops.MergeResult, error)
}

var _ Reviewer = (*gitops.Service)(nil)

// Vera is her code; a nil reviewer (no GitOps repository) disables it.
type Vera struct{ rv Reviewer }

// New returns Vera reviewing through rv (nil: none configured).
func New(rv Reviewer) *Vera { return &Vera{rv: rv} }

// Slug is Vera's slug.
func (*Vera) Slug() string { return Slug }

// Tools are the registry tools her code calls, each through the run's
// gated path.
func (*Vera) Tools() []string {
	return []string{"list_agent_prs", "get_pr", "review_pr", "merge_if_trivial"}
}

// Playbook is the review pass, or nil without a GitOps repository.
func (v *Vera) Playbook() engine.Playbook {
	if v.rv == nil {
		return nil
	}
	return engine.PlaybookFunc(func(ctx context.Context, r *engine.Run) error { return review(ctx, r, v.rv) })
}

// NextPR is Vera's pick when no PR is named: the oldest open agent PR that
// she did not propose and has not yet reviewed on its current head (one PR
// per pass, the oldest first). ok is false when there is none.
func NextPR(ctx context.Context, rv Reviewer) (pr gitops.PR, ok bool, err error) {
	me, err := rv.Identity()
	if err != nil {
		return gitops.PR{}, false, err
	}
	prs, err := rv.ListAgentPRs(ctx, gitops.StateOpen)
	if err != nil {
		return gitops.PR{}, false, err
	}
	for _, p := range prs {
		if gitops.CanonicalAgent(p.Author) == me || gitops.CanonicalAgent(p.Author) == "" {
			continue
		}
		reviews, err := rv.Reviews(ctx, p.Number)
		if err != nil {
			return gitops.PR{}, false, err
		}
		done := false
		for _, r := range reviews {
			if gitops.CanonicalAgent(r.Reviewer) == me && (r.Commit == "" || r.Commit == p.HeadSHA) {
				done = true
			}
		}
		if !done {
			return p, true, nil
		}
	}
	return gitops.PR{}, false, nil
}

// ReviewOldest is the pass when no PR is named: NextPR gets the checks'
// verdict, and merge_if_trivial when that verdict is approve. nil, nil when
// there is nothing to review.
func ReviewOldest(ctx context.Context, rv Reviewer) (*gitops.ReviewOutcome, error) {
	p, ok, err := NextPR(ctx, rv)
	if err != nil || !ok {
		return nil, err
	}
	v, err := rv.GetPR(ctx, p.Number)
	if err != nil {
		return nil, err
	}
	sub, err := rv.Review(ctx, p.Number, v.SuggestedVerdict, v.SuggestedBody)
	if err != nil {
		return nil, err
	}
	out := &gitops.ReviewOutcome{PR: v.PR, Verdict: v.SuggestedVerdict, Body: v.SuggestedBody, Submitted: sub.Verdict, Note: sub.Note}
	if v.SuggestedVerdict == gitops.VerdictApprove {
		m, err := rv.MergeIfTrivial(ctx, p.Number)
		if err != nil {
			return out, err
		}
		out.Merge = m
	}
	return out, nil
}

var prRef = regexp.MustCompile(`(?i)(?:#|\bPR\s*#?|pull request\s*#?)(\d{1,9})\b`)

// prNumber finds the PR a run is about: context.pr, else "#N" / "PR N" in
// the task (with what Prepare added to it).
func prNumber(r *engine.Run) (int, bool) {
	if v := strings.TrimSpace(r.Req.Context["pr"]); v != "" {
		if n, err := strconv.Atoi(strings.TrimPrefix(v, "#")); err == nil && n > 0 {
			return n, true
		}
	}
	if m := prRef.FindStringSubmatch(r.Task()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, n > 0
	}
	return 0, false
}

// review: one PR per run — the one named, else the oldest open agent PR
// she has not reviewed (NextPR, read through list_agent_prs) — the five
// checks, one verdict, and merge_if_trivial after an approval. Every read
// and write goes through the run's gated, counted tool path.
func review(ctx context.Context, r *engine.Run, rv Reviewer) error {
	n, named := prNumber(r)
	call := 1
	if !named {
		next, found, err := pick(ctx, r, rv, "playbook-1")
		if err != nil {
			return err
		}
		if !found {
			nothingToReview(r)
			return nil
		}
		n, call = next.Number, 2
	}
	out, err := reviewOne(ctx, r, rv, n, call)
	if err != nil {
		return err
	}
	r.SetAnswer(describeReview(out))
	r.SetVerdict(out.Verdict)
	return nil
}

// pick is NextPR read through the run's list_agent_prs path (trace id id).
func pick(ctx context.Context, r *engine.Run, rv Reviewer, id string) (gitops.PR, bool, error) {
	var next gitops.PR
	var found bool
	_, err := playbook.Traced(ctx, r, id, "list_agent_prs", map[string]string{"state": gitops.StateOpen}, func() (string, error) {
		var err error
		next, found, err = NextPR(ctx, rv)
		switch {
		case err != nil:
			return "", err
		case !found:
			return "no open agent PR waiting for my review", nil
		}
		return fmt.Sprintf("oldest open agent PR waiting for my review: #%d %q by %s", next.Number, next.Title, next.Author), nil
	})
	return next, found, err
}

func nothingToReview(r *engine.Run) {
	r.SetAnswer("Nothing to review: no open agent PR is waiting for my review.")
	r.SetVerdict("nothing_to_review")
}

// reviewOne reviews PR n: get_pr (the checks' verdict), review_pr, and
// merge_if_trivial after an approval; trace ids from playbook-<call>.
func reviewOne(ctx context.Context, r *engine.Run, rv Reviewer, n, call int) (*gitops.ReviewOutcome, error) {
	id := func() string { defer func() { call++ }(); return fmt.Sprintf("playbook-%d", call) }
	args := map[string]int{"number": n}
	var view *gitops.PRView
	if _, err := playbook.Traced(ctx, r, id(), "get_pr", args, func() (string, error) {
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
	if _, err := playbook.Traced(ctx, r, id(), "review_pr", map[string]any{"number": n, "verdict": out.Verdict}, func() (string, error) {
		sub, err := rv.Review(ctx, n, out.Verdict, out.Body)
		if err != nil {
			return "", err
		}
		out.Submitted, out.Note = sub.Verdict, sub.Note
		if sub.Note != "" {
			return fmt.Sprintf("submitted as a %s, not %s: %s", sub.Verdict, out.Verdict, sub.Note), nil
		}
		return "submitted " + sub.Verdict, nil
	}); err != nil {
		return nil, err
	}
	if out.Verdict == gitops.VerdictApprove {
		if _, err := playbook.Traced(ctx, r, id(), "merge_if_trivial", args, func() (string, error) {
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
	if o.Note != "" {
		fmt.Fprintf(&b, " Submitted as a %s: %s", o.Submitted, o.Note)
	}
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
