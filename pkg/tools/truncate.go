package tools

import (
	"fmt"
	"unicode/utf8"
)

// Truncate keeps s when it has at most max characters (runes). Otherwise it
// keeps the head (2/3) and the tail (1/3) of the budget around a marker that
// tells the model how much was cut and to narrow its request. Cuts fall on
// rune boundaries.
func Truncate(s string, max int) string {
	if max <= 0 {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	head := max * 2 / 3
	tail := max - head
	runes := []rune(s)
	cut := n - head - tail
	return fmt.Sprintf("%s\n[... %d characters truncated: narrow the request (namespace, name, filter, tail) to see them ...]\n%s",
		string(runes[:head]), cut, string(runes[n-tail:]))
}
