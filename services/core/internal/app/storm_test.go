package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStorm is an alert storm: 10,000 webhooks carrying six standing
// alerts of one group and namespace (one incident) and, from the middle
// on, a seventh, fresh one in another namespace must make exactly two
// investigations — one per incident — with every request answered 2xx
// and memory bounded. Its speed is logged, not asserted: a wall-clock bound
// fails on a loaded machine and proves nothing; throughput is measured by
// BenchmarkWebhookMemory and BenchmarkWebhookPostgres (bench_test.go).
func TestStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("storm: not in -short")
	}
	const webhooks, workers = 10000, 16
	c := newCore(t, coreOpts{quiet: true})
	standing := make([]map[string]any, 6)
	for i := range standing {
		standing[i] = alert(fmt.Sprintf("standing%d", i), "DeploymentAllReplicasDown", "fixtures", "firing")
	}
	fresh := alert("fresh", "KubePodOOMKilled", "prod", "firing")
	before := webhookBody(standing...)
	after := webhookBody(append(append([]map[string]any{}, standing...), fresh)...)

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()

	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()

	var next, non2xx atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > webhooks {
					return
				}
				body := before
				if n > webhooks/2 {
					body = after
				}
				resp, err := client.Post(c.URL+"/api/v1/alerts", "application/json", bytes.NewReader(body))
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					non2xx.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					non2xx.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	c.WaitIdle()
	if n := non2xx.Load(); n != 0 {
		t.Fatalf("%d of %d webhooks not answered 2xx (first error: %v)", n, webhooks, firstErr.Load())
	}

	runs := c.Agent.Runs()
	perKey := map[string]int{}
	for _, r := range runs {
		perKey[r.Request.Context["correlation_key"]]++
	}
	if len(runs) != 2 || len(perKey) != 2 {
		t.Fatalf("%d investigations over %d incidents, want exactly 2 (one per incident): %v", len(runs), len(perKey), perKey)
	}
	if q := c.Pipeline().Queued(); q != 0 {
		t.Errorf("%d alerts still queued", q)
	}

	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	grew := int64(m1.HeapInuse) - int64(m0.HeapInuse)
	t.Logf("storm: %d webhooks (%d alert decisions) in %s = %.0f webhooks/s; heap in use %+.1f MiB",
		webhooks, webhooks*6+webhooks/2, elapsed.Round(time.Millisecond), float64(webhooks)/elapsed.Seconds(),
		float64(grew)/(1<<20))
	// The in-memory store keeps every decision (65,000 here, a few hundred
	// bytes each); anything per-request beyond that would show far above.
	if grew > 64<<20 {
		t.Errorf("heap in use grew by %.1f MiB over the storm, want < 64 MiB", float64(grew)/(1<<20))
	}
	// Idle keep-alive connections hold goroutines on both ends: close them
	// and wait (bounded) for the server side to notice.
	tr.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0+5 && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0+5 {
		t.Errorf("goroutines %d → %d after the storm: leak", g0, g)
	}
}
