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
	// Submitted is the verdict that went to the forge and Note why it
	// differs from Verdict (ReviewResult): an approval from the account
	// that opened the PR goes in as a comment.
	Submitted, Note string
}

// Identity is the canonical slug of the agent this service acts for, or
// ErrNoIdentity.
func (s *Service) Identity() (string, error) { return s.identity() }

// Reviews are the reviews submitted on PR number, oldest first.
func (s *Service) Reviews(ctx context.Context, number int) ([]Review, error) {
	rv, err := s.f.Reviews(ctx, number)
	if err != nil {
		return nil, fmt.Errorf("reviews of #%d: %w", number, err)
	}
	return rv, nil
}
