package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// k8sAlphabet is the alphabet of Kubernetes' generated name suffixes.
const k8sAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// podName is the i-th pod of Deployment deploy (ReplicaSet hash 7d9f8b6c5d).
func podName(deploy string, i int) string {
	suffix := make([]byte, 5)
	for j := range suffix {
		suffix[j] = k8sAlphabet[i%len(k8sAlphabet)]
		i /= len(k8sAlphabet)
	}
	return deploy + "-7d9f8b6c5d-" + string(suffix)
}

// podAlert is a kube-state-metrics pod alert on pod, scheduled on node.
func podAlert(name, ns, pod, node, severity string) map[string]any {
	a := alert(ns+"-"+pod+"-"+name, name, ns, "firing")
	labels := a["labels"].(map[string]string)
	labels["pod"], labels["container"], labels["severity"] = pod, "app", severity
	if node != "" {
		labels["node"] = node
	}
	a["annotations"] = map[string]string{"summary": "Pod " + ns + "/" + pod + " is crash looping"}
	return a
}

type answer struct {
	Decisions []struct {
		Fingerprint, Decision, Reason string
		InvestigationID               string `json:"investigation_id"`
	}
}

func postGroup(t *testing.T, url, groupKey string, alerts ...map[string]any) answer {
	t.Helper()
	code, b := call(t, http.MethodPost, url+"/api/v1/alerts", groupBody(groupKey, alerts...))
	if code != 200 {
		t.Fatalf("webhook: %d %.300s", code, b)
	}
	return decode[answer](t, b)
}

func count(a answer) map[string]int {
	n := map[string]int{}
	for _, d := range a.Decisions {
		n[d.Decision]++
	}
	return n
}

// TestStormOfOneDeploymentIsOneInvestigation: 1,000 crash-looping pods of
// one Deployment in one Alertmanager group are one investigation with all
// of them in its context (20 listed, the rest counted); the group's repeat
// while it runs, and new pods, join it instead of queueing runs.
func TestStormOfOneDeploymentIsOneInvestigation(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{quiet: true})
	gate := c.Agent.Gate()
	var pods []map[string]any
	for i := range 1000 {
		pods = append(pods, podAlert("KubePodCrashLooping", "shop", podName("api", i), "", "warning"))
	}
	const gk = `{}/{severity="warning"}:{namespace="shop"}`
	first := postGroup(t, c.URL, gk, pods...)
	if n := count(first); n["dispatched"] != 1 || n["joined"] != 999 {
		t.Fatalf("first webhook: %v, want 1 dispatched and 999 joined", n)
	}
	inv := first.Decisions[0].InvestigationID
	for _, d := range first.Decisions[1:] {
		if d.InvestigationID != inv || !strings.Contains(d.Reason, "joined investigation "+inv+" of incident shop/Deployment/api") {
			t.Fatalf("joined decision %+v, want investigation %s of incident shop/Deployment/api", d, inv)
		}
	}
	// Alertmanager re-sends the group (group_interval) with 50 new pods
	// while the investigation runs.
	for i := 1000; i < 1050; i++ {
		pods = append(pods, podAlert("KubePodCrashLooping", "shop", podName("api", i), "", "warning"))
	}
	if n := count(postGroup(t, c.URL, gk, pods...)); n["deduped"] != 1000 || n["joined"] != 50 {
		t.Fatalf("repeat: %v, want 1000 deduped (already part of it) and 50 joined", n)
	}
	waitFor(t, 10*time.Second, "the investigation to reach the agent", func() bool { return len(c.Agent.Runs()) == 1 })
	close(gate)
	c.WaitIdle()
	runs := c.Agent.Runs()
	if len(runs) != 1 {
		t.Fatalf("%d investigations, want 1", len(runs))
	}
	ctx := runs[0].Request.Context
	var incident struct {
		Key    string
		Alerts int
		Listed map[string][]string
		More   int
	}
	if err := json.Unmarshal([]byte(ctx["incident"]), &incident); err != nil {
		t.Fatalf("context.incident %q: %v", ctx["incident"], err)
	}
	if incident.Key != "shop/Deployment/api" || incident.Alerts != 1000 || len(incident.Listed["KubePodCrashLooping"]) != 20 || incident.More != 980 ||
		len([]rune(ctx["incident"])) > 999 || ctx["correlation_key"] != "shop/Deployment/api" {
		t.Fatalf("context.incident = %s", ctx["incident"])
	}
	if !strings.Contains(runs[0].Request.Task, "one of 1000 alerts of one incident") {
		t.Fatalf("task does not say it is an incident: %s", runs[0].Request.Task)
	}
	if q := c.Pipeline().Queued(); q != 0 {
		t.Fatalf("%d incidents queued, want none", q)
	}
}

