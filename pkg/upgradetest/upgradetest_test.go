package upgradetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrevious(t *testing.T) {
	t.Parallel()
	const id = "6d80a0e082a3c96adfa0bddf97eea53842acca96"
	tests := []struct {
		name, file, want, err string
	}{
		{"commit after comments", "# why\n\n" + id + "\n", id, ""},
		{"short id", "6d80a0e\n", "", PinFile + `:1: want a full 40-hex commit id, got "6d80a0e"`},
		{"nothing pinned", "# only a comment\n", "", PinFile + ": no commit pinned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(PinFile)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, PinFile), []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Previous(root)
			if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Previous = %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

// The repository's own pin names a commit of its history.
func TestPinnedCommitReadable(t *testing.T) {
	t.Parallel()
	root := Root(t, ".")
	if _, err := Previous(root); err != nil {
		t.Fatal(err)
	}
}
