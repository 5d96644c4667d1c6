package kube

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// Render writes the report for the model and for people: first, when
// the sweep could not check everything, what was not checked and why; a
// header with counts; the alerted object's status when the sweep had one;
// one line per broken owner, most severe first ("and N more" by reason
// when the bound is reached); the churn summary; the coverage block. The
// text is at most the sweep's MaxChars runes and depends only on the
// listed state: the same cluster renders byte-identically (times are
// absolute, never "ago").
func (r *ProblemReport) Render() string {
	max := r.maxChars
	if max <= 0 {
		max = DefaultProblemChars
	}
	// Prefer every owner on its own line: shorten details until all fit,
	// and only then cut the list with a per-reason summary.
	for _, dmax := range []int{detailMax, 120, 60, 0} {
		if out, all := r.render(max, dmax); all {
			return out
		}
	}
	out, _ := r.render(max, 0)
	return out
}

// ownerLines groups the problems by owner, in the order of each owner's
// most severe problem: one line each.
func (r *ProblemReport) ownerLines() [][]*Problem {
	idx := map[string]int{}
	var out [][]*Problem
	for i := range r.Problems {
		p := &r.Problems[i]
		k := p.objectPath()
		if j, ok := idx[k]; ok {
			out[j] = append(out[j], p)
			continue
		}
		idx[k] = len(out)
		out = append(out, []*Problem{p})
	}
	return out
}

// render lays the report out with details bounded to dmax runes (0: none);
// all reports whether every owner got its line.
func (r *ProblemReport) render(max, dmax int) (string, bool) {
	first := r.renderVerdict()
	head := r.renderHeader()
	focus := r.renderFocus()
	tail := r.renderChurn() + r.renderCoverage()
	budget := max - runes(first) - runes(head) - runes(focus) - runes(tail)
	owners := r.ownerLines()
	var body strings.Builder
	shown := 0
	if len(owners) > 0 {
		title := "problems now, one line per object (most severe first; remediable = an existing workload Sol may act on):\n"
		body.WriteString(title)
		budget -= runes(title)
		for i, group := range owners {
			line := ownerLine(group, dmax) + "\n"
			rest := moreLine(owners[i+1:])
			if runes(line)+runes(rest) > budget {
				break
			}
			body.WriteString(line)
			budget -= runes(line)
			shown++
		}
		body.WriteString(moreLine(owners[shown:]))
	} else {
		switch r.Verdict() {
		case VerdictHealthy:
			body.WriteString("no problems found by the checks that ran\n")
		case VerdictPartial:
			body.WriteString("no problems found, but the sweep was partial: what was not checked is listed first\n")
		default:
			body.WriteString("no problems found because nothing could be checked: this is not a healthy result\n")
		}
	}
	out := first + head + focus + body.String() + tail
	if runes(out) > max { // only when the fixed blocks alone exceed the bound
		return safetext.CleanBlock(out, max-60), false
	}
	return out, shown == len(owners)
}

// renderVerdict is the report's first line when coverage is incomplete.
func (r *ProblemReport) renderVerdict() string {
	nc := r.NotChecked()
	switch r.Verdict() {
	case VerdictUnknown:
		return "VERDICT UNKNOWN: nothing could be checked, so this is NOT an all-clear. Not checked: " + orNone(nc) + "\n"
	case VerdictPartial:
		return "VERDICT PARTIAL: some checks could not run, so this is NOT an all-clear. Not checked: " + orNone(nc) + "\n"
	}
	if len(nc) > 0 {
		return "PARTIAL CHECK: problems below, but not checked: " + orNone(nc) + "\n"
	}
	return ""
}

// renderFocus is the alerted object's status, with its evidence.
func (r *ProblemReport) renderFocus() string {
	f := r.Focus
	if f == nil {
		return ""
	}
	s := fmt.Sprintf("alerted object %s: %s\n", f.Ref, f.Summary)
	for _, e := range f.Evidence {
		s += "  evidence: " + e + "\n"
	}
	return s
}

// renderChurn is the one short block of Warning events that explain no
// current problem.
func (r *ProblemReport) renderChurn() string {
	c := r.Churn
	if c.Events == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "churn (not problems): %d Warning events (%d occurrences) within %s about objects healthy now or gone",
		c.Events, c.Occurrences, window(r.Coverage.Window))
	if c.OnGone > 0 {
		fmt.Fprintf(&b, " (%d about objects that no longer exist)", c.OnGone)
	}
	b.WriteString("\n  by reason: " + topCounts(c.ByReason, 6, ""))
	b.WriteString("\n  busiest namespaces: " + topCounts(c.ByNamespace, 5, "(cluster)") + "\n")
	return b.String()
}

