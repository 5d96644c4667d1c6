package kube

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// Problem reasons cluster_problems reports. Every one is a state the
// cluster is in now; events only ever explain one of them.
const (
	ReasonOOMKilled           = "OOMKilled"
	ReasonCrashLoopBackOff    = "CrashLoopBackOff"
	ReasonImagePull           = "ImagePullBackOff"
	ReasonConfigError         = "CreateContainerConfigError"
	ReasonCreateError         = "CreateContainerError"
	ReasonStuckCreating       = "ContainerCreating"
	ReasonUnschedulable       = "Unschedulable"
	ReasonProbeFailure        = "ProbeFailure"
	ReasonReplicasUnavailable = "ReplicasUnavailable"
	ReasonProgressDeadline    = "ProgressDeadlineExceeded"
	ReasonJobFailed           = "JobFailed"
	ReasonNodeNotReady        = "NodeNotReady"
	ReasonServiceNoReadyPods  = "ServiceNoReadyPods"
	ReasonServiceNoPods       = "ServiceSelectsNoPods"
	ReasonPVCPending          = "PVCPending"
	ReasonPVCLost             = "PVCLost"
	ReasonIngressBackend      = "IngressBackendMissing"
	ReasonHPACannotScale      = "HPACannotScale"
	ReasonHPAAtMax            = "HPAAtMaxUnhealthy"
	ReasonPDBBlocking         = "PDBNoDisruptions"
	ReasonWebhookNoEndpoints  = "WebhookNoEndpoints"
)

// Checks a sweep runs (names in the coverage block).
const (
	CheckPodStates        = "pod-states"
	CheckWorkloadReplicas = "workload-replicas"
	CheckOwnerResolution  = "owner-resolution"
	CheckFailedJobs       = "failed-jobs"
	CheckNodeConditions   = "node-conditions"
	CheckServices         = "service-endpoints"
	CheckPVCs             = "pvc-phase"
	CheckIngresses        = "ingress-backends"
	CheckHPAs             = "hpa-status"
	CheckPDBs             = "pdb-disruptions"
	CheckWebhooks         = "admission-webhooks"
	// CheckWarningEvents reads Warning events as evidence for the problems
	// above and as the churn summary; an event alone is never a problem.
	CheckWarningEvents = "warning-events"
)

const (
	// DefaultProblemWindow: Warning events last seen before now-window are
	// history: neither evidence nor churn.
	DefaultProblemWindow = time.Hour
	// DefaultProblemChars bounds the rendered report (the tool output limit).
	DefaultProblemChars = 8000
	// DefaultStuckAfter: a pod still creating its containers, or a claim
	// still Pending, this long after it was created is stuck, not starting.
	DefaultStuckAfter = 5 * time.Minute
	// bareJobWindow: a failed Job without a CronJob is reported while its
	// failure is this recent; older ones are left to their owner's cleanup.
	bareJobWindow = 24 * time.Hour
	detailMax     = 200
)

// Verdicts of a sweep (ProblemReport.Verdict).
const (
	VerdictHealthy     = "healthy"
	VerdictIssuesFound = "issues_found"
	VerdictPartial     = "partial"
	VerdictUnknown     = "unknown"
)

// ObjectRef names one object (an alert's target).
type ObjectRef struct{ Namespace, Kind, Name string }

func (o ObjectRef) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Namespace + "/" + o.Kind + "/" + o.Name
}

// ProblemOptions tune a sweep.
type ProblemOptions struct {
	Namespace string        // "" = all namespaces
	Window    time.Duration // Warning event window; 0 = DefaultProblemWindow
	MaxChars  int           // Render bound; 0 = DefaultProblemChars
	// Focus is an alert's object: the report always says how it is now,
	// also when it looks recovered (with the evidence), first.
	Focus *ObjectRef
	// ListTimeout bounds each List (all its pages); a List that takes
	// longer is named in the coverage as partial. 0 = 20s.
	ListTimeout time.Duration
	// StuckAfter: a claim Pending, or a container still being created,
	// this long after creation is stuck rather than starting. 0 = 5m;
	// negative = at once.
	StuckAfter time.Duration
}

