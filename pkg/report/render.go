// Package report turns a run's findings into messages people read, and
// delivers them to chat (Discord, Slack) or any JSON webhook. Ordering is
// decided here, in code: the most severe finding is always the first line
// of the first message, whatever order the model mentioned things in.
package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// SweepLines bounds a sweep report: at most this many lines of findings,
// the last one saying "…and N more" when there are more.
const SweepLines = 9

// Bounds of the free-text parts of one finding line, in runes.
const (
	maxReason      = 80
	maxObject      = 160
	maxDetail      = 300
	maxRemediation = 200
	maxNotes       = 12000
	maxTitle       = 200
)

// Dot is the coloured marker of a severity.
func Dot(severity string) string {
	switch severity {
	case api.SeverityCritical:
		return "🔴"
	case api.SeverityHigh:
		return "🟠"
	case api.SeverityMedium:
		return "🟡"
	case api.SeverityLow:
		return "🔵"
	}
	return "⚪"
}

// Report is what to post: a title, findings (any order) and free text.
type Report struct {
	// Title is the first line (e.g. "Health sweep — 2 problems").
	Title string
	// Findings are sorted by severity in code.
	Findings []api.Finding
	// Notes is free text shown after the findings; Markdown tables are
	// stripped from it.
	Notes string
	// MaxFindings bounds the finding lines (0: all of them).
	MaxFindings int
	// Lifecycle, when set, marks each finding new, still open since or
	// reopened, and lists what the sweep resolved (docs/MANUAL.md, "Findings
	// have a life").
	Lifecycle *api.Lifecycle
}

// Rendered is a report as text: what every target posts and what dedupe
// hashes.
type Rendered struct {
	Title string
	// Lines are the finding lines, most severe first (then "…and N more"),
	// then the note lines.
	Lines []string
	// Findings are all the findings, sorted.
	Findings []api.Finding
}

// Empty reports whether there is nothing to post.
func (r Rendered) Empty() bool { return len(r.Lines) == 0 }

// Body is the title and the lines, one per line.
func (r Rendered) Body() string {
	if r.Title == "" {
		return strings.Join(r.Lines, "\n")
	}
	return r.Title + "\n" + strings.Join(r.Lines, "\n")
}

// Hash identifies the body for dedupe: same hash, same post.
func (r Rendered) Hash() string {
	sum := sha256.Sum256([]byte(r.Body()))
	return hex.EncodeToString(sum[:16])
}

// Render sorts and formats r.
func Render(r Report) Rendered {
	fs := SortFindings(r.Findings)
	out := Rendered{Title: safetext.Clean(r.Title, maxTitle), Findings: fs}
	shown := len(fs)
	if r.MaxFindings > 0 && len(fs) > r.MaxFindings {
		shown = r.MaxFindings - 1 // the last line says how many more
	}
	for _, f := range fs[:shown] {
		line := FindingLine(f)
		if c, ok := r.Lifecycle.Of(f.Key); ok {
			line += " · " + LifeTag(c)
		}
		out.Lines = append(out.Lines, line)
	}
	if more := len(fs) - shown; more > 0 {
		out.Lines = append(out.Lines, fmt.Sprintf("…and %d more", more))
	}
	out.Lines = append(out.Lines, resolvedLines(r.Lifecycle.Resolved(), r.MaxFindings)...)
	out.Lines = append(out.Lines, noteLines(r.Notes)...)
	return out
}

// LifeTag says where a finding is in its life: "new", "still open since
// 2026-12-01 17:13 UTC", "reopened (open since …)" or "resolved".
func LifeTag(c api.LifecycleChange) string {
	since := c.FirstSeen.UTC().Format("2006-01-02 15:04 MST")
	switch c.Change {
	case api.ChangeNew:
		return "new"
	case api.ChangeOpen:
		return "still open since " + since
	case api.ChangeReopened:
		return "reopened (first seen " + since + ")"
	case api.ChangeResolved:
		return "resolved (open since " + since + ")"
	}
	return safetext.Clean(c.Change, 20)
}

// resolvedLines are the findings a sweep resolved, one line each ("✅
// resolved — ns/kind/name — reason (open since …)"), at most max (0: all).
func resolvedLines(rs []api.LifecycleChange, max int) []string {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b api.LifecycleChange) int {
		return cmp.Compare(api.SeverityRank(a.Finding.Severity), api.SeverityRank(b.Finding.Severity))
	})
	shown := len(rs)
	if max > 0 && len(rs) > max {
		shown = max - 1
	}
	var out []string
	for _, c := range rs[:shown] {
		f := c.Finding
		obj := strings.Trim(strings.Join([]string{safetext.Clean(f.Namespace, 60), safetext.Clean(f.Kind, 60), safetext.Clean(f.Name, 60)}, "/"), "/")
		out = append(out, fmt.Sprintf("✅ resolved — %s — %s · %s", obj, safetext.Clean(f.Reason, maxReason), LifeTag(c)))
	}
	if more := len(rs) - shown; more > 0 {
		out = append(out, fmt.Sprintf("✅ …and %d more resolved", more))
	}
	return out
}

