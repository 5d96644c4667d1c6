package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// lineIndex maps yaml.v3 node positions (1-based line and column, columns
// counted in characters) to byte offsets in the source. It follows the
// scanner's rules: a UTF-8 byte order mark at the start is skipped, CRLF is
// one line break, and CR, LF, NEL, LS and PS each end a line.
type lineIndex struct {
	src    []byte
	starts []int // byte offset of each line's first character
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func newLineIndex(src []byte) *lineIndex {
	start := 0
	if bytes.HasPrefix(src, utf8BOM) {
		start = len(utf8BOM)
	}
	li := &lineIndex{src: src, starts: []int{start}}
	for i := start; i < len(src); {
		switch {
		case src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case src[i] == '\r' || src[i] == '\n':
			i++
		case bytes.HasPrefix(src[i:], []byte("\u0085")), bytes.HasPrefix(src[i:], []byte("\u2028")), bytes.HasPrefix(src[i:], []byte("\u2029")):
			_, w := utf8.DecodeRune(src[i:])
			i += w
		default:
			_, w := utf8.DecodeRune(src[i:])
			i += w
			continue
		}
		li.starts = append(li.starts, i)
	}
	return li
}

// offset returns the byte offset of (line, column), both 1-based.
func (li *lineIndex) offset(line, column int) (int, error) {
	if line < 1 || line > len(li.starts) || column < 1 {
		return 0, fmt.Errorf("position %d:%d is outside the file", line, column)
	}
	off := li.starts[line-1]
	for c := 1; c < column; c++ {
		if off >= len(li.src) {
			return 0, fmt.Errorf("position %d:%d is past the end of the file", line, column)
		}
		r, w := utf8.DecodeRune(li.src[off:])
		if r == '\r' || r == '\n' || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return 0, fmt.Errorf("position %d:%d is past the end of its line", line, column)
		}
		off += w
	}
	return off, nil
}

// scalarSpan locates the bytes that hold n's value in src: for a plain scalar
// the value itself, for a quoted one the text between the quotes. It refuses
// any scalar whose source text is not exactly its value (escapes, folded
// lines, tags, block styles): splicing those by position would be a guess.
func (li *lineIndex) scalarSpan(n *yaml.Node) (start, end int, err error) {
	if n.Kind != yaml.ScalarNode {
		return 0, 0, errors.New("not a scalar")
	}
	if n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) != 0 {
		return 0, 0, fmt.Errorf("the value at line %d is written with a tag or block style; edit it by hand", n.Line)
	}
	off, err := li.offset(n.Line, n.Column)
	if err != nil {
		return 0, 0, err
	}
	var quote byte
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		quote = '"'
	case n.Style&yaml.SingleQuotedStyle != 0:
		quote = '\''
	}
	if quote != 0 {
		if off >= len(li.src) || li.src[off] != quote {
			return 0, 0, fmt.Errorf("expected %c at line %d column %d", quote, n.Line, n.Column)
		}
		off++
	}
	end = off + len(n.Value)
	if end > len(li.src) || string(li.src[off:end]) != n.Value {
		return 0, 0, fmt.Errorf("the text at line %d column %d is not the literal value %q (escaped or multi-line scalar); edit it by hand", n.Line, n.Column, n.Value)
	}
	if quote != 0 && (end >= len(li.src) || li.src[end] != quote) {
		return 0, 0, fmt.Errorf("the quoted value at line %d does not end where expected; edit it by hand", n.Line)
	}
	return off, end, nil
}
