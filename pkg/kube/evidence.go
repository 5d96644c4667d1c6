package kube

import (
	"context"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// FindingEvidence reads from the cluster, now, the typed evidence a
// finding about a workload carries to the agent that acts on it (a
// delegation): for a crash loop, the ConfigMap written after the pods
// started (configEvidence's rule; nil when none); for an OOM kill, which
// container of which pod was killed at which limit. What the finding's
// words say is not read. A read that fails is no evidence. The write
// primitives read again right before they act (restartEvidence,
// OOMKill), so this evidence informs a plan and never authorises a write.
func (c *Client) FindingEvidence(ctx context.Context, f api.Finding) (*api.ConfigChange, *api.OOMKill) {
	if c.avail() != nil || !workloadKinds[f.Kind] {
		return nil, nil
	}
	switch strings.ToLower(strings.TrimSpace(f.Reason)) {
	case strings.ToLower(ReasonCrashLoopBackOff):
		ref, err := parseRef(f.Kind, f.Namespace, f.Name, rolloutKinds)
		if err != nil {
			return nil, nil
		}
		obj, err := c.getObject(ctx, ref)
		if err != nil {
			return nil, nil
		}
		pods, err := c.workloadPods(ctx, obj)
		if err != nil || len(pods) == 0 {
			return nil, nil
		}
		if ev, _ := c.podsConfigEvidence(ctx, ref.namespace, pods); ev.After() {
			return ev, nil
		}
	case strings.ToLower(ReasonOOMKilled):
		if f.Container == "" {
			return nil, nil
		}
		if k, _, err := c.OOMKill(ctx, f.Namespace, f.Kind, f.Name, f.Container); err == nil && k != nil {
			return nil, k
		}
	}
	return nil, nil
}