// SortFindings returns fs most severe first (api.SortFindings).
func SortFindings(fs []api.Finding) []api.Finding { return api.SortFindings(fs) }

// FindingLine is one finding as one line:
// "🔴 namespace/kind/name (container) — reason — detail → remediation".
// Empty parts are left out; free text is cleaned to one bounded line.
func FindingLine(f api.Finding) string {
	var obj []string
	for _, p := range []string{f.Namespace, f.Kind, f.Name} {
		if p = safetext.Clean(p, 60); p != "" {
			obj = append(obj, p)
		}
	}
	object := strings.Join(obj, "/")
	if c := safetext.Clean(f.Container, 60); c != "" {
		object += " (" + c + ")"
	}
	parts := []string{}
	if object = safetext.Clean(object, maxObject); object != "" {
		parts = append(parts, object)
	}
	if s := safetext.Clean(f.Reason, maxReason); s != "" {
		parts = append(parts, s)
	}
	if s := safetext.Clean(StripTables(f.Detail), maxDetail); s != "" {
		parts = append(parts, s)
	}
	line := Dot(strings.ToLower(f.Severity)) + " " + strings.Join(parts, " — ")
	if s := safetext.Clean(StripTables(f.Remediation), maxRemediation); s != "" {
		line += " → " + s
	}
	return line
}

// noteLines cleans free text: tables stripped, control characters dropped,
// blank-line runs collapsed, bounded.
func noteLines(s string) []string {
	s = safetext.CleanBlock(StripTables(s), maxNotes)
	var out []string
	blank := false
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " ")
		if strings.TrimSpace(l) == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	return out
}

// Title makes a report title from a task's text and its findings:
// the task's first sentence (bounded) and a count by severity, e.g.
// "Health sweep and delegation — 3 problems (1 critical, 2 high)".
func Title(taskText string, fs []api.Finding) string {
	head := firstSentence(taskText)
	if head == "" {
		head = "Report"
	}
	if len(fs) == 0 {
		return head
	}
	counts := map[string]int{}
	for _, f := range fs {
		counts[strings.ToLower(f.Severity)]++
	}
	var by []string
	for _, s := range []string{api.SeverityCritical, api.SeverityHigh, api.SeverityMedium, api.SeverityLow} {
		if counts[s] > 0 {
			by = append(by, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	noun := "problems"
	if len(fs) == 1 {
		noun = "problem"
	}
	return fmt.Sprintf("%s — %d %s (%s)", head, len(fs), noun, strings.Join(by, ", "))
}

func firstSentence(s string) string {
	s = safetext.Clean(s, 0)
	if i := strings.IndexAny(s, ".:;!?"); i >= 0 {
		s = s[:i]
	}
	return safetext.Clean(s, 60)
}

// UTF16Len is the length JavaScript (and so Discord) gives s.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s { // invalid bytes range as U+FFFD: one unit
		if w := utf16.RuneLen(r); w > 0 {
			n += w
		} else {
			n += 2
		}
	}
	return n
}

// RuneLen is the length in runes.
func RuneLen(s string) int { return utf8.RuneCountInString(s) }

// Chunks packs lines, in order, into chunks of at most limit (as measured
// by measure) joined by newlines. A line longer than limit is cut into
// pieces; a blank line never starts a chunk. The first chunk starts with the
// first line: the most severe finding is never pushed to a later message.
func Chunks(lines []string, limit int, measure func(string) int) []string {
	if limit < 1 {
		limit = 1
	}
	var chunks, cur []string
	curLen := 0
	for _, l := range lines {
		for _, piece := range splitLong(l, limit, measure) {
			n := measure(piece)
			if len(cur) > 0 && curLen+1+n > limit {
				chunks = append(chunks, strings.Join(cur, "\n"))
				cur, curLen = nil, 0
			}
			switch {
			case len(cur) == 0 && strings.TrimSpace(piece) == "":
				continue
			case len(cur) == 0:
				curLen = n
			default:
				curLen += 1 + n
			}
			cur = append(cur, piece)
		}
	}
	if len(cur) > 0 {
		chunks = append(chunks, strings.Join(cur, "\n"))
	}
	return chunks
}

// splitLong cuts a line longer than limit into pieces that fit.
func splitLong(l string, limit int, measure func(string) int) []string {
	if measure(l) <= limit {
		return []string{l}
	}
	var out []string
	var cur strings.Builder
	n := 0
	for _, r := range l {
		w := measure(string(r))
		if n+w > limit && cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
		cur.WriteRune(r)
		n += w
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
