package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// Problem reasons cluster_problems reports (event groups use the event's
// own reason).
const (
	ReasonOOMKilled           = "OOMKilled"
	ReasonCrashLoopBackOff    = "CrashLoopBackOff"
	ReasonImagePull           = "ImagePullBackOff"
	ReasonConfigError         = "CreateContainerConfigError"
	ReasonCreateError         = "CreateContainerError"
	ReasonUnschedulable       = "Unschedulable"
	ReasonProbeFailure        = "ProbeFailure"
	ReasonReplicasUnavailable = "ReplicasUnavailable"
	ReasonProgressDeadline    = "ProgressDeadlineExceeded"
	ReasonJobFailed           = "JobFailed"
	ReasonNodeNotReady        = "NodeNotReady"
)

// Checks a sweep runs (names in the coverage block).
const (
	CheckPodStates        = "pod-states"
	CheckWorkloadReplicas = "workload-replicas"
	CheckOwnerResolution  = "owner-resolution"
	CheckFailedJobs       = "failed-jobs"
	CheckNodeConditions   = "node-conditions"
	CheckWarningEvents    = "warning-events"
)

const (
	// DefaultProblemWindow: Warning events last seen before now-window are
	// history, not problems.
	DefaultProblemWindow = time.Hour
	// DefaultProblemChars bounds the rendered report (the tool output limit).
	DefaultProblemChars = 8000
	detailMax           = 200
)

// ProblemOptions tune a sweep.
type ProblemOptions struct {
	Namespace string        // "" = all namespaces
	Window    time.Duration // Warning event window; 0 = DefaultProblemWindow
	MaxChars  int           // Render bound; 0 = DefaultProblemChars
}

// Problem is one thing wrong, grouped: one per workload and reason, one per
// node condition, one per event object and reason.
type Problem struct {
	Severity  string // api.Severity*: the rule is in severityOf
	Check     string // the check that found it
	Namespace string // "" for nodes
	// Kind/Name is the object to act on: a pod's top owner (Deployment via
	// its ReplicaSet, StatefulSet, DaemonSet, CronJob via its Job), the pod
	// itself when it has no controller, a node, or an event's object.
	Kind, Name string
	Container  string // set when one container is at fault
	Reason     string
	Detail     string // one sanitized line
	Pods       int    // affected pods (pod problems)
	Pod        string // one affected pod (the first by name)
	Restarts   int    // highest restart count among affected containers
	Replicas   string // the workload's ready/desired replicas ("" when not a listed workload)
	Events     int    // Warning events folded in (sum of counts)
	LastSeen   time.Time
	// Remediable: an OOM kill, a crash loop or failing probes on a workload
	// that exists and is not kubecrew's own — what Sol may act on.
	Remediable bool
	Confidence float64

	probe string // the newest Unhealthy event message folded in
}

// Skipped is a check that did not run, and why.
type Skipped struct{ Check, Why string }

// PartialList is a list that failed or was forbidden.
type PartialList struct{ List, Why string }

// Coverage says what was checked, so "nothing wrong" is distinguishable
// from "nothing checked".
type Coverage struct {
	Scope               string
	Window              time.Duration
	ChecksRun           []string
	ChecksSkipped       []Skipped
	Partial             []PartialList
	Scanned             map[string]int // objects listed, per list
	EventsOutsideWindow int
}

// ProblemReport is a sweep's result.
type ProblemReport struct {
	Problems []Problem // sorted: severity, namespace, kind, name, reason
	Coverage Coverage
	maxChars int
}

// Healthy reports a complete sweep that found nothing.
func (r *ProblemReport) Healthy() bool { return len(r.Problems) == 0 && len(r.Coverage.Partial) == 0 }

// owner is a resolved top-level controller.
type owner struct{ kind, name string }

