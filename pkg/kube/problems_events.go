package kube

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// listOf names the list that would hold an object of kind (events about
// kinds the sweep does not list cannot be called gone).
var listOf = map[string]string{"Pod": listPods, "ReplicaSet": listReplicaSets, "Deployment": listDeployments,
	"StatefulSet": listStatefulSets, "DaemonSet": listDaemonSets, "Job": listJobs, "CronJob": listCronJobs, "Node": listNodes,
	"Service": listServices, "PersistentVolumeClaim": listPVCs, "Ingress": listIngresses, "HorizontalPodAutoscaler": listHPAs}

// eventOwner resolves an event's object to the owner problems are keyed
// by, and whether that object is gone (its list answered without it).
func (a *analysis) eventOwner(e *corev1.Event) (ns string, o owner, gone bool) {
	io := e.InvolvedObject
	ns = nonEmpty(io.Namespace, e.Namespace)
	if io.Kind == "Node" {
		ns = ""
	}
	o = owner{io.Kind, io.Name}
	switch io.Kind {
	case "Pod":
		if po, ok := a.podOwn[keyHash(ns, "Pod", io.Name)]; ok {
			return ns, po, false
		}
	case "ReplicaSet":
		if ro, ok := a.rsOwner[keyHash(ns, "ReplicaSet", io.Name)]; ok {
			return ns, ro, false
		}
	case "Job":
		if jo, ok := a.jobOwn[ns+"/"+io.Name]; ok {
			return ns, jo, false
		}
	}
	if l, ok := listOf[io.Kind]; ok && a.s.listed[l] && !a.listedAt.has(ns, io.Kind, io.Name) {
		gone = true
	}
	return ns, o, gone
}

// explains: events whose message says why a state-only problem is broken
// (a pod problem's own waiting message already says it; BackOff says
// nothing more).
func explains(p *Problem, e *corev1.Event) bool {
	if e.Reason == "BackOff" {
		return false
	}
	if p.Check == CheckNodeConditions {
		return nodeEvidence[p.Reason][e.Reason]
	}
	if p.Check == CheckPodStates {
		return p.Reason == ReasonProbeFailure && e.Reason == "Unhealthy" ||
			p.Reason == ReasonStuckCreating && (e.Reason == "FailedMount" || e.Reason == "FailedAttachVolume" || e.Reason == "FailedCreatePodSandBox")
	}
	return true
}

// nodeEvidence: the kubelet and node-controller events that explain a
// node condition (a NodeNotReady event about a node Ready now explains
// nothing).
var nodeEvidence = map[string]map[string]bool{
	ReasonNodeNotReady:                    {"NodeNotReady": true, "NodeStatusUnknown": true, "Rebooted": true},
	string(corev1.NodeMemoryPressure):     {"EvictionThresholdMet": true, "NodeHasInsufficientMemory": true, "SystemOOM": true},
	string(corev1.NodeDiskPressure):       {"EvictionThresholdMet": true, "NodeHasDiskPressure": true, "FreeDiskSpaceFailed": true, "ImageGCFailed": true},
	string(corev1.NodePIDPressure):        {"EvictionThresholdMet": true, "NodeHasInsufficientPID": true},
	string(corev1.NodeNetworkUnavailable): {"NetworkNotReady": true},
}

// event attaches one Warning event within the window to the current
// problem of its object's owner (count, last seen, the newest explaining
// message) or counts it as churn: Warning events about objects healthy now
// or gone are never problems. What it keeps of an event is a copy, so a
// listed page is not held.
func (a *analysis) event(e *corev1.Event) {
	last := eventLastSeen(e)
	if last.Before(a.now.Add(-a.opts.Window)) {
		a.outside++
		return
	}
	ns, o, gone := a.eventOwner(e)
	if a.focusKey != "" && (wkey(ns, o.kind, o.name) == a.focusKey ||
		wkey(ns, e.InvolvedObject.Kind, e.InvolvedObject.Name) == a.focusKey) {
		a.focusEv = append(a.focusEv, keptEvent(e))
	}
	if g := a.primary(ns, o); g != nil {
		g.Events += eventCount(e)
		if last.After(g.LastSeen) {
			g.LastSeen = last
		}
		if explains(g, e) && (g.evidence == nil || newer(e, g.evidence)) {
			g.evidence = keptEvent(e)
		}
		return
	}
	a.churn.Events++
	a.churn.Occurrences += eventCount(e)
	a.churn.ByReason[nonEmpty(e.Reason, "Warning")]++
	a.churn.ByNamespace[ns]++
	if gone {
		a.churn.OnGone++
	}
}

// keptEvent copies what evidence reads of an event.
func keptEvent(e *corev1.Event) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, CreationTimestamp: e.CreationTimestamp}, Reason: e.Reason, Message: e.Message,
		Count: e.Count, Series: e.Series, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime, FirstTimestamp: e.FirstTimestamp,
		InvolvedObject: e.InvolvedObject, Type: e.Type}
}

// newer orders events by last seen, then name, so the choice is stable.
func newer(e, than *corev1.Event) bool {
	te, tt := eventLastSeen(e), eventLastSeen(than)
	if !te.Equal(tt) {
		return te.After(tt)
	}
	return e.Namespace+"/"+e.Name < than.Namespace+"/"+than.Name
}

