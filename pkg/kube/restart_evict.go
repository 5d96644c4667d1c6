package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Pacing of an eviction restart (WithEvictionPacing).
const (
	DefaultEvictPoll    = time.Second
	DefaultEvictTimeout = 2 * time.Minute
)

// ErrRestartIncomplete is wrapped when an eviction restart stopped before
// every pod was replaced: a PodDisruptionBudget kept refusing (429) for
// the whole budget, or a replacement did not become Ready in time.
var ErrRestartIncomplete = errors.New("restart incomplete")

// WithEvictionPacing sets how often an eviction restart looks again and how
// long one pod's eviction, or its replacement's readiness, may take.
func WithEvictionPacing(poll, timeout time.Duration) Option {
	return func(c *Client) {
		if poll > 0 {
			c.evictPoll = poll
		}
		if timeout > 0 {
			c.evictTimeout = timeout
		}
	}
}

// evictRestart restarts a workload by evicting its pods one at a time
// through the Eviction API (policy/v1): the API server refuses (429) an
// eviction a PodDisruptionBudget forbids, and each replacement must be
// Ready before the next pod is evicted. The spec is not touched.
func (c *Client) evictRestart(ctx context.Context, ref objectRef, obj runtime.Object, ev *api.ConfigChange, why string) (string, error) {
	pods, err := c.workloadPods(ctx, obj)
	if err != nil {
		return "", err
	}
	if len(pods) == 0 {
		return "", fmt.Errorf("%s has no running pods to restart by eviction", ref)
	}
	names := podNames(pods)
	gated := tools.Action("k8s.rollout." + RolloutRestart)
	target := tools.Change{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name,
		Change: fmt.Sprintf("evict the %d pods of %s one at a time through the Eviction API (policy/v1, PodDisruptionBudgets respected), each replacement Ready before the next: %s",
			len(pods), ref, strings.Join(names, ", "))}
	if answer, act, err := c.permit(ctx, gated, target); !act || err != nil {
		return answer, err
	}
	orig := map[types.UID]bool{}
	for _, p := range pods {
		orig[p.UID] = true
	}
	var steps []string
	for i, p := range pods {
		t0 := time.Now()
		if err := c.evictOne(ctx, p, ev); err != nil {
			return "", c.incomplete(ctx, gated, target, ref, i, names, steps, err)
		}
		repl, err := c.awaitReplacements(ctx, obj, orig, i+1)
		if err != nil {
			return "", c.incomplete(ctx, gated, target, ref, i+1, names, steps, fmt.Errorf("pod %s was evicted, but %w", p.Name, err))
		}
		steps = append(steps, fmt.Sprintf("  %d. evicted %s; replacement %s Ready after %s", i+1, p.Name, repl, time.Since(t0).Round(100*time.Millisecond)))
	}
	if c.envelope != nil {
		c.envelope.Done(ctx, gated, target)
	}
	c.log.Info("cluster write", zap.String("action", string(gated)), zap.String("object", ref.String()),
		zap.String("how", RestartEvict), zap.Int("pods", len(pods)), zap.String("mode", tools.ModeFrom(ctx).String()))
	return fmt.Sprintf("restarted %s by evicting its %d pods one at a time through the Eviction API (PodDisruptionBudgets respected), each replacement Ready before the next:\n%s\n"+
		"How: evictions (restart mode evict), because %s. Follow it with k8s_rollout action=status.\n%s",
		ref, len(pods), strings.Join(steps, "\n"), why, evidenceLine(ev)), nil
}

// incomplete reports a restart that stopped after done evictions; what was
// done is recorded with the envelope all the same.
func (c *Client) incomplete(ctx context.Context, gated tools.Action, target tools.Change, ref objectRef, done int, names, steps []string, cause error) error {
	if done > 0 && c.envelope != nil {
		c.envelope.Done(ctx, gated, target)
	}
	c.log.Warn("eviction restart incomplete", zap.String("object", ref.String()), zap.Int("evicted", done), zap.Int("pods", len(names)), zap.Error(cause))
	msg := fmt.Sprintf("%s: evicted %d of %d pods", ref, done, len(names))
	if len(steps) > 0 {
		msg += " (" + strings.TrimSpace(strings.Join(steps, "; ")) + ")"
	}
	return fmt.Errorf("%w: %s; %w. The other pods were not restarted and nothing was forced", ErrRestartIncomplete, msg, cause)
}