// ClusterProblems sweeps the cluster (or one namespace) with a handful of
// Lists and computes, in code, every problem worth a human's or an agent's
// attention, grouped and ordered. A list that fails does not fail the
// sweep: it is named in Coverage.Partial and its checks in ChecksSkipped.
func (c *Client) ClusterProblems(ctx context.Context, opts ProblemOptions) (*ProblemReport, error) {
	if err := c.avail(); err != nil {
		return nil, err
	}
	if err := validOptionalName("namespace", opts.Namespace); err != nil {
		return nil, err
	}
	if opts.Window <= 0 {
		opts.Window = DefaultProblemWindow
	}
	if opts.MaxChars <= 0 {
		opts.MaxChars = DefaultProblemChars
	}
	s := c.collect(ctx, opts.Namespace)
	if len(s.listed) == 0 { // nothing answered: say the cluster is down rather than "healthy"
		for _, name := range []string{listPods, listEvents, listDeployments} {
			if err := s.errs[name]; errors.Is(err, ErrClusterUnavailable) {
				return nil, err
			}
		}
	}
	a := newAnalysis(s, opts, c.now())
	a.run()
	return &ProblemReport{Problems: a.result(), Coverage: a.coverage(), maxChars: opts.MaxChars}, nil
}

type analysis struct {
	s       *snapshot
	opts    ProblemOptions
	now     time.Time
	rsOwner map[string]owner // ns/rs -> its controller
	jobOwn  map[string]owner // ns/job -> its controller
	podOwn  map[string]owner // ns/pod -> top owner
	exists  map[string]bool  // ns/Kind/name of listed workloads
	fleet   map[string]bool  // ns/Kind/name of kubecrew's own workloads
	ready   map[string][2]int32
	groups  map[string]*Problem
	outside int
}

func newAnalysis(s *snapshot, opts ProblemOptions, now time.Time) *analysis {
	return &analysis{s: s, opts: opts, now: now,
		rsOwner: map[string]owner{}, jobOwn: map[string]owner{}, podOwn: map[string]owner{},
		exists: map[string]bool{}, fleet: map[string]bool{}, ready: map[string][2]int32{}, groups: map[string]*Problem{}}
}

