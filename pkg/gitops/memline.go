package gitops

import (
	"errors"
	"fmt"
	"strings"
)

// memToken is one memory value in a line of YAML text: the bytes of the
// quantity (inside its quotes, if any) after a "memory:" key.
type memToken struct {
	Start, End int // byte span of the quantity in the line
	Value      string
}

// memoryTokens finds every `memory: <quantity>` in a line, in block or flow
// style, with or without quotes around the key or the value. A quantity
// here is any run of [0-9A-Za-z.+-]; whether it parses is checked later.
func memoryTokens(line string) []memToken {
	var out []memToken
	for from := 0; ; {
		i := strings.Index(line[from:], "memory")
		if i < 0 {
			return out
		}
		i += from
		from = i + len("memory")
		j := from
		// the key may be quoted: "memory": or 'memory':
		var kq byte
		if i > 0 && (line[i-1] == '"' || line[i-1] == '\'') {
			kq = line[i-1]
			if j >= len(line) || line[j] != kq {
				continue
			}
			j++
		}
		before := i - 1
		if kq != 0 {
			before--
		}
		if before >= 0 && !strings.ContainsRune(" \t{,[?", rune(line[before])) {
			continue // part of a longer word, e.g. "gomemory"
		}
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		if j >= len(line) || line[j] != ':' {
			continue
		}
		j++
		if j < len(line) && line[j] != ' ' && line[j] != '\t' && kq == 0 {
			continue // "memory:x" is not a key in plain style
		}
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		var vq byte
		if j < len(line) && (line[j] == '"' || line[j] == '\'') {
			vq = line[j]
			j++
		}
		s := j
		for j < len(line) && isQuantityByte2(line[j]) {
			j++
		}
		if j == s {
			continue
		}
		e := j
		if vq != 0 {
			if j >= len(line) || line[j] != vq {
				continue
			}
			j++
		}
		if j < len(line) && !strings.ContainsRune(" \t,}]#\r", rune(line[j])) {
			continue
		}
		out = append(out, memToken{Start: s, End: e, Value: line[s:e]})
		from = e
	}
}

func isQuantityByte2(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '.' || b == '+' || b == '-'
}

// maskMemory replaces every memory quantity of line with a placeholder.
func maskMemory(line string, toks []memToken) string {
	var b strings.Builder
	prev := 0
	for _, t := range toks {
		b.WriteString(line[prev:t.Start])
		b.WriteString("\x00MEM\x00")
		prev = t.End
	}
	b.WriteString(line[prev:])
	return b.String()
}

// memoryLineChange compares a removed and an added line: they must be
// byte-identical once every memory quantity is masked, and differ in
// exactly one quantity. It returns that quantity's index among the line's
// memory values and the old and new text.
func memoryLineChange(oldLine, newLine string) (idx int, oldQ, newQ string, err error) {
	ot, nt := memoryTokens(oldLine), memoryTokens(newLine)
	if len(ot) == 0 || len(nt) == 0 {
		return 0, "", "", fmt.Errorf("the changed line is not a memory value: %q", clip(oldLine))
	}
	if maskMemory(oldLine, ot) != maskMemory(newLine, nt) || len(ot) != len(nt) {
		return 0, "", "", fmt.Errorf("the changed line differs in more than a memory value:\n-%s\n+%s", clip(oldLine), clip(newLine))
	}
	idx = -1
	for k := range ot {
		if ot[k].Value != nt[k].Value {
			if idx >= 0 {
				return 0, "", "", errors.New("the changed line changes several memory values; a bump changes one")
			}
			idx = k
		}
	}
	if idx < 0 {
		return 0, "", "", fmt.Errorf("the changed line does not change a memory value")
	}
	return idx, ot[idx].Value, nt[idx].Value, nil
}

// underLimits reports whether memory value k of line sits under a
// "limits" key. In flow style the innermost open "{" before the value must
// follow "limits:"; in block style "memory" must start the line and the
// nearest less-indented line above (from the diff's own context, skipping
// blank and comment lines) must be "limits:". above lists the lines before
// line in the hunk, nearest last. Not being able to tell is a "no".
func underLimits(line string, tok memToken, above []string) error {
	prefix := line[:tok.Start]
	if open := innermostOpenBrace(prefix); open >= 0 {
		key := strings.TrimRight(prefix[:open], " \t")
		key = strings.TrimSuffix(key, ":")
		key = strings.TrimRight(key, " \t")
		key = strings.Trim(lastWord(key), `"'`)
		if key != "limits" {
			return fmt.Errorf("the changed memory value is under %q, not limits", key)
		}
		return nil
	}
	indent := leadingSpaces(line)
	if rest := strings.TrimLeft(line, " "); !strings.HasPrefix(strings.TrimLeft(rest, `"'`), "memory") {
		return fmt.Errorf("the changed memory value is not the first key of its line")
	}
	for k := len(above) - 1; k >= 0; k-- {
		l := above[k]
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if leadingSpaces(l) >= indent {
			continue
		}
		key := t
		if c := strings.Index(key, " #"); c >= 0 {
			key = strings.TrimSpace(key[:c])
		}
		if key == "limits:" || key == `"limits":` || key == `'limits':` {
			return nil
		}
		return fmt.Errorf("the changed memory value is under %q, not limits", clip(t))
	}
	return errors.New("the diff's context does not show that the changed memory value is under limits")
}

// innermostOpenBrace returns the index of the last unclosed '{' in s, or -1.
// Quoted strings are skipped.
func innermostOpenBrace(s string) int {
	var stack []int
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '{':
			stack = append(stack, i)
		case c == '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if len(stack) == 0 {
		return -1
	}
	return stack[len(stack)-1]
}

func lastWord(s string) string {
	i := strings.LastIndexAny(s, " \t{,[")
	return s[i+1:]
}

func leadingSpaces(s string) int {
	n := 0
	for n < len(s) && s[n] == ' ' {
		n++
	}
	return n
}