// TestNodeLossIsOneIncident: a lost node's alert and its pods' alerts in
// 20 namespaces (20 Alertmanager groups) are one investigation; a pod on
// a healthy node stays its own incident.
func TestNodeLossIsOneIncident(t *testing.T) {
	t.Parallel()
	c := newCore(t, coreOpts{quiet: true})
	gate := c.Agent.Gate()
	node := alert("node7-notready", "KubeNodeNotReady", "monitoring", "firing")
	node["labels"].(map[string]string)["node"] = "node-7"
	if n := count(postGroup(t, c.URL, `{}:{alertname="KubeNodeNotReady"}`, node)); n["dispatched"] != 1 {
		t.Fatalf("node alert: %v", n)
	}
	for i := range 20 {
		ns := fmt.Sprintf("team-%02d", i)
		a := postGroup(t, c.URL, fmt.Sprintf(`{}:{namespace=%q}`, ns),
			podAlert("KubePodNotReady", ns, podName("web", i), "node-7", "warning"),
			podAlert("KubePodNotReady", ns, podName("worker", i), "node-7", "critical"))
		if n := count(a); n["joined"] != 2 || !strings.Contains(a.Decisions[0].Reason, "incident node/node-7") {
			t.Fatalf("namespace %s: %+v, want both joined to node/node-7", ns, a)
		}
	}
	// A pod on another node is not part of the node's incident.
	if n := count(postGroup(t, c.URL, `{}:{namespace="other"}`, podAlert("KubePodNotReady", "other", podName("api", 1), "node-2", "warning"))); n["busy"] != 1 {
		t.Fatalf("pod on a healthy node: %v, want queued as its own incident", n)
	}
	close(gate)
	waitFor(t, 10*time.Second, "two investigations", func() bool { c.WaitIdle(); return len(c.Agent.Runs()) == 2 })
	if k := c.Agent.Runs()[0].Request.Context["correlation_key"]; k != "node/node-7" {
		t.Fatalf("first investigation's key %q, want node/node-7", k)
	}
}

// TestBurstOfDistinctGroupsIsBounded: 10,000 distinct groups in a burst
// while the agent's one slot is taken: every webhook is answered 2xx, the
// busy queue holds at most its bound, every incident past it is dropped
// lowest severity first and counted, and goroutines and heap stay bounded
// (counted after the burst, not timed). Then the queue drains.
func TestBurstOfDistinctGroupsIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("burst: not in -short")
	}
	const groups, workers, bound = 10000, 16, 200
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(fmt.Sprintf("queue:\n  max_per_agent: %d\n", bound)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The gated investigation must outlast the burst on a loaded machine.
	c := newCore(t, coreOpts{quiet: true, env: map[string]string{"ROUTES_FILE": routes, "AGENT_CALL_TIMEOUT": "10m"}})
	gate := c.Agent.Gate()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()

	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	var next, non2xx, critical atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= groups {
					return
				}
				sev := "warning"
				if i%50 == 0 { // 200 critical incidents: the bound holds them all
					sev = "critical"
					critical.Add(1)
				}
				ns := fmt.Sprintf("ns-%05d", i)
				body := groupBody(fmt.Sprintf(`{}:{namespace=%q}`, ns), podAlert("KubePodCrashLooping", ns, podName("api", i), "", sev))
				resp, err := client.Post(c.URL+"/api/v1/alerts", "application/json", bytes.NewReader(body))
				if err != nil {
					non2xx.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					non2xx.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := non2xx.Load(); n != 0 {
		t.Fatalf("%d of %d webhooks not answered 2xx", n, groups)
	}
	tr.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0+10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the server side notices the closed connections
	}
	g1 := runtime.NumGoroutine()
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	grew := int64(m1.HeapInuse) - int64(m0.HeapInuse)
	t.Logf("burst of %d groups: goroutines %d → %d, heap in use %+.1f MiB, %d queued", groups, g0, g1, float64(grew)/(1<<20), c.Pipeline().Queued())
	// One investigation waits at the agent's gate: a handful of goroutines
	// for it, none per queued incident.
	if g1 > g0+10 {
		t.Errorf("goroutines %d → %d after the burst: waiting must be a queue, not goroutines", g0, g1)
	}
	// The in-memory store keeps every decision (about 20,000 here).
	if grew > 64<<20 {
		t.Errorf("heap in use grew by %.1f MiB, want < 64 MiB", float64(grew)/(1<<20))
	}
	if q := c.Pipeline().Queued(); q != bound {
		t.Errorf("%d incidents queued, want the bound %d", q, bound)
	}
	_, mb, _ := do(t, http.MethodGet, c.URL+"/metrics", nil)
	metrics := string(mb)
	wantDropped := groups - 1 - bound
	if !strings.Contains(metrics, fmt.Sprintf(`kubecrew_core_queue_dropped_total{reason="queue_full",severity="warning"} %d`, wantDropped)) ||
		!strings.Contains(metrics, `kubecrew_core_queue_dropped_total{reason="queue_full",severity="critical"} 0`) ||
		!strings.Contains(metrics, fmt.Sprintf(`kubecrew_core_alert_decisions_total{decision="dropped"} %d`, wantDropped)) ||
		!strings.Contains(metrics, "kubecrew_core_investigations_in_flight 1\n") {
		t.Fatalf("want %d warnings dropped, no critical, one investigation in flight:\n%s", wantDropped, grep(metrics, "kubecrew_core_"))
	}
	close(gate)
	waitFor(t, 60*time.Second, "the queue drained", func() bool { c.WaitIdle(); return c.Pipeline().Queued() == 0 })
	crit := 0
	for _, r := range c.Agent.Runs() {
		if strings.Contains(r.Request.Task, "severity critical") {
			crit++
		}
	}
	if n := len(c.Agent.Runs()); n != bound+1 || int64(crit) < critical.Load()-1 {
		t.Fatalf("%d investigations (%d critical), want %d: the one running and every queued one, the critical among them", n, crit, bound+1)
	}
}
