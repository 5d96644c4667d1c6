package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/services/core/internal/pipeline"
)

// hugeAlert is a firing alert with a 0.9 MB description annotation.
func hugeAlert(fp string) map[string]any {
	a := alert(fp, "KubePodCrashLooping", "prod", "firing")
	a["annotations"] = map[string]string{"summary": "crash loop on " + fp, "description": strings.Repeat("stack frame ", 75_000)}
	return a
}

// TestBusyQueueHoldsBoundedBodies: 300 alerts with 0.9 MB annotations
// queued behind a busy agent are remembered with bounded bodies (the queue
// once held all 270 MB), and the one dispatched when the agent frees up
// carries and stores the bounded body.
func TestBusyQueueHoldsBoundedBodies(t *testing.T) {
	t.Parallel()
	// The first run holds the slot for as long as the posting takes.
	c := newCore(t, coreOpts{quiet: true, env: map[string]string{"AGENT_CALL_TIMEOUT": "10m"}})
	gate := c.Agent.Gate()
	post := func(a map[string]any) string {
		t.Helper()
		code, b := call(t, http.MethodPost, c.URL+"/api/v1/alerts", webhookBody(a))
		if code != 200 {
			t.Fatalf("webhook: %d %.200s", code, b)
		}
		return string(b)
	}
	post(alert("first001", "KubePodCrashLooping", "prod", "firing")) // takes the slot
	for i := range 300 {
		if b := post(hugeAlert(fmt.Sprintf("huge%04d", i))); !strings.Contains(b, `"decision":"busy"`) {
			t.Fatalf("alert %d: %.300s", i, b)
		}
	}
	per := pipeline.MaxAnnotations + pipeline.MaxGeneratorURL + 1024 // + labels and ids
	if n, size := c.Pipeline().Queued(), c.Pipeline().QueuedBytes(); n != 300 || size > 300*per {
		t.Fatalf("queue: %d bodies, %d bytes (bound %d)", n, size, 300*per)
	}
	gate <- struct{}{} // the first run finishes; the oldest queued alert is dispatched
	waitFor(t, 10*time.Second, "the first queued alert dispatched", func() bool { return len(c.Agent.Runs()) >= 2 })
	close(gate)
	c.WaitIdle()
	runs := c.Agent.Runs()
	if ctx := runs[1].Request.Context["alert"]; !strings.Contains(ctx, "huge0000") || len(ctx) > pipeline.MaxAlertContext+10 {
		t.Fatalf("second run's alert context: %.200s", ctx)
	}
	_, b, _ := do(t, http.MethodGet, c.URL+"/api/v1/investigations?limit=500", nil)
	list := decode[struct{ Items []map[string]json.RawMessage }](t, b)
	if len(list.Items) != 301 {
		t.Fatalf("%d investigations, want 301 (every queued alert dispatched in turn)", len(list.Items))
	}
	for _, inv := range list.Items {
		if len(inv["alert"]) > per {
			t.Fatalf("an investigation stores a %d-byte alert (bound %d)", len(inv["alert"]), per)
		}
	}
}

// BenchmarkBusyQueueSoak posts one alert with a 0.9 MB annotation per op
// behind a busy agent (every one queued, as in a storm while the agent is
// stuck) and reports the heap and RSS after GC: the soak figure of the
// bounded queue (before the bound, 300 such alerts took RSS 17 → 411 MB).
// Run with -benchtime 300x; the series every 50 alerts is in the log (-v).
func BenchmarkBusyQueueSoak(b *testing.B) {
	c := newCore(b, coreOpts{quiet: true, env: map[string]string{"AGENT_CALL_TIMEOUT": "10m"}})
	gate := c.Agent.Gate()
	defer close(gate)
	h := c.Handler()
	serve := func(a map[string]any) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/v1/alerts", bytes.NewReader(webhookBody(a))))
		if w.Code != 200 {
			b.Fatalf("webhook: %d", w.Code)
		}
	}
	serve(alert("first001", "KubePodCrashLooping", "prod", "firing"))
	heap0, rss0 := memMB()
	b.Logf("start: heap %.1f MB, RSS %.1f MB", heap0, rss0)
	i := 0
	for b.Loop() {
		serve(hugeAlert(fmt.Sprintf("soak%06d", i)))
		i++
		if i%50 == 0 {
			heap, rss := memMB()
			b.Logf("%4d queued: heap %.1f MB, RSS %.1f MB (queue %d bodies, %.1f KB)", i, heap, rss,
				c.Pipeline().Queued(), float64(c.Pipeline().QueuedBytes())/1024)
		}
	}
	heap, rss := memMB()
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(rss, "RSS-MB")
	b.ReportMetric(heap-heap0, "heap-growth-MB")
}

// memMB is the live heap after a GC and the process's resident set (Linux).
func memMB() (heap, rss float64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	heap = float64(m.HeapAlloc) / (1 << 20)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				rss = kb / 1024
			}
		}
	}
	return heap, rss
}