// topCounts renders the n largest counts ("k n, ..."), ties by key.
func topCounts(m map[string]int, n int, empty string) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for i, k := range keys {
		if i == n {
			parts = append(parts, fmt.Sprintf("%d more", len(keys)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", nonEmpty(k, empty), m[k]))
	}
	return strings.Join(parts, ", ")
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func (r *ProblemReport) renderHeader() string {
	var sev [4]int
	owners := r.ownerLines()
	for _, g := range owners {
		if i := api.SeverityRank(g[0].Severity); i < 4 {
			sev[i]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_problems for %s (Warning events within %s; verdict %s): %s", r.Coverage.Scope, window(r.Coverage.Window), r.Verdict(), plural(len(owners), "broken object"))
	if len(owners) > 0 {
		fmt.Fprintf(&b, " (%d critical, %d high, %d medium, %d low)", sev[0], sev[1], sev[2], sev[3])
	}
	remediable := 0
	for _, p := range r.Problems {
		if p.Remediable {
			remediable++
		}
	}
	fmt.Fprintf(&b, ", %d remediable\n", remediable)
	var scanned []string
	for _, l := range listOrder {
		if n, ok := r.Coverage.Scanned[l]; ok {
			name := l
			if l == listEvents {
				name = "warning events"
			}
			scanned = append(scanned, fmt.Sprintf("%d %s", n, name))
		}
	}
	fmt.Fprintf(&b, "scanned: %s", orNone(scanned))
	if r.Coverage.EventsOutsideWindow > 0 {
		fmt.Fprintf(&b, " (%d warning events older than %s ignored)", r.Coverage.EventsOutsideWindow, window(r.Coverage.Window))
	}
	b.WriteString("\n")
	return b.String()
}

// ownerLine is one owner's line: its most severe problem, then the other
// reasons it has.
func ownerLine(g []*Problem, dmax int) string {
	s := g[0].line(dmax)
	if len(g) > 1 {
		var also []string
		for _, p := range g[1:] {
			also = append(also, p.Severity+" "+p.Reason)
		}
		s += " [also: " + strings.Join(also, ", ") + "]"
	}
	return s
}

// line renders one problem on one line, its detail bounded to dmax runes
// (0: no detail). Short forms drop the example pod and the timestamp.
func (p *Problem) line(dmax int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- %s %s %s", p.Severity, p.Reason, p.objectPath())
	if p.Container != "" {
		fmt.Fprintf(&b, " container=%s", p.Container)
	}
	if p.Pods > 0 {
		fmt.Fprintf(&b, " pods=%d", p.Pods)
	}
	if p.Replicas != "" {
		fmt.Fprintf(&b, " available=%s", p.Replicas)
	}
	if p.Restarts > 0 {
		fmt.Fprintf(&b, " restarts=%d", p.Restarts)
	}
	if p.Events > 0 {
		fmt.Fprintf(&b, " events=%d", p.Events)
	}
	if !p.LastSeen.IsZero() && dmax >= detailMax {
		fmt.Fprintf(&b, " last=%s", p.LastSeen.UTC().Format(time.RFC3339))
	}
	if p.ConfigChange != nil {
		fmt.Fprintf(&b, " config-changed=%s/%s", p.ConfigChange.Kind, p.ConfigChange.Name)
	}
	if p.Remediable {
		b.WriteString(" remediable")
	}
	if len(p.Services) > 0 {
		fmt.Fprintf(&b, " services-without-endpoints=%s", strings.Join(p.Services, ","))
	}
	if dmax > 0 {
		fmt.Fprintf(&b, " | %s", safetext.Clean(p.Detail, dmax))
		if p.Evidence != "" {
			fmt.Fprintf(&b, " | evidence: %s", safetext.Clean(p.Evidence, dmax))
		}
		if p.ConfigNote != "" {
			fmt.Fprintf(&b, " | config: %s", safetext.Clean(p.ConfigNote, dmax))
		}
	}
	if p.Pod != "" && p.Kind != "Pod" && dmax >= detailMax {
		fmt.Fprintf(&b, " (e.g. pod %s)", p.Pod)
	}
	return b.String()
}

// objectPath is namespace/Kind/name, or Kind/name for cluster objects.
func (p *Problem) objectPath() string {
	if p.Namespace == "" {
		return p.Kind + "/" + p.Name
	}
	return p.Namespace + "/" + p.Kind + "/" + p.Name
}

// moreLine summarizes the owners not shown by their first reason ("" when
// none are left).
func moreLine(rest [][]*Problem) string {
	if len(rest) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, g := range rest {
		count[g[0].Severity+" "+g[0].Reason]++
	}
	keys := sortedKeys(count)
	sort.SliceStable(keys, func(i, j int) bool {
		si, sj := api.SeverityRank(strings.Fields(keys[i])[0]), api.SeverityRank(strings.Fields(keys[j])[0])
		if si != sj {
			return si < sj
		}
		return count[keys[i]] > count[keys[j]]
	})
	var parts []string
	for i, k := range keys {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("%d other reasons", len(keys)-8))
			break
		}
		parts = append(parts, fmt.Sprintf("%s x%d", k, count[k]))
	}
	return fmt.Sprintf("... and %d more broken objects not shown: %s (narrow with namespace)\n", len(rest), strings.Join(parts, ", "))
}

func (r *ProblemReport) renderCoverage() string {
	cv := r.Coverage
	var b strings.Builder
	b.WriteString("coverage:\n")
	fmt.Fprintf(&b, "  checks_run: %s\n", orNone(cv.ChecksRun))
	var sk []string
	for _, s := range cv.ChecksSkipped {
		sk = append(sk, s.Check+" ("+s.Why+")")
	}
	fmt.Fprintf(&b, "  checks_skipped: %s\n", orNone(sk))
	var pl []string
	for _, p := range cv.Partial {
		pl = append(pl, p.List+" ("+p.Why+")")
	}
	fmt.Fprintf(&b, "  partial: %s\n", orNone(pl))
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

// window formats a duration in its largest whole unit: 1h, 90m, 2d.
func window(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
