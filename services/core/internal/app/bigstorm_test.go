package app_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
)

// kubePromAlert is a kube-prometheus KubePodCrashLooping alert of pod i of
// deployment deploy, about 1 KB as Alertmanager sends it.
func kubePromAlert(deploy string, i int) map[string]any {
	pod := fmt.Sprintf("%s-7d9f8b6c5d-%05d", deploy, i)
	return map[string]any{
		"status": "firing", "fingerprint": fmt.Sprintf("%s%011x", deploy[:min(5, len(deploy))], i),
		"labels": map[string]string{
			"alertname": "KubePodCrashLooping", "container": deploy, "endpoint": "http", "instance": "10.42.3.17:8080",
			"job": "kube-state-metrics", "namespace": "shop", "pod": pod, "prometheus": "monitoring/kube-prometheus-stack-prometheus",
			"reason": "CrashLoopBackOff", "service": "kube-prometheus-stack-kube-state-metrics", "severity": "warning",
			"uid": fmt.Sprintf("3f2a9c1e-7b4d-4e8a-9c1f-%012d", i),
		},
		"annotations": map[string]string{
			"description": fmt.Sprintf("Pod shop/%s (%s) is in waiting state (reason: \"CrashLoopBackOff\") on cluster production-eu-1. The container has restarted 12 times in the last 10 minutes.", pod, deploy),
			"runbook_url": "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodcrashlooping",
			"summary":     "Pod is crash looping.",
		},
		"startsAt": "2026-11-30T11:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
		"generatorURL": "http://kube-prometheus-stack-prometheus.monitoring:9090/graph?g0.expr=max_over_time%28kube_pod_container_status_waiting_reason%7Breason%3D%22CrashLoopBackOff%22%2Cjob%3D%22kube-state-metrics%22%2Cnamespace%3D~%22.%2A%22%7D%5B5m%5D%29+%3E%3D+1&g0.tab=1",
	}
}

// stormBody is one Alertmanager group of n crash-looping pods of deploy.
func stormBody(deploy string, n int) []byte {
	alerts := make([]map[string]any, n)
	for i := range alerts {
		alerts[i] = kubePromAlert(deploy, i)
	}
	return groupBody(`{}/{severity="warning"}:{alertname="KubePodCrashLooping", namespace="shop"}`+deploy, alerts...)
}

// oneIncident checks a storm's answer: one alert dispatched, every other
// joined to its investigation or, once the fake agent has answered it,
// in the incident's cooldown.
func oneIncident(t testing.TB, b []byte, n int) {
	t.Helper()
	ans := decode[kapi.AlertsAnswer](t, b)
	count := map[string]int{}
	for _, d := range ans.Decisions {
		count[d.Decision]++
	}
	if len(ans.Decisions) != n || count["dispatched"] != 1 || count["joined"]+count["cooldown"] != n-1 {
		t.Fatalf("%d decisions %v; want %d: 1 dispatched, %d joined or in cooldown", len(ans.Decisions), count, n, n-1)
	}
}

// TestStormOverOneMiBIsOneIncident (docs/MANUAL.md, "Storms"): the group of 1,040
// realistic crash-loop alerts (about 1.1 MB) that got 413 under the old
// 1 MiB cap gets in as one incident, one investigation.
func TestStormOverOneMiBIsOneIncident(t *testing.T) {
	c := newCore(t, coreOpts{quiet: true})
	body := stormBody("api", 1040)
	if len(body) <= 1<<20 {
		t.Fatalf("the storm is %d bytes, want over 1 MiB", len(body))
	}
	code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", body)
	if code != http.StatusOK {
		t.Fatalf("webhook of %d bytes = %d %.300s", len(body), code, b)
	}
	oneIncident(t, b, 1040)
}

// TestWebhookCapIsASetting: ALERT_WEBHOOK_MAX_BYTES caps the body; past it
// the answer is 413 with a JSON error naming the cap.
func TestWebhookCapIsASetting(t *testing.T) {
	c := newCore(t, coreOpts{quiet: true, env: map[string]string{"ALERT_WEBHOOK_MAX_BYTES": "512Ki"}})
	code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", stormBody("api", 1040))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"error":"body larger than 524288 bytes"`) {
		t.Fatalf("= %d %s, want 413 naming 524288", code, b)
	}
}

// BenchmarkStormOf10000Alerts: one Alertmanager group of 10,000 realistic
// crash-loop alerts (about 10 MB) is answered, on the wire, as one
// incident with one investigation, within Alertmanager's default webhook
// timeout (10s; docs/MANUAL.md, "Storms"). heap-MiB is the live heap it leaves
// (the memory store's 10,000 decisions and states included), peak-MiB the
// heap at its highest while it was decided (sampled every 20ms), both
// beside the body the client holds.
func BenchmarkStormOf10000Alerts(b *testing.B) {
	c := newCore(b, coreOpts{quiet: true})
	const n = 10000
	var grown, peak float64
	i := 0
	var slowest time.Duration
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		body := stormBody(fmt.Sprintf("deploy%d", i), n) // a new incident each time
		i++
		stop := make(chan struct{})
		high := make(chan uint64, 1)
		go func() { // the heap's high-water mark while the storm is decided
			var m runtime.MemStats
			hi := uint64(0)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					high <- hi
					return
				case <-tick.C:
					runtime.ReadMemStats(&m)
					hi = max(hi, m.HeapAlloc)
				}
			}
		}()
		b.StartTimer()
		start := time.Now()
		code, ans := call(b, http.MethodPost, c.URL+"/api/v1/alerts", body)
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		hi := <-high
		if code != http.StatusOK {
			b.Fatalf("storm of %d bytes = %d %.300s", len(body), code, ans)
		}
		oneIncident(b, ans, n)
		slowest = max(slowest, took)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// The heap before the body was built, and the body itself, are
		// not the core's (json.Marshal's pooled buffer goes with a GC).
		runtime.KeepAlive(body)
		base := int64(before.HeapAlloc) + int64(len(body))
		grown += float64(int64(after.HeapAlloc)-base) / (1 << 20)
		peak = max(peak, float64(int64(hi)-base)/(1<<20))
		b.ReportMetric(float64(len(body))/(1<<20), "body-MiB")
		b.StartTimer()
	}
	if slowest > 10*time.Second {
		b.Errorf("a storm took %s to answer; Alertmanager gives up after 10s", slowest)
	}
	b.ReportMetric(grown/float64(i), "heap-MiB")
	b.ReportMetric(peak, "peak-MiB")
}
