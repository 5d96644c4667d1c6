package gitops

// What is open on the forge, as people see it: the agent PRs with their
// newest review, and the ones merged or closed lately, whoever did it — an
// agent, a person on the forge, a bot. The forge is the truth (docs/MANUAL.md,
// "Dashboard"); nothing here writes.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// RecentLister is a Forge that lists the PRs merged or closed most
// recently without listing every PR ever opened (GitHub: one page sorted
// by update; the local forge: its records). Both forges here implement it.
type RecentLister interface {
	RecentlyClosed(ctx context.Context, n int) ([]PR, error)
}

var (
	_ RecentLister = (*GitHub)(nil)
	_ RecentLister = (*Local)(nil)
)

// PRStatus is an agent PR with its reviews' count and its newest review.
type PRStatus struct {
	PR
	Reviews int
	// Review is the newest review (nil: none yet); Stale when it was given
	// on another head than the PR's now.
	Review      *Review
	ReviewStale bool
}

// updated is when pr last changed: UpdatedAt, else CreatedAt.
func updated(pr PR) time.Time {
	if !pr.UpdatedAt.IsZero() {
		return pr.UpdatedAt
	}
	return pr.CreatedAt
}

// statusFetches bounds the concurrent review reads of one listing.
const statusFetches = 8

// PRStatus lists every open agent PR with its newest review and, when
// recent > 0, up to recent agent PRs merged or closed most recently, most
// recently updated first.
func (s *Service) PRStatus(ctx context.Context, recent int) ([]PRStatus, error) {
	open, err := s.ListAgentPRs(ctx, StateOpen)
	if err != nil {
		return nil, fmt.Errorf("open pull requests: %w", err)
	}
	out := make([]PRStatus, len(open))
	errs := make([]error, len(open))
	sem := make(chan struct{}, statusFetches)
	var wg sync.WaitGroup
	for i, pr := range open {
		out[i].PR = pr
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rv, err := s.f.Reviews(ctx, pr.Number)
			if err != nil {
				errs[i] = fmt.Errorf("reviews of #%d: %w", pr.Number, err)
				return
			}
			out[i].Reviews = len(rv)
			for j := range rv {
				if out[i].Review == nil || !rv[j].At.Before(out[i].Review.At) {
					out[i].Review = &rv[j]
				}
			}
			if r := out[i].Review; r != nil && r.Commit != "" && pr.HeadSHA != "" && r.Commit != pr.HeadSHA {
				out[i].ReviewStale = true
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if recent > 0 {
		closed, err := s.recentlyClosed(ctx, recent)
		if err != nil {
			return nil, fmt.Errorf("closed pull requests: %w", err)
		}
		for _, pr := range closed {
			out = append(out, PRStatus{PR: pr})
		}
	}
	slices.SortStableFunc(out, func(a, b PRStatus) int {
		return cmp.Or(updated(b.PR).Compare(updated(a.PR)), cmp.Compare(b.Number, a.Number))
	})
	return out, nil
}

// recentlyClosed is up to n agent PRs merged or closed, newest first.
func (s *Service) recentlyClosed(ctx context.Context, n int) ([]PR, error) {
	var prs []PR
	var err error
	if rl, ok := s.f.(RecentLister); ok {
		// Non-agent PRs share the page: ask for more than n.
		prs, err = rl.RecentlyClosed(ctx, 100)
	} else {
		prs, err = s.f.ListPRs(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	var out []PR
	for _, p := range prs {
		if p.State != StateOpen && IsAgentBranch(p.Branch) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b PR) int { return updated(b).Compare(updated(a)) })
	return out[:min(len(out), n)], nil
}

// PRViews is PRStatus as the agent's GET /prs shows it, each PR stamped
// with the agent's cluster (Options.Cluster).
func (s *Service) PRViews(ctx context.Context, recent int) ([]api.PRView, error) {
	st, err := s.PRStatus(ctx, recent)
	if err != nil {
		return nil, err
	}
	out := make([]api.PRView, len(st))
	for i, p := range st {
		out[i] = api.PRView{Number: p.Number, Title: p.Title, URL: p.URL, Branch: p.Branch, Base: p.Base, HeadSHA: p.HeadSHA,
			Author: p.Author, Opener: p.Opener, State: p.State, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: updated(p.PR).UTC(),
			Reviews: p.Reviews, ReviewStale: p.ReviewStale, Cluster: s.opts.Cluster}
		if r := p.Review; r != nil {
			out[i].Review = &api.ReviewView{Reviewer: r.Reviewer, Verdict: r.Verdict, Body: r.Body, At: r.At.UTC(), Commit: r.Commit}
		}
	}
	return out, nil
}
