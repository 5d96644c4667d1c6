package redact

import (
	"bytes"
	"io"
)

// Writer redacts JSON log lines on their way to w: both services' zap
// loggers write through it, so a URL with userinfo or a token in an error
// message never reaches the log (docs/MANUAL.md, "Redaction"). Each Write is one
// log entry (zap writes an entry at a time); a line with nothing to redact
// passes through untouched, a JSON line stays valid JSON.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write redacts p and writes it; it reports len(p) written on success.
func (rw *Writer) Write(p []byte) (int, error) {
	if _, n := String(string(p)); n.Total() == 0 {
		return rw.w.Write(p)
	}
	line := bytes.TrimRight(p, "\n")
	out, _ := JSON(line)
	if len(line) < len(p) {
		out = append(out, '\n')
	}
	if _, err := rw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
