package webhook

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kubecrew/kubecrew/services/core/internal/loadgen"
)

// BenchmarkDecode decodes and validates the side-by-side benchmark's
// webhooks (docs/MANUAL.md, "Benchmark: the core beside Alertmanager") of 1 and
// 10 alerts.
func BenchmarkDecode(b *testing.B) {
	for _, per := range []int{1, 10} {
		body, err := loadgen.Body(loadgen.Core, 1000, 0, per)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("alerts=%d", per), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(bytes.NewReader(body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAlertChecks is the per-alert work before routing: the problem
// check and the content hash of one crash-loop alert.
func BenchmarkAlertChecks(b *testing.B) {
	a := Alert{Status: "firing", Fingerprint: "0000000000000001", Labels: map[string]string{"alertname": "KubePodCrashLooping",
		"namespace": "team-01", "pod": "api-00001", "container": "api", "severity": "warning"},
		Annotations: map[string]string{"summary": "Pod api-00001 is crash looping", "runbook_url": "https://runbooks.example/crashloop"}}
	b.ReportAllocs()
	for b.Loop() {
		if a.Problem() != "" || a.ContentHash() == "" {
			b.Fatal("bad alert")
		}
	}
}
