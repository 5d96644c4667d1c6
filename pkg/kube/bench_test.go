package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// largeEnv is one loaded large fixture on its own API server.
type largeEnv struct {
	once    sync.Once
	env     *kubetest.Env
	prefix  string
	planted []kubetest.Planted
	err     error
}

var larges sync.Map // scale -> *largeEnv

// loadedLarge returns a private API server holding only the large fixture
// at scale (the issue-#12 cluster shape at 1; five times it at 5), unmixed
// with other tests' fixtures, so recall and "no false positive" mean what
// they say. Loaded once per test binary and scale.
func loadedLarge(tb testing.TB, scale int) (*kubetest.Env, string, []kubetest.Planted) {
	tb.Helper()
	v, _ := larges.LoadOrStore(scale, &largeEnv{})
	l := v.(*largeEnv)
	env := kubetest.Private(tb, fmt.Sprintf("large-%d", scale))
	l.once.Do(func() {
		l.env, l.prefix = env, uniqueName("bx")
		o, planted := kubetest.LargeObjectsScaled(l.prefix, time.Now(), scale)
		l.planted = planted
		t0 := time.Now()
		l.err = kubetest.Load(context.Background(), env.Clientset, o, 16)
		tb.Logf("large fixture x%d: %d objects loaded in %s", scale, len(o.All()), time.Since(t0).Round(time.Millisecond))
	})
	if l.err != nil {
		tb.Fatalf("loading the large fixture: %v", l.err)
	}
	return env, l.prefix, l.planted
}

// TestIntegrationLargeCluster: the issue-#12 cluster shape on the real API
// server. The sweep must stay under 8,000 characters, name every planted
// problem with its owner, report nothing else, summarise the churn, keep
// the findings under 64 KB and render byte-identically three times.
func TestIntegrationLargeCluster(t *testing.T) {
	env, prefix, planted := loadedLarge(t, 1)
	c, err := Connect(env.Kubeconfig, "", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	var walls []time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		r, err := c.ClusterProblems(context.Background(), ProblemOptions{StuckAfter: -1})
		if err != nil {
			t.Fatal(err)
		}
		out := r.Render()
		walls = append(walls, time.Since(t0))
		if i == 0 {
			recall, fp := checkLargeReport(t, r, prefix, planted)
			if len(r.Coverage.Partial) != 0 || r.Verdict() != VerdictIssuesFound {
				t.Errorf("verdict %s, partial: %+v", r.Verdict(), r.Coverage.Partial)
			}
			if len(r.Problems) != len(planted) {
				t.Errorf("%d problems for %d planted", len(r.Problems), len(planted))
			}
			if r.Churn.Events < 3000 || r.Churn.OnGone < 500 || r.Churn.ByReason["NodeNotReady"] == 0 || r.Churn.ByReason["FailedScheduling"] == 0 {
				t.Errorf("churn = %+v", r.Churn)
			}
			raw, _ := json.Marshal(ProblemsToFindings(r))
			if len(raw) >= 64<<10 {
				t.Errorf("findings are %d bytes, want < 64 KB", len(raw))
			}
			t.Logf("recall %d/%d, %d false positives, findings %d bytes", recall, len(planted), fp, len(raw))
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] || outs[1] != outs[2] {
		t.Error("sweeps of an unchanged cluster render differently")
	}
	t.Logf("sweep wall times %v; %d chars; %d planted problems", walls, utf8.RuneCountInString(outs[2]), len(planted))
	t.Logf("render:\n%s", outs[2])
}

// rawLists times the four Lists a hand-written sweep cannot avoid (pods,
// deployments, replicasets, Warning events), each alone, paged as the
// sweep pages them.
func rawLists(tb testing.TB, c *Client) map[string]time.Duration {
	ctx := context.Background()
	core, apps := c.cs.CoreV1(), c.cs.AppsV1()
	none := metav1.ListOptions{}
	warn := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("type", corev1.EventTypeWarning).String()}
	out := map[string]time.Duration{}
	timed := func(name string, f func(p pager) error) {
		pages, n := 0, 0
		t0 := time.Now()
		if err := f(pager{timeout: time.Minute, pages: &pages, n: &n}); err != nil {
			tb.Fatalf("raw list %s: %v", name, err)
		}
		out[name] = time.Since(t0)
	}
	timed(listPods, func(p pager) error {
		return pageEach(ctx, p, none, core.Pods("").List, func(l *corev1.PodList) []corev1.Pod { return l.Items },
			func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta }, func([]corev1.Pod) {})
	})
	timed(listDeployments, func(p pager) error {
		return pageEach(ctx, p, none, apps.Deployments("").List, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items },
			func(l *appsv1.DeploymentList) metav1.ListMeta { return l.ListMeta }, func([]appsv1.Deployment) {})
	})
	timed(listReplicaSets, func(p pager) error {
		return pageEach(ctx, p, none, apps.ReplicaSets("").List, func(l *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return l.Items },
			func(l *appsv1.ReplicaSetList) metav1.ListMeta { return l.ListMeta }, func([]appsv1.ReplicaSet) {})
	})
	timed("warning-events", func(p pager) error {
		return pageEach(ctx, p, warn, core.Events("").List, func(l *corev1.EventList) []corev1.Event { return l.Items },
			func(l *corev1.EventList) metav1.ListMeta { return l.ListMeta }, func([]corev1.Event) {})
	})
	return out
}

