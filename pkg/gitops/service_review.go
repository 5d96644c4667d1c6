package gitops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// PRView is a PR as get_pr shows it.
type PRView struct {
	PR        PR
	Reviews   []Review
	Diff      string // possibly truncated
	FullChars int
	Truncated bool
	// Suggested is ReviewPR's verdict and body over what was seen.
	SuggestedVerdict, SuggestedBody string
}

// GetPR reads an agent PR with its reviews and diff, truncating a diff
// longer than DiffMaxChars, and runs ReviewPR on it.
func (s *Service) GetPR(ctx context.Context, number int) (*PRView, error) {
	pr, err := s.agentPR(ctx, number)
	if err != nil {
		return nil, err
	}
	rv, err := s.f.Reviews(ctx, number)
	if err != nil {
		return nil, fmt.Errorf("reviews of #%d: %w", number, err)
	}
	d, err := s.f.Diff(ctx, number)
	if err != nil {
		return nil, fmt.Errorf("diff of #%d: %w", number, err)
	}
	v := &PRView{PR: pr, Reviews: rv, Diff: d, FullChars: len(d)}
	if len(d) > s.opts.DiffMaxChars {
		v.Truncated = true
		n := s.opts.DiffMaxChars
		for n > 0 && !utf8.RuneStart(d[n]) {
			n--
		}
		v.Diff = d[:n]
	}
	v.SuggestedVerdict, v.SuggestedBody = ReviewPR(pr, v.Diff, v.Truncated, s.manifestOf(ctx, d))
	return v, nil
}

// manifestOf reads the base version of the one file a diff touches, or nil.
func (s *Service) manifestOf(ctx context.Context, diff string) []byte {
	files, err := parseUnifiedDiff(diff)
	if err != nil || len(files) != 1 {
		return nil
	}
	p, err := diffPath(files[0].OldPath, "a/")
	if err != nil || p == "" {
		return nil
	}
	b, err := s.f.ReadFile(ctx, p)
	if err != nil {
		return nil
	}
	return b
}

// agentPR fetches a PR and refuses anything not on an agent/fix/ branch.
func (s *Service) agentPR(ctx context.Context, number int) (PR, error) {
	if number <= 0 {
		return PR{}, fmt.Errorf("invalid PR number %d", number)
	}
	pr, err := s.f.GetPR(ctx, number)
	if err != nil {
		return PR{}, err
	}
	if !IsAgentBranch(pr.Branch) {
		return PR{}, fmt.Errorf("PR #%d is on branch %q: only agent PRs (%s…) are reachable from this tool; human and bot PRs are not an agent's to touch", number, pr.Branch, AgentBranchPrefix)
	}
	return pr, nil
}

