package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
)

// IncidentWorkload is the fixture the demo incident is about.
const IncidentWorkload = "oomkill"

// Outcome is everything the incident produced, step by step; a step that
// was not reached leaves its fields empty.
type Outcome struct {
	AlertAt       time.Time
	Decision      api.AlertDecision
	Investigation api.Investigation
	NoorRun       api.RunView
	Delegation    *api.Delegation
	SolRun        api.RunView
	VeraRunID     string
	NoorAudit     *a2a.AuditItem // Noor's "sent" entry of the delegation
	SolAudit      *a2a.AuditItem // Sol's "received" entry of it
	PR            gitops.PR
	Diff          string
	Plus, Minus   int
	Reviews       []gitops.Review
	Merged        bool
	MergedFile    string // the manifest on main after the merge
	MergedAfter   time.Duration
	ReportURL     string
	ReportStatus  int
	// ChainURL is the core's page of the whole chain (Noor → Sol → Vera).
	ChainURL    string
	ChainStatus int
}

// IncidentConfig says where the incident happens.
type IncidentConfig struct {
	Namespace string
	Repo      string // the local GitOps repository
	RepoPath  string // the manifest's path inside it
	Clientset kubernetes.Interface
	Poll      time.Duration // 0 = 100ms
}

// OOMAlert is the Alertmanager webhook (version 4) kube-prometheus would
// send for the oomkill workload.
func OOMAlert(ns, workload, pod string, startsAt time.Time) map[string]any {
	labels := map[string]string{
		"alertname": "KubePodOOMKilled", "namespace": ns, "deployment": workload, "container": "app", "severity": "critical",
	}
	if pod != "" {
		labels["pod"] = pod
	}
	where := ns + "/" + workload
	if pod != "" {
		where = ns + "/" + pod
	}
	ann := map[string]string{
		"summary":     fmt.Sprintf("Container app of %s was OOMKilled", where),
		"description": fmt.Sprintf("Container app in %s was terminated with reason OOMKilled and is crash looping (memory limit 32Mi).", where),
	}
	alert := map[string]any{
		"status": "firing", "labels": labels, "annotations": ann,
		"startsAt": startsAt.UTC().Format(time.RFC3339Nano), "endsAt": "0001-01-01T00:00:00Z",
		"generatorURL": "http://prometheus.sandbox.invalid/graph", "fingerprint": Fingerprint(labels),
	}
	return map[string]any{
		"receiver": "kubecrew-core", "status": "firing", "alerts": []any{alert},
		"groupLabels":  map[string]string{"alertname": labels["alertname"], "namespace": ns},
		"commonLabels": labels, "commonAnnotations": ann, "externalURL": "http://alertmanager.sandbox.invalid",
		"version": "4", "groupKey": fmt.Sprintf(`{}:{alertname="%s", namespace="%s"}`, labels["alertname"], ns),
		"truncatedAlerts": 0,
	}
}

// Fingerprint is Alertmanager's alert fingerprint: FNV-1a 64 over the
// sorted label names and values, each followed by 0xff.
func Fingerprint(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, k := range names {
		h.Write([]byte(k))
		h.Write([]byte{0xff})
		h.Write([]byte(labels[k]))
		h.Write([]byte{0xff})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// reviewExcerpt is the first lines of a review body.
func reviewExcerpt(body string) string {
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) > 8 {
		lines = append(lines[:8], "…")
	}
	for i := range lines {
		lines[i] = "  " + short(lines[i], 140)
	}
	return strings.Join(lines, "\n")
}

// poll calls fn every interval until it reports done, errs, or ctx ends.
func poll(ctx context.Context, every time.Duration, what string, fn func() (bool, error)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		done, err := fn()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// findAudit returns the newest entry of an agent's /a2a/log matching ok.
func findAudit(ctx context.Context, base string, ok func(a2a.AuditItem) bool) *a2a.AuditItem {
	var page struct {
		Items []a2a.AuditItem `json:"items"`
	}
	if code, err := GetJSON(ctx, base+"/a2a/log?limit=100", &page); err != nil || code != http.StatusOK {
		return nil
	}
	for i := range page.Items {
		if ok(page.Items[i]) {
			return &page.Items[i]
		}
	}
	return nil
}

// notifiedRun is the callee run id of the run's A2A message to slug.
func notifiedRun(r api.RunView, slug string) string {
	for _, ev := range r.Trace {
		if ev.Type != "a2a_send" {
			continue
		}
		var d struct {
			To          string `json:"to"`
			CalleeRunID string `json:"callee_run_id"`
		}
		if err := json.Unmarshal(ev.Data, &d); err == nil && d.To == slug && d.CalleeRunID != "" {
			return d.CalleeRunID
		}
	}
	return ""
}

// diffExcerpt is the diff from its first hunk on (at most 20 lines).
func diffExcerpt(diff string) string {
	lines := strings.Split(strings.TrimRight(diff, "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "@@") {
			lines = lines[i:]
			break
		}
	}
	if len(lines) > 20 {
		lines = append(lines[:20], "…")
	}
	return "  " + strings.Join(lines, "\n  ")
}

// limitLine is the line of file holding the diff's new value.
func limitLine(file, diff string) string {
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			added := strings.TrimSpace(l[1:])
			for _, fl := range strings.Split(file, "\n") {
				if strings.TrimSpace(fl) == added {
					return strings.TrimSpace(fl)
				}
			}
			return "(the new line " + added + " is NOT on main)"
		}
	}
	return "(no added line)"
}

func timeOr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