// focusOwner resolves an alert's object to the owner problems are keyed by.
func (a *analysis) focusOwner(ref ObjectRef) string {
	ns := ref.Namespace
	if ref.Kind == "Node" {
		ns = ""
	}
	if ref.Kind == "Pod" {
		if o, ok := a.podOwn[keyHash(ns, "Pod", ref.Name)]; ok {
			return wkey(ns, o.kind, o.name)
		}
	}
	return wkey(ns, ref.Kind, ref.Name)
}

// focus says how the alert's object is now: broken (its problems are in
// the report), recovered (with the evidence of what happened: restarts,
// last terminations, recent Warning events), missing, or unchecked.
func (a *analysis) focus(ref ObjectRef, nsMissing bool, problems []Problem) *FocusStatus {
	fs := &FocusStatus{Ref: ref}
	key := a.focusOwner(ref)
	if parts := strings.SplitN(key, "/", 3); len(parts) == 3 {
		fs.Owner = ObjectRef{Namespace: parts[0], Kind: parts[1], Name: parts[2]}
	}
	var reasons []string
	for _, p := range problems {
		if wkey(p.Namespace, p.Kind, p.Name) == key {
			reasons = append(reasons, p.Severity+" "+p.Reason)
		}
	}
	ownerPath := strings.TrimPrefix(key, "/")
	fs.Exists = a.listedAt.has(ref.Namespace, ref.Kind, ref.Name) || a.listedAt.has(fs.Owner.Namespace, fs.Owner.Kind, fs.Owner.Name)
	list, listable := listOf[ref.Kind]
	switch {
	case nsMissing:
		fs.State, fs.Summary = "missing", "namespace "+ref.Namespace+" does not exist: nothing there could be checked"
	case len(reasons) > 0:
		fs.State, fs.Summary = "broken", "broken now ("+ownerPath+"): "+strings.Join(reasons, ", ")+"; see the problems below"
	case listable && a.s.errs[list] != nil:
		fs.State, fs.Summary = "unchecked", "could not be checked: list "+list+" failed: "+safetext.Clean(a.s.errs[list].Error(), 160)
	case !listable:
		fs.State, fs.Summary = "unchecked", "kind "+ref.Kind+" is not read by the sweep"
	case !fs.Exists:
		fs.State, fs.Summary = "missing", "no "+ref.Kind+" "+ref.Name+" exists now (deleted or renamed since the alert fired?)"
	default:
		fs.State, fs.Summary = "recovered", "looks recovered now: no current problem"
		if av, ok := a.avail[hashKey(key)]; ok && a.exists[hashKey(key)] {
			fs.Summary += fmt.Sprintf(", %d/%d available", av[0], av[1])
		}
	}
	fs.Evidence = append(fs.Evidence, a.podEvidence(key)...)
	fs.Evidence = append(fs.Evidence, a.eventEvidence()...)
	if len(fs.Evidence) == 0 && fs.State == "recovered" {
		fs.Evidence = append(fs.Evidence, fmt.Sprintf("no restarts, terminations or Warning events within %s", window(a.opts.Window)))
	}
	return fs
}

// podEvidence: restarts and the newest last termination of the owner's
// pods.
func (a *analysis) podEvidence(key string) []string {
	restarts, pods := 0, 0
	var lastT *corev1.ContainerStateTerminated
	lastCtr, lastPod := "", ""
	for _, p := range a.focusPods {
		o := a.podOwn[keyHash(p.ns, "Pod", p.name)]
		if wkey(p.ns, o.kind, o.name) != key && wkey(p.ns, "Pod", p.name) != key {
			continue
		}
		pods++
		for _, cs := range p.statuses {
			restarts += int(cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil && (lastT == nil || t.FinishedAt.After(lastT.FinishedAt.Time) ||
				(t.FinishedAt.Equal(&lastT.FinishedAt) && p.name < lastPod)) {
				lastT, lastCtr, lastPod = t, cs.Name, p.name
			}
		}
	}
	if pods == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("%d pod(s), %d container restart(s) in total", pods, restarts)}
	if lastT != nil {
		out = append(out, fmt.Sprintf("last termination: pod %s container %s %s (exit %d) at %s", lastPod, lastCtr,
			nonEmpty(lastT.Reason, "Error"), lastT.ExitCode, lastT.FinishedAt.UTC().Format(time.RFC3339)))
	}
	return out
}

// eventEvidence groups the focus object's Warning events by reason.
func (a *analysis) eventEvidence() []string {
	type agg struct {
		n    int
		last *corev1.Event
	}
	by := map[string]*agg{}
	for _, e := range a.focusEv {
		g := by[e.Reason]
		if g == nil {
			g = &agg{}
			by[e.Reason] = g
		}
		g.n += eventCount(e)
		if g.last == nil || newer(e, g.last) {
			g.last = e
		}
	}
	keys := sortedKeys(by)
	sort.SliceStable(keys, func(i, j int) bool { return newer(by[keys[i]].last, by[keys[j]].last) })
	var out []string
	for i, k := range keys {
		if i == 4 {
			out = append(out, fmt.Sprintf("and %d other Warning reason(s)", len(keys)-4))
			break
		}
		g := by[k]
		out = append(out, safetext.Clean(fmt.Sprintf("Warning %s x%d, last %s: %s", k, g.n,
			eventLastSeen(g.last).UTC().Format(time.RFC3339), g.last.Message), detailMax))
	}
	return out
}
