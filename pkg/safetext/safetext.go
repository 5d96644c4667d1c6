// Package safetext makes free text from outside (Kubernetes event messages,
// condition messages, container logs) safe to hand to a model or a terminal:
// valid UTF-8, no control characters (ESC sequences), no Unicode format or
// bidi characters (U+202E, U+200B, U+2066…), bounded length. JSON encoding is
// not sanitizing: it escapes ESC but passes U+202E through unchanged.
package safetext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis marks text that was cut to fit its bound.
const Ellipsis = "…"

// Clean returns s as one line of at most max runes (max < 1: unbounded):
// invalid UTF-8 becomes U+FFFD, every kind of whitespace (newlines, tabs,
// U+2028…) becomes a space with runs collapsed and the ends trimmed, C0/C1
// control characters and format characters (category Cf) are dropped. Cut
// text ends with Ellipsis, which counts toward max.
func Clean(s string, max int) string {
	var b strings.Builder
	b.Grow(min(len(s), boundBytes(max)))
	space := false        // a space is pending: written only before the next visible rune
	n := 0                // runes written
	for _, r := range s { // ranging a string yields U+FFFD for invalid bytes
		switch {
		case unicode.IsSpace(r):
			space = n > 0
			continue
		case dropped(r):
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if max > 0 && n+need > max {
			return cut(b.String(), n, max)
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// CleanBlock is Clean for multi-line text (logs, YAML values): it keeps line
// breaks (CRLF and lone CR become LF), turns tabs and other spaces into a
// plain space, drops control and format characters, and bounds the result to
// max runes (max < 1: unbounded); cut text gets one more line saying how
// much was cut.
// Trailing spaces on a line are kept: they are harmless and visible.
func CleanBlock(s string, max int) string {
	var b strings.Builder
	b.Grow(min(len(s), boundBytes(max)))
	n := 0
	total := 0
	prevCR := false
	for _, r := range s {
		total++
		if r == '\n' && prevCR { // the LF of a CRLF: already written
			prevCR = false
			continue
		}
		prevCR = r == '\r'
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || r == '\u0085':
			r = '\n'
		case unicode.IsSpace(r):
			r = ' '
		case dropped(r):
			continue
		}
		if max > 0 && n >= max {
			rest := utf8.RuneCountInString(s) - total + 1
			b.WriteString("\n" + Ellipsis + " [" + itoa(rest) + " more characters cut]")
			return b.String()
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// dropped reports whether r is a control or format character (ESC, DEL,
// U+0080–U+009F, U+200B, U+202E, U+2066, U+FEFF, tags…). Whitespace controls
// are handled by the callers before this.
func dropped(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
		r == '\uFFFE' || r == '\uFFFF' // noncharacters: a byte-swapped BOM, or garbage
}

// cut shortens s (n runes) so that it plus Ellipsis fits max runes.
func cut(s string, n, max int) string {
	if max == 1 { // room for the marker only
		return Ellipsis
	}
	keep := max - 1
	if keep < n {
		s = string([]rune(s)[:keep])
	}
	return strings.TrimRight(s, " ") + Ellipsis
}

func boundBytes(max int) int {
	if max < 1 {
		return 1 << 30
	}
	return max * 4
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