// Problem is one thing wrong now, grouped: one per owner and reason.
type Problem struct {
	Severity  string // api.Severity*: the rule is in severityOf
	Check     string // the check that found it
	Namespace string // "" for cluster-scoped objects
	// Kind/Name is the object to act on: a pod's top owner (Deployment via
	// its ReplicaSet, StatefulSet, DaemonSet, CronJob via its Job), the pod
	// itself when it has no controller, a node, a Service, a claim, ...
	Kind, Name string
	Container  string // set when one container is at fault
	Reason     string
	Detail     string // one sanitized line: the state
	Evidence   string // the Warning event that explains it, when one does
	Pods       int    // affected pods (pod problems)
	Pod        string // one affected pod (the first by name)
	Restarts   int    // highest restart count among affected containers
	Replicas   string // the workload's available/desired replicas ("" when not a listed workload)
	Events     int    // Warning events attached as evidence (sum of counts)
	LastSeen   time.Time
	// Remediable: an OOM kill, a crash loop or failing probes on a workload
	// that exists and is not kubecrew's own — what Sol may act on.
	Remediable bool
	Confidence float64
	// Services left without a ready endpoint because of this problem.
	Services []string

	base     string // severity before the workload's availability is applied
	evidence *corev1.Event
}

// Skipped is a check that did not run, and why.
type Skipped struct{ Check, Why string }

// PartialList is a list that failed, was forbidden or timed out.
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
	// Missing is set when the swept namespace does not exist: nothing in
	// it could be checked.
	Missing string
}

// Churn summarises Warning events within the window about objects that
// are healthy now or gone: never problems, shown so an operator sees them.
type Churn struct {
	Events      int            // event objects
	Occurrences int            // sum of their counts
	OnGone      int            // event objects about objects that no longer exist
	ByReason    map[string]int // event objects per reason
	ByNamespace map[string]int // event objects per namespace ("" = cluster-scoped)
}

// FocusStatus is what the report says about an alert's object.
type FocusStatus struct {
	Ref      ObjectRef
	Owner    ObjectRef // the object problems are reported on (a pod's Deployment, ...)
	Exists   bool
	State    string   // "broken", "recovered", "missing" or "unchecked"
	Summary  string   // one line: how it is now
	Evidence []string // restarts, last terminations, recent Warning events
}

// ProblemReport is a sweep's result.
type ProblemReport struct {
	Problems []Problem // sorted: severity, check, namespace, kind, name, reason
	Coverage Coverage
	Churn    Churn
	Focus    *FocusStatus
	maxChars int
}

// Healthy reports a complete sweep that found nothing.
func (r *ProblemReport) Healthy() bool { return r.Verdict() == VerdictHealthy }

// Verdict is what the sweep may claim: unknown when no check could run or
// the namespace does not exist, issues_found when something is broken,
// partial when nothing was found but some list failed, healthy only when
// every check ran and found nothing.
func (r *ProblemReport) Verdict() string {
	switch {
	case r.Coverage.Missing != "" || len(r.Coverage.ChecksRun) == 0:
		return VerdictUnknown
	case len(r.Problems) > 0:
		return VerdictIssuesFound
	case len(r.Coverage.Partial) > 0:
		return VerdictPartial
	}
	return VerdictHealthy
}

// NotChecked says what the sweep could not check and why, grouped by
// cause ("forbidden for User \"x\": events, pods"); empty when coverage is
// complete. The coverage block keeps each List's full error.
func (r *ProblemReport) NotChecked() []string {
	var out []string
	if r.Coverage.Missing != "" {
		out = append(out, r.Coverage.Missing)
	}
	byCause := map[string][]string{}
	var causes []string
	for _, p := range r.Coverage.Partial {
		cause, _, _ := strings.Cut(p.Why, ":")
		if cause == ErrClusterUnavailable.Error() {
			cause = "unanswered (timed out, throttled or unreachable)"
		}
		if m := userRE.FindString(p.Why); m != "" && cause == "forbidden" {
			cause += " for " + m
		}
		if byCause[cause] == nil {
			causes = append(causes, cause)
		}
		byCause[cause] = append(byCause[cause], p.List)
	}
	for _, c := range causes {
		out = append(out, c+": "+strings.Join(byCause[c], ", "))
	}
	return out
}

