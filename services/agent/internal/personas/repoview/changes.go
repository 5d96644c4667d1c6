package repoview

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// The weekly review (PULSE.md) reports only what changed since the last
// whole-repository review (docs/MANUAL.md, "Deploy-path review"): findings new
// since then, and the ones fixed. The last review is kept in the agent's
// memory file lastPath (one line per finding), which the agent's model
// can read too. It is not the cluster's finding lifecycle: a repository
// review is no cluster sweep and resolves nothing there.

// lastPath is the memory file holding tool's last whole-repository review.
func lastPath(tool string) string { return "/memories/last_" + tool + ".md" }

var digits = regexp.MustCompile(`[0-9]+`)

// identity is a finding without its line and its numbers: a line that
// moved or a count that changed is the same finding.
func identity(f deployreview.Finding) string {
	return digits.ReplaceAllString(strings.Join([]string{f.Rule, f.File, f.Object, f.Message}, "|"), "#")
}

// lastReview reads the last review: identity → its line as rendered then
// (nil, nil: there was none).
func lastReview(ctx context.Context, st store.Memories, agent, tool string) (map[string]string, error) {
	f, err := st.ReadMemory(ctx, agent, lastPath(tool))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(f.Content, "\n") {
		id, shown, ok := strings.Cut(strings.TrimPrefix(line, "- "), " ⟫ ")
		if ok && strings.HasPrefix(line, "- ") {
			out[id] = shown
		}
	}
	return out, nil
}

// saveReview writes rep as the last review; a review too big for one
// memory file keeps the identities only.
func saveReview(ctx context.Context, st store.Memories, agent, tool string, rep *deployreview.Report, at time.Time) error {
	render := func(withText bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "# Last %s of the whole repository (%s, %d findings); written by the review, read by the next\n", tool, at.UTC().Format(time.RFC3339), len(rep.Findings))
		for _, f := range rep.Findings {
			shown := f.Rule + " " + f.Where()
			if withText {
				shown += " " + f.Message
			}
			fmt.Fprintf(&b, "- %s ⟫ %s\n", identity(f), shown)
		}
		return b.String()
	}
	content := render(true)
	if len(content) > store.MaxMemoryBytes {
		content = render(false)
	}
	if len(content) > store.MaxMemoryBytes {
		return fmt.Errorf("%d findings do not fit one memory file (%d bytes)", len(rep.Findings), store.MaxMemoryBytes)
	}
	return st.WriteMemory(ctx, store.MemoryFile{Agent: agent, Path: lastPath(tool), Content: content})
}

// reportChanges reports what changed since the last review: the findings
// new since then (as the run's findings) and the fixed ones (as the run's
// changes, which the pulse report lists as resolved), and says so in the
// answer. Nothing changed: the verdict is unchanged and nothing is posted.
func reportChanges(ctx context.Context, r *engine.Run, rv Review, rep *deployreview.Report) error {
	agent, now := r.Agent().Slug, time.Now()
	last, err := lastReview(ctx, r.Store(), agent, rv.Tool)
	if err != nil {
		return fmt.Errorf("reading the last review: %w", err)
	}
	found := rep.ToFindings()
	current := map[string]bool{}
	changes := api.Lifecycle{Complete: len(rep.Skipped) == 0, Changes: []api.LifecycleChange{}}
	var added []string
	for i, f := range rep.Findings {
		id := identity(f)
		current[id] = true
		if _, seen := last[id]; seen {
			continue
		}
		r.ReportFinding(found[i])
		changes.Changes = append(changes.Changes, api.LifecycleChange{Change: api.ChangeNew, Finding: found[i], FirstSeen: now})
		added = append(added, fmt.Sprintf("- new: %s %s %s %s — fix: %s", f.Severity, f.Rule, f.Where(), f.Message, f.Fix))
	}
	var fixed []string
	if len(rep.Skipped) == 0 { // an unread file fixes nothing
		for id, shown := range last {
			if !current[id] {
				fixed = append(fixed, "- fixed: "+shown)
				rule, where, _ := strings.Cut(shown, " ")
				where, _, _ = strings.Cut(where, " ")
				resolved := now
				changes.Changes = append(changes.Changes, api.LifecycleChange{Change: api.ChangeResolved, ResolvedAt: &resolved,
					Finding: api.Finding{Kind: "Repository", Name: where, Reason: rule, Detail: shown, Severity: api.SeverityLow, Key: id}})
			}
		}
		sort.Strings(fixed)
	}
	r.SetChanges(changes)
	var b strings.Builder
	switch {
	case last == nil:
		fmt.Fprintf(&b, "%s, first of its kind here: %d findings, all new.\n", rv.Title, len(added))
	case len(added) == 0 && len(fixed) == 0:
		fmt.Fprintf(&b, "%s: nothing changed since the last review (%d findings still open).\n", rv.Title, len(rep.Findings))
		r.SetVerdict(api.VerdictUnchanged)
	default:
		fmt.Fprintf(&b, "%s since the last review: %d new, %d fixed, %d still open.\n", rv.Title, len(added), len(fixed), len(rep.Findings)-len(added))
	}
	for _, l := range append(added, fixed...) {
		b.WriteString(l + "\n")
	}
	r.SetAnswer(b.String())
	if err := saveReview(ctx, r.Store(), agent, rv.Tool, rep, now); err != nil {
		return fmt.Errorf("the review was not saved for next week's comparison: %w", err)
	}
	return nil
}
