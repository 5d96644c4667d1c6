package kube

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// cellMax bounds one table cell; API text is sanitized into it.
const cellMax = 120

// table renders aligned columns like kubectl get.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) {
	for i, c := range cells {
		cells[i] = safetext.Clean(c, cellMax)
		if cells[i] == "" {
			cells[i] = "-"
		}
	}
	t.rows = append(t.rows, cells)
}

func (t *table) String() string {
	w := make([]int, len(t.head))
	for i, h := range t.head {
		w[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if n := utf8.RuneCountInString(c); i < len(w) && n > w[i] {
				w[i] = n
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i == len(cells)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)+2))
		}
		b.WriteByte('\n')
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

// age formats the time since t like kubectl ("45s", "12m", "5h", "3d").
func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return shortDur(now.Sub(t.Time))
}

func shortDur(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// eventLastSeen is the newest of an event's timestamps (core/v1 events
// written through events.k8s.io carry eventTime/series instead of
// lastTimestamp).
func eventLastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.FirstTimestamp.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

// eventCount is how often the event happened (at least once).
func eventCount(e *corev1.Event) int {
	n := int(e.Count)
	if e.Series != nil && int(e.Series.Count) > n {
		n = int(e.Series.Count)
	}
	if n < 1 {
		n = 1
	}
	return n
}

// nsName renders namespace/name, or name for cluster-scoped objects.
func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// scope describes a namespace slot for headers.
func scope(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// podStatus is the STATUS column of kubectl get pods: the most telling
// container reason, else the phase.
func podStatus(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return "Init:" + w.Reason
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return "Init:" + nonEmpty(t.Reason, "Error")
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
		if t := cs.State.Terminated; t != nil && t.Reason != "" {
			reason = t.Reason
		}
	}
	if reason == string(corev1.PodPending) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
				return "Pending(" + c.Reason + ")"
			}
		}
	}
	return reason
}

func podReady(p *corev1.Pod) (ready, total int) {
	total = len(p.Spec.Containers)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return ready, total
}

func podRestarts(p *corev1.Pod) int {
	n := 0
	for _, cs := range p.Status.ContainerStatuses {
		n += int(cs.RestartCount)
	}
	return n
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func i32(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// sortedKeys returns a map's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