var userRE = regexp.MustCompile(`User "[^"]{1,100}"`)

// owner is a resolved top-level controller.
type owner struct{ kind, name string }

// ClusterProblems sweeps the cluster (or one namespace) with one List per
// resource and computes, in code, what is broken now, grouped by owner and
// ordered; Warning events attach to those problems as evidence or are
// summarised as churn. A list that fails does not fail the sweep: it is
// named in Coverage.Partial and its checks in ChecksSkipped.
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
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = defaultListTimeout
	}
	switch {
	case opts.StuckAfter == 0:
		opts.StuckAfter = DefaultStuckAfter
	case opts.StuckAfter < 0:
		opts.StuckAfter = 0
	}
	s := c.collect(ctx, opts.Namespace, opts.ListTimeout)
	if len(s.listed) == 0 { // nothing answered: say the cluster is down rather than "healthy"
		for _, name := range []string{listPods, listEvents, listDeployments} {
			if err := s.errs[name]; errors.Is(err, ErrClusterUnavailable) {
				return nil, err
			}
		}
	}
	missing := c.missingNamespaces(ctx, s, opts)
	if opts.Focus != nil {
		f := *opts.Focus
		f.Kind = apiKind(f.Kind)
		opts.Focus = &f
	}
	a := newAnalysis(s, opts, c.now())
	a.run()
	rep := &ProblemReport{Problems: a.result(), Coverage: a.coverage(), Churn: a.churn, maxChars: opts.MaxChars}
	if opts.Namespace != "" && missing[opts.Namespace] {
		rep.Coverage.Missing = "namespace " + opts.Namespace + " does not exist"
	}
	if opts.Focus != nil {
		rep.Focus = a.focus(*opts.Focus, missing[opts.Focus.Namespace], rep.Problems)
	}
	return rep, nil
}

// missingNamespaces asks the API server whether the swept and the focused
// namespace exist (a List in a namespace that does not exist answers
// "nothing", which must not read as "healthy").
func (c *Client) missingNamespaces(ctx context.Context, s *snapshot, opts ProblemOptions) map[string]bool {
	out := map[string]bool{}
	for _, ns := range []string{opts.Namespace, focusNS(opts.Focus)} {
		if ns == "" || out[ns] {
			continue
		}
		_, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && len(s.listed) > 0: // a server that answers 404 to everything proves nothing
			out[ns] = true
		case err != nil && ns == opts.Namespace:
			s.errs["namespace "+ns] = c.apiErr(err, "get namespace "+ns)
		}
	}
	return out
}

func focusNS(f *ObjectRef) string {
	if f == nil {
		return ""
	}
	return f.Namespace
}

type analysis struct {
	s        *snapshot
	opts     ProblemOptions
	now      time.Time
	rsOwner  map[string]owner // ns/rs -> its controller
	jobOwn   map[string]owner // ns/job -> its controller
	podOwn   map[string]owner // ns/pod -> top owner
	exists   map[string]bool  // ns/Kind/name of listed workloads
	fleet    map[string]bool  // ns/Kind/name of kubecrew's own workloads
	avail    map[string][2]int32
	groups   map[string]*Problem
	byOwner  map[string][]*Problem // ns/Kind/name -> its problems
	listedAt map[string]bool       // ns/Kind/name of every listed object (events about others are about gone objects)
	outside  int
	churn    Churn
	focusEv  []*corev1.Event
	focusKey string
	podsByNS map[string][]*corev1.Pod
}

