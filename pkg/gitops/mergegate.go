package gitops

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// ErrNotTrivial is wrapped by every reason TrivialMergeCheck gives for
// leaving a PR to a human.
var ErrNotTrivial = errors.New("not a trivial memory bump; left for a human")

func notTrivial(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrNotTrivial, fmt.Sprintf(format, a...))
}

// memoryChange is what a +1/−1 memory diff says, derived from the diff alone.
type memoryChange struct {
	Path       string
	OldLine    string
	NewLine    string
	LineNo     int // line number of the value in the old file
	Old, New   string
	Ratio      float64
	UnderLimit error // nil when the diff shows the value is under limits:
}

// analyseMemoryDiff derives the one-memory-value change from a diff, or says
// why the diff is not that shape. It checks the shape only; the ratio and the
// limits context are reported for the caller to judge.
func analyseMemoryDiff(diff string) (*memoryChange, error) {
	files, err := parseUnifiedDiff(diff)
	if err != nil {
		return nil, fmt.Errorf("the diff does not parse: %w", err)
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("the diff touches %d files (%s); a memory bump touches one", len(files), strings.Join(diffFiles(files), ", "))
	}
	fd := files[0]
	if len(fd.Extra) > 0 {
		return nil, fmt.Errorf("the diff changes more than content (%s)", clip(strings.Join(fd.Extra, "; ")))
	}
	oldP, err1 := diffPath(fd.OldPath, "a/")
	newP, err2 := diffPath(fd.NewPath, "b/")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if oldP == "" || newP == "" || oldP != newP {
		return nil, fmt.Errorf("the diff creates, deletes or renames a file (%s → %s)", fd.OldPath, fd.NewPath)
	}
	var removed, added []diffLine
	var hunkOf *hunk
	removedAt := -1
	for hi := range fd.Hunks {
		h := &fd.Hunks[hi]
		for li, l := range h.Lines {
			switch l.Op {
			case '-':
				removed = append(removed, l)
				hunkOf, removedAt = h, li
			case '+':
				added = append(added, l)
			}
		}
	}
	if len(removed) != 1 || len(added) != 1 {
		return nil, fmt.Errorf("the diff removes %d and adds %d lines; a memory bump is exactly -1/+1", len(removed), len(added))
	}
	if removedAt+1 >= len(hunkOf.Lines) || hunkOf.Lines[removedAt+1].Op != '+' {
		return nil, errors.New("the removed and the added line are not the same line")
	}
	if removed[0].NoEOL != added[0].NoEOL {
		return nil, errors.New("the diff also changes the newline at the end of the file")
	}
	idx, oldQ, newQ, err := memoryLineChange(removed[0].Text, added[0].Text)
	if err != nil {
		return nil, err
	}
	mc := &memoryChange{Path: newP, OldLine: removed[0].Text, NewLine: added[0].Text, LineNo: removed[0].OldNo, Old: oldQ, New: newQ}
	var above []string
	for _, l := range hunkOf.Lines[:removedAt] {
		above = append(above, l.Text)
	}
	mc.UnderLimit = underLimits(removed[0].Text, memoryTokens(removed[0].Text)[idx], above)
	ob, err := parseMemory(oldQ)
	if err != nil {
		return nil, fmt.Errorf("old value: %w", err)
	}
	nb, err := parseMemory(newQ)
	if err != nil {
		return nil, fmt.Errorf("new value: %w", err)
	}
	mc.Ratio, _ = ratioOf(ob, nb)
	if !ratioWithin(ob, nb) {
		return mc, fmt.Errorf("%s → %s is %.2f×; a trivial bump is more than 1× and at most %d×", oldQ, newQ, mc.Ratio, MaxFactor)
	}
	return mc, nil
}

// TrivialMergeCheck decides whether a PR is the one shape that may merge
// without a human: an agent/fix/ branch, open, whose diff changes exactly one
// line of one YAML file, and in that line exactly one memory value under
// limits — the rest of the line byte-identical once memory values are masked
// — to more than 1× and at most 2× the old value, approved by an agent other
// than its author on the PR's current head, with no standing request for
// changes. Everything is
// re-derived from diff; pr.Files and the PR body are not trusted. nil means
// mergeable; otherwise the error (wrapping ErrNotTrivial) says why.
func TrivialMergeCheck(pr PR, diff string, reviews []Review) error {
	if !IsAgentBranch(pr.Branch) {
		return notTrivial("branch %q is not an %s branch", pr.Branch, AgentBranchPrefix)
	}
	if pr.State != StateOpen {
		return notTrivial("PR #%d is %q, not open", pr.Number, pr.State)
	}
	author := CanonicalAgent(pr.Author)
	if author == "" {
		return notTrivial("PR #%d has no author, so an independent approval cannot be shown", pr.Number)
	}
	mc, err := analyseMemoryDiff(diff)
	if err != nil {
		return notTrivial("%v", err)
	}
	if mc.UnderLimit != nil {
		return notTrivial("%v", mc.UnderLimit)
	}
	if bad, why := SensitivePath(mc.Path); bad {
		return notTrivial("%s: %s", mc.Path, why)
	}
	return approvedByOther(author, pr.HeadSHA, reviews)
}

// approvedByOther requires an approval by a reviewer other than author, and
// that no reviewer's latest verdict is request_changes (a later approval by
// the same reviewer supersedes their request; comments change nothing). An
// approval given on another commit than head (when both are known) is
// stale and does not count; a request for changes always does.
func approvedByOther(author, head string, reviews []Review) error {
	rs := append([]Review(nil), reviews...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
	latest := map[string]string{}
	var order []string
	for _, r := range rs {
		who := CanonicalAgent(r.Reviewer)
		if who == "" || r.Verdict == VerdictComment {
			continue
		}
		if r.Verdict == VerdictApprove && head != "" && r.Commit != "" && r.Commit != head {
			continue
		}
		if _, seen := latest[who]; !seen {
			order = append(order, who)
		}
		latest[who] = r.Verdict
	}
	approved := false
	for _, who := range order {
		switch latest[who] {
		case VerdictRequestChanges:
			return notTrivial("%s requested changes and has not approved since", who)
		case VerdictApprove:
			if who != author {
				approved = true
			}
		}
	}
	if !approved {
		return notTrivial("no approval by an agent other than the author (%s)", author)
	}
	return nil
}

// SensitivePath reports whether a repository path is one no agent PR should
// touch: secrets, RBAC, Flux's own configuration, CI — or anything that is
// not a YAML manifest.
func SensitivePath(p string) (bool, string) {
	lp := strings.ToLower(p)
	for _, seg := range strings.Split(lp, "/") {
		switch seg {
		case "secrets", "secret", "rbac", "flux-system", ".github", ".gitlab", ".circleci", ".buildkite", "ci", ".ci", "sops":
			return true, fmt.Sprintf("a %q path is never an agent's to change", seg)
		}
	}
	base := path.Base(lp)
	for _, w := range []string{"secret", "rbac", "role", "sops", "serviceaccount", ".enc.", "gitlab-ci", "kustomization"} {
		if strings.Contains(base, w) {
			return true, fmt.Sprintf("a file named %q (%s) is never an agent's to change", path.Base(p), w)
		}
	}
	if ext := path.Ext(lp); ext != ".yaml" && ext != ".yml" {
		return true, "only YAML manifests are changed by agents"
	}
	return false, ""
}
