package kube

// How cluster_problems turns what the checks found into its report:
// severity, remediability, evidence, order and the coverage block.
import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// result assigns severity and remediability, attaches evidence and sorts.
func (a *analysis) result() []Problem {
	out := make([]Problem, 0, len(a.groups))
	for _, g := range a.groups {
		k := wkey(g.Namespace, g.Kind, g.Name)
		av := a.avail[hashKey(k)]
		if a.exists[hashKey(k)] {
			g.Replicas = fmt.Sprintf("%d/%d", av[0], av[1])
		}
		switch g.Reason {
		case ReasonOOMKilled, ReasonCrashLoopBackOff, ReasonProbeFailure:
			g.Remediable = a.exists[hashKey(k)] && !a.fleet[hashKey(k)] && workloadKinds[g.Kind]
		}
		g.Severity = severityOf(g, a.exists[hashKey(k)], av[0], av[1])
		g.Confidence = 0.9
		if e := g.evidence; e != nil {
			g.Evidence = safetext.Clean(fmt.Sprintf("%s x%d, last %s: %s", e.Reason, eventCount(e),
				eventLastSeen(e).UTC().Format(time.RFC3339), e.Message), detailMax)
		}
		out = append(out, *g)
	}
	sortProblems(out)
	return out
}

// severityOf is the one severity rule, "critical = users are affected now":
//   - critical: a node NotReady now; a Deployment, StatefulSet or DaemonSet
//     that wants replicas and has none available, whatever the reason.
//   - high: a pod-level failure (OOM kill, crash loop, image or config
//     error, stuck creating, unschedulable, failing readiness) on a
//     workload that still serves; node memory/disk/PID pressure; a claim
//     Lost, or Pending while a pod waits for it; an Ingress pointing at a
//     missing Service or port; a Service whose pods exist but none is
//     ready; a webhook with failurePolicy Fail and no ready endpoint.
//   - medium: a workload partly unavailable with no pod-level cause
//     (ReplicasUnavailable, ProgressDeadlineExceeded); a CronJob whose last
//     run failed, a failed Job; an HPA that cannot scale or sits at its
//     maximum while its target is unhealthy; a PDB that allows no
//     disruption while pods are unhealthy; a Service selecting no pod; an
//     unused Pending claim; a failurePolicy Ignore webhook without
//     endpoints.
//   - a workload that is fully available is never above medium.
func severityOf(p *Problem, known bool, available, desired int32) string {
	if p.Reason == ReasonNodeNotReady {
		return api.SeverityCritical
	}
	sev := p.base
	if sev == "" {
		sev = api.SeverityMedium
	}
	if known && workloadKinds[p.Kind] && desired > 0 {
		switch {
		case available == 0:
			return api.SeverityCritical
		case available >= desired && api.SeverityRank(sev) < api.SeverityRank(api.SeverityMedium):
			return api.SeverityMedium
		}
	}
	return sev
}

func sortProblems(ps []Problem) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := &ps[i], &ps[j]
		if ra, rb := api.SeverityRank(a.Severity), api.SeverityRank(b.Severity); ra != rb {
			return ra < rb
		}
		if ca, cb := checkRank(a.Check), checkRank(b.Check); ca != cb { // workloads before their surroundings
			return ca < cb
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Reason < b.Reason
	})
}

var checkOrder = []string{CheckNodeConditions, CheckPodStates, CheckWorkloadReplicas, CheckServices, CheckIngresses, CheckWebhooks,
	CheckPVCs, CheckFailedJobs, CheckHPAs, CheckPDBs}

func checkRank(c string) int {
	for i, x := range checkOrder {
		if x == c {
			return i
		}
	}
	return len(checkOrder)
}

// coverage derives the coverage block from which lists answered.
func (a *analysis) coverage() Coverage {
	s := a.s
	cv := Coverage{Scope: scope(a.opts.Namespace), Window: a.opts.Window, Scanned: map[string]int{}, EventsOutsideWindow: a.outside}
	for name := range s.listed {
		cv.Scanned[name] = s.count(name)
	}
	for _, name := range sortedKeys(s.errs) {
		cv.Partial = append(cv.Partial, PartialList{List: name, Why: safetext.Clean(s.errs[name].Error(), 200)})
	}
	failed := func(lists ...string) []string {
		var out []string
		for _, l := range lists {
			if s.errs[l] != nil {
				out = append(out, l)
			}
		}
		return out
	}
	type check struct {
		name    string
		cluster bool     // needs all-namespace lists
		needs   []string // all needed
		any     []string // at least one needed (the rest degrade it)
	}
	checks := []check{
		{CheckPodStates, false, []string{listPods}, nil},
		{CheckWorkloadReplicas, false, nil, []string{listDeployments, listStatefulSets, listDaemonSets}},
		{CheckOwnerResolution, false, []string{listPods}, []string{listReplicaSets, listJobs}},
		{CheckFailedJobs, false, []string{listJobs}, nil},
		{CheckNodeConditions, true, []string{listNodes}, nil},
		{CheckServices, false, []string{listServices, listPods}, nil},
		{CheckPVCs, false, []string{listPVCs}, []string{listPods, listStorageClasses}},
		{CheckIngresses, false, []string{listIngresses, listServices}, nil},
		{CheckHPAs, false, []string{listHPAs}, nil},
		{CheckPDBs, false, []string{listPDBs}, nil},
		{CheckWebhooks, true, []string{listServices, listPods}, []string{listValidatingHooks, listMutatingHooks}},
		{CheckWarningEvents, false, []string{listEvents}, nil},
	}
	for _, ch := range checks {
		if ch.cluster && a.opts.Namespace != "" {
			cv.ChecksSkipped = append(cv.ChecksSkipped, Skipped{ch.name, "namespace-scoped sweep; cluster-wide objects"})
			continue
		}
		if f := failed(ch.needs...); len(f) > 0 {
			cv.ChecksSkipped = append(cv.ChecksSkipped, Skipped{ch.name, "list failed: " + strings.Join(f, ", ")})
			continue
		}
		any := ch.any
		if a.opts.Namespace != "" { // cluster-scoped helpers are not read by namespace sweeps
			any = nil
			for _, l := range ch.any {
				if !clusterLists[l] {
					any = append(any, l)
				}
			}
		}
		if f := failed(any...); len(any) > 0 && len(f) == len(any) {
			cv.ChecksSkipped = append(cv.ChecksSkipped, Skipped{ch.name, "list failed: " + strings.Join(f, ", ")})
			continue
		}
		name := ch.name
		if f := failed(any...); len(f) > 0 {
			name += " (degraded: " + strings.Join(f, ", ") + " not listed)"
		}
		cv.ChecksRun = append(cv.ChecksRun, name)
	}
	cv.ChecksSkipped = append(cv.ChecksSkipped,
		Skipped{"container-logs", "not read by the sweep; use k8s_get_pod_logs on a named pod"},
		Skipped{"resource-usage", "metrics are not queried; OOM kills, limits and node pressure are checked instead"})
	return cv
}
