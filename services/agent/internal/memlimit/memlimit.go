// Package memlimit sizes the Go heap from the container's own memory
// limit (docs/MANUAL.md "Memory and cluster size"): with GOMEMLIMIT unset, the
// runtime's soft limit is set at 90% of the cgroup's memory.max, so the
// garbage collector works harder before the kernel's OOM killer would.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// CgroupRoot is where a container sees its own cgroup.
const CgroupRoot = "/sys/fs/cgroup"

// Fraction of the cgroup limit the heap may use; the rest is the
// runtime's own, the goroutine stacks and what the kernel counts besides.
const Fraction = 0.9

// unlimited: cgroup v1 reports "no limit" as a page-rounded MaxInt64.
const unlimited = int64(1) << 60

// Limit is what Apply decided.
type Limit struct {
	Bytes  int64  // the soft limit set; 0 = none set
	Cgroup int64  // the cgroup's limit; 0 = none found
	Source string // "GOMEMLIMIT", "cgroup v2 <file>", "cgroup v1 <file>" or "none"
}

// Apply sets the runtime's memory limit from the cgroup under root unless
// GOMEMLIMIT is set (the runtime has read it then; a nil getenv reads
// the process environment). An unreadable or unlimited cgroup sets
// nothing.
func Apply(root string, getenv func(string) string) (Limit, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv("GOMEMLIMIT"); v != "" {
		return Limit{Bytes: debug.SetMemoryLimit(-1), Source: "GOMEMLIMIT"}, nil
	}
	max, src, err := cgroupMax(root)
	if err != nil || max == 0 {
		return Limit{Source: "none"}, err
	}
	l := Limit{Bytes: int64(math.Floor(float64(max) * Fraction)), Cgroup: max, Source: src}
	debug.SetMemoryLimit(l.Bytes)
	return l, nil
}

// cgroupMax reads the memory limit of cgroup v2 (memory.max) or v1
// (memory/memory.limit_in_bytes); 0 when there is none.
func cgroupMax(root string) (int64, string, error) {
	for _, f := range []struct{ path, src string }{
		{filepath.Join(root, "memory.max"), "cgroup v2 "},
		{filepath.Join(root, "memory", "memory.limit_in_bytes"), "cgroup v1 "},
	} {
		raw, err := os.ReadFile(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("reading the cgroup memory limit: %w", err)
		}
		s := strings.TrimSpace(string(raw))
		if s == "max" {
			return 0, f.src + f.path, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, "", fmt.Errorf("the cgroup memory limit in %s is %q, not a number of bytes", f.path, s)
		}
		if n >= unlimited {
			return 0, f.src + f.path, nil
		}
		return n, f.src + f.path, nil
	}
	return 0, "", nil
}
