package pulse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: PULSE.md parsing never panics; an error names the file; the
// tasks it returns are numbered in order, one line of text each, under a
// known cadence, on a line of the file.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.md")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("## Continuous\n- sweep\n  and more\n## Daily\n- a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tasks, _, err := Parse("noor/PULSE.md", data)
		if err != nil {
			if !strings.Contains(err.Error(), "noor/PULSE.md") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		for i, tk := range tasks {
			if tk.Index != i || strings.TrimSpace(tk.Text) == "" || strings.ContainsAny(tk.Text, "\r\n") {
				t.Fatalf("task %d = %+v", i, tk)
			}
			if _, ok := ParseCadence(string(tk.Cadence)); !ok {
				t.Fatalf("task %d has cadence %q", i, tk.Cadence)
			}
			if tk.Line < 1 || tk.Line > lines {
				t.Fatalf("task %d on line %d of %d", i, tk.Line, lines)
			}
		}
	})
}
