package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-github/v93/github"
)

// GitHub is a Forge over a GitHub (or GitHub Enterprise) repository through
// the REST API (go-github).
//
// Agents may share one token, so the forge user cannot always tell them
// apart. The agent identity therefore travels in trailers the forge writes
// and reads: "proposed-by: <agent>" in a PR body and "reviewed-by: <agent>"
// as the last line of a review body. Without a trailer the GitHub login is
// the identity. The account the credentials act as is another matter:
// GitHub refuses an approval from the PR's opener, so with one shared token
// Vera cannot approve Sol's PRs and merge_if_trivial leaves them for a
// person (Account, docs/MANUAL.md "Give Vera her own forge identity").
type GitHub struct {
	c                 *github.Client
	owner, repo, base string
	// whoami asks the forge which account the credentials act as (GET
	// /user for a token); account remembers the first answer.
	whoami  func(ctx context.Context) (string, error)
	mu      sync.Mutex
	account string
}

var (
	_ Forge            = (*GitHub)(nil)
	_ HeadPinnedMerger = (*GitHub)(nil)
	_ AccountForge     = (*GitHub)(nil)
)

// NewGitHub returns a forge for owner/repo with base as the PR base branch.
// apiURL is GITHUB_API_URL ("" = https://api.github.com; a GitHub
// Enterprise or test server otherwise, used as given). httpClient may be nil.
func NewGitHub(owner, repo, base, token, apiURL string, httpClient *http.Client) (*GitHub, error) {
	if token == "" {
		return nil, errors.New("github forge: a token is required (GITHUB_TOKEN)")
	}
	c, err := githubClient(apiURL, httpClient, github.WithAuthToken(token))
	if err != nil {
		return nil, err
	}
	return newGitHub(owner, repo, base, c, nil)
}

func newGitHub(owner, repo, base string, c *github.Client, whoami func(context.Context) (string, error)) (*GitHub, error) {
	if owner == "" || repo == "" || base == "" {
		return nil, errors.New("github forge: owner, repository and base branch are required")
	}
	g := &GitHub{c: c, owner: owner, repo: repo, base: base, whoami: whoami}
	if g.whoami == nil {
		g.whoami = g.userLogin
	}
	return g, nil
}

// githubClient is a go-github client for apiURL ("" = api.github.com).
func githubClient(apiURL string, httpClient *http.Client, extra ...github.ClientOptionsFunc) (*github.Client, error) {
	opts := append([]github.ClientOptionsFunc{github.WithUserAgent("kubecrew-gitops")}, extra...)
	if httpClient != nil {
		opts = append(opts, github.WithHTTPClient(httpClient))
	}
	if apiURL != "" {
		if err := validAPIURL(apiURL); err != nil {
			return nil, err
		}
		opts = append(opts, github.WithURLs(&apiURL, &apiURL))
	}
	c, err := github.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("github forge: %w", err)
	}
	return c, nil
}

func validAPIURL(apiURL string) error {
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("github forge: invalid API URL %q", apiURL)
	}
	return nil
}

// ghErr turns a go-github error into ours: 404 → ErrNotFound.
func ghErr(what string, resp *github.Response, err error) error {
	if err == nil {
		return nil
	}
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %s: %w", ErrNotFound, what, err)
	}
	return fmt.Errorf("github: %s: %w", what, err)
}

