// Package pulse runs a persona's recurring tasks. This file is the PULSE.md
// parser: it turns the Markdown a person edits into tasks, and rejects, with
// the line number, anything whose meaning would otherwise be guessed.
//
// The format:
//
//	<!-- comments are skipped, also across lines -->
//	## Continuous            (case-insensitive; also ## Daily, ## Weekly)
//	- one task per top-level bullet ("- " or "* ", indented by at most one space)
//	  indented lines continue the bullet above; they join its text with a space
//
// Rejected (a *ParseError naming the line): a nested bullet, a bullet before
// any ## section, indented text that belongs to no task, unindented text
// right after a task (a lazy continuation nobody can tell from prose), an
// empty bullet, the same task twice in one section, an unclosed comment.
// Warned about and skipped: ## headings other than the three cadences (and
// their bullets), prose lines inside a cadence section.
package pulse

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Cadence is how often a task is due.
type Cadence string

// The three cadences, in the order the sections usually appear.
const (
	Continuous Cadence = "continuous" // every tick
	Daily      Cadence = "daily"      // 20 h after the last run
	Weekly     Cadence = "weekly"     // 6 days after the last run
)

// Cadences lists every cadence.
var Cadences = []Cadence{Continuous, Daily, Weekly}

// ParseCadence maps a section title ("Continuous", "daily", " WEEKLY ") to
// its cadence.
func ParseCadence(s string) (Cadence, bool) {
	c := Cadence(strings.ToLower(strings.TrimSpace(s)))
	for _, k := range Cadences {
		if c == k {
			return c, true
		}
	}
	return "", false
}

// Task is one recurring task: one top-level bullet and its continuation lines.
type Task struct {
	// Index is the task's position in the file, from 0.
	Index int `json:"index"`
	// Cadence is the section the bullet is in.
	Cadence Cadence `json:"cadence"`
	// Text is the bullet's text with its continuation lines joined by single
	// spaces (runs of whitespace collapse to one space).
	Text string `json:"text"`
	// Line is the 1-based line of the bullet.
	Line int `json:"line"`
	// Key identifies the task across restarts and edits elsewhere in the file:
	// the cadence and a short hash of Text. Rewording a task changes its key.
	Key string `json:"key"`
}

// TaskKey returns the stable key of a task with cadence c and text text.
func TaskKey(c Cadence, text string) string {
	sum := sha256.Sum256([]byte(normalize(text)))
	return string(c) + "-" + hex.EncodeToString(sum[:6])
}

// ParseError is a PULSE.md line the parser refuses.
type ParseError = api.FileError

// section states while scanning.
type sectionState int

const (
	noSection      sectionState = iota // before any ## heading, or after a # heading
	cadenceSection                     // under ## Continuous|Daily|Weekly
	unknownSection                     // under any other ## heading
)

// unknownHeading collects what an ignored section held, for its warning.
type unknownHeading struct {
	line    int
	title   string
	bullets int
}

// Parse reads PULSE.md bytes. file is only used in messages ("noor/PULSE.md").
// An empty file, or one with no bullets, gives no tasks and no error.
func Parse(file string, data []byte) (tasks []Task, warnings []string, err error) {
	p := parser{file: file}
	for i, raw := range strings.Split(string(data), "\n") {
		if i == 0 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		if err := p.line(i+1, strings.TrimSuffix(raw, "\r")); err != nil {
			return nil, nil, err
		}
	}
	if p.inComment {
		return nil, nil, p.errorf(p.commentLine, "HTML comment opened here is never closed (missing -->)")
	}
	p.flushUnknown()
	for i := range p.tasks {
		t := &p.tasks[i]
		t.Text = normalize(t.Text)
		t.Key = TaskKey(t.Cadence, t.Text)
	}
	seen := map[string]int{}
	for _, t := range p.tasks {
		if first, dup := seen[t.Key]; dup {
			return nil, nil, p.errorf(t.Line, "duplicate %s task: same text as the task on line %d", t.Cadence, first)
		}
		seen[t.Key] = t.Line
	}
	return p.tasks, p.warnings, nil
}

type parser struct {
	file     string
	tasks    []Task
	warnings []string

	state   sectionState
	cadence Cadence
	unknown *unknownHeading

	// open is the index in tasks of the bullet that continuation lines
	// join; it is meaningful only while hasOpen is true.
	open    int
	hasOpen bool
	// blank is true when a blank line came after the last non-blank line.
	blank bool

	inComment   bool
	commentLine int
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return &ParseError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) warnf(line int, format string, args ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf("%s:%d: ", p.file, line)+fmt.Sprintf(format, args...))
}

