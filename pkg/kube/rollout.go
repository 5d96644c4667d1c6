package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Rollout actions. Only status, history and restart run autonomously; the
// execution gate (tools.Check) decides, at call time.
const (
	RolloutStatus  = "status"
	RolloutHistory = "history"
	RolloutRestart = "restart"
	RolloutUndo    = "undo"
	RolloutPause   = "pause"
	RolloutResume  = "resume"
)

const (
	// RestartAnnotation is the pod-template annotation kubectl rollout restart sets.
	RestartAnnotation  = "kubectl.kubernetes.io/restartedAt"
	revisionAnnotation = "deployment.kubernetes.io/revision"
	changeCause        = "kubernetes.io/change-cause"
	// FleetLabel/FleetValue mark kubecrew's own workloads: never written to
	// (the detector could restart itself).
	FleetLabel = "app.kubernetes.io/part-of"
	FleetValue = "kubecrew"
)

// ErrFleetWorkload refuses a write to one of kubecrew's own workloads.
var ErrFleetWorkload = errors.New("refused: workload is part of the kubecrew fleet (" + FleetLabel + "=" + FleetValue + "); kubecrew never changes its own workloads")

var rolloutKinds = []string{KindDeployments, KindStatefulSets, KindDaemonSets}

// RolloutArgs are the slots of k8s_rollout.
type RolloutArgs struct {
	Action     string `json:"action" enum:"status,history,restart,undo,pause,resume" description:"status and history read; the others change the workload (autonomous runs: restart only)"`
	Kind       string `json:"kind" enum:"deployments,statefulsets,daemonsets"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	ToRevision int64  `json:"to_revision,omitempty" description:"undo only (default: the previous revision)"`
}

// Rollout runs one rollout action.
func (c *Client) Rollout(ctx context.Context, a RolloutArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	ref, err := parseRef(a.Kind, a.Namespace, a.Name, rolloutKinds)
	if err != nil {
		return "", err
	}
	if a.ToRevision < 0 || (a.ToRevision != 0 && a.Action != RolloutUndo) {
		return "", fmt.Errorf("to_revision is only for undo and must be positive")
	}
	switch a.Action {
	case RolloutStatus:
		return c.rolloutStatus(ctx, ref)
	case RolloutHistory:
		return c.rolloutHistory(ctx, ref)
	case RolloutRestart:
		return c.restart(ctx, ref)
	case RolloutPause, RolloutResume:
		return c.write(ctx, a.Action, ref, func(ctx context.Context, obj runtime.Object) (types.PatchType, []byte, string, error) {
			d, ok := obj.(*appsv1.Deployment)
			if !ok {
				return "", nil, "", fmt.Errorf("%s is only supported for deployments", a.Action)
			}
			want := a.Action == RolloutPause
			if d.Spec.Paused == want {
				return "", nil, "", fmt.Errorf("%s is already %sd", ref, a.Action)
			}
			p, err := json.Marshal(map[string]any{"spec": map[string]any{"paused": want}})
			return types.MergePatchType, p, a.Action + "d", err
		})
	case RolloutUndo:
		return c.write(ctx, RolloutUndo, ref, func(ctx context.Context, obj runtime.Object) (types.PatchType, []byte, string, error) {
			return c.undoPatch(ctx, obj, a.ToRevision)
		})
	case "":
		return "", errors.New("action is required: status, history, restart, undo, pause or resume")
	}
	return "", fmt.Errorf("unknown action %q: status, history, restart, undo, pause or resume", a.Action)
}

// patchBuilder returns the patch for a workload that passed the guards, and
// a past-tense verb for the answer.
type patchBuilder func(ctx context.Context, obj runtime.Object) (types.PatchType, []byte, string, error)

// write is the one primitive through which kubecrew changes the cluster.
// In order: the execution gate for k8s.rollout.<action> (whatever tool name
// led here), the scope gate (an autonomous run changes only its delegated
// workload), a fresh read of the workload, the fleet guard, then the patch.
func (c *Client) write(ctx context.Context, action string, ref objectRef, build patchBuilder) (string, error) {
	obj, err := c.guard(ctx, action, ref)
	if err != nil {
		return "", err
	}
	return c.patch(ctx, action, ref, obj, build)
}

// guard is what every write asks first, in order: the execution gate for
// k8s.rollout.<action>, the scope gate, a fresh read of the workload, the
// fleet guard. It returns the workload as read.
func (c *Client) guard(ctx context.Context, action string, ref objectRef) (runtime.Object, error) {
	if err := tools.Check(ctx, tools.Action("k8s.rollout."+action)); err != nil {
		return nil, err
	}
	if err := tools.CheckTarget(ctx, ref.kind, ref.namespace, ref.name); err != nil {
		return nil, err
	}
	if err := c.avail(); err != nil {
		return nil, err
	}
	obj, err := c.getObject(ctx, ref)
	if err != nil {
		return nil, err
	}
	if fleetWorkload(obj) {
		c.log.Warn("refused write to a fleet workload", zap.String("action", action), zap.String("object", ref.String()))
		return nil, fmt.Errorf("%s %s: %w", action, ref, ErrFleetWorkload)
	}
	return obj, nil
}

// permit asks the action envelope whether gated may change target: act
// false carries its answer instead (shadow mode, a budget spent, the kill
// switch); without an envelope everything is permitted.
func (c *Client) permit(ctx context.Context, gated tools.Action, target tools.Change) (answer string, act bool, err error) {
	if c.envelope == nil {
		return "", true, nil
	}
	v, err := c.envelope.Permit(ctx, gated, target)
	if err != nil {
		return "", false, err
	}
	return v.Answer, v.Act, nil
}

// patch asks the envelope and patches a workload that passed guard.
func (c *Client) patch(ctx context.Context, action string, ref objectRef, obj runtime.Object, build patchBuilder) (string, error) {
	pt, patch, verb, err := build(ctx, obj)
	if err != nil {
		return "", err
	}
	gated := tools.Action("k8s.rollout." + action)
	target := tools.Change{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name,
		Change: fmt.Sprintf("kubectl patch %s %s -n %s --type=%s -p '%s'", ref.kind, ref.name, ref.namespace, patchTypeFlag(pt), patch)}
	if answer, act, err := c.permit(ctx, gated, target); !act || err != nil {
		return answer, err
	}
	c.hookBeforeWrite(ctx)
	po := metav1.PatchOptions{FieldManager: "kubecrew"}
	switch ref.kind {
	case KindDeployments:
		_, err = c.cs.AppsV1().Deployments(ref.namespace).Patch(ctx, ref.name, pt, patch, po)
	case KindStatefulSets:
		_, err = c.cs.AppsV1().StatefulSets(ref.namespace).Patch(ctx, ref.name, pt, patch, po)
	case KindDaemonSets:
		_, err = c.cs.AppsV1().DaemonSets(ref.namespace).Patch(ctx, ref.name, pt, patch, po)
	default:
		return "", fmt.Errorf("kind %s cannot be patched", ref.kind)
	}
	if apierrors.IsConflict(err) {
		return "", fmt.Errorf("%w: %s changed after it was checked (resourceVersion %s); nothing was written", ErrPrecondition, ref, resourceVersion(obj))
	}
	if err != nil {
		return "", c.apiErr(err, action+" "+ref.String())
	}
	if c.envelope != nil {
		c.envelope.Done(ctx, gated, target)
	}
	c.log.Info("cluster write", zap.String("action", string(gated)), zap.String("object", ref.String()),
		zap.String("mode", tools.ModeFrom(ctx).String()))
	return fmt.Sprintf("%s %s. Follow it with k8s_rollout action=status.\n", verb, ref), nil
}

// patchTypeFlag is kubectl's --type for pt.
func patchTypeFlag(pt types.PatchType) string {
	switch pt {
	case types.JSONPatchType:
		return "json"
	case types.MergePatchType:
		return "merge"
	}
	return "strategic"
}

// fleetWorkload reports whether obj or its pod template carries the fleet label.
func fleetWorkload(obj runtime.Object) bool {
	var meta metav1.Object
	var tmpl *corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *appsv1.Deployment:
		meta, tmpl = o, &o.Spec.Template
	case *appsv1.StatefulSet:
		meta, tmpl = o, &o.Spec.Template
	case *appsv1.DaemonSet:
		meta, tmpl = o, &o.Spec.Template
	default:
		return true // unknown shape: refuse, guards fail closed
	}
	return meta.GetLabels()[FleetLabel] == FleetValue || tmpl.Labels[FleetLabel] == FleetValue
}

func (c *Client) restartPatch(_ context.Context, obj runtime.Object) (types.PatchType, []byte, string, error) {
	if d, ok := obj.(*appsv1.Deployment); ok && d.Spec.Paused {
		return "", nil, "", fmt.Errorf("deployment %s/%s is paused; resume it before a restart", d.Namespace, d.Name)
	}
	body := map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RestartAnnotation: c.now().UTC().Format(time.RFC3339)},
	}}}}
	// conditional on the object as read and checked: a change in between
	// is answered 409 Conflict, not overwritten
	if rv := resourceVersion(obj); rv != "" {
		body["metadata"] = map[string]any{"resourceVersion": rv}
	}
	p, err := json.Marshal(body)
	return types.StrategicMergePatchType, p, "restarted", err
}

// resourceVersion is obj's metadata.resourceVersion ("" when none).
func resourceVersion(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}

// undoPatch rolls back to a revision: for a Deployment the ReplicaSet's
// template (without its pod-template-hash label) replaces the current one,
// guarded by a resourceVersion test; for StatefulSets and DaemonSets the
// ControllerRevision's stored patch is applied, as kubectl does.
func (c *Client) undoPatch(ctx context.Context, obj runtime.Object, to int64) (types.PatchType, []byte, string, error) {
	revs, err := c.revisions(ctx, obj)
	if err != nil {
		return "", nil, "", err
	}
	if len(revs) < 2 && to == 0 {
		return "", nil, "", errors.New("no previous revision to roll back to")
	}
	cur := revs[len(revs)-1]
	var target revision
	if to == 0 {
		target = revs[len(revs)-2]
	} else {
		found := false
		for _, r := range revs {
			if r.number == to {
				target, found = r, true
			}
		}
		if !found {
			return "", nil, "", fmt.Errorf("revision %d not found; use action=history", to)
		}
	}
	if target.number == cur.number {
		return "", nil, "", fmt.Errorf("revision %d is already the current one", to)
	}
	verb := fmt.Sprintf("rolled back (revision %d -> %d)", cur.number, target.number)
	if d, ok := obj.(*appsv1.Deployment); ok {
		tmpl := target.rs.Spec.Template.DeepCopy()
		delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		ops := []map[string]any{{"op": "replace", "path": "/spec/template", "value": tmpl}}
		if d.ResourceVersion != "" { // refuse if the Deployment changed since it was read
			ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": d.ResourceVersion}}, ops...)
		}
		p, err := json.Marshal(ops)
		return types.JSONPatchType, p, verb, err
	}
	return types.StrategicMergePatchType, target.cr.Data.Raw, verb, nil
}

type revision struct {
	number  int64
	name    string
	created metav1.Time
	cause   string
	images  string
	rs      *appsv1.ReplicaSet
	cr      *appsv1.ControllerRevision
}

// revisions lists a workload's revisions, oldest first: the ReplicaSets a
// Deployment owns, or the ControllerRevisions of a StatefulSet/DaemonSet.
func (c *Client) revisions(ctx context.Context, obj runtime.Object) ([]revision, error) {
	var out []revision
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("bad selector: %w", err)
		}
		l, err := c.cs.AppsV1().ReplicaSets(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, c.apiErr(err, "list replicasets of deployment "+o.Name)
		}
		for i := range l.Items {
			rs := &l.Items[i]
			if !ownedBy(rs.OwnerReferences, o.UID) {
				continue
			}
			n, _ := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
			out = append(out, revision{number: n, name: rs.Name, created: rs.CreationTimestamp,
				cause: rs.Annotations[changeCause], images: images(rs.Spec.Template.Spec.Containers), rs: rs})
		}
	case *appsv1.StatefulSet, *appsv1.DaemonSet:
		m := o.(metav1.Object)
		var sel *metav1.LabelSelector
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sel = s.Spec.Selector
		} else {
			sel = o.(*appsv1.DaemonSet).Spec.Selector
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("bad selector: %w", err)
		}
		l, err := c.cs.AppsV1().ControllerRevisions(m.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			return nil, c.apiErr(err, "list controllerrevisions of "+m.GetName())
		}
		for i := range l.Items {
			cr := &l.Items[i]
			if !ownedBy(cr.OwnerReferences, m.GetUID()) {
				continue
			}
			out = append(out, revision{number: cr.Revision, name: cr.Name, created: cr.CreationTimestamp,
				cause: cr.Annotations[changeCause], cr: cr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	if len(out) == 0 {
		return nil, errors.New("no revisions recorded for this workload")
	}
	return out, nil
}

func images(cs []corev1.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+"="+c.Image)
	}
	return strings.Join(out, ",")
}

func (c *Client) rolloutHistory(ctx context.Context, ref objectRef) (string, error) {
	obj, err := c.getObject(ctx, ref)
	if err != nil {
		return "", err
	}
	revs, err := c.revisions(ctx, obj)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	t := &table{head: []string{"REVISION", "NAME", "CREATED", "CHANGE-CAUSE", "IMAGES"}}
	for _, r := range revs {
		t.add(strconv.FormatInt(r.number, 10), r.name, r.created.UTC().Format(time.RFC3339), r.cause, r.images)
	}
	return fmt.Sprintf("rollout history of %s (oldest first, the last is current):\n%s", ref, t.String()), nil
}

// rolloutStatus answers what kubectl rollout status would, without waiting.
func (c *Client) rolloutStatus(ctx context.Context, ref objectRef) (string, error) {
	obj, err := c.getObject(ctx, ref)
	if err != nil {
		return "", err
	}
	var msg string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		msg = deploymentRolloutStatus(o)
	case *appsv1.StatefulSet:
		msg = statefulSetRolloutStatus(o)
	case *appsv1.DaemonSet:
		msg = daemonSetRolloutStatus(o)
	}
	return fmt.Sprintf("%s: %s\n", ref, msg), nil
}

func deploymentRolloutStatus(d *appsv1.Deployment) string {
	if d.Generation > d.Status.ObservedGeneration {
		return "waiting for the deployment spec update to be observed"
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return "rollout failed: exceeded its progress deadline"
		}
	}
	want := i32(d.Spec.Replicas, 1)
	s := d.Status
	prefix := ""
	if d.Spec.Paused {
		prefix = "paused; "
	}
	switch {
	case s.UpdatedReplicas < want:
		return fmt.Sprintf("%swaiting for rollout to finish: %d of %d new replicas updated", prefix, s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		return fmt.Sprintf("%swaiting for rollout to finish: %d old replicas pending termination", prefix, s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas < s.UpdatedReplicas:
		return fmt.Sprintf("%swaiting for rollout to finish: %d of %d updated replicas available", prefix, s.AvailableReplicas, s.UpdatedReplicas)
	}
	return prefix + fmt.Sprintf("successfully rolled out (%d/%d ready)", s.ReadyReplicas, want)
}

func statefulSetRolloutStatus(s *appsv1.StatefulSet) string {
	if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return "rollout status is only available for the RollingUpdate strategy"
	}
	if s.Generation > s.Status.ObservedGeneration {
		return "waiting for the statefulset spec update to be observed"
	}
	want := i32(s.Spec.Replicas, 1)
	if s.Status.ReadyReplicas < want {
		return fmt.Sprintf("waiting for %d pods to be ready (%d/%d)", want-s.Status.ReadyReplicas, s.Status.ReadyReplicas, want)
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		if s.Status.UpdatedReplicas < want-*ru.Partition {
			return fmt.Sprintf("waiting for partitioned roll out to finish: %d of %d new pods updated", s.Status.UpdatedReplicas, want-*ru.Partition)
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods updated", s.Status.UpdatedReplicas)
	}
	if s.Status.UpdateRevision != s.Status.CurrentRevision {
		return fmt.Sprintf("waiting for rolling update to complete: %d pods at revision %s", s.Status.UpdatedReplicas, s.Status.UpdateRevision)
	}
	return fmt.Sprintf("rolling update complete: %d pods at revision %s", s.Status.CurrentReplicas, s.Status.CurrentRevision)
}

func daemonSetRolloutStatus(d *appsv1.DaemonSet) string {
	if d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return "rollout status is only available for the RollingUpdate strategy"
	}
	if d.Generation > d.Status.ObservedGeneration {
		return "waiting for the daemonset spec update to be observed"
	}
	s := d.Status
	switch {
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return fmt.Sprintf("waiting for rollout to finish: %d of %d new pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return fmt.Sprintf("waiting for rollout to finish: %d of %d updated pods available", s.NumberAvailable, s.DesiredNumberScheduled)
	}
	return fmt.Sprintf("successfully rolled out (%d pods)", s.NumberAvailable)
}