func wkey(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

func controllerRef(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

func (a *analysis) run() {
	a.indexWorkloads()
	a.checkPods()
	a.checkWorkloads()
	a.checkJobs()
	a.checkNodes()
	a.checkEvents()
}

func (a *analysis) indexWorkloads() {
	mark := func(ns, kind, name string, labels, tmpl map[string]string, ready, desired int32) {
		k := wkey(ns, kind, name)
		a.exists[k] = true
		a.ready[k] = [2]int32{ready, desired}
		if labels[FleetLabel] == FleetValue || tmpl[FleetLabel] == FleetValue {
			a.fleet[k] = true
		}
	}
	for i := range a.s.deps {
		d := &a.s.deps[i]
		mark(d.Namespace, "Deployment", d.Name, d.Labels, d.Spec.Template.Labels, d.Status.ReadyReplicas, i32(d.Spec.Replicas, 1))
	}
	for i := range a.s.sts {
		d := &a.s.sts[i]
		mark(d.Namespace, "StatefulSet", d.Name, d.Labels, d.Spec.Template.Labels, d.Status.ReadyReplicas, i32(d.Spec.Replicas, 1))
	}
	for i := range a.s.dss {
		d := &a.s.dss[i]
		mark(d.Namespace, "DaemonSet", d.Name, d.Labels, d.Spec.Template.Labels, d.Status.NumberReady, d.Status.DesiredNumberScheduled)
	}
	for i := range a.s.rss {
		rs := &a.s.rss[i]
		if ref := controllerRef(rs.OwnerReferences); ref != nil {
			a.rsOwner[rs.Namespace+"/"+rs.Name] = owner{ref.Kind, ref.Name}
		} else {
			a.rsOwner[rs.Namespace+"/"+rs.Name] = owner{"ReplicaSet", rs.Name}
		}
	}
	for i := range a.s.jobs {
		j := &a.s.jobs[i]
		if ref := controllerRef(j.OwnerReferences); ref != nil {
			a.jobOwn[j.Namespace+"/"+j.Name] = owner{ref.Kind, ref.Name}
		} else {
			a.jobOwn[j.Namespace+"/"+j.Name] = owner{"Job", j.Name}
		}
	}
	for i := range a.s.pods {
		p := &a.s.pods[i]
		a.podOwn[p.Namespace+"/"+p.Name] = a.topOwner(p)
	}
}

// topOwner follows pod -> ReplicaSet -> Deployment and pod -> Job ->
// CronJob through the listed objects. When the middle object was not listed
// the chain stops there: no guessing from names.
func (a *analysis) topOwner(p *corev1.Pod) owner {
	ref := controllerRef(p.OwnerReferences)
	if ref == nil {
		return owner{"Pod", p.Name}
	}
	switch ref.Kind {
	case "ReplicaSet":
		if o, ok := a.rsOwner[p.Namespace+"/"+ref.Name]; ok {
			return o
		}
	case "Job":
		if o, ok := a.jobOwn[p.Namespace+"/"+ref.Name]; ok {
			return o
		}
	}
	return owner{ref.Kind, ref.Name}
}

// add merges one finding into its group (namespace, owner, reason).
func (a *analysis) add(check, ns string, o owner, reason, container, detail, pod string, restarts int) *Problem {
	k := wkey(ns, o.kind, o.name) + "/" + reason
	g := a.groups[k]
	if g == nil {
		g = &Problem{Check: check, Namespace: ns, Kind: o.kind, Name: o.name, Reason: reason, Container: container,
			Detail: safetext.Clean(detail, detailMax), Pod: pod}
		a.groups[k] = g
	} else {
		if g.Container != container {
			g.Container = ""
		}
		if pod != "" && (g.Pod == "" || pod < g.Pod) {
			g.Pod, g.Detail = pod, safetext.Clean(detail, detailMax)
		}
	}
	if pod != "" {
		g.Pods++
	}
	g.Restarts = max(g.Restarts, restarts)
	return g
}

var imagePullReasons = map[string]bool{"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// checkPods classifies each pod by its most serious container state.
func (a *analysis) checkPods() {
	for i := range a.s.pods {
		p := &a.s.pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.DeletionTimestamp != nil {
			continue
		}
		o := a.podOwn[p.Namespace+"/"+p.Name]
		if reason, ctr, detail, restarts := a.classifyPod(p); reason != "" {
			a.add(CheckPodStates, p.Namespace, o, reason, ctr, detail, p.Name, restarts)
		}
	}
}

func (a *analysis) classifyPod(p *corev1.Pod) (reason, container, detail string, restarts int) {
	limits := map[string]string{}
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			limits[c.Name] = q.String()
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	type hit struct {
		rank             int
		reason, ctr, msg string
		restarts         int
	}
	var best *hit
	consider := func(h hit) {
		if best == nil || h.rank < best.rank {
			best = &h
		}
	}
	for _, cs := range statuses {
		w, t, last := cs.State.Waiting, cs.State.Terminated, cs.LastTerminationState.Terminated
		rc := int(cs.RestartCount)
		oomNow := t != nil && t.Reason == "OOMKilled"
		oomLast := last != nil && last.Reason == "OOMKilled" &&
			(w != nil || !cs.Ready || last.FinishedAt.After(a.now.Add(-a.opts.Window)))
		switch {
		case oomNow || oomLast:
			term := t
			if !oomNow {
				term = last
			}
			msg := fmt.Sprintf("container %s OOMKilled (exit %d), restarts %d", cs.Name, term.ExitCode, rc)
			if l, ok := limits[cs.Name]; ok {
				msg += ", memory limit " + l
			} else {
				msg += ", no memory limit"
			}
			if w != nil && w.Reason != "" {
				msg += "; now " + w.Reason
			}
			consider(hit{0, ReasonOOMKilled, cs.Name, msg, rc})
		case w != nil && w.Reason == "CrashLoopBackOff":
			msg := fmt.Sprintf("container %s crash-looping, restarts %d", cs.Name, rc)
			if last != nil {
				msg += fmt.Sprintf("; last exit %d (%s)", last.ExitCode, nonEmpty(last.Reason, "Error"))
				if last.Message != "" {
					msg += ": " + last.Message
				}
			}
			consider(hit{1, ReasonCrashLoopBackOff, cs.Name, msg, rc})
		case w != nil && imagePullReasons[w.Reason]:
			consider(hit{2, ReasonImagePull, cs.Name, fmt.Sprintf("container %s %s: %s", cs.Name, w.Reason, w.Message), rc})
		case w != nil && (w.Reason == ReasonConfigError || w.Reason == ReasonCreateError):
			consider(hit{2, w.Reason, cs.Name, fmt.Sprintf("container %s %s: %s", cs.Name, w.Reason, w.Message), rc})
		}
	}
	if best != nil {
		return best.reason, best.ctr, best.msg, best.restarts
	}
	if p.Status.Phase == corev1.PodPending {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return ReasonUnschedulable, "", "pod cannot be scheduled: " + c.Message, 0
			}
		}
	}
	if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 {
		running, notReady := true, []string{}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				running = false
			}
			if !cs.Ready {
				notReady = append(notReady, cs.Name)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && running && len(notReady) > 0 {
				ctr := ""
				if len(notReady) == 1 {
					ctr = notReady[0]
				}
				return ReasonProbeFailure, ctr, fmt.Sprintf("running but not ready since %s (containers %s)",
					c.LastTransitionTime.UTC().Format(time.RFC3339), strings.Join(notReady, ",")), 0
			}
		}
	}
	return "", "", "", 0
}

