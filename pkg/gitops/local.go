package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Local is a Forge over a git repository on disk, driven by the git CLI.
// Branches, commits, diffs and merges are real git objects and refs, made
// with plumbing (a private index file, commit-tree, update-ref) so the
// repository's working tree and index are never touched: a bare repository
// (InitLocalRepo) is the intended shape. Pull requests and reviews, which git
// has no notion of, are records in <git-dir>/kubecrew/prs.json, guarded by a
// mutex and a lock file (several agent processes may share one repository).
type Local struct {
	git     git
	base    string
	dataDir string
	now     func() time.Time
	mu      sync.Mutex
}

var (
	_ Forge            = (*Local)(nil)
	_ HeadPinnedMerger = (*Local)(nil)
)

// LocalOption configures a Local forge.
type LocalOption func(*Local)

// WithLocalClock sets the clock that stamps PRs, reviews and commits.
func WithLocalClock(now func() time.Time) LocalOption {
	return func(l *Local) { l.now = now }
}

// NewLocal serves the git repository at repoPath (bare or not) with
// baseBranch as the base of every PR. The branch must exist.
func NewLocal(repoPath, baseBranch string, opts ...LocalOption) (*Local, error) {
	if repoPath == "" || baseBranch == "" {
		return nil, errors.New("local forge: repository path and base branch are required")
	}
	abs, err := filepath.Abs(repoPath)
	if err != nil {
		return nil, err
	}
	l := &Local{git: git{repo: abs}, base: baseBranch, now: time.Now}
	for _, o := range opts {
		o(l)
	}
	ctx := context.Background()
	gitDir, err := l.git.out(ctx, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return nil, fmt.Errorf("local forge: %s is not a git repository: %w", abs, err)
	}
	if _, err := l.git.out(ctx, "check-ref-format", "--branch", baseBranch); err != nil {
		return nil, fmt.Errorf("local forge: invalid base branch %q", baseBranch)
	}
	if _, err := l.git.out(ctx, "rev-parse", "--verify", "--quiet", l.baseRef()+"^{commit}"); err != nil {
		return nil, fmt.Errorf("local forge: base branch %q does not exist in %s", baseBranch, abs)
	}
	l.dataDir = filepath.Join(gitDir, "kubecrew")
	if err := os.MkdirAll(l.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("local forge: %w", err)
	}
	return l, nil
}

func (l *Local) baseRef() string { return "refs/heads/" + l.base }

// localPR is the stored record of a PR.
type localPR struct {
	PR
	Reviews   []Review `json:"reviews"`
	BaseSHA   string   `json:"base_sha"`             // base when opened
	Head      string   `json:"head"`                 // branch head when opened / merged
	MergeBase string   `json:"merge_base,omitempty"` // set when merged: the diff's left side
}

type localState struct {
	Next int        `json:"next"`
	PRs  []*localPR `json:"prs"`
}

// withState runs fn with the records loaded under both locks and saves
// them when fn reports a change.
func (l *Local) withState(fn func(st *localState) (save bool, err error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := lockFile(filepath.Join(l.dataDir, "lock"))
	if err != nil {
		return fmt.Errorf("local forge: lock: %w", err)
	}
	defer unlock()
	p := filepath.Join(l.dataDir, "prs.json")
	st := &localState{Next: 1}
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("local forge: %w", err)
	default:
		if err := json.Unmarshal(b, st); err != nil {
			return fmt.Errorf("local forge: %s is corrupt: %w", p, err)
		}
	}
	save, err := fn(st)
	if err != nil || !save {
		return err
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return fmt.Errorf("local forge: %w", err)
	}
	return os.Rename(tmp, p)
}

