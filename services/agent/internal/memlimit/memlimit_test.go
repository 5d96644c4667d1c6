package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestApply sets the limit from a fake cgroup directory. Not parallel:
// the runtime's memory limit is one per process.
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	cases := []struct {
		name    string
		files   map[string]string
		env     string
		want    int64
		cgroup  int64
		source  string
		wantErr string
	}{
		{"v2 limit", map[string]string{"memory.max": "268435456\n"}, "", 241591910, 268435456, "cgroup v2", ""},
		{"v2 no limit", map[string]string{"memory.max": "max\n"}, "", 0, 0, "none", ""},
		{"v1 limit", map[string]string{"memory/memory.limit_in_bytes": "134217728\n"}, "", 120795955, 134217728, "cgroup v1", ""},
		{"v1 unlimited", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, "", 0, 0, "none", ""},
		{"no cgroup", nil, "", 0, 0, "none", ""},
		{"garbage", map[string]string{"memory.max": "lots\n"}, "", 0, 0, "none", `is "lots", not a number`},
		{"GOMEMLIMIT wins", map[string]string{"memory.max": "268435456\n"}, "100MiB", before, 0, "GOMEMLIMIT", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(before)
			root := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Apply(root, func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.env
				}
				return ""
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if l.Bytes != tc.want || l.Cgroup != tc.cgroup || !strings.HasPrefix(l.Source, tc.source) {
				t.Errorf("Apply = %+v, want %d of %d from %s", l, tc.want, tc.cgroup, tc.source)
			}
			got := debug.SetMemoryLimit(-1)
			if tc.want > 0 && got != tc.want {
				t.Errorf("runtime limit %d, want %d", got, tc.want)
			}
			if tc.want == 0 && got != before {
				t.Errorf("runtime limit changed to %d without a cgroup limit", got)
			}
		})
	}
}
