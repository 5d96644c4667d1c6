package kube

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

var (
	largeOnce    sync.Once
	largePrefix  string
	largePlanted []kubetest.Planted
	largeErr     error
)

// loadedLarge returns a private API server holding only the large fixture
// (~9,600 requests to load): the seed-000 cluster shape, unmixed with other
// tests' fixtures, so the sweep's figures and "no false positive" mean what
// they say. Loaded once per test binary.
func loadedLarge(tb testing.TB) (*kubetest.Env, string, []kubetest.Planted) {
	tb.Helper()
	env := kubetest.Private(tb, "large")
	largeOnce.Do(func() {
		largePrefix = uniqueName("bx")
		o, planted := kubetest.LargeObjects(largePrefix, time.Now())
		largePlanted = planted
		t0 := time.Now()
		largeErr = kubetest.Load(context.Background(), env.Clientset, o, 16)
		tb.Logf("large fixture: %d objects loaded in %s", len(o.All()), time.Since(t0).Round(time.Millisecond))
	})
	if largeErr != nil {
		tb.Fatalf("loading the large fixture: %v", largeErr)
	}
	return env, largePrefix, largePlanted
}

// TestIntegrationLargeCluster: the seed-000 cluster shape. The sweep must
// stay under 8,000 characters, name every planted problem with its owner,
// report nothing else in the fixture, and render byte-identically twice.
func TestIntegrationLargeCluster(t *testing.T) {
	env, prefix, planted := loadedLarge(t)
	c, err := Connect(env.Kubeconfig, "", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	var walls []time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := r.Render()
		walls = append(walls, time.Since(t0))
		if i == 0 {
			checkLargeReport(t, r, prefix, planted)
			if len(r.Coverage.Partial) != 0 {
				t.Errorf("partial: %+v", r.Coverage.Partial)
			}
			// a private cluster: every problem is one of ours (checkLargeReport
			// checked which); 34 planted objects, two of them with a second reason
			if len(r.Problems) != len(planted)+2 {
				t.Errorf("%d problems for %d planted (+2 FailedCreate)", len(r.Problems), len(planted))
			}
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] || outs[1] != outs[2] {
		t.Error("sweeps of an unchanged cluster render differently")
	}
	t.Logf("sweep wall times %v; %d chars; %d planted problems", walls, utf8.RuneCountInString(outs[2]), len(planted))
	t.Logf("render:\n%s", outs[2])
}

// BenchmarkClusterProblems sweeps the large fixture on the real API server:
// wall time per sweep (ns/op), this process's CPU, the API server's CPU
// (when its pid file is known) and the output size.
func BenchmarkClusterProblems(b *testing.B) {
	env, _, _ := loadedLarge(b)
	c, err := Connect(env.Kubeconfig, "", zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	chars := 0
	cpu0, srv0 := selfCPU(), serverCPU(env)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := c.ClusterProblems(ctx, ProblemOptions{})
		if err != nil {
			b.Fatal(err)
		}
		chars = utf8.RuneCountInString(r.Render())
	}
	b.StopTimer()
	b.ReportMetric(float64(selfCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "client-cpu-ms/op")
	if s := serverCPU(env); s >= 0 && srv0 >= 0 {
		b.ReportMetric(float64(s-srv0)/float64(time.Millisecond)/float64(b.N), "apiserver-cpu-ms/op")
	}
	b.ReportMetric(float64(chars), "chars")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU reads the kube-apiserver's user+system CPU from /proc, or -1.
func serverCPU(env *kubetest.Env) time.Duration {
	raw, err := os.ReadFile(filepath.Join(env.Dir, "kube-apiserver.pid"))
	if err != nil {
		return -1
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(raw)) + "/stat")
	if err != nil {
		return -1
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return -1
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