// checkWorkloads reports workloads below their desired replicas, unless a
// pod problem already explains it (then the replica counts join that
// problem's detail).
func (a *analysis) checkWorkloads() {
	explained := map[string]bool{}
	for _, g := range a.groups {
		explained[wkey(g.Namespace, g.Kind, g.Name)] = true
	}
	check := func(ns, kind, name string, desired, ready, available int32, conds []appsv1.DeploymentCondition) {
		k := wkey(ns, kind, name)
		if desired == 0 || (ready >= desired && available >= desired) {
			return
		}
		if explained[k] {
			return
		}
		reason := ReasonReplicasUnavailable
		detail := fmt.Sprintf("ready %d/%d, available %d", ready, desired, available)
		for _, c := range conds {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				reason = ReasonProgressDeadline
			}
			if c.Status == corev1.ConditionFalse && c.Message != "" {
				detail += "; " + string(c.Type) + ": " + c.Message
			}
		}
		a.add(CheckWorkloadReplicas, ns, owner{kind, name}, reason, "", detail, "", 0)
	}
	for i := range a.s.deps {
		d := &a.s.deps[i]
		if d.Spec.Paused {
			continue
		}
		check(d.Namespace, "Deployment", d.Name, i32(d.Spec.Replicas, 1), d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.Conditions)
	}
	for i := range a.s.sts {
		s := &a.s.sts[i]
		check(s.Namespace, "StatefulSet", s.Name, i32(s.Spec.Replicas, 1), s.Status.ReadyReplicas, s.Status.AvailableReplicas, nil)
	}
	for i := range a.s.dss {
		d := &a.s.dss[i]
		check(d.Namespace, "DaemonSet", d.Name, d.Status.DesiredNumberScheduled, d.Status.NumberReady, d.Status.NumberAvailable, nil)
	}
}

func (a *analysis) checkJobs() {
	for i := range a.s.jobs {
		j := &a.s.jobs[i]
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				o := a.jobOwn[j.Namespace+"/"+j.Name]
				g := a.add(CheckFailedJobs, j.Namespace, o, ReasonJobFailed, "",
					fmt.Sprintf("job %s failed (%s): %s", j.Name, nonEmpty(c.Reason, "unknown"), c.Message), "", 0)
				if c.LastTransitionTime.After(g.LastSeen) {
					g.LastSeen = c.LastTransitionTime.Time
				}
			}
		}
	}
}

func (a *analysis) checkNodes() {
	for i := range a.s.nodes {
		n := &a.s.nodes[i]
		if ok, msg := nodeReady(n); !ok {
			a.add(CheckNodeConditions, "", owner{"Node", n.Name}, ReasonNodeNotReady, "", "node not ready: "+msg, "", 0)
		}
		for _, pc := range pressureConditions {
			if cond := nodeCondition(n, pc); cond != nil && cond.Status == corev1.ConditionTrue {
				a.add(CheckNodeConditions, "", owner{"Node", n.Name}, string(pc), "", string(pc)+": "+nonEmpty(cond.Message, cond.Reason), "", 0)
			}
		}
	}
}

// foldable event reasons are explained by a pod problem of the same owner.
var foldable = map[string]bool{"BackOff": true, "Failed": true, "Unhealthy": true, "FailedScheduling": true}

