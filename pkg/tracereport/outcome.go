package tracereport

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Tool names the outcome reads (pkg/gitops's; a test pins them).
const (
	toolBump  = "bump_workload_memory"
	toolMerge = "merge_if_trivial"
)

// Outcome is the first thing a chain report says: what came of it.
type Outcome struct {
	// State: merged, open (a PR waits for a person), refused, failed, done.
	State    string
	Headline string
	// Link is the PR's URL; Openable when a browser can open it (http(s)).
	Link     string
	Openable bool
	Lines    []string
}

var (
	openedRe = regexp.MustCompile(`(?m)^(?:Opened PR|PR) #(\d+): (\S+)`)
	branchRe = regexp.MustCompile(`(?m)^branch: (\S+)`)
	// the tool's answer ("MERGED PR #1: memory limit …") and the
	// deterministic playbook's ("merged #1 (32Mi → 48Mi)")
	mergedRe = regexp.MustCompile(`^(?:MERGED PR|merged) #(\d+):? \(?(.*?)\)?$`)
	notMerRe = regexp.MustCompile(`^(?:NOT MERGED — PR #(\d+) stays open for a human|left for a human): (.*)`)
)

// Conclude reads the chain's runs (the first is the one that started it)
// and says what happened: a PR merged (by whom, the link, how to see its
// branch), a PR left open and why, a delegation refused or failed and why,
// or the first run's own verdict.
func Conclude(runs []Run) *Outcome {
	if len(runs) == 0 {
		return nil
	}
	var prURL, prNum, branch, opener string
	var merged, mergedBy, notMerged string
	for _, r := range runs {
		for _, ev := range r.Trace {
			if ev.Type != "tool_result" {
				continue
			}
			var m struct{ Name, Outcome, Output string }
			if json.Unmarshal(ev.Data, &m) != nil || m.Outcome != "ok" {
				continue
			}
			switch m.Name {
			case toolBump:
				if g := openedRe.FindStringSubmatch(m.Output); g != nil {
					prNum, prURL, opener = g[1], g[2], r.AgentName
				}
				if g := branchRe.FindStringSubmatch(m.Output); g != nil {
					branch = g[1]
				}
			case toolMerge:
				if g := mergedRe.FindStringSubmatch(m.Output); g != nil {
					prNum, merged, mergedBy = g[1], strings.TrimSuffix(g[2], "."), r.AgentName
				} else if g := notMerRe.FindStringSubmatch(m.Output); g != nil {
					notMerged = g[2]
					if g[1] != "" {
						prNum = g[1]
					}
				}
			}
		}
	}
	o := &Outcome{Link: prURL, Openable: strings.HasPrefix(prURL, "https://") || strings.HasPrefix(prURL, "http://")}
	if prURL != "" && !o.Openable {
		if repo, ok := localRepo(prURL); ok && branch != "" {
			o.Lines = append(o.Lines, fmt.Sprintf("A local repository: see the change with `git --git-dir=%s show %s`", repo, branch))
		}
	}
	if opener != "" {
		line := fmt.Sprintf("PR #%s opened by %s", prNum, opener)
		if branch != "" {
			line += " on branch " + branch
		}
		o.Lines = append([]string{line}, o.Lines...)
	}
	first := runs[0]
	switch {
	case merged != "":
		o.State, o.Headline = "merged", fmt.Sprintf("merged — PR #%s merged by %s: %s", prNum, mergedBy, merged)
	case notMerged != "":
		o.State, o.Headline = "open", fmt.Sprintf("PR #%s left open for a person: %s", prNum, notMerged)
	case prURL != "":
		o.State, o.Headline = "open", fmt.Sprintf("PR #%s opened by %s, not merged", prNum, opener)
	case first.Delegation != nil && first.Delegation.Error != "":
		o.State, o.Headline = "refused", fmt.Sprintf("%s's delegation to %s did not succeed: %s", first.AgentName, first.Delegation.To, first.Delegation.Error)
	case first.FetchError != "":
		o.State, o.Headline = "failed", "the first run could not be read: "+first.FetchError
	case first.Status == "failed":
		o.State, o.Headline = "failed", fmt.Sprintf("%s's run failed: %s", first.AgentName, first.Error)
	default:
		o.State = "done"
		o.Headline = fmt.Sprintf("%s's run %s", first.AgentName, first.Status)
		if first.Verdict != "" {
			o.Headline += ", verdict " + first.Verdict
		}
		o.Headline += fmt.Sprintf(", %d finding(s)", len(first.Findings))
	}
	return o
}

// localRepo extracts the repository path of a local forge's PR URL
// (file:///path/repo.git#pull/1).
func localRepo(u string) (string, bool) {
	p, ok := strings.CutPrefix(u, "file://")
	if !ok {
		return "", false
	}
	if i := strings.IndexByte(p, '#'); i >= 0 {
		p = p[:i]
	}
	return p, p != ""
}