func newAnalysis(s *snapshot, opts ProblemOptions, now time.Time) *analysis {
	return &analysis{s: s, opts: opts, now: now,
		rsOwner: map[string]owner{}, jobOwn: map[string]owner{}, podOwn: map[string]owner{},
		exists: map[string]bool{}, fleet: map[string]bool{}, avail: map[string][2]int32{}, groups: map[string]*Problem{},
		byOwner: map[string][]*Problem{}, listedAt: map[string]bool{},
		churn: Churn{ByReason: map[string]int{}, ByNamespace: map[string]int{}}}
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
	if a.opts.Focus != nil {
		a.focusKey = a.focusOwner(*a.opts.Focus)
	}
	a.checkPods()
	a.checkWorkloads()
	a.checkJobs()
	a.checkNodes()
	a.checkPVCs()
	a.checkServices()
	a.checkIngresses()
	a.checkWebhooks()
	a.checkHPAs()
	a.checkPDBs()
	a.checkEvents()
}

func (a *analysis) indexWorkloads() {
	mark := func(ns, kind, name string, labels, tmpl map[string]string, available, desired int32) {
		k := wkey(ns, kind, name)
		a.exists[k] = true
		a.avail[k] = [2]int32{available, desired}
		if labels[FleetLabel] == FleetValue || tmpl[FleetLabel] == FleetValue {
			a.fleet[k] = true
		}
	}
	for i := range a.s.deps {
		d := &a.s.deps[i]
		mark(d.Namespace, "Deployment", d.Name, d.Labels, d.Spec.Template.Labels, d.Status.AvailableReplicas, i32(d.Spec.Replicas, 1))
	}
	for i := range a.s.sts {
		d := &a.s.sts[i]
		mark(d.Namespace, "StatefulSet", d.Name, d.Labels, d.Spec.Template.Labels, d.Status.AvailableReplicas, i32(d.Spec.Replicas, 1))
	}
	for i := range a.s.dss {
		d := &a.s.dss[i]
		mark(d.Namespace, "DaemonSet", d.Name, d.Labels, d.Spec.Template.Labels, d.Status.NumberAvailable, d.Status.DesiredNumberScheduled)
	}
	for i := range a.s.rss {
		rs := &a.s.rss[i]
		a.listedAt[wkey(rs.Namespace, "ReplicaSet", rs.Name)] = true
		if ref := controllerRef(rs.OwnerReferences); ref != nil {
			a.rsOwner[rs.Namespace+"/"+rs.Name] = owner{ref.Kind, ref.Name}
		} else {
			a.rsOwner[rs.Namespace+"/"+rs.Name] = owner{"ReplicaSet", rs.Name}
		}
	}
	for i := range a.s.jobs {
		j := &a.s.jobs[i]
		a.listedAt[wkey(j.Namespace, "Job", j.Name)] = true
		if ref := controllerRef(j.OwnerReferences); ref != nil {
			a.jobOwn[j.Namespace+"/"+j.Name] = owner{ref.Kind, ref.Name}
		} else {
			a.jobOwn[j.Namespace+"/"+j.Name] = owner{"Job", j.Name}
		}
	}
	for i := range a.s.pods {
		p := &a.s.pods[i]
		a.listedAt[wkey(p.Namespace, "Pod", p.Name)] = true
		a.podOwn[p.Namespace+"/"+p.Name] = a.topOwner(p)
	}
	for k := range a.exists {
		a.listedAt[k] = true
	}
	for i := range a.s.nodes {
		a.listedAt[wkey("", "Node", a.s.nodes[i].Name)] = true
	}
	for i := range a.s.cronJobs {
		a.listedAt[wkey(a.s.cronJobs[i].Namespace, "CronJob", a.s.cronJobs[i].Name)] = true
	}
	for i := range a.s.services {
		a.listedAt[wkey(a.s.services[i].Namespace, "Service", a.s.services[i].Name)] = true
	}
	for i := range a.s.pvcs {
		a.listedAt[wkey(a.s.pvcs[i].Namespace, "PersistentVolumeClaim", a.s.pvcs[i].Name)] = true
	}
	for i := range a.s.hpas {
		a.listedAt[wkey(a.s.hpas[i].Namespace, "HorizontalPodAutoscaler", a.s.hpas[i].Name)] = true
	}
	for i := range a.s.ings {
		a.listedAt[wkey(a.s.ings[i].Namespace, "Ingress", a.s.ings[i].Name)] = true
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

// add merges one finding into its group (namespace, owner, reason); base
// is the severity before the owner's availability is applied.
func (a *analysis) add(check, base, ns string, o owner, reason, container, detail, pod string, restarts int) *Problem {
	k := wkey(ns, o.kind, o.name) + "/" + reason
	g := a.groups[k]
	if g == nil {
		g = &Problem{Check: check, base: base, Namespace: ns, Kind: o.kind, Name: o.name, Reason: reason, Container: container,
			Detail: safetext.Clean(detail, detailMax), Pod: pod}
		a.groups[k] = g
		ok := wkey(ns, o.kind, o.name)
		a.byOwner[ok] = append(a.byOwner[ok], g)
	} else {
		if g.Container != container {
			g.Container = ""
		}
		if pod != "" && (g.Pod == "" || pod < g.Pod) {
			g.Pod, g.Detail = pod, safetext.Clean(detail, detailMax)
		}
		if api.SeverityRank(base) < api.SeverityRank(g.base) {
			g.base = base
		}
	}
	if pod != "" {
		g.Pods++
	}
	g.Restarts = max(g.Restarts, restarts)
	return g
}

func (a *analysis) broken(ns, kind, name string) bool {
	return len(a.byOwner[wkey(ns, kind, name)]) > 0
}

var imagePullReasons = map[string]bool{"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// checkPods classifies each pod by its most serious container state.
// Succeeded and Failed pods are history (a controller replaced them; a
// failed Job is judged by the Job), terminating pods are going away.
func (a *analysis) checkPods() {
	for i := range a.s.pods {
		p := &a.s.pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		o := a.podOwn[p.Namespace+"/"+p.Name]
		if reason, ctr, detail, restarts := a.classifyPod(p); reason != "" {
			a.add(CheckPodStates, api.SeverityHigh, p.Namespace, o, reason, ctr, detail, p.Name, restarts)
		}
	}
}

// classifyPod: an OOM kill counts when the container is not ready now and
// either waits to restart or was killed within the window (one sweep
// cannot see restarts growing; a container that is ready again has
// recovered). Then crash loops, image and config errors, containers still
// being created StuckAfter after the pod started, unschedulable pods, and
// running pods that are not ready.
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
	started := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		started = p.Status.StartTime.Time
	}
	for _, cs := range statuses {
		w, t, last := cs.State.Waiting, cs.State.Terminated, cs.LastTerminationState.Terminated
		rc := int(cs.RestartCount)
		oomNow := t != nil && t.Reason == "OOMKilled"
		oomLast := last != nil && last.Reason == "OOMKilled" && !cs.Ready &&
			(w != nil || last.FinishedAt.After(a.now.Add(-a.opts.Window)))
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
		case w != nil && (w.Reason == "ContainerCreating" || w.Reason == "PodInitializing") && a.now.Sub(started) > a.opts.StuckAfter:
			consider(hit{3, ReasonStuckCreating, cs.Name, fmt.Sprintf("container %s still %s since %s", cs.Name, w.Reason,
				started.UTC().Format(time.RFC3339)), rc})
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

// rolloutInProgress: a Deployment whose controller is still moving
// replicas to a new ReplicaSet within its progress deadline. Its missing
// replicas are the rollout's surge, not a problem; a stuck rollout turns
// into ProgressDeadlineExceeded.
func rolloutInProgress(conds []appsv1.DeploymentCondition) bool {
	for _, c := range conds {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionTrue &&
			(c.Reason == "ReplicaSetUpdated" || c.Reason == "NewReplicaSetCreated" || c.Reason == "FoundNewReplicaSet") {
			return true
		}
	}
	return false
}

// checkWorkloads reports workloads below their desired available
// replicas, unless a pod problem already explains it (then the replica
// counts join that problem).
func (a *analysis) checkWorkloads() {
	check := func(ns, kind, name string, desired, ready, available int32, conds []appsv1.DeploymentCondition) {
		if desired == 0 || available >= desired || a.broken(ns, kind, name) {
			return
		}
		reason := ReasonReplicasUnavailable
		detail := fmt.Sprintf("available %d/%d, ready %d", available, desired, ready)
		for _, c := range conds {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				reason = ReasonProgressDeadline
			}
			bad := (c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue) ||
				(c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse)
			if bad && c.Message != "" {
				detail += "; " + string(c.Type) + ": " + c.Message
			}
		}
		if reason != ReasonProgressDeadline && available > 0 && rolloutInProgress(conds) {
			return
		}
		a.add(CheckWorkloadReplicas, api.SeverityMedium, ns, owner{kind, name}, reason, "", detail, "", 0)
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

func jobFinished(j *batchv1.Job) (failed bool, at time.Time, c *batchv1.JobCondition) {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed:
			return true, c.LastTransitionTime.Time, c
		case batchv1.JobComplete:
			return false, c.LastTransitionTime.Time, c
		}
	}
	return false, time.Time{}, nil
}

// checkJobs: a CronJob whose newest finished run failed (a later success
// means it recovered), and a Job of its own that failed within
// bareJobWindow.
func (a *analysis) checkJobs() {
	type run struct {
		j      *batchv1.Job
		failed bool
		at     time.Time
		c      *batchv1.JobCondition
	}
	runs := map[owner]map[string][]run{} // owner -> ns -> finished runs
	for i := range a.s.jobs {
		j := &a.s.jobs[i]
		failed, at, c := jobFinished(j)
		if c == nil {
			continue
		}
		o := a.jobOwn[j.Namespace+"/"+j.Name]
		if runs[o] == nil {
			runs[o] = map[string][]run{}
		}
		runs[o][j.Namespace] = append(runs[o][j.Namespace], run{j, failed, at, c})
	}
	for o, byNS := range runs {
		for ns, rs := range byNS {
			sort.Slice(rs, func(i, k int) bool {
				if !rs[i].at.Equal(rs[k].at) {
					return rs[i].at.After(rs[k].at)
				}
				return rs[i].j.Name > rs[k].j.Name
			})
			last := rs[0]
			if !last.failed || (o.kind == "Job" && a.now.Sub(last.at) > bareJobWindow) {
				continue
			}
			nFailed := 0
			for _, r := range rs {
				if r.failed {
					nFailed++
				}
			}
			detail := fmt.Sprintf("job %s failed at %s (%s): %s", last.j.Name, last.at.UTC().Format(time.RFC3339),
				nonEmpty(last.c.Reason, "unknown"), last.c.Message)
			if len(rs) > 1 {
				detail += fmt.Sprintf("; %d of the last %d runs failed", nFailed, len(rs))
			}
			g := a.add(CheckFailedJobs, api.SeverityMedium, ns, o, ReasonJobFailed, "", detail, "", 0)
			if last.at.After(g.LastSeen) {
				g.LastSeen = last.at
			}
		}
	}
}

func (a *analysis) checkNodes() {
	for i := range a.s.nodes {
		n := &a.s.nodes[i]
		if ok, msg := nodeReady(n); !ok {
			a.add(CheckNodeConditions, api.SeverityCritical, "", owner{"Node", n.Name}, ReasonNodeNotReady, "", "node not ready: "+msg, "", 0)
		}
		for _, pc := range pressureConditions {
			if cond := nodeCondition(n, pc); cond != nil && cond.Status == corev1.ConditionTrue {
				a.add(CheckNodeConditions, api.SeverityHigh, "", owner{"Node", n.Name}, string(pc), "", string(pc)+": "+nonEmpty(cond.Message, cond.Reason), "", 0)
			}
		}
	}
}

// result assigns severity and remediability, attaches evidence and sorts.
func (a *analysis) result() []Problem {
	out := make([]Problem, 0, len(a.groups))
	for _, g := range a.groups {
		k := wkey(g.Namespace, g.Kind, g.Name)
		av := a.avail[k]
		if a.exists[k] {
			g.Replicas = fmt.Sprintf("%d/%d", av[0], av[1])
		}
		switch g.Reason {
		case ReasonOOMKilled, ReasonCrashLoopBackOff, ReasonProbeFailure:
			g.Remediable = a.exists[k] && !a.fleet[k] && workloadKinds[g.Kind]
		}
		g.Severity = severityOf(g, a.exists[k], av[0], av[1])
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
