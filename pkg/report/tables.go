package report

import (
	"regexp"
	"strings"
)

// delimiterRow matches a Markdown table's header delimiter: cells of at least
// three dashes with optional alignment colons, separated by pipes
// ("|---|:--:|", "--- | ---").
var delimiterRow = regexp.MustCompile(`^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$|^\s*\|\s*:?-{3,}:?\s*\|\s*$`)

// StripTables rewrites every Markdown table in s as plain lines, because chat
// apps render table syntax as a wall of pipes: the delimiter row goes, and
// each other row becomes its cells joined by " — ". A table is a line with a
// pipe followed by a delimiter row, then every following line with a pipe.
// Lines inside ``` fences are left alone (code blocks render as written).
func StripTables(s string) string {
	if !strings.Contains(s, "|") {
		return s
	}
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			out = append(out, l)
			continue
		}
		if fenced || !strings.Contains(l, "|") || i+1 >= len(lines) || !delimiterRow.MatchString(lines[i+1]) {
			out = append(out, l)
			continue
		}
		// A table: header, delimiter, rows.
		if row := tableRow(l); row != "" {
			out = append(out, row)
		}
		i += 2
		for ; i < len(lines) && strings.Contains(lines[i], "|") && strings.TrimSpace(lines[i]) != ""; i++ {
			if delimiterRow.MatchString(lines[i]) {
				continue
			}
			if row := tableRow(lines[i]); row != "" {
				out = append(out, row)
			}
		}
		i-- // the loop's i++ moves to the first line after the table
	}
	return strings.Join(out, "\n")
}

// tableRow turns "| a | b \| c |" into "a — b | c".
func tableRow(l string) string {
	const escaped = "\x00"
	l = strings.ReplaceAll(strings.TrimSpace(l), `\|`, escaped)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	var cells []string
	for _, c := range strings.Split(l, "|") {
		if c = strings.TrimSpace(strings.ReplaceAll(c, escaped, "|")); c != "" {
			cells = append(cells, c)
		}
	}
	return strings.Join(cells, " — ")
}
