package upgradetest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// tb records how a helper ended the test: Skip and Fatal end the
// goroutine as the testing package's do.
type tb struct {
	testing.TB
	skipped, failed string
}

func (r *tb) Helper()                   {}
func (r *tb) Skip(args ...any)          { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *tb) Fatal(args ...any)         { r.failed = fmt.Sprint(args...); runtime.Goexit() }
func (r *tb) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...); runtime.Goexit() }

// A commit the checkout lacks (a shallow clone) skips, or fails under
// CI=true, naming the fix.
func TestBuildWithoutTheCommit(t *testing.T) {
	root := Root(t, ".")
	t.Setenv("HOME", t.TempDir()) // nothing cached
	const missing = "0123456789abcdef0123456789abcdef01234567"
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &tb{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Build(r, root, missing, "services/core")
		}()
		<-done
		got := r.skipped
		if ci == "true" {
			got = r.failed
		}
		if !strings.Contains(got, "commit "+missing) || !strings.Contains(got, "git fetch --unshallow") {
			t.Errorf("CI=%q: skipped %q, failed %q; want the commit and the fix named", ci, r.skipped, r.failed)
		}
	}
}