// evictOne evicts pod once checkEvictable holds, pinned to its UID and to
// the resourceVersion that check read: a pod changed in between is
// answered 409 and refused, never evicted unchecked. A 429 is a
// PodDisruptionBudget (or the API server's load) refusing for now: it is
// checked and asked again every evictPoll until evictTimeout. A pod
// already gone counts as evicted.
func (c *Client) evictOne(ctx context.Context, p corev1.Pod, cc *api.ConfigChange) error {
	uid := p.UID
	start := time.Now()
	for tries := 1; ; tries++ {
		rv, gone, err := c.checkEvictable(ctx, p, cc)
		if gone || err != nil {
			return err
		}
		c.hookBeforeWrite(ctx)
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}}
		err = c.cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return fmt.Errorf("%w: pod %s changed after it was checked (resourceVersion %s); it was not evicted", ErrPrecondition, p.Name, rv)
		case !apierrors.IsTooManyRequests(err):
			return c.apiErr(err, "evict pod "+p.Namespace+"/"+p.Name)
		case time.Since(start) >= c.evictTimeout:
			return fmt.Errorf("a PodDisruptionBudget blocks evicting pod %s: the API server answered 429 %q to %d tries over %s",
				p.Name, statusText(err), tries, c.evictTimeout)
		}
		if perr := c.pause(ctx); perr != nil {
			return fmt.Errorf("evicting pod %s (the PodDisruptionBudget refused %d times: %s): %w", p.Name, tries, statusText(err), perr)
		}
	}
}

func (c *Client) pause(ctx context.Context) error {
	t := time.NewTimer(c.evictPoll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// statusText is an API error's message with its causes (the eviction's
// "The disruption budget web needs 1 healthy pods and has 1 currently").
func statusText(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return err.Error()
	}
	s := st.Status()
	out := s.Message
	if s.Details != nil {
		for _, cause := range s.Details.Causes {
			if cause.Message != "" && !strings.Contains(out, cause.Message) {
				out += " " + cause.Message
			}
		}
	}
	return out
}

// awaitReplacements waits until want pods of the workload that were not
// among the originals are Ready, and returns the newest one's name.
func (c *Client) awaitReplacements(ctx context.Context, obj runtime.Object, orig map[types.UID]bool, want int) (string, error) {
	start := time.Now()
	for {
		pods, err := c.workloadPods(ctx, obj)
		if err != nil {
			return "", err
		}
		var ready []corev1.Pod
		for _, p := range pods {
			if !orig[p.UID] && podIsReady(&p) { // workloadPods leaves out pods being deleted
				ready = append(ready, p)
			}
		}
		if len(ready) >= want {
			return ready[len(ready)-1].Name, nil
		}
		if time.Since(start) >= c.evictTimeout {
			return "", fmt.Errorf("only %d of the %d replacements so far were Ready after %s", len(ready), want, c.evictTimeout)
		}
		if err := c.pause(ctx); err != nil {
			return "", fmt.Errorf("waiting for a Ready replacement: %w", err)
		}
	}
}

// workloadPods lists the pods the workload controls and that are not being
// deleted, oldest first: a Deployment's through its ReplicaSets, a
// StatefulSet's and DaemonSet's directly.
func (c *Client) workloadPods(ctx context.Context, obj runtime.Object) ([]corev1.Pod, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, errors.New("not a workload")
	}
	var sel *metav1.LabelSelector
	owners := map[types.UID]bool{m.GetUID(): true}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sel = o.Spec.Selector
		owners = map[types.UID]bool{}
		revs, err := c.revisions(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", o.Namespace, o.Name, err)
		}
		for _, r := range revs {
			owners[r.rs.UID] = true
		}
	case *appsv1.StatefulSet:
		sel = o.Spec.Selector
	case *appsv1.DaemonSet:
		sel = o.Spec.Selector
	default:
		return nil, fmt.Errorf("%T has no pods to evict", obj)
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("bad selector: %w", err)
	}
	l, err := c.cs.CoreV1().Pods(m.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return nil, c.apiErr(err, "list pods of "+m.GetName())
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && owners[ref.UID] && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
