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
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// benchWebhooks measures POST /api/v1/alerts through the core's handler:
// webhooks of one alert each, cycling over 1,000 standing alerts already
// investigated (the steady state of an alert storm: every decision is a
// cooldown, each recorded), reporting webhooks/s and latency percentiles.
func benchWebhooks(b *testing.B, st store.CoreStore, parallelism int) {
	routes := filepath.Join(b.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("defaults:\n  max_in_flight: 50\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	c := newCore(b, coreOpts{store: st, quiet: true, env: map[string]string{"ROUTES_FILE": routes}})
	h := c.Handler()
	const alerts = 1000
	bodies := make([][]byte, alerts)
	for i := range bodies {
		bodies[i] = webhookBody(alert(fmt.Sprintf("bench%04d", i), "DeploymentAllReplicasDown", "fixtures", "firing"))
	}
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
	b.StopTimer()
	c.WaitIdle()
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	pct := func(p float64) float64 {
		return float64(lats[min(len(lats)-1, int(float64(len(lats))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "webhooks/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

func BenchmarkWebhookMemory(b *testing.B) {
	benchWebhooks(b, store.NewMemory(nil), 1)
}

// BenchmarkWebhookPostgres runs at two loads: 4 webhooks in flight
// (latency) and 16 (throughput).
func BenchmarkWebhookPostgres(b *testing.B) {
	for _, perCPU := range []int{2, 8} {
		b.Run(fmt.Sprintf("inflight=%d", perCPU*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			benchWebhooks(b, openPG(b, pgSchema(b)), perCPU)
		})
	}
}