// checkEvents groups Warning events within the window by object and reason.
// Events of a pod resolve to the pod's owner; those a pod problem explains
// are folded into it (count, last seen).
func (a *analysis) checkEvents() {
	cutoff := a.now.Add(-a.opts.Window)
	byOwner := map[string][]*Problem{}
	for _, g := range a.groups {
		if g.Check == CheckPodStates {
			byOwner[wkey(g.Namespace, g.Kind, g.Name)] = append(byOwner[wkey(g.Namespace, g.Kind, g.Name)], g)
		}
	}
	for _, gs := range byOwner { // deterministic fold target
		sort.Slice(gs, func(i, j int) bool { return gs[i].Reason < gs[j].Reason })
	}
	for i := range a.s.events {
		e := &a.s.events[i]
		last := eventLastSeen(e)
		if last.Before(cutoff) {
			a.outside++
			continue
		}
		io := e.InvolvedObject
		ns := nonEmpty(io.Namespace, e.Namespace)
		if io.Kind == "Node" {
			ns = ""
		}
		o := owner{io.Kind, io.Name}
		switch io.Kind {
		case "Pod":
			if po, ok := a.podOwn[ns+"/"+io.Name]; ok {
				o = po
			}
		case "ReplicaSet":
			if ro, ok := a.rsOwner[ns+"/"+io.Name]; ok {
				o = ro
			}
		case "Job":
			if jo, ok := a.jobOwn[ns+"/"+io.Name]; ok {
				o = jo
			}
		}
		var g *Problem
		if foldable[e.Reason] {
			if gs := byOwner[wkey(ns, o.kind, o.name)]; len(gs) > 0 {
				g = gs[0]
			}
		}
		if g == nil {
			reason := e.Reason
			if reason == "Unhealthy" && io.Kind == "Pod" { // failing probes on a pod that otherwise looks fine
				reason = ReasonProbeFailure
			}
			g = a.add(CheckWarningEvents, ns, o, nonEmpty(reason, "Warning"), "", e.Message, "", 0)
			if last.After(g.LastSeen) || (last.Equal(g.LastSeen) && safetext.Clean(e.Message, detailMax) < g.Detail) {
				g.Detail = safetext.Clean(e.Message, detailMax)
			}
		}
		g.Events += eventCount(e)
		if g.Reason == ReasonProbeFailure && e.Reason == "Unhealthy" && (g.probe == "" || !last.Before(g.LastSeen)) {
			g.probe = e.Message
		}
		if last.After(g.LastSeen) {
			g.LastSeen = last
		}
	}
}

// result assigns severity and remediability and sorts.
func (a *analysis) result() []Problem {
	out := make([]Problem, 0, len(a.groups))
	for _, g := range a.groups {
		k := wkey(g.Namespace, g.Kind, g.Name)
		rd := a.ready[k]
		if g.probe != "" && g.Check == CheckPodStates {
			g.Detail = safetext.Clean(g.Detail+"; "+g.probe, detailMax)
		}
		if a.exists[k] {
			g.Replicas = fmt.Sprintf("%d/%d", rd[0], rd[1])
		}
		switch g.Reason {
		case ReasonOOMKilled, ReasonCrashLoopBackOff, ReasonProbeFailure:
			g.Remediable = a.exists[k] && !a.fleet[k] && (g.Kind == "Deployment" || g.Kind == "StatefulSet" || g.Kind == "DaemonSet")
		}
		g.Severity = severityOf(g, a.exists[k] && rd[0] == 0 && rd[1] > 0)
		g.Confidence = 0.9
		if g.Check == CheckWarningEvents {
			g.Confidence = 0.7
		}
		out = append(out, *g)
	}
	sortProblems(out)
	return out
}

