package gitops

import (
	"fmt"
	"regexp"
	"strings"
)

// Proposal is everything a memory-bump PR says about itself.
type Proposal struct {
	Kind, Namespace, Name, Container string
	Path                             string // the manifest in the repository
	Old, New                         string
	Factor                           float64
	Evidence                         string // what was observed (free text from the finding)
	FindingKey                       string
	Author                           string // the proposing agent
}

// Title is the PR title.
func (p Proposal) Title() string {
	return fmt.Sprintf("fix(%s): raise %s memory limit %s → %s", p.Name, p.Container, p.Old, p.New)
}

// Body is the PR body: what, evidence, change, why — then the trailers, the
// finding key on the last line. The "change: OLD -> NEW" line is what Vera's
// first check compares with the diff.
func (p Proposal) Body() string {
	ratio, _ := memoryRatio(p.Old, p.New)
	ev := sanitizeEvidence(p.Evidence)
	if ev == "" {
		ev = fmt.Sprintf("Container %s of %s %s/%s was OOMKilled: it reached its memory limit and the kernel killed it.", p.Container, p.Kind, p.Namespace, p.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## What\nRaise the memory limit of container `%s` in %s `%s/%s`.\n\n", p.Container, p.Kind, p.Namespace, p.Name)
	fmt.Fprintf(&b, "## Evidence\n%s\n\n", ev)
	fmt.Fprintf(&b, "## Change\n`%s`: `resources.limits.memory` of container `%s`\n\nchange: %s -> %s (%.2f×)\n\n", p.Path, p.Container, p.Old, p.New, ratio)
	fmt.Fprintf(&b, "## Why\nMemory is incompressible: at its limit the container is killed, not slowed. "+
		"A %.2f× raise (convention 1.5×, never above 2×) gives it headroom without taking a large share of a node. "+
		"A bigger limit is only the fix when usage is bounded: if the container's memory grows without end, this buys time "+
		"and the app needs fixing instead — the review checks the container's command for that.\n\n"+
		"The value was changed in place; nothing else in the file moved (+1/−1).\n\n", ratio)
	fmt.Fprintf(&b, "proposed-by: %s\nfinding-key: %s", p.Author, p.FindingKey)
	return b.String()
}

var trailerLikeRE = regexp.MustCompile(`(?im)^\s*(finding-key|proposed-by|reviewed-by|change)\s*:`)

// sanitizeEvidence bounds free text from a finding and defuses lines that
// could pass for the body's machine-read lines.
func sanitizeEvidence(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = s[:2000] + " …"
	}
	return trailerLikeRE.ReplaceAllString(s, "> $1:")
}

var claimRE = regexp.MustCompile(`(?m)^change:\s*(\S+)\s*(?:->|→)\s*(\S+)`)

// ClaimedChange returns the old and new value a PR body claims ("change:
// OLD -> NEW"). ok is false when the body claims nothing, or claims twice.
func ClaimedChange(body string) (old, new string, ok bool) {
	m := claimRE.FindAllStringSubmatch(body, -1)
	if len(m) != 1 {
		return "", "", false
	}
	return strings.Trim(m[0][1], "`"), strings.Trim(m[0][2], "`"), true
}

// FindingKeyOf returns the finding key on the body's last line, or "".
func FindingKeyOf(body string) string {
	b := strings.TrimRight(body, "\n ")
	last := b[strings.LastIndex(b, "\n")+1:]
	if v, ok := strings.CutPrefix(strings.TrimSpace(last), "finding-key:"); ok {
		return strings.TrimSpace(v)
	}
	return ""
}