// ListAgentPRs lists PRs on agent/fix/ branches in state ("" = open).
func (s *Service) ListAgentPRs(ctx context.Context, state string) ([]PR, error) {
	if state == "" {
		state = StateOpen
	}
	prs, err := s.f.ListPRs(ctx, state)
	if err != nil {
		return nil, err
	}
	var out []PR
	for _, p := range prs {
		if IsAgentBranch(p.Branch) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	if state == StateOpen {
		_, stale := s.splitStale(out)
		s.opts.Metrics.setStale(len(stale))
	}
	return out, nil
}

// ReviewResult is what Review submitted.
type ReviewResult struct {
	PR PR
	// Verdict is the verdict submitted: an approval the forge would refuse
	// (one account for the reviewer and the PR's opener) goes in as a
	// comment that says so.
	Verdict string
	// Note says why Verdict differs from the one asked for ("" when not).
	Note string
}

// Review submits a review as this agent. It refuses: no identity; a PR not
// on an agent/fix/ branch or not open; the agent's own PR (or a PR whose
// author is unknown); a request_changes or comment without a substantive
// body; and an approval of a diff longer than DiffMaxChars, which no one
// could have seen whole. An approval from the account that opened the PR
// (one identity shared by the agents) becomes a comment saying that a
// person must approve and merge it: never an approval in another form.
func (s *Service) Review(ctx context.Context, number int, verdict, body string) (*ReviewResult, error) {
	me, err := s.identity()
	if err != nil {
		return nil, err
	}
	if err := tools.Check(ctx, ActionPRReview); err != nil {
		return nil, err
	}
	if err := validVerdict(verdict); err != nil {
		return nil, err
	}
	pr, err := s.agentPR(ctx, number)
	if err != nil {
		return nil, err
	}
	if pr.State != StateOpen {
		return nil, fmt.Errorf("PR #%d is %s; only open PRs are reviewed", number, pr.State)
	}
	if err := notAuthor(pr, me, "review"); err != nil {
		return nil, err
	}
	if verdict != VerdictApprove {
		if err := substantive(body); err != nil {
			return nil, fmt.Errorf("a %s review needs a reason: %w", verdict, err)
		}
	} else {
		d, err := s.f.Diff(ctx, number)
		if err != nil {
			return nil, fmt.Errorf("reading the diff before approving: %w", err)
		}
		if len(d) > s.opts.DiffMaxChars {
			return nil, fmt.Errorf("approval refused: the diff of #%d is %d characters, over the %d that can be shown whole — nobody has seen all of it; request changes or leave it for a person", number, len(d), s.opts.DiffMaxChars)
		}
		if strings.TrimSpace(body) == "" {
			body = "Approved."
		}
	}
	res := &ReviewResult{PR: pr, Verdict: verdict}
	if verdict == VerdictApprove {
		if acct, shared, _ := s.sharedAccount(ctx, pr); shared {
			res.Verdict, res.Note = VerdictComment, sharedIdentityNote(me, acct)
		}
	}
	submit := func() error {
		b := body
		if res.Note != "" {
			b = res.Note + "\n\n" + body
		}
		return s.f.SubmitReview(ctx, number, Review{Reviewer: me, Verdict: res.Verdict, Body: b, At: s.opts.Now(), Commit: pr.HeadSHA})
	}
	err = submit()
	if errors.Is(err, ErrSelfApproval) && res.Verdict == VerdictApprove {
		// The forge knows the reviewer opened the PR even though the
		// account could not be asked: say so in a comment instead.
		res.Verdict, res.Note = VerdictComment, sharedIdentityNote(me, pr.Opener)
		err = submit()
	}
	if err != nil {
		return nil, err
	}
	s.opts.Logger.Info("gitops: review submitted", zap.Int("pr", number), zap.String("verdict", res.Verdict), zap.Bool("shared_identity", res.Note != ""))
	return res, nil
}

// sharedAccount reports whether this agent's forge account opened pr: one
// identity for the author and the reviewer, whatever the trailers say.
// A forge without accounts (local) has none to share.
func (s *Service) sharedAccount(ctx context.Context, pr PR) (account string, shared bool, err error) {
	af, ok := s.f.(AccountForge)
	if !ok {
		return "", false, nil
	}
	acct, err := af.Account(ctx)
	if err != nil {
		return "", false, fmt.Errorf("asking the forge which account this agent acts as: %w", err)
	}
	return acct, pr.Opener != "" && strings.EqualFold(acct, pr.Opener), nil
}

// SharedIdentityDoc is where docs/MANUAL.md tells how to give each agent its
// own forge identity.
const SharedIdentityDoc = `docs/MANUAL.md, "Give Vera her own forge identity"`

func sharedIdentityNote(me, account string) string {
	return fmt.Sprintf("Not approved: I (%s) act as the forge account %s, the same account that opened this pull request, "+
		"and GitHub does not accept an approval from a pull request's author. This pull request waits for a person to approve and merge it. "+
		"To let the reviewer approve and merge, give it its own forge identity (%s).", me, account, SharedIdentityDoc)
}

func notAuthor(pr PR, me, what string) error {
	author := CanonicalAgent(pr.Author)
	if author == "" {
		return fmt.Errorf("PR #%d has no recorded author, so this cannot be shown not to be self-%s; refusing", pr.Number, what)
	}
	if author == me {
		return fmt.Errorf("PR #%d was proposed by %s — you; the proposer never %ss its own PR", pr.Number, pr.Author, what)
	}
	return nil
}

// substantive requires a body of real words: at least 20 letters in at
// least four words, three of them different.
func substantive(body string) error {
	words := strings.FieldsFunc(body, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	letters := 0
	distinct := map[string]bool{}
	n := 0
	for _, w := range words {
		if len([]rune(w)) < 2 {
			continue
		}
		n++
		letters += len([]rune(w))
		distinct[strings.ToLower(w)] = true
	}
	if letters < 20 || n < 4 || len(distinct) < 3 {
		return errors.New("say what is wrong and what to change, in a sentence or two of real words")
	}
	return nil
}

// MergeResult is merge_if_trivial's answer.
type MergeResult struct {
	PR     PR
	Merged bool
	Reason string // why not, when not merged
	Old    string
	New    string
}

// MergeIfTrivial merges a PR only when TrivialMergeCheck and
// VerifyDiffOnManifest both accept it, re-deriving everything from the
// diff, the reviews and the base manifest, and pins the merge to the head
// that was checked. Anything else is left for a human with the reason.
func (s *Service) MergeIfTrivial(ctx context.Context, number int) (*MergeResult, error) {
	me, err := s.identity()
	if err != nil {
		return nil, err
	}
	if err := tools.Check(ctx, ActionMergeTrivial); err != nil {
		return nil, err
	}
	pr, err := s.agentPR(ctx, number)
	if err != nil {
		return nil, err
	}
	if err := notAuthor(pr, me, "merge"); err != nil {
		return nil, err
	}
	if acct, shared, err := s.sharedAccount(ctx, pr); err != nil || shared {
		s.opts.Metrics.mergeCheck("refused")
		reason := fmt.Sprintf("one shared identity: this agent (%s) acts as the forge account %s, which also opened the PR, "+
			"so the forge takes no approval from it and merge_if_trivial does not merge; a person must approve and merge it (%s)", me, acct, SharedIdentityDoc)
		if err != nil {
			reason = fmt.Sprintf("it cannot be shown that this agent's forge account did not open the PR (%v); a person must approve and merge it", err)
		}
		s.opts.Logger.Info("gitops: merge_if_trivial refused", zap.Int("pr", number), zap.String("reason", reason))
		return &MergeResult{PR: pr, Reason: reason}, nil
	}
	pin, ok := s.f.(HeadPinnedMerger)
	if !ok || pr.HeadSHA == "" {
		s.opts.Metrics.mergeCheck("refused")
		return &MergeResult{PR: pr, Reason: "the forge cannot pin the merge to the checked commit; left for a human"}, nil
	}
	diff, err := s.f.Diff(ctx, number)
	if err != nil {
		s.opts.Metrics.mergeCheck("error")
		return nil, fmt.Errorf("diff of #%d: %w", number, err)
	}
	reviews, err := s.f.Reviews(ctx, number)
	if err != nil {
		s.opts.Metrics.mergeCheck("error")
		return nil, fmt.Errorf("reviews of #%d: %w", number, err)
	}
	refuse := func(err error) (*MergeResult, error) {
		s.opts.Metrics.mergeCheck("refused")
		s.opts.Logger.Info("gitops: merge_if_trivial refused", zap.Int("pr", number), zap.Error(err))
		return &MergeResult{PR: pr, Reason: strings.TrimPrefix(err.Error(), ErrNotTrivial.Error()+": ")}, nil
	}
	if err := TrivialMergeCheck(pr, diff, reviews); err != nil {
		return refuse(err)
	}
	mc, _ := analyseMemoryDiff(diff)
	base, err := s.f.ReadFile(ctx, mc.Path)
	if err != nil {
		return refuse(fmt.Errorf("the base version of %s could not be read: %w", mc.Path, err))
	}
	if err := VerifyDiffOnManifest(base, diff); err != nil {
		return refuse(err)
	}
	// The envelope judges the merge by the workload it changes: that
	// namespace's opt-in and mode, the workload's merge budget.
	wl, err := MergeTarget(base, diff, pr.Body)
	if err != nil {
		return refuse(fmt.Errorf("the workload this PR changes could not be established (%w); the envelope cannot judge it", err))
	}
	target := tools.Change{Namespace: wl.Namespace, Kind: wl.Kind, Name: wl.Name, Container: wl.Container, Old: mc.Old, New: mc.New,
		Change: fmt.Sprintf("merge PR #%d (%s)\n%s", number, pr.URL, diff)}
	if s.opts.Envelope != nil {
		v, err := s.opts.Envelope.Permit(ctx, ActionMergeTrivial, target)
		if err != nil {
			return nil, err
		}
		if !v.Act {
			s.opts.Metrics.mergeCheck("refused")
			return &MergeResult{PR: pr, Reason: v.Answer}, nil
		}
	}
	if err := pin.MergePinned(ctx, number, s.opts.MergeMethod, pr.HeadSHA); err != nil {
		if errors.Is(err, ErrHeadMoved) || errors.Is(err, ErrProtected) || errors.Is(err, ErrNotMergeable) {
			return refuse(err)
		}
		s.opts.Metrics.mergeCheck("error")
		return nil, fmt.Errorf("merging #%d: %w", number, err)
	}
	if s.opts.Envelope != nil {
		s.opts.Envelope.Done(ctx, ActionMergeTrivial, target)
	}
	s.opts.Metrics.mergeCheck("merged")
	s.opts.Logger.Info("gitops: trivial PR merged", zap.Int("pr", number), zap.String("old", mc.Old), zap.String("new", mc.New))
	pr.State = StateMerged
	return &MergeResult{PR: pr, Merged: true, Old: mc.Old, New: mc.New}, nil
}