// BenchmarkClusterProblems sweeps the issue-#12 cluster shape on the real
// API server and reports, from the same run: recall and false positives
// against the planted problems, rendered characters, wall time per sweep
// (ns/op), client and API server CPU per sweep, the four raw Lists' times
// (alone, one after the other) and the sweep's wall time over their sum.
func BenchmarkClusterProblems(b *testing.B) { benchLarge(b, 1) }

// BenchmarkClusterProblems5x is the same at five times the size (3,000
// namespaces, ~6,200 pods, ~18,000 Warning events).
func BenchmarkClusterProblems5x(b *testing.B) { benchLarge(b, 5) }

// BenchmarkClusterProblems20x is the same at twenty times the size
// (12,000 namespaces, ~25,000 pods, ~71,000 Warning events); loading it
// takes minutes, so run it alone with -benchtime=1x. Its peak heap is
// the figure docs/MANUAL.md "Memory and cluster size" sizes the limits from.
func BenchmarkClusterProblems20x(b *testing.B) { benchLarge(b, 20) }

func benchLarge(b *testing.B, scale int) {
	env, prefix, planted := loadedLarge(b, scale)
	c, err := Connect(env.Kubeconfig, "", zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rawLists(b, c) // warm the API server's caches the same way before both
	raw := rawLists(b, c)
	var rawSum time.Duration
	for _, d := range raw {
		rawSum += d
	}
	runtime.GC()
	debug.FreeOSMemory()
	rss := resetPeakRSS()
	peak := newPeakHeap()
	chars, recall, fp, requests := 0, 0, 0, 0
	cpu0, srv0 := selfCPU(), serverCPU(env)
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		r, err := c.ClusterProblems(ctx, ProblemOptions{StuckAfter: -1})
		if err != nil {
			b.Fatal(err)
		}
		out := r.Render()
		chars = utf8.RuneCountInString(out)
		requests = r.requests
		if i == 0 {
			recall, fp = checkLargeReport(b, r, prefix, planted)
		}
	}
	wall := time.Since(t0) / time.Duration(b.N)
	b.StopTimer()
	b.ReportMetric(float64(selfCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "client-cpu-ms/op")
	if s := serverCPU(env); s >= 0 && srv0 >= 0 {
		b.ReportMetric(float64(s-srv0)/float64(time.Millisecond)/float64(b.N), "apiserver-cpu-ms/op")
	}
	b.ReportMetric(float64(peak.stop())/(1<<20), "peak-heap-MiB")
	if rss {
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MiB")
	}
	b.ReportMetric(float64(requests), "requests/op")
	for i, bin := range strings.FieldsFunc(os.Getenv("KUBECREW_AGENT_BIN"), func(r rune) bool { return r == ',' }) {
		unit := "agent-scan-rss-MiB"
		if i > 0 { // a second binary (the one to compare with)
			unit = fmt.Sprintf("agent%d-scan-rss-MiB", i+1)
		}
		b.ReportMetric(agentRSS(b, bin, env.Kubeconfig), unit)
	}
	b.ReportMetric(float64(chars), "chars")
	b.ReportMetric(float64(recall), "recall")
	b.ReportMetric(float64(len(planted)), "planted")
	b.ReportMetric(float64(fp), "false-positives")
	for name, d := range raw {
		b.ReportMetric(float64(d)/float64(time.Millisecond), "raw-"+name+"-ms")
	}
	b.ReportMetric(float64(rawSum)/float64(time.Millisecond), "raw-lists-ms")
	b.ReportMetric(float64(wall)/float64(rawSum), "wall/raw")
}

// peakHeap samples the live heap every millisecond until stopped.
type peakHeap struct {
	done chan struct{}
	max  chan uint64
}

func newPeakHeap() *peakHeap {
	p := &peakHeap{done: make(chan struct{}), max: make(chan uint64, 1)}
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var m uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			m = max(m, s[0].Value.Uint64())
			select {
			case <-p.done:
				p.max <- m
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) stop() uint64 { close(p.done); return <-p.max }

// agentRSS runs an agent binary (KUBECREW_AGENT_BIN, comma-separated:
// go build ./services/agent) as `agent scan` against kubeconfig, once,
// and returns its peak resident memory in MiB.
func agentRSS(tb testing.TB, bin, kubeconfig string) float64 {
	cmd := exec.Command(bin, "scan", "--kubeconfig", kubeconfig, "--output", "json", "--fail-on", "critical")
	cmd.Env = append(os.Environ(), "AGENT_PERSONA=noor")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		tb.Fatalf("agent scan: %v", err)
	}
	if cmd.ProcessState.ExitCode() == 2 {
		tb.Fatalf("agent scan could not check: %s", out[:min(len(out), 2000)])
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

// resetPeakRSS resets the kernel's resident high-water mark of this
// process (Linux clear_refs 5); false where that is not possible.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS is the resident high-water mark (VmHWM) in bytes since the
// last reset, or 0.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
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
