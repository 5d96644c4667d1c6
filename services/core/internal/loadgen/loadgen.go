// Package loadgen is the load generator of the side-by-side benchmark
// (docs/MANUAL.md, "Benchmark: the core beside Alertmanager"): one pool of
// alerts, posted either to the core's webhook (an Alertmanager webhook,
// version 4) or to Alertmanager's own API (POST /api/v2/alerts), from a
// number of concurrent posters, with each request's latency.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Target kinds.
const (
	Core         = "core"         // POST {url}/api/v1/alerts, an Alertmanager webhook
	Alertmanager = "alertmanager" // POST {url}/api/v2/alerts, a list of alerts
)

// Options are one run's.
type Options struct {
	Kind        string // Core or Alertmanager
	URL         string // base URL
	Token       string // bearer token, if any
	Alerts      int    // distinct alerts, cycled through
	PerPost     int    // alerts per POST
	Posts       int    // POSTs in all
	Concurrency int    // posters
	Client      *http.Client
}

// Result is what a run measured.
type Result struct {
	Alerts    int
	Posts     int
	Elapsed   time.Duration
	Latencies []time.Duration // sorted
}

// AlertsPerSecond is the run's throughput.
func (r Result) AlertsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Alerts) / r.Elapsed.Seconds()
}

// Percentile returns the p-th latency (0 < p < 1).
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(float64(len(r.Latencies))*p))]
}

// Merge pools two results of one target (interleaved rounds).
func (r Result) Merge(o Result) Result {
	r.Alerts += o.Alerts
	r.Posts += o.Posts
	r.Elapsed += o.Elapsed
	r.Latencies = append(r.Latencies, o.Latencies...)
	slices.Sort(r.Latencies)
	return r
}

// Alert is alert i of the pool, as Alertmanager's API takes it: a crash
// loop of one pod among 20 namespaces, a severity, a summary.
func Alert(i int, status string) map[string]any {
	a := map[string]any{
		"labels": map[string]string{"alertname": "KubePodCrashLooping", "namespace": fmt.Sprintf("team-%02d", i%20),
			"pod": fmt.Sprintf("api-%05d", i), "container": "api", "severity": []string{"warning", "critical"}[i%2]},
		"annotations":  map[string]string{"summary": fmt.Sprintf("Pod api-%05d is crash looping", i), "runbook_url": "https://runbooks.example/crashloop"},
		"startsAt":     "2026-11-30T11:00:00Z",
		"generatorURL": "http://prometheus:9090/graph",
	}
	if status == "resolved" {
		a["endsAt"] = "2026-11-30T12:30:00Z"
	}
	return a
}

// Body is the request body of one POST of alerts first..first+n-1 (mod
// pool) for kind.
func Body(kind string, pool, first, n int) ([]byte, error) {
	alerts := make([]map[string]any, 0, n)
	for j := range n {
		i := (first + j) % pool
		a := Alert(i, "firing")
		if kind == Core {
			a["status"] = "firing"
			a["endsAt"] = "0001-01-01T00:00:00Z"
			a["fingerprint"] = fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		}
		alerts = append(alerts, a)
	}
	switch kind {
	case Alertmanager:
		return json.Marshal(alerts)
	case Core:
		return json.Marshal(map[string]any{
			"version": "4", "receiver": "kubecrew", "status": "firing", "groupKey": fmt.Sprintf("{}:{alertname=\"KubePodCrashLooping\", namespace=\"team-%02d\"}", first%20),
			"groupLabels": map[string]string{"alertname": "KubePodCrashLooping"}, "commonLabels": map[string]string{"alertname": "KubePodCrashLooping"},
			"commonAnnotations": map[string]string{}, "externalURL": "http://alertmanager:9093", "truncatedAlerts": 0, "alerts": alerts,
		})
	}
	return nil, fmt.Errorf("loadgen: unknown target kind %q (want %s or %s)", kind, Core, Alertmanager)
}

// Run posts o.Posts requests of o.PerPost alerts, cycling through the
// pool, from o.Concurrency posters. Any answer but 200 ends it with an
// error.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Alerts < 1 || o.PerPost < 1 || o.Posts < 1 || o.Concurrency < 1 {
		return Result{}, fmt.Errorf("loadgen: alerts, per-post, posts and concurrency must be at least 1 (got %d, %d, %d, %d)", o.Alerts, o.PerPost, o.Posts, o.Concurrency)
	}
	path := "/api/v1/alerts"
	if o.Kind == Alertmanager {
		path = "/api/v2/alerts"
	}
	// Bodies are made before the clock starts: the generator's JSON is
	// not the server's work.
	bodies := make([][]byte, 0, o.Posts)
	for i := range o.Posts {
		b, err := Body(o.Kind, o.Alerts, i*o.PerPost, o.PerPost)
		if err != nil {
			return Result{}, err
		}
		bodies = append(bodies, b)
	}
	client := o.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency}, Timeout: 30 * time.Second}
	}
	var (
		next    atomic.Int64
		mu      sync.Mutex
		lats    = make([]time.Duration, 0, o.Posts)
		firstEr error
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for range o.Concurrency {
		wg.Go(func() {
			local := make([]time.Duration, 0, o.Posts/o.Concurrency+1)
			defer func() {
				mu.Lock()
				lats = append(lats, local...)
				mu.Unlock()
			}()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := post(ctx, client, o.URL+path, o.Token, bodies[i]); err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				local = append(local, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstEr != nil {
		return Result{}, firstEr
	}
	slices.Sort(lats)
	return Result{Alerts: len(bodies) * o.PerPost, Posts: len(bodies), Elapsed: elapsed, Latencies: lats}, nil
}

func post(ctx context.Context, c *http.Client, url, token string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s answered %d: %s", url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}
