package gitops

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// fileDiff is one file of a unified diff.
type fileDiff struct {
	OldPath, NewPath string
	// Extra holds header lines other than "index": mode changes, renames,
	// binary markers. Any of them makes a diff non-trivial.
	Extra []string
	Hunks []hunk
}

type hunk struct {
	OldStart, OldCount, NewStart, NewCount int
	Lines                                  []diffLine
}

// diffLine is one body line of a hunk.
type diffLine struct {
	Op    byte   // ' ', '-' or '+'
	Text  string // without the op and without the line's "\n"
	OldNo int    // line number in the old file (context and removed lines)
	NewNo int    // line number in the new file (context and added lines)
	NoEOL bool   // followed by "\ No newline at end of file"
}

// CountChanged counts the added and removed lines of a unified diff (its
// +++/--- file headers are not changes). The sandbox, the eval judges and
// the loop tests read a PR's size with it.
func CountChanged(diff string) (plus, minus int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			plus++
		case strings.HasPrefix(l, "-"):
			minus++
		}
	}
	return plus, minus
}

var hunkHeaderRE = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// maxDiffLines bounds what the parser reads.
const maxDiffLines = 200000

// parseUnifiedDiff parses git's unified diff format strictly: anything it
// does not recognise is an error, never skipped.
func parseUnifiedDiff(d string) ([]fileDiff, error) {
	if strings.TrimSpace(d) == "" {
		return nil, fmt.Errorf("the diff is empty")
	}
	lines := strings.Split(d, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > maxDiffLines {
		return nil, fmt.Errorf("the diff has %d lines; the parser reads at most %d", len(lines), maxDiffLines)
	}
	var files []fileDiff
	i := 0
	for i < len(lines) {
		if !strings.HasPrefix(lines[i], "diff --git ") {
			return nil, fmt.Errorf("diff line %d: expected \"diff --git\", got %q", i+1, clip(lines[i]))
		}
		var fd fileDiff
		i++
		for i < len(lines) && !strings.HasPrefix(lines[i], "--- ") && !strings.HasPrefix(lines[i], "diff --git ") {
			if !strings.HasPrefix(lines[i], "index ") {
				fd.Extra = append(fd.Extra, lines[i])
			}
			i++
		}
		if i < len(lines) && strings.HasPrefix(lines[i], "--- ") {
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
				return nil, fmt.Errorf("diff line %d: \"---\" without \"+++\"", i+1)
			}
			fd.OldPath = strings.TrimPrefix(lines[i], "--- ")
			fd.NewPath = strings.TrimPrefix(lines[i+1], "+++ ")
			i += 2
		}
		for i < len(lines) && strings.HasPrefix(lines[i], "@@") {
			h, next, err := parseHunk(lines, i)
			if err != nil {
				return nil, err
			}
			fd.Hunks = append(fd.Hunks, h)
			i = next
		}
		if i < len(lines) && !strings.HasPrefix(lines[i], "diff --git ") {
			return nil, fmt.Errorf("diff line %d: unexpected %q after the hunks", i+1, clip(lines[i]))
		}
		files = append(files, fd)
	}
	return files, nil
}

func parseHunk(lines []string, i int) (hunk, int, error) {
	m := hunkHeaderRE.FindStringSubmatch(lines[i])
	if m == nil {
		return hunk{}, 0, fmt.Errorf("diff line %d: malformed hunk header %q", i+1, clip(lines[i]))
	}
	num := func(s string, def int) int {
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n > maxDiffLines*10 {
			return -1
		}
		return n
	}
	h := hunk{OldStart: num(m[1], 0), OldCount: num(m[2], 1), NewStart: num(m[3], 0), NewCount: num(m[4], 1)}
	if h.OldStart < 0 || h.OldCount < 0 || h.NewStart < 0 || h.NewCount < 0 {
		return hunk{}, 0, fmt.Errorf("diff line %d: hunk header numbers out of range", i+1)
	}
	i++
	oldNo, newNo := h.OldStart, h.NewStart
	oldLeft, newLeft := h.OldCount, h.NewCount
	for oldLeft > 0 || newLeft > 0 {
		if i >= len(lines) {
			return hunk{}, 0, fmt.Errorf("the diff ends inside a hunk (%d old, %d new lines missing)", oldLeft, newLeft)
		}
		l := lines[i]
		if l == "" {
			return hunk{}, 0, fmt.Errorf("diff line %d: empty line inside a hunk", i+1)
		}
		dl := diffLine{Op: l[0], Text: l[1:]}
		switch l[0] {
		case ' ':
			dl.OldNo, dl.NewNo = oldNo, newNo
			oldNo++
			newNo++
			oldLeft--
			newLeft--
		case '-':
			dl.OldNo = oldNo
			oldNo++
			oldLeft--
		case '+':
			dl.NewNo = newNo
			newNo++
			newLeft--
		case '\\':
			if len(h.Lines) == 0 || h.Lines[len(h.Lines)-1].NoEOL {
				return hunk{}, 0, fmt.Errorf("diff line %d: misplaced %q", i+1, clip(l))
			}
			h.Lines[len(h.Lines)-1].NoEOL = true
			i++
			continue
		default:
			return hunk{}, 0, fmt.Errorf("diff line %d: unexpected %q inside a hunk", i+1, clip(l))
		}
		if oldLeft < 0 || newLeft < 0 {
			return hunk{}, 0, fmt.Errorf("diff line %d: more lines than the hunk header announces", i+1)
		}
		h.Lines = append(h.Lines, dl)
		i++
	}
	// A trailing "\ No newline" belongs to the last line.
	if i < len(lines) && strings.HasPrefix(lines[i], "\\") {
		if len(h.Lines) == 0 || h.Lines[len(h.Lines)-1].NoEOL {
			return hunk{}, 0, fmt.Errorf("diff line %d: misplaced %q", i+1, clip(lines[i]))
		}
		h.Lines[len(h.Lines)-1].NoEOL = true
		i++
	}
	return h, i, nil
}

// diffPath returns the repository path of a file diff side ("a/x" → "x"),
// "" for /dev/null, and an error for anything unusual (quoted names).
func diffPath(p, prefix string) (string, error) {
	if p == "/dev/null" {
		return "", nil
	}
	if i := strings.IndexByte(p, '\t'); i >= 0 {
		p = p[:i]
	}
	if !strings.HasPrefix(p, prefix) || strings.HasPrefix(p, "\"") {
		return "", fmt.Errorf("unusual file name %q in the diff", clip(p))
	}
	return strings.TrimPrefix(p, prefix), nil
}

// diffFiles returns the paths a diff touches (new path, or old when deleted).
func diffFiles(files []fileDiff) []string {
	var out []string
	for _, f := range files {
		p, _ := diffPath(f.NewPath, "b/")
		if p == "" {
			p, _ = diffPath(f.OldPath, "a/")
		}
		out = append(out, p)
	}
	return out
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