func status(resp *github.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// ReadFile implements Forge (contents API at the base branch).
func (g *GitHub) ReadFile(ctx context.Context, path string) ([]byte, error) {
	p, err := cleanRepoPath(path, false)
	if err != nil {
		return nil, err
	}
	fc, _, err := g.getFile(ctx, p, g.base)
	if err != nil {
		return nil, err
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("github: decoding %s: %w", p, err)
	}
	return []byte(s), nil
}

func (g *GitHub) getFile(ctx context.Context, p, ref string) (*github.RepositoryContent, *github.Response, error) {
	fc, dir, resp, err := g.c.Repositories.GetContents(ctx, g.owner, g.repo, p, &github.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, resp, ghErr("reading "+p, resp, err)
	}
	if fc == nil || dir != nil {
		return nil, resp, fmt.Errorf("%s is a directory, not a file", p)
	}
	if fc.GetType() != "file" {
		return nil, resp, fmt.Errorf("%s is a %s, not a file", p, fc.GetType())
	}
	if fc.GetEncoding() == "none" {
		return nil, resp, fmt.Errorf("%s is too large for the contents API", p)
	}
	return fc, resp, nil
}

// ListFiles implements Forge (one recursive tree of the base branch).
func (g *GitHub) ListFiles(ctx context.Context, dir string) ([]string, error) {
	d, err := cleanRepoPath(dir, true)
	if err != nil {
		return nil, err
	}
	tree, resp, err := g.c.Git.GetTree(ctx, g.owner, g.repo, g.base, true)
	if err != nil {
		return nil, ghErr("listing "+g.base, resp, err)
	}
	if tree.GetTruncated() {
		return nil, fmt.Errorf("github: the tree of %s is too large to list in one call", g.base)
	}
	var out []string
	for _, e := range tree.Entries {
		if e.GetType() != "blob" {
			continue
		}
		if p := e.GetPath(); d == "" || strings.HasPrefix(p, d+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// OpenPR implements Forge: look for an open PR of branch; create (or reset)
// the branch at the base head; commit the file on it (contents PUT); open
// the PR. The REST calls, in order: GET pulls?head=, GET git/ref/heads/base,
// GET contents?ref=, POST git/refs (PATCH git/refs/heads/branch when the
// branch is left over from a closed PR), PUT contents, POST pulls.
func (g *GitHub) OpenPR(ctx context.Context, branch, path string, content []byte, title, body, author string) (PR, error) {
	p, err := cleanRepoPath(path, false)
	if err != nil {
		return PR{}, err
	}
	if branch == "" || branch == g.base || strings.ContainsAny(branch, " ~^:?*[\\") {
		return PR{}, fmt.Errorf("invalid branch name %q", branch)
	}
	if strings.TrimSpace(title) == "" {
		return PR{}, errors.New("a pull request needs a title")
	}
	if existing, ok, err := g.openPRFor(ctx, branch); err != nil {
		return PR{}, err
	} else if ok {
		return existing, &PRExistsError{PR: existing}
	}
	ref, resp, err := g.c.Git.GetRef(ctx, g.owner, g.repo, "heads/"+g.base)
	if err != nil {
		return PR{}, ghErr("reading "+g.base, resp, err)
	}
	baseSHA := ref.GetObject().GetSHA()
	var fileSHA *string
	fc, resp, err := g.getFile(ctx, p, baseSHA)
	switch {
	case err == nil:
		old, derr := fc.GetContent()
		if derr == nil && old == string(content) {
			return PR{}, fmt.Errorf("%s on %s already has this content; there is nothing to propose", p, g.base)
		}
		fileSHA = fc.SHA
	case status(resp) == http.StatusNotFound:
	default:
		return PR{}, err
	}
	_, resp, err = g.c.Git.CreateRef(ctx, g.owner, g.repo, github.CreateRef{Ref: "refs/heads/" + branch, SHA: baseSHA})
	if err != nil {
		if status(resp) != http.StatusUnprocessableEntity {
			return PR{}, ghErr("creating branch "+branch, resp, err)
		}
		// The branch exists without an open PR (its PR was closed or
		// merged): start it again from the base.
		force := true
		if _, resp, err := g.c.Git.UpdateRef(ctx, g.owner, g.repo, "heads/"+branch, github.UpdateRef{SHA: baseSHA, Force: &force}); err != nil {
			return PR{}, ghErr("resetting branch "+branch, resp, err)
		}
	}
	msg := title
	_, resp, err = g.c.Repositories.CreateFile(ctx, g.owner, g.repo, p, &github.RepositoryContentFileOptions{
		Message: &msg, Content: content, SHA: fileSHA, Branch: &branch,
	})
	if err != nil {
		return PR{}, ghErr("committing "+p+" on "+branch, resp, err)
	}
	body = withTrailer(body, "proposed-by", author)
	pr, resp, err := g.c.PullRequests.Create(ctx, g.owner, g.repo, github.CreatePullRequest{
		Title: &title, Head: branch, Base: g.base, Body: &body,
	})
	if err != nil {
		if status(resp) == http.StatusUnprocessableEntity {
			if existing, ok, lerr := g.openPRFor(ctx, branch); lerr == nil && ok {
				return existing, &PRExistsError{PR: existing}
			}
		}
		return PR{}, ghErr("opening the pull request", resp, err)
	}
	out := g.toPR(pr)
	out.Files = []string{p}
	return out, nil
}

func (g *GitHub) openPRFor(ctx context.Context, branch string) (PR, bool, error) {
	prs, resp, err := g.c.PullRequests.List(ctx, g.owner, g.repo, &github.PullRequestListOptions{
		State: "open", Head: g.owner + ":" + branch, ListOptions: github.ListOptions{PerPage: 10},
	})
	if err != nil {
		return PR{}, false, ghErr("listing pull requests of "+branch, resp, err)
	}
	for _, p := range prs {
		if p.GetHead().GetRef() == branch {
			return g.toPR(p), true, nil
		}
	}
	return PR{}, false, nil
}

// ListPRs implements Forge (PRs onto the base branch, every page).
func (g *GitHub) ListPRs(ctx context.Context, state string) ([]PR, error) {
	s, err := validState(state)
	if err != nil {
		return nil, err
	}
	apiState := "all"
	switch s {
	case StateOpen:
		apiState = "open"
	case StateMerged, StateClosed:
		apiState = "closed"
	}
	opts := &github.PullRequestListOptions{State: apiState, Base: g.base, Sort: "created", Direction: "asc", ListOptions: github.ListOptions{PerPage: 100}}
	var out []PR
	for page := 0; page < 50; page++ {
		prs, resp, err := g.c.PullRequests.List(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, ghErr("listing pull requests", resp, err)
		}
		for _, p := range prs {
			x := g.toPR(p)
			if s == "" || x.State == s {
				out = append(out, x)
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, errors.New("github: more than 5000 pull requests; refusing to list them all")
}

// RecentlyClosed implements RecentLister: one page of the PRs onto the
// base branch closed or merged, most recently updated first.
func (g *GitHub) RecentlyClosed(ctx context.Context, n int) ([]PR, error) {
	opts := &github.PullRequestListOptions{State: "closed", Base: g.base, Sort: "updated", Direction: "desc",
		ListOptions: github.ListOptions{PerPage: min(max(n, 1), 100)}}
	prs, resp, err := g.c.PullRequests.List(ctx, g.owner, g.repo, opts)
	if err != nil {
		return nil, ghErr("listing closed pull requests", resp, err)
	}
	out := make([]PR, 0, len(prs))
	for _, p := range prs {
		out = append(out, g.toPR(p))
	}
	return out, nil
}

// GetPR implements Forge.
func (g *GitHub) GetPR(ctx context.Context, number int) (PR, error) {
	pr, resp, err := g.c.PullRequests.Get(ctx, g.owner, g.repo, number)
	if err != nil {
		return PR{}, ghErr(fmt.Sprintf("pull request #%d", number), resp, err)
	}
	return g.toPR(pr), nil
}

// Diff implements Forge (the PR with Accept: application/vnd.github.v3.diff).
func (g *GitHub) Diff(ctx context.Context, number int) (string, error) {
	d, resp, err := g.c.PullRequests.GetRaw(ctx, g.owner, g.repo, number, github.RawOptions{Type: github.Diff})
	if err != nil {
		return "", ghErr(fmt.Sprintf("diff of #%d", number), resp, err)
	}
	return d, nil
}

// Reviews implements Forge. Dismissed and pending reviews are left out.
func (g *GitHub) Reviews(ctx context.Context, number int) ([]Review, error) {
	opts := &github.ListOptions{PerPage: 100}
	var out []Review
	for page := 0; page < 20; page++ {
		rs, resp, err := g.c.PullRequests.ListReviews(ctx, g.owner, g.repo, number, opts)
		if err != nil {
			return nil, ghErr(fmt.Sprintf("reviews of #%d", number), resp, err)
		}
		for _, r := range rs {
			v := ""
			switch r.GetState() {
			case "APPROVED":
				v = VerdictApprove
			case "CHANGES_REQUESTED":
				v = VerdictRequestChanges
			case "COMMENTED":
				v = VerdictComment
			default:
				continue
			}
			who := trailer(r.GetBody(), "reviewed-by")
			if who == "" {
				who = r.GetUser().GetLogin()
			}
			out = append(out, Review{Reviewer: who, Verdict: v, Body: r.GetBody(), At: r.GetSubmittedAt().Time, Commit: r.GetCommitID()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, errors.New("github: too many reviews")
}

// SubmitReview implements Forge. The reviewer is written as a
// "reviewed-by:" trailer; r.Commit, when set, pins the review to that head.
func (g *GitHub) SubmitReview(ctx context.Context, number int, r Review) error {
	if err := validVerdict(r.Verdict); err != nil {
		return err
	}
	if strings.TrimSpace(r.Reviewer) == "" {
		return errors.New("a review needs a reviewer")
	}
	event := map[string]string{VerdictApprove: "APPROVE", VerdictRequestChanges: "REQUEST_CHANGES", VerdictComment: "COMMENT"}[r.Verdict]
	body := withTrailer(r.Body, "reviewed-by", r.Reviewer)
	req := &github.PullRequestReviewRequest{Body: &body, Event: &event}
	if r.Commit != "" {
		req.CommitID = &r.Commit
	}
	_, resp, err := g.c.PullRequests.CreateReview(ctx, g.owner, g.repo, number, req)
	if status(resp) == http.StatusUnprocessableEntity && selfApproval(err) {
		return fmt.Errorf("%w: reviewing #%d: %w", ErrSelfApproval, number, err)
	}
	return ghErr(fmt.Sprintf("reviewing #%d", number), resp, err)
}

// Merge implements Forge.
func (g *GitHub) Merge(ctx context.Context, number int, method string) error {
	return g.MergePinned(ctx, number, method, "")
}

// MergePinned implements HeadPinnedMerger (the merge API's "sha").
func (g *GitHub) MergePinned(ctx context.Context, number int, method, headSHA string) error {
	if method == "" {
		method = "merge"
	}
	if method != "merge" && method != "squash" && method != "rebase" {
		return fmt.Errorf("unknown merge method %q (want merge, squash or rebase)", method)
	}
	if err := g.mergeable(ctx, number); err != nil {
		return err
	}
	res, resp, err := g.c.PullRequests.Merge(ctx, g.owner, g.repo, number, "", &github.PullRequestOptions{MergeMethod: method, SHA: headSHA})
	if err != nil {
		switch {
		case status(resp) == http.StatusConflict && headSHA != "":
			return fmt.Errorf("%w: #%d: %w", ErrHeadMoved, number, err)
		case status(resp) == http.StatusMethodNotAllowed:
			// 405: protection (a required check or review missing) or a PR
			// GitHub cannot merge; its message says which.
			return g.protectionError(ctx, number, apiMessage(err))
		}
		return ghErr(fmt.Sprintf("merging #%d", number), resp, err)
	}
	if !res.GetMerged() {
		return fmt.Errorf("github: #%d was not merged: %s", number, res.GetMessage())
	}
	return nil
}

func (g *GitHub) toPR(p *github.PullRequest) PR {
	state := p.GetState()
	if p.MergedAt != nil || p.GetMerged() {
		state = StateMerged
	}
	author := trailer(p.GetBody(), "proposed-by")
	if author == "" {
		author = p.GetUser().GetLogin()
	}
	return PR{
		Number: p.GetNumber(), Title: p.GetTitle(), Body: p.GetBody(),
		Branch: p.GetHead().GetRef(), Base: p.GetBase().GetRef(), Author: author,
		State: state, CreatedAt: p.GetCreatedAt().Time, UpdatedAt: p.GetUpdatedAt().Time, URL: p.GetHTMLURL(), HeadSHA: p.GetHead().GetSHA(),
		Opener: p.GetUser().GetLogin(),
	}
}

// trailer returns the value of "key: value" in the trailing block of body
// (its last non-empty lines up to the first blank line), or "".
func trailer(body, key string) string {
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			break
		}
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// withTrailer adds "key: value" to the trailing block of body, before a
// final "finding-key:" line (which stays last), unless it is there.
func withTrailer(body, key, value string) string {
	if value == "" || trailer(body, key) == value {
		return body
	}
	line := key + ": " + value
	b := strings.TrimRight(body, "\n")
	if b == "" {
		return line
	}
	i := strings.LastIndex(b, "\n")
	last := b[i+1:]
	if strings.HasPrefix(strings.TrimSpace(last), "finding-key:") {
		return b[:i+1] + line + "\n" + last
	}
	if trailer(b, "finding-key") == "" && !strings.Contains(last, ":") {
		return b + "\n\n" + line
	}
	return b + "\n" + line
}
