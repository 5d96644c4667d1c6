package gitops

import (
	"context"
	"fmt"
)

// ReviewOutcome is what one review pass did.
type ReviewOutcome struct {
	PR      PR
	Verdict string
	Body    string
	Merge   *MergeResult // set when the verdict was approve
}

// ReviewOldest is Vera's deterministic pass (seed §14: one PR per pulse,
// the oldest first): the oldest open agent PR that this agent did not
// propose and has not yet reviewed on its current head gets ReviewPR's
// verdict, and merge_if_trivial when that verdict is approve. nil, nil when
// there is nothing to review.
func (s *Service) ReviewOldest(ctx context.Context) (*ReviewOutcome, error) {
	me, err := s.identity()
	if err != nil {
		return nil, err
	}
	prs, err := s.ListAgentPRs(ctx, StateOpen)
	if err != nil {
		return nil, err
	}
	for _, p := range prs {
		if CanonicalAgent(p.Author) == me || CanonicalAgent(p.Author) == "" {
			continue
		}
		rv, err := s.f.Reviews(ctx, p.Number)
		if err != nil {
			return nil, fmt.Errorf("reviews of #%d: %w", p.Number, err)
		}
		done := false
		for _, r := range rv {
			if CanonicalAgent(r.Reviewer) == me && (r.Commit == "" || r.Commit == p.HeadSHA) {
				done = true
			}
		}
		if done {
			continue
		}
		v, err := s.GetPR(ctx, p.Number)
		if err != nil {
			return nil, err
		}
		if _, err := s.Review(ctx, p.Number, v.SuggestedVerdict, v.SuggestedBody); err != nil {
			return nil, err
		}
		out := &ReviewOutcome{PR: v.PR, Verdict: v.SuggestedVerdict, Body: v.SuggestedBody}
		if v.SuggestedVerdict == VerdictApprove {
			m, err := s.MergeIfTrivial(ctx, p.Number)
			if err != nil {
				return out, err
			}
			out.Merge = m
		}
		return out, nil
	}
	return nil, nil
}
