package gitops

import (
	"fmt"
	"strings"
)

// spliceDiff is the unified diff of a byte splice that changed one region
// of path (a memory bump changes one line): what a PR for it would show,
// with three lines of context. Shadow mode records it as the proposal.
func spliceDiff(path string, before, after []byte) string {
	a, b := splitLines(string(before)), splitLines(string(after))
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return ""
	}
	const ctx = 3
	start := max(0, pre-ctx)
	endA, endB := min(len(a), len(a)-suf+ctx), min(len(b), len(b)-suf+ctx)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n", path, path, start+1, endA-start, start+1, endB-start)
	for _, l := range a[start:pre] {
		sb.WriteString(" " + l + "\n")
	}
	for _, l := range a[pre : len(a)-suf] {
		sb.WriteString("-" + l + "\n")
	}
	for _, l := range b[pre : len(b)-suf] {
		sb.WriteString("+" + l + "\n")
	}
	for _, l := range a[len(a)-suf : endA] {
		sb.WriteString(" " + l + "\n")
	}
	return sb.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
