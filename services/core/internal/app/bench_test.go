package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/loadgen"
)

// oneAlertBodies are 1,000 webhooks of one alert each, every alert its
// own group.
func oneAlertBodies() [][]byte {
	bodies := make([][]byte, 1000)
	for i := range bodies {
		bodies[i] = webhookBody(alert(fmt.Sprintf("bench%04d", i), "DeploymentAllReplicasDown", "fixtures", "firing"))
	}
	return bodies
}

// loadgenBodies are the side-by-side benchmark's webhooks (docs/MANUAL.md,
// "Benchmark: the core beside Alertmanager"): its pool of 1,000 alerts,
// perPost to a webhook.
func loadgenBodies(b *testing.B, perPost int) [][]byte {
	const pool = 1000
	bodies := make([][]byte, 0, pool/perPost)
	for first := 0; first < pool; first += perPost {
		body, err := loadgen.Body(loadgen.Core, pool, first, perPost)
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	return bodies
}

// benchWebhooks measures POST /api/v1/alerts through the core's handler,
// cycling over bodies whose alerts were all investigated already (the
// steady state of an alert storm: every decision is a cooldown, each
// recorded), reporting webhooks/s, alerts/s and latency percentiles.
func benchWebhooks(b *testing.B, st store.CoreStore, parallelism int, bodies [][]byte, perPost int) {
	routes := filepath.Join(b.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("defaults:\n  max_in_flight: 50\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	c := newCore(b, coreOpts{store: st, quiet: true, env: map[string]string{"ROUTES_FILE": routes}})
	h := c.Handler()
	alerts := int64(len(bodies))
	// Warm up: every alert investigated once, so the measured webhooks are
	// the storm's steady state (standing alerts in cooldown).
	for _, body := range bodies {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/v1/alerts", bytes.NewReader(body)))
		if w.Code != http.StatusOK {
			b.Fatalf("warm-up webhook answered %d: %s", w.Code, w.Body)
		}
	}
	for c.WaitIdle(); c.Pipeline().Queued() > 0; c.WaitIdle() {
		c.Upkeep(context.Background())
	}
	var (
		mu   sync.Mutex
		lats []time.Duration
		next int64
	)
	b.ReportAllocs()
	// Concurrent webhooks per CPU: Alertmanager posts from many groups at
	// once; a CPU-bound store saturates with one, a database needs more.
	b.SetParallelism(parallelism)
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		for pb.Next() {
			mu.Lock()
			n := next
			next++
			mu.Unlock()
			req := httptest.NewRequest(http.MethodPost, "/api/v1/alerts", bytes.NewReader(bodies[n%alerts]))
			w := httptest.NewRecorder()
			t0 := time.Now()
			h.ServeHTTP(w, req)
			local = append(local, time.Since(t0))
			if w.Code != http.StatusOK {
				b.Errorf("webhook answered %d: %s", w.Code, w.Body)
				return
			}
		}
		mu.Lock()
		lats = append(lats, local...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	c.WaitIdle()
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	pct := func(p float64) float64 {
		return float64(lats[min(len(lats)-1, int(float64(len(lats))*p))].Microseconds()) / 1000
	}
	// CPU per alert, of the whole process (handler, store, GC): the
	// figure the side-by-side benchmark compares, less the HTTP server's
	// and steadier than ns/op on a shared machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lats)*perPost), "cpu-ns/alert")
	b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "webhooks/s")
	b.ReportMetric(float64(len(lats)*perPost)/elapsed.Seconds(), "alerts/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkWebhookMemory(b *testing.B) {
	benchWebhooks(b, store.NewMemory(nil), 1, oneAlertBodies(), 1)
}

// BenchmarkWebhookLoadgen is the side-by-side benchmark's request in
// process, one at a time: the loadgen's bodies of 1 and 10 alerts (each
// pod of a namespace one incident, Alertmanager's group key), on memory
// and on Postgres. ns/op is the core's cost of one webhook without the
// HTTP server's.
func BenchmarkWebhookLoadgen(b *testing.B) {
	for _, per := range []int{1, 10} {
		b.Run(fmt.Sprintf("memory/per=%d", per), func(b *testing.B) {
			benchWebhooks(b, store.NewMemory(nil), 1, loadgenBodies(b, per), per)
		})
		b.Run(fmt.Sprintf("postgres/per=%d", per), func(b *testing.B) {
			benchWebhooks(b, openPG(b, pgSchema(b)), 1, loadgenBodies(b, per), per)
		})
	}
}

// BenchmarkWebhookPostgres runs at two loads: 4 webhooks in flight
// (latency) and 16 (throughput).
func BenchmarkWebhookPostgres(b *testing.B) {
	for _, perCPU := range []int{2, 8} {
		b.Run(fmt.Sprintf("inflight=%d", perCPU*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			benchWebhooks(b, openPG(b, pgSchema(b)), perCPU, oneAlertBodies(), 1)
		})
	}
}
