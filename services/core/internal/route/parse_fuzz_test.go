package route

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: the routes file parser never panics; an error names the file;
// parsed routes send every alert somewhere known or ignore it, and the
// built-in routes always parse.
func FuzzParse(f *testing.F) {
	f.Add(DefaultFile)
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("routes:\n- match: {namespace: \"a\"}\n  agent: platform-sre\n  cooldown: 5m\n"))
	f.Add([]byte("correlation:\n  keys: [owner, alert]\n  node_alertnames: [X]\n  max_listed: 3\nqueue: {max_per_agent: 7}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("routes.yaml", data, opts())
		if err != nil {
			if !strings.Contains(err.Error(), "routes.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, a := range r.Agents() {
			if _, ok := resolve(a); !ok {
				t.Fatalf("routes send alerts to unknown agent %q", a)
			}
		}
	})
}