// severityOf is the one severity rule:
//   - critical: OOMKilled; NodeNotReady; CrashLoopBackOff when the workload has no ready replica
//   - high: CrashLoopBackOff otherwise; ImagePullBackOff, CreateContainerConfigError,
//     CreateContainerError, Unschedulable; node Memory/Disk/PID pressure or NetworkUnavailable;
//     a workload with no ready replica (ReplicasUnavailable, ProgressDeadlineExceeded, ProbeFailure)
//   - medium: ProbeFailure, ReplicasUnavailable, ProgressDeadlineExceeded, JobFailed; events
//     that usually matter (OOMKilling, Evicted, FailedMount, FailedAttachVolume, FailedCreate)
//   - low: any other Warning event group
func severityOf(p *Problem, outage bool) string {
	switch p.Reason {
	case ReasonOOMKilled, ReasonNodeNotReady:
		return api.SeverityCritical
	case ReasonCrashLoopBackOff:
		if outage {
			return api.SeverityCritical
		}
		return api.SeverityHigh
	case ReasonImagePull, ReasonConfigError, ReasonCreateError, ReasonUnschedulable,
		string(corev1.NodeMemoryPressure), string(corev1.NodeDiskPressure), string(corev1.NodePIDPressure),
		string(corev1.NodeNetworkUnavailable):
		return api.SeverityHigh
	case ReasonReplicasUnavailable, ReasonProgressDeadline, ReasonProbeFailure:
		if outage {
			return api.SeverityHigh
		}
		return api.SeverityMedium
	case ReasonJobFailed, "OOMKilling", "Evicted", "FailedMount", "FailedAttachVolume", "FailedCreate":
		return api.SeverityMedium
	}
	return api.SeverityLow
}

func sortProblems(ps []Problem) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := &ps[i], &ps[j]
		if ra, rb := api.SeverityRank(a.Severity), api.SeverityRank(b.Severity); ra != rb {
			return ra < rb
		}
		if a.Check != b.Check { // state before events at equal severity
			return checkOrder[a.Check] < checkOrder[b.Check]
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

var checkOrder = map[string]int{CheckNodeConditions: 0, CheckPodStates: 1, CheckWorkloadReplicas: 2, CheckFailedJobs: 3, CheckWarningEvents: 4}

// coverage derives the coverage block from which lists answered.
func (a *analysis) coverage() Coverage {
	s := a.s
	cv := Coverage{Scope: scope(a.opts.Namespace), Window: a.opts.Window, Scanned: map[string]int{}, EventsOutsideWindow: a.outside}
	counts := map[string]int{listPods: len(s.pods), listReplicaSets: len(s.rss), listDeployments: len(s.deps),
		listStatefulSets: len(s.sts), listDaemonSets: len(s.dss), listJobs: len(s.jobs), listNodes: len(s.nodes), listEvents: len(s.events)}
	for name := range s.listed {
		cv.Scanned[name] = counts[name]
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
		name  string
		needs []string // all needed
		any   []string // at least one needed (the rest degrade it)
	}
	checks := []check{
		{CheckPodStates, []string{listPods}, nil},
		{CheckWorkloadReplicas, nil, []string{listDeployments, listStatefulSets, listDaemonSets}},
		{CheckOwnerResolution, []string{listPods}, []string{listReplicaSets, listJobs}},
		{CheckFailedJobs, []string{listJobs}, nil},
		{CheckNodeConditions, []string{listNodes}, nil},
		{CheckWarningEvents, []string{listEvents}, nil},
	}
	for _, ch := range checks {
		if ch.name == CheckNodeConditions && a.opts.Namespace != "" {
			cv.ChecksSkipped = append(cv.ChecksSkipped, Skipped{ch.name, "namespace-scoped sweep; nodes are cluster-wide"})
			continue
		}
		if f := failed(ch.needs...); len(f) > 0 {
			cv.ChecksSkipped = append(cv.ChecksSkipped, Skipped{ch.name, "list failed: " + strings.Join(f, ", ")})
			continue
		}
		if f := failed(ch.any...); len(ch.any) > 0 && len(f) == len(ch.any) {
			cv.ChecksSkipped = append(cv.ChecksSkipped, Skipped{ch.name, "list failed: " + strings.Join(f, ", ")})
			continue
		}
		name := ch.name
		if f := failed(ch.any...); len(f) > 0 {
			name += " (degraded: " + strings.Join(f, ", ") + " not listed)"
		}
		cv.ChecksRun = append(cv.ChecksRun, name)
	}
	cv.ChecksSkipped = append(cv.ChecksSkipped,
		Skipped{"container-logs", "not read by the sweep; use k8s_get_pod_logs on a named pod"},
		Skipped{"resource-usage", "metrics are not queried; OOM kills, limits and node pressure are checked instead"})
	return cv
}
