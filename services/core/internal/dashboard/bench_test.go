package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// BenchmarkOverview renders the overview (docs/MANUAL.md, "Dashboard": under
// 50 ms of server time) on the fixture plus 10,000 decisions of the last
// day — 2,000 alerts, a third of them in the last hour — with every read
// the page makes: the API in process (the alerts firing among them), the
// agents over HTTP (five /info, their runs, Sol's and Vera's pull requests).
func BenchmarkOverview(b *testing.B) {
	f := newFixture(b, httpauth.Tokens{})
	kinds := []string{store.DecisionDeduped, store.DecisionCooldown, store.DecisionBusy, store.DecisionResolved, store.DecisionIgnored}
	for i := range 10_000 {
		fp := fmt.Sprintf("fp-bench-%04d", i%2000)
		at := now.Add(-time.Duration(i) * 8 * time.Second) // 10,000 × 8 s ≈ 22 h
		d := store.AlertDecision{Fingerprint: fp, Alertname: fmt.Sprintf("Bench%d", i%40), Status: "firing", Decision: kinds[i%len(kinds)],
			Agent: "platform-sre", Reason: "bench: " + kinds[i%len(kinds)], At: at}
		if d.Decision == store.DecisionResolved {
			d.Status = "resolved"
		}
		record(b, f.Store, d)
	}
	h := f.Handler
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Accept", "text/html")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("GET / = %d", rec.Code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/render")
	// The process's CPU time a render costs, the fake agents' included:
	// what the render needs when the machine is not shared.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/render")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
