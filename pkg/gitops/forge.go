package gitops

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// PR states.
const (
	StateOpen   = "open"
	StateMerged = "merged"
	StateClosed = "closed"
)

// Review verdicts.
const (
	VerdictApprove        = "approve"
	VerdictRequestChanges = "request_changes"
	VerdictComment        = "comment"
)

// AgentBranchPrefix is the only branch prefix the agents' PR tools reach.
const AgentBranchPrefix = "agent/fix/"

// PR is a pull request as every forge reports it.
type PR struct {
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Branch    string    `json:"branch"`
	Base      string    `json:"base"`
	Author    string    `json:"author"` // the proposing agent's slug (or the forge user when no agent is named)
	State     string    `json:"state"`  // open|merged|closed
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is the PR's last change on the forge (opened, reviewed,
	// merged, closed, pushed to); zero where the forge did not record it.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	URL       string    `json:"url"`
	Files     []string  `json:"files,omitempty"` // informational; the gates trust only the diff
	// HeadSHA is the branch head the forge reported with the PR. A review
	// records the head it saw, and a merge can be pinned to it.
	HeadSHA string `json:"head_sha,omitempty"`
	// Opener is the forge account that opened the PR (GitHub's user.login),
	// "" where the forge has no accounts (the local forge). Author is the
	// agent the PR names; Opener is whose credentials opened it.
	Opener string `json:"opener,omitempty"`
}

// Review is one review of a PR.
type Review struct {
	Reviewer string    `json:"reviewer"`
	Verdict  string    `json:"verdict"` // approve|request_changes|comment
	Body     string    `json:"body"`
	At       time.Time `json:"at"`
	// Commit is the PR head the review was given on ("" = not recorded).
	Commit string `json:"commit,omitempty"`
}

// Forge is a Git hosting service holding the GitOps repository: files are
// read from the base branch, changes arrive as pull requests.
type Forge interface {
	// ReadFile returns a file from the base branch; ErrNotFound when absent.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// ListFiles lists the files under dir on the base branch, recursively
	// ("" = the whole repository), as repository-relative paths.
	ListFiles(ctx context.Context, dir string) ([]string, error)
	// OpenPR creates branch from the base with one commit that sets path to
	// content, and opens a pull request from it. When the branch already has
	// an open PR it opens nothing and returns that PR with a *PRExistsError
	// (errors.Is(err, ErrPRExists)).
	OpenPR(ctx context.Context, branch, path string, content []byte, title, body, author string) (PR, error)
	// ListPRs lists PRs in state (open|merged|closed; "" or "all" = every state).
	ListPRs(ctx context.Context, state string) ([]PR, error)
	GetPR(ctx context.Context, number int) (PR, error)
	// Diff returns the PR's unified diff against its base.
	Diff(ctx context.Context, number int) (string, error)
	Reviews(ctx context.Context, number int) ([]Review, error)
	SubmitReview(ctx context.Context, number int, r Review) error
	// Merge merges the PR into its base ("merge" = merge commit, the default;
	// "squash"; local forge also "fast-forward").
	Merge(ctx context.Context, number int, method string) error
}

// HeadPinnedMerger is a Forge that can merge a PR only if its branch head is
// still the commit that was checked: a push between the check and the merge
// fails the merge instead of merging unchecked changes. Both forges here
// implement it; merge_if_trivial refuses a forge that does not.
type HeadPinnedMerger interface {
	MergePinned(ctx context.Context, number int, method, headSHA string) error
}

// AccountForge is a Forge whose credentials act as one account on the
// forge (GitHub: a user, or an App's bot). Two agents with one account are
// one identity to the forge, whatever the trailers say: GitHub refuses an
// approval from a PR's opener, and merge_if_trivial refuses to merge then
// (docs/MANUAL.md, "Give Vera her own forge identity"). The local forge has no
// accounts and does not implement it.
type AccountForge interface {
	// Account is the login these credentials act as, asked of the forge
	// once and remembered.
	Account(ctx context.Context) (string, error)
}

// ErrSelfApproval is wrapped when the forge refuses an approval because the
// reviewer's account opened the PR (GitHub's 422 "Can not approve your own
// pull request").
var ErrSelfApproval = errors.New("the forge refuses an approval from the account that opened the pull request")

// ErrProtected is wrapped when the base branch's protection rules (required
// reviews, required status checks, …) block a merge. The rules are never
// bypassed: the PR waits until they are met.
var ErrProtected = errors.New("branch protection blocks the merge")

// ErrHeadMoved is wrapped when a pinned merge or a review finds the branch
// at another commit than expected.
var ErrHeadMoved = errors.New("the pull request's branch moved since it was read")

// ErrPRExists is wrapped by OpenPR when the branch already has an open PR.
var ErrPRExists = errors.New("an open pull request already exists for this branch")

// PRExistsError carries the PR that already exists.
type PRExistsError struct{ PR PR }

func (e *PRExistsError) Error() string {
	return fmt.Sprintf("%v: #%d (%s)", ErrPRExists, e.PR.Number, e.PR.Branch)
}

func (e *PRExistsError) Unwrap() error { return ErrPRExists }

// IsAgentBranch reports whether branch is an agent-proposed fix branch.
func IsAgentBranch(branch string) bool {
	return strings.HasPrefix(branch, AgentBranchPrefix) && len(branch) > len(AgentBranchPrefix)
}

// BranchFor returns the deterministic branch of a finding key.
func BranchFor(findingKey string) (string, error) {
	if err := validKey(findingKey); err != nil {
		return "", err
	}
	return AgentBranchPrefix + findingKey, nil
}

func validKey(k string) error {
	if k == "" || len(k) > 120 {
		return fmt.Errorf("finding key %q must be 1-120 characters", k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("finding key %q may hold only a-z, 0-9 and '-' (use api.Finding.DeriveKey)", k)
		}
	}
	if k[0] == '-' || k[len(k)-1] == '-' {
		return fmt.Errorf("finding key %q may not start or end with '-'", k)
	}
	return nil
}

func validState(s string) (string, error) {
	switch s {
	case "", "all":
		return "", nil
	case StateOpen, StateMerged, StateClosed:
		return s, nil
	}
	return "", fmt.Errorf("unknown PR state %q (want open, merged, closed or all)", s)
}

func validVerdict(v string) error {
	switch v {
	case VerdictApprove, VerdictRequestChanges, VerdictComment:
		return nil
	}
	return fmt.Errorf("unknown verdict %q (want approve, request_changes or comment)", v)
}

// cleanRepoPath validates a repository-relative path. dir allows "".
func cleanRepoPath(p string, dir bool) (string, error) {
	if p == "" || p == "." || p == "/" {
		if dir {
			return "", nil
		}
		return "", errors.New("a file path is required")
	}
	if strings.ContainsAny(p, "\x00\n\r\\") || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("invalid repository path %q", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") || c == "." {
		return "", fmt.Errorf("invalid repository path %q", p)
	}
	for _, seg := range strings.Split(c, "/") {
		if seg == ".git" {
			return "", fmt.Errorf("invalid repository path %q", p)
		}
	}
	return c, nil
}