func (st *localState) find(number int) (*localPR, error) {
	for _, p := range st.PRs {
		if p.Number == number {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: pull request #%d", ErrNotFound, number)
}

// findOpen is find for a change: the pull request must be open.
func (st *localState) findOpen(number int) (*localPR, error) {
	p, err := st.find(number)
	if err != nil {
		return nil, err
	}
	if p.State != StateOpen {
		return nil, fmt.Errorf("pull request #%d is %s", number, p.State)
	}
	return p, nil
}

// ReadFile implements Forge.
func (l *Local) ReadFile(ctx context.Context, path string) ([]byte, error) {
	p, err := cleanRepoPath(path, false)
	if err != nil {
		return nil, err
	}
	ls, err := l.git.out(ctx, "ls-tree", l.baseRef(), "--", p)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(ls)
	if len(f) < 3 {
		return nil, fmt.Errorf("%w: %s on %s", ErrNotFound, p, l.base)
	}
	if f[1] != "blob" {
		return nil, fmt.Errorf("%s is a directory, not a file", p)
	}
	s, err := l.git.run(ctx, gitOpts{}, "cat-file", "blob", f[2])
	return []byte(s), err
}

// ListFiles implements Forge.
func (l *Local) ListFiles(ctx context.Context, dir string) ([]string, error) {
	d, err := cleanRepoPath(dir, true)
	if err != nil {
		return nil, err
	}
	args := []string{"ls-tree", "-r", "-z", "--name-only", l.baseRef()}
	if d != "" {
		args = append(args, "--", d+"/")
	}
	s, err := l.git.run(ctx, gitOpts{}, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range strings.Split(s, "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// OpenPR implements Forge.
func (l *Local) OpenPR(ctx context.Context, branch, path string, content []byte, title, body, author string) (PR, error) {
	p, err := cleanRepoPath(path, false)
	if err != nil {
		return PR{}, err
	}
	if _, err := l.git.out(ctx, "check-ref-format", "--branch", branch); err != nil || branch == l.base {
		return PR{}, fmt.Errorf("invalid branch name %q", branch)
	}
	if strings.TrimSpace(title) == "" {
		return PR{}, errors.New("a pull request needs a title")
	}
	var pr PR
	err = l.withState(func(st *localState) (bool, error) {
		for _, x := range st.PRs {
			if x.Branch == branch && x.State == StateOpen {
				pr = x.PR
				return false, &PRExistsError{PR: x.PR}
			}
		}
		now := l.now().UTC()
		baseSHA, err := l.git.out(ctx, "rev-parse", "--verify", l.baseRef()+"^{commit}")
		if err != nil {
			return false, err
		}
		msg := title + "\n\n" + body + "\n"
		commit, changed, err := l.git.commitFiles(ctx, baseSHA, map[string][]byte{p: content}, msg, author, now)
		if err != nil {
			return false, err
		}
		if !changed {
			return false, fmt.Errorf("%s on %s already has this content; there is nothing to propose", p, l.base)
		}
		if _, err := l.git.out(ctx, "update-ref", "-m", "kubecrew: open PR", "refs/heads/"+branch, commit); err != nil {
			return false, err
		}
		rec := &localPR{PR: PR{
			Number: st.Next, Title: title, Body: body, Branch: branch, Base: l.base, Author: author,
			State: StateOpen, CreatedAt: now, UpdatedAt: now, Files: []string{p},
		}, BaseSHA: baseSHA, Head: commit}
		rec.URL = fmt.Sprintf("file://%s#pull/%d", l.git.repo, rec.Number)
		st.Next++
		st.PRs = append(st.PRs, rec)
		pr = rec.PR
		pr.HeadSHA = commit
		return true, nil
	})
	return pr, err
}

// ListPRs implements Forge.
func (l *Local) ListPRs(ctx context.Context, state string) ([]PR, error) {
	s, err := validState(state)
	if err != nil {
		return nil, err
	}
	var out []PR
	err = l.withState(func(st *localState) (bool, error) {
		for _, p := range st.PRs {
			if s == "" || p.State == s {
				x := p.PR
				x.HeadSHA = p.Head
				out = append(out, x)
			}
		}
		return false, nil
	})
	for i := range out {
		out[i].HeadSHA = l.head(ctx, out[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, err
}

// RecentlyClosed implements RecentLister: the n PRs merged or closed
// most recently.
func (l *Local) RecentlyClosed(ctx context.Context, n int) ([]PR, error) {
	var out []PR
	err := l.withState(func(st *localState) (bool, error) {
		for _, p := range st.PRs {
			if p.State != StateOpen {
				x := p.PR
				x.HeadSHA = p.Head
				out = append(out, x)
			}
		}
		return false, nil
	})
	sort.SliceStable(out, func(i, j int) bool { return updated(out[i]).After(updated(out[j])) })
	return out[:min(len(out), max(n, 0))], err
}

// GetPR implements Forge.
func (l *Local) GetPR(ctx context.Context, number int) (PR, error) {
	var pr PR
	err := l.withState(func(st *localState) (bool, error) {
		p, err := st.find(number)
		if err != nil {
			return false, err
		}
		pr = p.PR
		pr.HeadSHA = p.Head
		return false, nil
	})
	if err != nil {
		return PR{}, err
	}
	pr.HeadSHA = l.head(ctx, pr)
	return pr, nil
}

// head is the PR's branch head: the live ref while open, the recorded
// commit after.
func (l *Local) head(ctx context.Context, pr PR) string {
	if pr.State == StateOpen {
		if h, err := l.git.out(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+pr.Branch+"^{commit}"); err == nil {
			return h
		}
		return ""
	}
	return pr.HeadSHA
}

// Diff implements Forge: git diff base...branch for an open PR; the
// recorded merge base and head once merged or closed.
func (l *Local) Diff(ctx context.Context, number int) (string, error) {
	var rec localPR
	if err := l.withState(func(st *localState) (bool, error) {
		p, err := st.find(number)
		if err != nil {
			return false, err
		}
		rec = *p
		return false, nil
	}); err != nil {
		return "", err
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"}
	switch {
	case rec.State == StateOpen:
		args = append(args, l.baseRef()+"..."+"refs/heads/"+rec.Branch)
	case rec.MergeBase != "":
		args = append(args, rec.MergeBase, rec.Head)
	default:
		args = append(args, rec.BaseSHA, rec.Head)
	}
	return l.git.run(ctx, gitOpts{}, args...)
}

// Reviews implements Forge.
func (l *Local) Reviews(ctx context.Context, number int) ([]Review, error) {
	var out []Review
	err := l.withState(func(st *localState) (bool, error) {
		p, err := st.find(number)
		if err != nil {
			return false, err
		}
		out = append(out, p.Reviews...)
		return false, nil
	})
	return out, err
}

// SubmitReview implements Forge.
func (l *Local) SubmitReview(ctx context.Context, number int, r Review) error {
	if err := validVerdict(r.Verdict); err != nil {
		return err
	}
	if strings.TrimSpace(r.Reviewer) == "" {
		return errors.New("a review needs a reviewer")
	}
	return l.withState(func(st *localState) (bool, error) {
		p, err := st.findOpen(number)
		if err != nil {
			return false, err
		}
		if r.At.IsZero() {
			r.At = l.now().UTC()
		}
		x := p.PR
		x.HeadSHA = p.Head
		head := l.head(ctx, x)
		if r.Commit != "" && r.Commit != head {
			return false, fmt.Errorf("%w: #%d is at %.12s, the review was for %.12s", ErrHeadMoved, number, head, r.Commit)
		}
		r.Commit = head
		p.Reviews = append(p.Reviews, r)
		p.UpdatedAt = r.At
		return true, nil
	})
}

// Merge implements Forge. method: "merge" (or "") makes a merge commit,
// "squash" one commit with the branch's changes, "fast-forward" moves the
// base to the branch head and fails when that is not a fast-forward. The
// base ref is moved with compare-and-swap: a concurrent change fails the
// merge instead of being lost.
func (l *Local) Merge(ctx context.Context, number int, method string) error {
	return l.MergePinned(ctx, number, method, "")
}

// MergePinned implements HeadPinnedMerger: as Merge, but only while the
// branch head is headSHA ("" = any head).
func (l *Local) MergePinned(ctx context.Context, number int, method, headSHA string) error {
	if method == "" {
		method = "merge"
	}
	if method != "merge" && method != "squash" && method != "fast-forward" {
		return fmt.Errorf("unknown merge method %q (want merge, squash or fast-forward)", method)
	}
	return l.withState(func(st *localState) (bool, error) {
		p, err := st.findOpen(number)
		if err != nil {
			return false, err
		}
		base, err := l.git.out(ctx, "rev-parse", "--verify", l.baseRef()+"^{commit}")
		if err != nil {
			return false, err
		}
		head, err := l.git.out(ctx, "rev-parse", "--verify", "refs/heads/"+p.Branch+"^{commit}")
		if err != nil {
			return false, fmt.Errorf("branch %s of #%d is gone: %w", p.Branch, number, err)
		}
		if headSHA != "" && head != headSHA {
			return false, fmt.Errorf("%w: #%d is at %.12s, not the checked %.12s", ErrHeadMoved, number, head, headSHA)
		}
		mb, err := l.git.out(ctx, "merge-base", base, head)
		if err != nil {
			return false, err
		}
		now := l.now().UTC()
		var newBase string
		switch method {
		case "fast-forward":
			if mb != base {
				return false, fmt.Errorf("#%d cannot be fast-forwarded: %s has moved on", number, l.base)
			}
			newBase = head
		default:
			tree, err := l.git.out(ctx, "merge-tree", "--write-tree", "--no-messages", base, head)
			if err != nil {
				if exitCode(err) == 1 {
					return false, fmt.Errorf("#%d conflicts with %s; it needs a rebase by a person", number, l.base)
				}
				return false, err
			}
			tree = strings.SplitN(tree, "\n", 2)[0]
			args := []string{"commit-tree", tree, "-p", base}
			msg := fmt.Sprintf("%s (#%d)\n\n%s\n", p.Title, number, p.Body)
			if method == "merge" {
				args = append(args, "-p", head)
				msg = fmt.Sprintf("Merge pull request #%d from %s\n\n%s\n", number, p.Branch, p.Title)
			}
			args = append(args, "-F", "-")
			c, err := l.git.run(ctx, gitOpts{stdin: []byte(msg), env: identityEnv("kubecrew", now)}, args...)
			if err != nil {
				return false, err
			}
			newBase = strings.TrimSpace(c)
		}
		if _, err := l.git.out(ctx, "update-ref", "-m", fmt.Sprintf("kubecrew: merge #%d", number), l.baseRef(), newBase, base); err != nil {
			return false, fmt.Errorf("moving %s: %w", l.base, err)
		}
		p.State = StateMerged
		p.UpdatedAt = now
		p.MergeBase = mb
		p.Head = head
		return true, nil
	})
}
