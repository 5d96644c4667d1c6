package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// OOMKill reads, right now, whether container of the workload (a
// Deployment, StatefulSet or DaemonSet) was OOM-killed: the newest kill
// among its pods' container statuses (the last termination, or the
// current state, with reason OOMKilled), with that pod's own memory limit
// for the container. It is the precondition a memory bump reads right
// before its PR (pkg/gitops); nil and a sentence saying what the cluster
// shows when no pod records such a kill.
func (c *Client) OOMKill(ctx context.Context, namespace, kind, name, container string) (*api.OOMKill, string, error) {
	if err := c.avail(); err != nil {
		return nil, "", err
	}
	ref, err := parseRef(kind, namespace, name, rolloutKinds)
	if err != nil {
		return nil, "", err
	}
	obj, err := c.getObject(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	pods, err := c.workloadPods(ctx, obj)
	if err != nil {
		return nil, "", err
	}
	var best *api.OOMKill
	for i := range pods {
		if k := podOOMKill(&pods[i], container); k != nil && (best == nil || k.At.After(best.At)) {
			best = k
		}
	}
	if best == nil {
		return nil, fmt.Sprintf("none of the %d pods of %s records an OOM kill of container %s", len(pods), ref, container), nil
	}
	return best, "", nil
}

// podOOMKill is the OOM kill pod records for container (its current state
// first, else its last termination), with the pod's memory limit for it.
func podOOMKill(p *corev1.Pod, container string) *api.OOMKill {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name != container {
			continue
		}
		for _, term := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if term == nil || !strings.EqualFold(term.Reason, ReasonOOMKilled) {
				continue
			}
			var at time.Time
			if !term.FinishedAt.IsZero() {
				at = term.FinishedAt.Time
			}
			return &api.OOMKill{Pod: p.Name, Container: container, Limit: memoryLimit(&p.Spec, container), At: at}
		}
	}
	return nil
}

// memoryLimit is container's resources.limits.memory in spec ("" when it
// has none).
func memoryLimit(spec *corev1.PodSpec, container string) string {
	for _, ct := range spec.Containers {
		if ct.Name != container {
			continue
		}
		if q, ok := ct.Resources.Limits[corev1.ResourceMemory]; ok {
			return q.String()
		}
	}
	return ""
}