func (p *parser) line(n int, raw string) error {
	text := p.stripComments(n, raw)
	if strings.TrimSpace(text) == "" {
		if strings.TrimSpace(raw) == "" {
			p.blank = true
		}
		// A line holding only a comment is invisible: it neither ends nor
		// continues a task.
		return nil
	}
	wasBlank := p.blank
	p.blank = false

	indent, rest := splitIndent(text)

	if indent == 0 && strings.HasPrefix(rest, "#") {
		if level, title, ok := heading(rest); ok {
			p.heading(n, level, title)
			return nil
		}
	}

	if body, ok := bullet(rest); ok {
		switch p.state {
		case noSection:
			return p.errorf(n, "bullet outside a section: tasks go under ## Continuous, ## Daily or ## Weekly")
		case unknownSection:
			p.unknown.bullets++
			return nil
		}
		if indent >= 2 {
			return p.errorf(n, "nested bullet: a task is one top-level bullet; make this its own task, or write it as an indented line without a bullet")
		}
		if strings.TrimSpace(body) == "" {
			return p.errorf(n, "empty task: the bullet has no text")
		}
		p.tasks = append(p.tasks, Task{Index: len(p.tasks), Cadence: p.cadence, Text: body, Line: n})
		p.open, p.hasOpen = len(p.tasks)-1, true
		return nil
	}

	if indent > 0 {
		switch {
		case p.state != cadenceSection:
			// Preamble or an ignored section: not ours to judge.
		case p.hasOpen:
			p.tasks[p.open].Text += " " + rest
		default:
			return p.errorf(n, "indented text belongs to no task: start it with \"- \" to make it a task, or indent it under a bullet")
		}
		return nil
	}

	// Unindented prose.
	if p.state == cadenceSection {
		if p.hasOpen && !wasBlank {
			return p.errorf(n, "unindented text right after the task on line %d: indent it to continue that task, or leave a blank line before it if it is not part of any task", p.tasks[p.open].Line)
		}
		p.warnf(n, "text outside a bullet is not a task and is ignored: %q", clip(rest, 60))
	}
	p.hasOpen = false
	return nil
}

func (p *parser) heading(n, level int, title string) {
	p.hasOpen = false
	switch level {
	case 1:
		p.flushUnknown()
		p.state = noSection
	case 2:
		p.flushUnknown()
		if c, ok := ParseCadence(title); ok {
			p.state, p.cadence = cadenceSection, c
			return
		}
		p.state = unknownSection
		p.unknown = &unknownHeading{line: n, title: title}
	default:
		// ### and deeper are sub-headings: the section goes on.
	}
}

func (p *parser) flushUnknown() {
	u := p.unknown
	if u == nil {
		return
	}
	p.unknown = nil
	msg := fmt.Sprintf("unknown section %q ignored (known: Continuous, Daily, Weekly)", "## "+u.title)
	if u.bullets > 0 {
		msg += fmt.Sprintf("; its %d bullet(s) will not run", u.bullets)
	}
	p.warnf(u.line, "%s", msg)
}

// stripComments removes HTML comments from raw, carrying the open-comment
// state across lines.
func (p *parser) stripComments(n int, raw string) string {
	var b strings.Builder
	s := raw
	for s != "" {
		if p.inComment {
			end := strings.Index(s, "-->")
			if end < 0 {
				return b.String()
			}
			s = s[end+len("-->"):]
			p.inComment = false
			continue
		}
		start := strings.Index(s, "<!--")
		if start < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:start])
		s = s[start+len("<!--"):]
		p.inComment, p.commentLine = true, n
	}
	return b.String()
}

// splitIndent returns the indentation width (a tab counts as 4) and the rest.
func splitIndent(s string) (int, string) {
	w := 0
	for i, r := range s {
		switch r {
		case ' ':
			w++
		case '\t':
			w += 4
		default:
			return w, s[i:]
		}
	}
	return w, ""
}

// heading recognises an ATX heading: 1–6 '#' then a space or the end.
func heading(s string) (level int, title string, ok bool) {
	for level < len(s) && s[level] == '#' {
		level++
	}
	if level > 6 || (level < len(s) && s[level] != ' ' && s[level] != '\t') {
		return 0, "", false
	}
	title = strings.TrimSpace(s[level:])
	title = strings.TrimSpace(strings.TrimRight(title, "#")) // closing #s are decoration
	return level, title, true
}

// bullet recognises "- text", "* text", or a bare "-" / "*".
func bullet(s string) (string, bool) {
	if s == "-" || s == "*" {
		return "", true
	}
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*') && (s[1] == ' ' || s[1] == '\t') {
		return strings.TrimSpace(s[2:]), true
	}
	return "", false
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
