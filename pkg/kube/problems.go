package kube

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/labels"

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
	// ConfigChange (crash loops of a workload): a ConfigMap its pods
	// reference was written after the newest of them started — the
	// evidence a rollout restart needs (configchange.go). ConfigNote says
	// in one line what was checked ("" when nothing is referenced).
	ConfigChange *api.ConfigChange
	ConfigNote   string

	base        string // severity before the workload's availability is applied
	evidence    *corev1.Event
	podsStarted time.Time       // crash loops: the newest affected pod's start
	podSpec     *corev1.PodSpec // crash loops: the first affected pod's spec
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
	requests int // List requests the sweep made (the benchmark's figure)
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

// Complete reports a sweep that covered its whole scope: every List
// answered (none forbidden, failed or timed out) and the namespace exists.
// Only such a sweep may say a problem it no longer sees has gone.
func (r *ProblemReport) Complete() bool {
	return r.Coverage.Missing == "" && len(r.Coverage.ChecksRun) > 0 && len(r.Coverage.Partial) == 0
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
	if opts.Focus != nil {
		f := *opts.Focus
		f.Kind = apiKind(f.Kind)
		opts.Focus = &f
	}
	a := newAnalysis(newSnapshot(), opts, c.now())
	c.sweep(ctx, a, opts.ListTimeout)
	s := a.s
	if len(s.listed) == 0 { // nothing answered: say the cluster is down rather than "healthy"
		for _, name := range []string{listPods, listEvents, listDeployments} {
			if err := s.errs[name]; errors.Is(err, ErrClusterUnavailable) {
				return nil, err
			}
		}
	}
	missing := c.missingNamespaces(ctx, s, opts)
	rep := &ProblemReport{Problems: a.result(), Coverage: a.coverage(), Churn: a.churn, maxChars: opts.MaxChars, requests: s.pages}
	c.attachConfigEvidence(ctx, rep.Problems, opts.ListTimeout)
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
	rsOwner  map[uint64]owner // keyHash(ns, ReplicaSet, name) -> its controller
	jobOwn   map[string]owner // ns/job -> its controller
	podOwn   map[uint64]owner // keyHash(ns, Pod, name) -> top owner
	exists   map[uint64]bool  // hashKey(ns/Kind/name) of listed workloads
	fleet    map[uint64]bool  // hashKey(ns/Kind/name) of kubecrew's own workloads
	avail    map[uint64][2]int32
	groups   map[string]*Problem
	byOwner  map[string][]*Problem // ns/Kind/name -> its problems
	listedAt keySet                // every listed object (events about others are about gone objects)
	outside  int
	churn    Churn
	focusEv  []*corev1.Event
	focusKey string
	// filled by the pods as they are listed (sweep.go)
	svcPods       map[string]*svcPods   // ns/name of a Service with a selector
	svcByNS       map[string][]*svcPods // the same by namespace
	pendingClaims map[string]bool       // ns/claim of claims Pending
	usedBy        map[string]string     // ns/claim -> first pod by name that uses it
	focusPods     []focusPod            // pods in the focus's namespace
}

func newAnalysis(s *snapshot, opts ProblemOptions, now time.Time) *analysis {
	return &analysis{s: s, opts: opts, now: now,
		rsOwner: s.rsOwner, jobOwn: map[string]owner{}, podOwn: map[uint64]owner{},
		exists: map[uint64]bool{}, fleet: map[uint64]bool{}, avail: map[uint64][2]int32{}, groups: map[string]*Problem{},
		byOwner: map[string][]*Problem{}, listedAt: keySet{},
		svcPods: map[string]*svcPods{}, svcByNS: map[string][]*svcPods{}, pendingClaims: map[string]bool{}, usedBy: map[string]string{},
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

// checkRest runs, once the pods are in, the checks that need them or
// the problems they found; the events come after (sweep.go).
func (a *analysis) checkRest() {
	if a.opts.Focus != nil {
		a.focusKey = a.focusOwner(*a.opts.Focus)
	}
	a.checkWorkloads()
	a.checkJobs()
	a.checkNodes()
	a.checkPVCs()
	a.checkServices()
	a.checkIngresses()
	a.checkWebhooks()
	a.checkHPAs()
	a.checkPDBs()
}

// indexWorkloads indexes what the first phase listed, before the pods.
func (a *analysis) indexWorkloads() {
	byNS := map[string][]*workload{} // for the Services' selectors, below
	for _, ws := range [][]workload{a.s.deps, a.s.sts, a.s.dss} {
		for i := range ws {
			w := &ws[i]
			byNS[w.ns] = append(byNS[w.ns], w)
			k := wkey(w.ns, w.kind, w.name)
			a.exists[hashKey(k)] = true
			a.avail[hashKey(k)] = [2]int32{w.avail, w.desired}
			if w.fleet {
				a.fleet[hashKey(k)] = true
			}
			a.listedAt.add(w.ns, w.kind, w.name)
		}
	}
	for k := range a.rsOwner { // the same hash as listedAt's
		a.listedAt[k] = struct{}{}
	}
	for i := range a.s.jobs {
		j := &a.s.jobs[i]
		a.listedAt.add(j.Namespace, "Job", j.Name)
		a.jobOwn[j.Namespace+"/"+j.Name] = ownerOf(j.OwnerReferences, "Job", j.Name)
	}
	for i := range a.s.nodes {
		a.listedAt.add("", "Node", a.s.nodes[i].Name)
	}
	for _, cj := range a.s.cronJobs {
		a.listedAt.add(cj[0], "CronJob", cj[1])
	}
	for i := range a.s.services {
		svc := &a.s.services[i]
		a.listedAt.add(svc.ns, "Service", svc.name)
		if len(svc.sel) > 0 {
			sp := &svcPods{sel: labels.SelectorFromSet(svc.sel), owners: map[owner]bool{}}
			for _, w := range byNS[svc.ns] {
				if sp.sel.Matches(labels.Set(w.tmpl)) {
					sp.tmpl = append(sp.tmpl, tmplOwner{owner{w.kind, w.name}, w.desired})
				}
			}
			a.svcPods[svc.ns+"/"+svc.name] = sp
			a.svcByNS[svc.ns] = append(a.svcByNS[svc.ns], sp)
		}
	}
	for i := range a.s.pvcs {
		c := &a.s.pvcs[i]
		a.listedAt.add(c.Namespace, "PersistentVolumeClaim", c.Name)
		if c.Status.Phase == corev1.ClaimPending {
			a.pendingClaims[c.Namespace+"/"+c.Name] = true
		}
	}
	for i := range a.s.hpas {
		a.listedAt.add(a.s.hpas[i].Namespace, "HorizontalPodAutoscaler", a.s.hpas[i].Name)
	}
	for i := range a.s.ings {
		a.listedAt.add(a.s.ings[i].Namespace, "Ingress", a.s.ings[i].Name)
	}
	a.s.deps, a.s.sts, a.s.dss = short(a.s.deps), short(a.s.sts), short(a.s.dss)
}

// short keeps, of the listed workloads indexed above, only those
// checkWorkloads may report (short of replicas, not paused), without
// their templates: what a sweep keeps of its healthy workloads is their
// hashed index entries, not their names and labels.
func short(ws []workload) []workload {
	var out []workload
	for _, w := range ws {
		if !w.paused && w.desired != 0 && w.avail < w.desired {
			w.tmpl = nil
			out = append(out, w)
		}
	}
	return out
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
		if o, ok := a.rsOwner[keyHash(p.Namespace, "ReplicaSet", ref.Name)]; ok {
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
