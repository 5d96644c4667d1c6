package kube

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Health is a workload as the follow-up check after an action sees it
// (docs/MANUAL.md, "The action envelope": verify, then escalate).
type Health struct {
	// Gone: the workload does not exist (any more).
	Gone bool
	// RolledOut: the controller saw the latest spec and every replica runs it.
	RolledOut bool
	// Available: the workload serves with every desired replica available.
	Available bool
	// Replicas, Ready: desired and available replicas.
	Replicas, Ready int32
	// MemoryLimit is the container's memory limit in the live spec ("" =
	// none, or no container named).
	MemoryLimit string
	// OOMKills lists the container's OOM kills that ended after the time
	// asked about, newest first: "pod P container C OOMKilled at T".
	OOMKills []string
	// LastOOM is the newest OOM kill's end (zero when none after the time).
	LastOOM time.Time
}

// WorkloadHealth reads a Deployment, StatefulSet or DaemonSet and its pods:
// rolled out, available, the live memory limit of container, and the OOM
// kills of container (every container when "") that ended after since (to
// the second, as the kubelet reports them).
func (c *Client) WorkloadHealth(ctx context.Context, namespace, kind, name, container string, since time.Time) (Health, error) {
	if err := c.avail(); err != nil {
		return Health{}, err
	}
	k, err := parseKind(kind, []string{KindDeployments, KindStatefulSets, KindDaemonSets})
	if err != nil {
		return Health{}, err
	}
	var h Health
	var sel *metav1.LabelSelector
	var spec corev1.PodSpec
	switch k {
	case KindDeployments:
		d, err := c.cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return Health{Gone: true}, nil
		} else if err != nil {
			return Health{}, c.apiErr(err, "get deployment "+namespace+"/"+name)
		}
		sel, spec = d.Spec.Selector, d.Spec.Template.Spec
		h.Replicas, h.Ready = replicas(d.Spec.Replicas), d.Status.AvailableReplicas
		h.RolledOut = d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == h.Replicas &&
			d.Status.Replicas == h.Replicas
		h.Available = deploymentAvailable(d) && h.Ready >= h.Replicas
	case KindStatefulSets:
		s, err := c.cs.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return Health{Gone: true}, nil
		} else if err != nil {
			return Health{}, c.apiErr(err, "get statefulset "+namespace+"/"+name)
		}
		sel, spec = s.Spec.Selector, s.Spec.Template.Spec
		h.Replicas, h.Ready = replicas(s.Spec.Replicas), s.Status.AvailableReplicas
		h.RolledOut = s.Status.ObservedGeneration >= s.Generation && s.Status.UpdatedReplicas == h.Replicas &&
			(s.Status.UpdateRevision == "" || s.Status.CurrentRevision == s.Status.UpdateRevision)
		h.Available = h.Ready >= h.Replicas
	default:
		ds, err := c.cs.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return Health{Gone: true}, nil
		} else if err != nil {
			return Health{}, c.apiErr(err, "get daemonset "+namespace+"/"+name)
		}
		sel, spec = ds.Spec.Selector, ds.Spec.Template.Spec
		h.Replicas, h.Ready = ds.Status.DesiredNumberScheduled, ds.Status.NumberAvailable
		h.RolledOut = ds.Status.ObservedGeneration >= ds.Generation && ds.Status.UpdatedNumberScheduled == h.Replicas
		h.Available = h.Ready >= h.Replicas
	}
	for _, ctr := range spec.Containers {
		if ctr.Name == container {
			if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
				h.MemoryLimit = q.String()
			}
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return Health{}, fmt.Errorf("%s %s/%s: its selector: %w", kindNames[k], namespace, name, err)
	}
	pods, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return Health{}, c.apiErr(err, "list pods of "+namespace+"/"+name)
	}
	// The kubelet reports a termination to the second: a kill in the
	// second since falls in counts.
	since = since.Truncate(time.Second)
	type kill struct {
		at   time.Time
		line string
	}
	var kills []kill
	for _, p := range pods.Items {
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if container != "" && cs.Name != container {
				continue
			}
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && t.Reason == "OOMKilled" && !t.FinishedAt.Time.Before(since) {
					kills = append(kills, kill{t.FinishedAt.Time, fmt.Sprintf("pod %s container %s OOMKilled at %s (restarts %d)",
						p.Name, cs.Name, t.FinishedAt.UTC().Format(time.RFC3339), cs.RestartCount)})
				}
			}
		}
	}
	sort.Slice(kills, func(i, j int) bool { return kills[i].at.After(kills[j].at) })
	for _, k := range kills {
		h.OOMKills = append(h.OOMKills, k.line)
	}
	if len(kills) > 0 {
		h.LastOOM = kills[0].at
	}
	return h, nil
}

// LimitIs reports whether the live memory limit equals want as a quantity
// (384Mi and 402653184 are the same limit).
func (h Health) LimitIs(want string) bool {
	if h.MemoryLimit == "" || want == "" {
		return false
	}
	a, err1 := resource.ParseQuantity(h.MemoryLimit)
	b, err2 := resource.ParseQuantity(want)
	return err1 == nil && err2 == nil && a.Cmp(b) == 0
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
