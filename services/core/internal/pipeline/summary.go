package pipeline

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/services/core/internal/webhook"
)

// MaxAlertContext bounds the alert JSON handed to an agent in
// context.alert: agents keep context values under 1000 characters (seed
// §6), so a longer alert is summarised, never cut mid-JSON.
const MaxAlertContext = 999

// alertDoc is an alert as the core writes it (investigation record and
// agent context).
type alertDoc struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     *time.Time        `json:"startsAt,omitempty"`
	EndsAt       *time.Time        `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
	Fingerprint  string            `json:"fingerprint"`
	Summarised   bool              `json:"summarised,omitempty"`
}

func doc(a webhook.Alert) alertDoc {
	d := alertDoc{Status: a.Status, Labels: a.Labels, Annotations: a.Annotations, GeneratorURL: a.GeneratorURL, Fingerprint: a.Fingerprint}
	if !a.StartsAt.IsZero() && a.StartsAt.Year() > 1 {
		t := a.StartsAt.UTC()
		d.StartsAt = &t
	}
	if !a.EndsAt.IsZero() && a.EndsAt.Year() > 1 { // 0001-01-01: still firing
		t := a.EndsAt.UTC()
		d.EndsAt = &t
	}
	return d
}

// AlertJSON is the full alert as JSON (stored with the investigation).
func AlertJSON(a webhook.Alert) []byte {
	b, _ := json.Marshal(doc(a)) // maps of strings and times always encode
	return b
}

// keyLabels survive the last summarising step.
var keyLabels = map[string]bool{
	"alertname": true, "namespace": true, "severity": true, "pod": true, "container": true,
	"deployment": true, "statefulset": true, "daemonset": true, "job": true, "node": true, "instance": true, "service": true,
}

// AlertContext is the alert as compact JSON under MaxAlertContext
// characters, its text cleaned (safetext): the whole alert when it fits,
// else summarised step by step
// (no generator URL, shortened values, then only key labels and the
// summary), with "summarised": true.
func AlertContext(a webhook.Alert) string {
	d := doc(a)
	// Text headed for a model: no control or format characters.
	d.Labels, d.Annotations = clip(a.Labels, 0, nil), clip(a.Annotations, 0, nil)
	d.GeneratorURL = safetext.Clean(a.GeneratorURL, 0)
	if s := marshal(d); len([]rune(s)) <= MaxAlertContext {
		return s
	}
	d.Summarised = true
	d.GeneratorURL = ""
	for _, n := range []int{200, 80, 40} {
		d.Labels = clip(a.Labels, n, nil)
		d.Annotations = clip(a.Annotations, n, nil)
		if s := marshal(d); len([]rune(s)) <= MaxAlertContext {
			return s
		}
	}
	d.Labels = clip(a.Labels, 60, keyLabels)
	d.Annotations = clip(a.Annotations, 200, map[string]bool{"summary": true})
	if s := marshal(d); len([]rune(s)) <= MaxAlertContext {
		return s
	}
	d.Labels = clip(a.Labels, 40, map[string]bool{"alertname": true, "namespace": true, "severity": true})
	d.Annotations = nil
	return marshal(d)
}

func clip(m map[string]string, n int, keep map[string]bool) map[string]string {
	if m == nil {
		return nil
	}
	keyMax := 40
	if n <= 0 {
		keyMax = 0 // unbounded, like the values
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if keep != nil && !keep[k] {
			continue
		}
		out[safetext.Clean(k, keyMax)] = safetext.Clean(v, n)
	}
	return out
}

func marshal(d alertDoc) string {
	b, _ := json.Marshal(d)
	return string(b)
}

// Task is the instruction an agent gets for an alert and the incident it
// leads (docs/MANUAL.md, "Storms").
func Task(a webhook.Alert, inc members) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Alertmanager alert %s is firing", safetext.Clean(a.Alertname(), 120))
	if ns := a.Namespace(); ns != "" {
		fmt.Fprintf(&b, " in namespace %s", safetext.Clean(ns, 80))
	}
	if sev := a.Labels["severity"]; sev != "" {
		fmt.Fprintf(&b, " (severity %s)", safetext.Clean(sev, 20))
	}
	if d := doc(a); d.StartsAt != nil {
		fmt.Fprintf(&b, " since %s", d.StartsAt.Format(time.RFC3339))
	}
	b.WriteString(".")
	for _, k := range []string{"summary", "description"} {
		if v := a.Annotations[k]; v != "" {
			fmt.Fprintf(&b, " %s: %s.", strings.ToUpper(k[:1])+k[1:], strings.TrimSuffix(safetext.Clean(v, 300), "."))
		}
	}
	var objs []string
	for k, v := range a.Labels {
		if keyLabels[k] && k != "alertname" && k != "namespace" && k != "severity" {
			objs = append(objs, k+"="+safetext.Clean(v, 80))
		}
	}
	if len(objs) > 0 {
		sort.Strings(objs)
		fmt.Fprintf(&b, " Labels: %s.", strings.Join(objs, ", "))
	}
	if inc.total > 1 {
		fmt.Fprintf(&b, " It is one of %d alerts of one incident (context.incident lists them, context.correlation_key names it): find their common cause once, not each alert.", inc.total)
	}
	b.WriteString(" Triage it with your read-only tools: find the cause, record what you find with report_finding, and delegate at most one remediable finding. The full alert is in context.alert.")
	return b.String()
}

// Bounds on what the core keeps of one alert (webhook.Bound).
const (
	MaxAnnotationName = webhook.MaxAnnotationName
	MaxAnnotation     = webhook.MaxAnnotation
	MaxAnnotations    = webhook.MaxAnnotations
	MaxGeneratorURL   = webhook.MaxGeneratorURL
)

// Bound is webhook.Bound: what the core keeps of one alert.
func Bound(a webhook.Alert) webhook.Alert { return webhook.Bound(a) }
