package kube

// The preconditions of the write primitives: right before a rollout
// restart (the restartedAt patch or the evictions) the primitive itself
// reads what the cluster shows and refuses, naming it, when the action is
// not justified there. A finding, an alert, an annotation, an event, a log
// line or a model's words never count: only what is read here does
// (docs/MANUAL.md, "The action envelope"; docs/ARCHITECTURE.md, "The request
// walk", 5).

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ErrPrecondition is wrapped when a write primitive refuses because the
// cluster, read right before the write, does not show what the action
// needs, or the object changed between that read and the write.
var ErrPrecondition = errors.New("refused: the cluster does not show what this action needs")

// preconditionReadTimeout bounds each read of a precondition check.
const preconditionReadTimeout = 10 * time.Second

// restartEvidence is what a rollout restart of obj needs the cluster to
// show in an autonomous run: its pods (the workload's, not being deleted)
// predate a write to a ConfigMap they reference (envFrom, env, volumes,
// projected volumes), by pkg/kube's own rule (configEvidence: the newest
// pod's start against each ConfigMap's last data write). Secrets are
// never read: a Secret reference is named as not checked and never counts.
// A person's interactive run is their own decision: nil, nil there.
func (c *Client) restartEvidence(ctx context.Context, ref objectRef, obj runtime.Object) (*api.ConfigChange, error) {
	if tools.ModeFrom(ctx) == tools.ModeInteractive {
		return nil, nil
	}
	pods, err := c.workloadPods(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("%w: a rollout restart of %s needs its pods read first: %w", ErrPrecondition, ref, err)
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%w: a rollout restart of %s needs pods that predate a configuration write, and it has no running pods", ErrPrecondition, ref)
	}
	ev, note := c.podsConfigEvidence(ctx, ref.namespace, pods)
	if !ev.After() {
		if note == "" {
			note = "its pods reference no ConfigMap"
		}
		return nil, fmt.Errorf("%w: a rollout restart of %s needs its pods to predate a write to a ConfigMap they reference; "+
			"the cluster shows: %s. A restart would only repeat the crash; nothing was changed", ErrPrecondition, ref, note)
	}
	return ev, nil
}

// podsConfigEvidence reads the ConfigMaps pods reference (metadata only)
// and applies configEvidence to the newest pod's start.
func (c *Client) podsConfigEvidence(ctx context.Context, ns string, pods []corev1.Pod) (*api.ConfigChange, string) {
	var started time.Time
	cm, sec := map[string]bool{}, map[string]bool{}
	for i := range pods {
		if s := podStart(&pods[i]); s.After(started) {
			started = s
		}
		cms, secs := configRefs(&pods[i].Spec)
		for _, n := range cms {
			cm[n] = true
		}
		for _, n := range secs {
			sec[n] = true
		}
	}
	got := map[string]configObject{}
	for n := range cm {
		got[n] = c.configMeta(ctx, ns, n, preconditionReadTimeout)
	}
	return configEvidence(started, sortedKeys(cm), sortedKeys(sec), got)
}

// evidenceLine is the answer's line naming what justified a restart.
func evidenceLine(ev *api.ConfigChange) string {
	if ev == nil {
		return ""
	}
	return fmt.Sprintf("Evidence, read from the cluster right before the write: %s %s written %s, after the pods started %s.\n",
		ev.Kind, ev.Name, stamp(ev.ChangedAt), stamp(ev.PodsStartedAt))
}

// checkEvictable is an eviction's own precondition, read right before it:
// the pod is still the one listed (same UID) and, in an autonomous run,
// it started before the configuration write that justified the restart (a
// pod started since already runs on it). It returns the resourceVersion
// the eviction is made conditional on, or gone when the pod no longer
// exists (it counts as evicted).
func (c *Client) checkEvictable(ctx context.Context, p corev1.Pod, ev *api.ConfigChange) (rv string, gone bool, err error) {
	cur, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", true, nil
	case err != nil:
		return "", false, c.apiErr(err, "get pod "+p.Namespace+"/"+p.Name)
	case cur.UID != p.UID || cur.DeletionTimestamp != nil:
		return "", true, nil
	}
	if ev != nil && !podStart(cur).Before(ev.ChangedAt) {
		return "", false, fmt.Errorf("%w: pod %s started %s, not before %s %s was written %s, so it already runs on that configuration; it was not evicted",
			ErrPrecondition, cur.Name, stamp(podStart(cur)), ev.Kind, ev.Name, stamp(ev.ChangedAt))
	}
	return cur.ResourceVersion, false, nil
}

// hookBeforeWrite runs the test hook between a primitive's check and its
// write (tests change the object there to prove the write is refused).
func (c *Client) hookBeforeWrite(ctx context.Context) {
	if c.beforeWrite != nil {
		c.beforeWrite(ctx)
	}
}
