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

// Render writes the report for the model: a header with counts, problems
// most severe first (one line each), "and N more" when the bound is
// reached, and the coverage block last. The text is at most the sweep's
// MaxChars runes and depends only on the listed state: the same cluster
// renders byte-identically (times are absolute, never "ago").
func (r *ProblemReport) Render() string {
	max := r.maxChars
	if max <= 0 {
		max = DefaultProblemChars
	}
	// Prefer every problem on its own line: shorten details until all fit,
	// and only then cut the list with a per-reason summary.
	for _, dmax := range []int{detailMax, 120, 60, 0} {
		if out, all := r.render(max, dmax); all {
			return out
		}
	}
	out, _ := r.render(max, 120)
	return out
}

// render lays the report out with details bounded to dmax runes (0: none);
// all reports whether every problem got its line.
func (r *ProblemReport) render(max, dmax int) (string, bool) {
	cov := r.renderCoverage()
	head := r.renderHeader()
	budget := max - runes(cov) - runes(head)
	var body strings.Builder
	shown := 0
	if len(r.Problems) > 0 {
		title := "problems (most severe first; remediable = an existing workload Sol may act on):\n"
		body.WriteString(title)
		budget -= runes(title)
		for i := range r.Problems {
			line := r.Problems[i].line(dmax) + "\n"
			rest := r.moreLine(i + 1)
			if runes(line)+runes(rest) > budget {
				break
			}
			body.WriteString(line)
			budget -= runes(line)
			shown++
		}
		body.WriteString(r.moreLine(shown))
	} else if len(r.Coverage.Partial) == 0 {
		body.WriteString("no problems found by the checks that ran\n")
	} else {
		body.WriteString("no problems found, but the sweep was partial: see coverage\n")
	}
	out := head + body.String() + cov
	if runes(out) > max { // only when the header and coverage alone exceed the bound
		return safetext.CleanBlock(out, max-60), false
	}
	return out, shown == len(r.Problems)
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func (r *ProblemReport) renderHeader() string {
	var sev [4]int
	for _, p := range r.Problems {
		if i := api.SeverityRank(p.Severity); i < 4 {
			sev[i]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_problems for %s (Warning events within %s): %s", r.Coverage.Scope, window(r.Coverage.Window), plural(len(r.Problems), "problem"))
	if len(r.Problems) > 0 {
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
	for _, l := range []string{listPods, listDeployments, listReplicaSets, listStatefulSets, listDaemonSets, listJobs, listNodes, listEvents} {
		if n, ok := r.Coverage.Scanned[l]; ok {
			name := l
			if l == listEvents {
				name = "warning events"
			}
			scanned = append(scanned, fmt.Sprintf("%d %s", n, name))
		}
	}
	fmt.Fprintf(&b, "scanned: %s", strings.Join(scanned, ", "))
	if r.Coverage.EventsOutsideWindow > 0 {
		fmt.Fprintf(&b, " (%d warning events older than %s ignored)", r.Coverage.EventsOutsideWindow, window(r.Coverage.Window))
	}
	b.WriteString("\n")
	return b.String()
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
		fmt.Fprintf(&b, " ready=%s", p.Replicas)
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
	if p.Remediable {
		b.WriteString(" remediable")
	}
	if dmax > 0 {
		fmt.Fprintf(&b, " | %s", safetext.Clean(p.Detail, dmax))
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

// moreLine summarizes problems[from:] by reason ("" when none are left).
func (r *ProblemReport) moreLine(from int) string {
	rest := r.Problems[from:]
	if len(rest) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, p := range rest {
		count[p.Severity+" "+p.Reason]++
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
	return fmt.Sprintf("... and %d more problems not shown: %s (narrow with namespace)\n", len(rest), strings.Join(parts, ", "))
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
