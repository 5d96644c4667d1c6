package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// PRs are the GitOps pull requests the digest shows (*gitops.Service).
type PRs interface {
	ListAgentPRs(ctx context.Context, state string) ([]gitops.PR, error)
	StalePRs(ctx context.Context) ([]gitops.PR, []api.Finding, error)
}

// digestLines bounds each section of the digest.
const digestLines = 10

// Digest builds the morning digest from the findings' lifecycle and the
// GitOps repository (prs nil: none configured): what is new since since,
// what is still open and since when, what was resolved since since, the
// agent PRs waiting for a human and the stale ones. No model is involved.
// A section that could not be read says so instead of going missing.
func Digest(ctx context.Context, st store.Lifecycle, prs PRs, since, now time.Time) (report.Report, error) {
	list := func(f store.LifecycleFilter) ([]store.FindingState, error) {
		var out []store.FindingState
		p := store.Page{Limit: store.MaxLimit}
		for range 20 { // 10,000 states at most: a digest, not an export
			items, next, err := st.ListFindingStates(ctx, f, p)
			if err != nil {
				return nil, err
			}
			out = append(out, items...)
			if next == "" {
				break
			}
			p.Cursor = next
		}
		return out, nil
	}
	open, err := list(store.LifecycleFilter{State: store.FindingOpen})
	if err != nil {
		return report.Report{}, fmt.Errorf("digest: open findings: %w", err)
	}
	resolved, err := list(store.LifecycleFilter{State: store.FindingResolved, ResolvedSince: since})
	if err != nil {
		return report.Report{}, fmt.Errorf("digest: resolved findings: %w", err)
	}
	var fresh, standing []store.FindingState
	for _, s := range open {
		if !s.FirstSeen.Before(since) {
			fresh = append(fresh, s)
		} else {
			standing = append(standing, s)
		}
	}
	var sections []string
	section := func(head string, lines []string) {
		if len(lines) == 0 {
			return
		}
		sections = append(sections, head+"\n"+strings.Join(bound(lines), "\n"))
	}
	section(fmt.Sprintf("New since %s (%d):", since.UTC().Format("2006-01-02 15:04 MST"), len(fresh)), stateLines(fresh, ""))
	section(fmt.Sprintf("Still open (%d):", len(standing)), stateLines(standing, "open"))
	section(fmt.Sprintf("Resolved (%d):", len(resolved)), stateLines(resolved, "resolved"))
	waiting, stale, prNote := prSections(ctx, prs, now)
	section(fmt.Sprintf("Agent PRs waiting for a human (%d):", len(waiting)), waiting)
	section(fmt.Sprintf("Stale agent PRs (%d):", len(stale)), stale)
	if prNote != "" {
		sections = append(sections, prNote)
	}
	if len(sections) == 0 {
		sections = append(sections, "Nothing open, nothing new, nothing resolved, no agent PR waiting.")
	}
	title := fmt.Sprintf("Morning digest — %d new, %d still open, %d resolved, %d PRs waiting, %d stale",
		len(fresh), len(standing), len(resolved), len(waiting), len(stale))
	return report.Report{Title: title, Notes: strings.Join(sections, "\n\n")}, nil
}

// stateLines are one line per state, most severe first.
func stateLines(states []store.FindingState, tag string) []string {
	fs := make([]api.Finding, len(states))
	by := map[string]store.FindingState{}
	for i, s := range states {
		fs[i] = s.Finding
		by[s.Finding.Key] = s
	}
	var out []string
	for _, f := range api.SortFindings(fs) {
		s := by[f.Key]
		line := report.FindingLine(f)
		if s.Cluster != "" {
			line += " [" + s.Cluster + "]"
		}
		switch tag {
		case "open":
			line += " · still open since " + s.FirstSeen.UTC().Format("2006-01-02 15:04 MST")
		case "resolved":
			if s.ResolvedAt != nil {
				line += fmt.Sprintf(" · resolved %s (open since %s)", s.ResolvedAt.UTC().Format("2006-01-02 15:04 MST"),
					s.FirstSeen.UTC().Format("2006-01-02 15:04 MST"))
			}
		default:
			line += " · first seen " + s.FirstSeen.UTC().Format("2006-01-02 15:04 MST")
		}
		out = append(out, line)
	}
	return out
}

// prSections are the open agent PRs that are not stale, and the stale ones.
func prSections(ctx context.Context, prs PRs, now time.Time) (waiting, stale []string, note string) {
	if prs == nil {
		return nil, nil, ""
	}
	open, err := prs.ListAgentPRs(ctx, gitops.StateOpen)
	if err != nil {
		return nil, nil, "Agent PRs: could not be listed: " + err.Error()
	}
	stalePRs, _, err := prs.StalePRs(ctx)
	if err != nil {
		return nil, nil, "Stale agent PRs: could not be listed: " + err.Error()
	}
	isStale := map[int]bool{}
	for _, p := range stalePRs {
		isStale[p.Number] = true
		stale = append(stale, prLine(p, now))
	}
	for _, p := range open {
		if !isStale[p.Number] {
			waiting = append(waiting, prLine(p, now))
		}
	}
	return waiting, stale, ""
}

func prLine(p gitops.PR, now time.Time) string {
	return fmt.Sprintf("#%d %s — %s, by %s, open %s: %s", p.Number, p.Title, p.Branch, p.Author, age(now.Sub(p.CreatedAt)), p.URL)
}

// age is a PR's age as people say it: minutes, hours or days.
func age(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

func bound(lines []string) []string {
	if len(lines) <= digestLines {
		return lines
	}
	return append(lines[:digestLines-1:digestLines-1], fmt.Sprintf("…and %d more", len(lines)-digestLines+1))
}
