package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

func sample() webhook.Alert {
	return webhook.Alert{
		Status:       "firing",
		Labels:       map[string]string{"alertname": "KubePodCrashLooping", "namespace": "prod", "pod": "api-1", "severity": "critical"},
		Annotations:  map[string]string{"summary": "Pod prod/api-1 is crash looping"},
		StartsAt:     time.Date(2026, 11, 29, 23, 39, 23, 706e6, time.UTC),
		GeneratorURL: "http://prometheus.example/graph",
		Fingerprint:  "9f5acf3bffd528ce",
	}
}

func TestAlertContextSmallIsWhole(t *testing.T) {
	t.Parallel()
	got := AlertContext(sample())
	want := `{"status":"firing","labels":{"alertname":"KubePodCrashLooping","namespace":"prod","pod":"api-1","severity":"critical"},"annotations":{"summary":"Pod prod/api-1 is crash looping"},"startsAt":"2026-11-29T23:39:23.706Z","generatorURL":"http://prometheus.example/graph","fingerprint":"9f5acf3bffd528ce"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestAlertContextStaysUnder1000(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 100, 400, 1000, 5000} {
		for _, labels := range []int{2, 20, 200} {
			a := sample()
			a.Annotations = map[string]string{
				"summary":     strings.Repeat("s", n),
				"description": strings.Repeat("d\x1b[31m", n),
				"runbook_url": "http://runbooks.example/" + strings.Repeat("r", n),
			}
			for i := range labels {
				a.Labels[fmt.Sprintf("label_%03d", i)] = strings.Repeat("v", n/10+1)
			}
			a.Labels["alertname"] = strings.Repeat("A", n)
			a.GeneratorURL = "http://prom/" + strings.Repeat("g", n)
			got := AlertContext(a)
			if c := utf8.RuneCountInString(got); c > MaxAlertContext {
				t.Fatalf("n=%d labels=%d: %d characters", n, labels, c)
			}
			var d map[string]any
			if err := json.Unmarshal([]byte(got), &d); err != nil {
				t.Fatalf("n=%d labels=%d: not JSON: %v\n%s", n, labels, err, got)
			}
			l := d["labels"].(map[string]any)
			if l["namespace"] != "prod" || !strings.HasPrefix(l["alertname"].(string), "AAA") || d["fingerprint"] != a.Fingerprint {
				t.Fatalf("n=%d labels=%d: key fields lost: %s", n, labels, got)
			}
			if strings.Contains(got, "\x1b") || strings.Contains(got, `\u001b`) {
				t.Fatalf("control characters kept: %s", got)
			}
			if len(AlertJSON(a)) > MaxAlertContext && d["summarised"] != true {
				t.Fatalf("long alert not marked summarised: %s", got)
			}
		}
	}
}

func TestTask(t *testing.T) {
	t.Parallel()
	a := sample()
	a.Annotations["description"] = "line one\nline two \x1b[2J"
	got := Task(a, members{})
	for _, want := range []string{"KubePodCrashLooping is firing in namespace prod (severity critical) since 2026-11-29T23:39:23Z.",
		"Summary: Pod prod/api-1 is crash looping.", "Description: line one line two [2J.", "Labels: pod=api-1.", "delegate at most one remediable finding"} {
		if !strings.Contains(got, want) {
			t.Errorf("task lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\n\x1b") {
		t.Errorf("task has control characters: %q", got)
	}
}

func TestContentHash(t *testing.T) {
	t.Parallel()
	base := webhook.Alert{Labels: map[string]string{"alertname": "A", "pod": "p"}, Annotations: map[string]string{"summary": "s"}}
	same := webhook.Alert{Labels: map[string]string{"pod": "p", "alertname": "A"}, Annotations: map[string]string{"summary": "s"},
		StartsAt: time.Now(), Status: "firing", Fingerprint: "other"}
	if base.ContentHash() != same.ContentHash() {
		t.Fatal("hash depends on map order, time, status or fingerprint")
	}
	changed := []webhook.Alert{
		{Labels: map[string]string{"alertname": "A", "pod": "p"}, Annotations: map[string]string{"summary": "s2"}},
		{Labels: map[string]string{"alertname": "A", "pod": "q"}, Annotations: map[string]string{"summary": "s"}},
		{Labels: map[string]string{"alertname": "A"}, Annotations: map[string]string{"summary": "s", "pod": "p"}},
		{Labels: map[string]string{"alertname": "A", "pod": "p", "summary": "s"}},
		{Labels: map[string]string{"alertname": "A", "pod=p": ""}, Annotations: map[string]string{"summary": "s"}},
	}
	for i, c := range changed {
		if c.ContentHash() == base.ContentHash() {
			t.Errorf("change %d not detected", i)
		}
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("é", 450_000) // 0.9 MB
	a := webhook.Alert{Status: "firing", Fingerprint: "f", Labels: map[string]string{"alertname": "A"},
		GeneratorURL: "http://prom/graph?g0.expr=" + strings.Repeat("x", 5000),
		Annotations:  map[string]string{"summary": "short", "description": huge, "runbook": "r"}}
	for i := range 20 {
		a.Annotations[fmt.Sprintf("extra%02d", i)] = strings.Repeat("y", 1000)
	}
	b := Bound(a)
	total := 0
	for k, v := range b.Annotations {
		total += len(k) + len(v)
		if !utf8.ValidString(v) || len(v) > MaxAnnotation {
			t.Errorf("annotation %s: %d bytes, valid UTF-8 %v", k, len(v), utf8.ValidString(v))
		}
	}
	if total > MaxAnnotations+100 {
		t.Errorf("annotations total %d bytes, bound %d", total, MaxAnnotations)
	}
	if b.Annotations["summary"] != "short" || !strings.HasSuffix(b.Annotations["description"], "…[cut: 900000 bytes]") ||
		!strings.Contains(b.Annotations["kubecrew_dropped_annotations"], "annotation(s) past the 8192-byte bound") {
		t.Errorf("bounded annotations: summary %q, description tail %q, dropped %q", b.Annotations["summary"],
			b.Annotations["description"][len(b.Annotations["description"])-30:], b.Annotations["kubecrew_dropped_annotations"])
	}
	if len(b.GeneratorURL) > MaxGeneratorURL || len(a.GeneratorURL) < 5000 || len(a.Annotations["description"]) != 900_000 {
		t.Errorf("generator URL %d bytes; the original must be untouched", len(b.GeneratorURL))
	}
	small := webhook.Alert{Labels: map[string]string{"alertname": "A"}, Annotations: map[string]string{"summary": "s"}}
	if got := Bound(small); got.Annotations["summary"] != "s" || len(got.Annotations) != 1 {
		t.Errorf("a small alert changed: %+v", got)
	}
}

// TestBoundAtTheEdges: annotations exactly at the bounds are kept as they
// are; a byte over is cut or dropped.
func TestBoundAtTheEdges(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("v", MaxAnnotation)
	tests := []struct {
		name        string
		annotations map[string]string
		unchanged   bool
	}{
		{"a value at the bound", map[string]string{"summary": at}, true},
		{"a value a byte over", map[string]string{"summary": at + "v"}, false},
		{"a name at 256 bytes", map[string]string{strings.Repeat("k", 256): "v"}, true},
		{"a name a byte over", map[string]string{strings.Repeat("k", 257): "v"}, false},
		{"the total at the bound", map[string]string{"a": at[:MaxAnnotation-1], "b": at[:MaxAnnotation-1], "c": at[:MaxAnnotation-1], "d": at[:MaxAnnotation-1]}, true},
		{"the total a byte over", map[string]string{"a": at[:MaxAnnotation-1], "b": at[:MaxAnnotation-1], "c": at[:MaxAnnotation-1], "dd": at[:MaxAnnotation-1]}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bound(webhook.Alert{Annotations: maps.Clone(tt.annotations)})
			if maps.Equal(got.Annotations, tt.annotations) != tt.unchanged {
				t.Fatalf("annotations unchanged = %v, want %v (%d kept)", !tt.unchanged, tt.unchanged, len(got.Annotations))
			}
		})
	}
}
