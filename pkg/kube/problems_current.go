package kube

// The current-state checks of cluster_problems: pods by their containers,
// workloads by availability and conditions, Jobs and CronJobs by their last
// runs, nodes by their conditions now (docs/MANUAL.md, "cluster_problems").
import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// checkPod classifies a live pod by its most serious container state
// (Succeeded and Failed pods are history: a controller replaced them, a
// failed Job is judged by the Job; terminating pods are going away).
func (a *analysis) checkPod(p *corev1.Pod, o owner) {
	if reason, ctr, detail, restarts := a.classifyPod(p); reason != "" {
		g := a.add(CheckPodStates, api.SeverityHigh, p.Namespace, o, reason, ctr, detail, p.Name, restarts)
		if reason == ReasonCrashLoopBackOff {
			g.notePod(p)
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
	for _, ws := range [][]workload{a.s.deps, a.s.sts, a.s.dss} {
		for _, w := range ws {
			if !w.paused {
				check(w.ns, w.kind, w.name, w.desired, w.ready, w.avail, w.conds)
			}
		}
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
