package migcheck

import (
	"strings"
)

// statement is one SQL statement of a migration's Up section: its text
// with comments removed and whitespace collapsed (string literals and
// quoted identifiers kept as written), the line it starts on, and the
// contract-step mark in the comments just before it, if any.
type statement struct {
	text   string
	line   int
	marked bool
	reason string
}

// StepMark starts a comment line that marks the next statement a contract
// step (docs/ARCHITECTURE.md, "Upgrades"): "-- contract-step: <why no
// running version needs what it removes>".
const StepMark = "contract-step:"

// upSection returns the part of a goose migration between "-- +goose Up"
// and "-- +goose Down" (the whole file without them), and the line the
// section starts on.
func upSection(sql string) (string, int) {
	lines := strings.SplitAfter(sql, "\n")
	start, end := 0, len(lines)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "-- +goose Up"):
			start = i + 1
		case strings.HasPrefix(t, "-- +goose Down"):
			if i >= start {
				end = i
			}
		}
	}
	if end < start {
		end = len(lines)
	}
	return strings.Join(lines[start:end], ""), start + 1
}

// split cuts sql into statements at semicolons outside string literals,
// quoted identifiers, dollar quotes and comments. firstLine is the line
// number of sql's first line.
func split(sql string, firstLine int) []statement {
	var (
		out     []statement
		b       strings.Builder
		line    = firstLine
		start   = 0 // line of the current statement's first token
		marked  bool
		reason  string
		lastWS  = true
		emitted = func() {
			t := strings.TrimSpace(b.String())
			if t != "" {
				out = append(out, statement{text: t, line: start, marked: marked, reason: reason})
			}
			b.Reset()
			start, marked, reason, lastWS = 0, false, "", true
		}
	)
	write := func(s string) {
		if start == 0 {
			start = line
		}
		b.WriteString(s)
		lastWS = false
	}
	space := func() {
		if !lastWS {
			b.WriteByte(' ')
			lastWS = true
		}
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\n':
			line++
			space()
			i++
		case c == ' ' || c == '\t' || c == '\r':
			space()
			i++
		case strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			comment := strings.TrimSpace(sql[i+2 : i+end])
			if r, ok := strings.CutPrefix(comment, StepMark); ok && start == 0 {
				marked, reason = true, strings.TrimSpace(r)
			}
			i += end
		case strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				end = len(sql) - i - 2
			}
			body := sql[i : i+2+end]
			line += strings.Count(body, "\n")
			space()
			i += 2 + end + 2
		case literalEnd(sql, i) > i:
			end := literalEnd(sql, i)
			write(sql[i:end])
			line += strings.Count(sql[i:end], "\n")
			i = end
		case c == ';':
			emitted()
			i++
		default:
			write(string(c))
			i++
		}
	}
	emitted()
	return out
}

// literalEnd returns the end of the string literal, quoted identifier or
// dollar-quoted string starting at sql[i], or i if none starts there.
func literalEnd(sql string, i int) int {
	switch c := sql[i]; c {
	case '\'', '"':
		for j := i + 1; j < len(sql); j++ {
			if sql[j] != c {
				continue
			}
			if j+1 < len(sql) && sql[j+1] == c { // doubled: an escaped quote
				j++
				continue
			}
			return j + 1
		}
		return len(sql)
	case '$':
		tag, ok := dollarTag(sql[i:])
		if !ok {
			return i
		}
		end := strings.Index(sql[i+len(tag):], tag)
		if end < 0 {
			return len(sql)
		}
		return i + len(tag) + end + len(tag)
	}
	return i
}

// dollarTag returns the opening $tag$ at the start of s.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}

// topLevel splits s at sep outside parentheses and quotes.
func topLevel(s string, sep byte) []string {
	var out []string
	depth, from := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == sep && depth == 0:
			out = append(out, strings.TrimSpace(s[from:i]))
			from = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[from:]))
}
