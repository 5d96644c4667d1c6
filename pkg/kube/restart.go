package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Restart modes (ROLLOUT_RESTART_MODE, docs/MANUAL.md "Restarts that stick").
const (
	// RestartAuto evicts the pods of a workload a GitOps controller owns
	// and writes the restartedAt annotation otherwise.
	RestartAuto = "auto"
	// RestartAnnotation writes kubectl.kubernetes.io/restartedAt into the
	// pod template, as kubectl rollout restart does.
	RestartAnnotationMode = "annotation"
	// RestartEvict evicts the workload's pods one at a time through the
	// Eviction API: no spec changes, so nothing for a controller to revert.
	RestartEvict = "evict"
)

// ParseRestartMode checks a ROLLOUT_RESTART_MODE value; "" is auto.
func ParseRestartMode(s string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case "":
		return RestartAuto, nil
	case RestartAuto, RestartAnnotationMode, RestartEvict:
		return m, nil
	}
	return "", fmt.Errorf("%q: want auto, annotation or evict", s)
}

// WithRestartMode sets how k8s_rollout restarts (ParseRestartMode's
// values; anything else is auto).
func WithRestartMode(mode string) Option {
	return func(c *Client) {
		if m, err := ParseRestartMode(mode); err == nil {
			c.restartMode = m
		}
	}
}

// The labels and annotations GitOps controllers put on what they apply.
const (
	fluxKustomizationName = "kustomize.toolkit.fluxcd.io/name"
	fluxKustomizationNS   = "kustomize.toolkit.fluxcd.io/namespace"
	fluxHelmReleaseName   = "helm.toolkit.fluxcd.io/name"
	fluxHelmReleaseNS     = "helm.toolkit.fluxcd.io/namespace"
	argoInstance          = "argocd.argoproj.io/instance"
	argoTrackingID        = "argocd.argoproj.io/tracking-id"
	argoPrefix            = "argocd.argoproj.io/"
	appInstance           = "app.kubernetes.io/instance"
)

// GitOpsOwner is the controller that applies a workload, as its labels and
// annotations say.
type GitOpsOwner struct {
	Controller string // "Flux" or "Argo CD"
	Object     string // "Kustomization flux-system/apps", "Application shop", …
	Evidence   string // the label or annotation that says so
}

func (o GitOpsOwner) String() string {
	return fmt.Sprintf("%s %s (%s)", o.Controller, o.Object, o.Evidence)
}

// DetectGitOpsOwner reads a workload's labels and annotations: Flux's
// kustomize.toolkit.fluxcd.io/name and helm.toolkit.fluxcd.io/name labels,
// Argo CD's argocd.argoproj.io/tracking-id annotation and
// argocd.argoproj.io/instance label, and app.kubernetes.io/instance when
// another argocd.argoproj.io/ key shows Argo CD tracks by that label (Helm
// sets it too, so alone it proves nothing). ok is false when none says so.
func DetectGitOpsOwner(m metav1.Object) (GitOpsOwner, bool) {
	l, a := m.GetLabels(), m.GetAnnotations()
	nsName := func(ns, name string) string {
		if ns == "" {
			return name
		}
		return ns + "/" + name
	}
	switch {
	case l[fluxKustomizationName] != "":
		return GitOpsOwner{"Flux", "Kustomization " + nsName(l[fluxKustomizationNS], l[fluxKustomizationName]),
			"label " + fluxKustomizationName + "=" + l[fluxKustomizationName]}, true
	case l[fluxHelmReleaseName] != "":
		return GitOpsOwner{"Flux", "HelmRelease " + nsName(l[fluxHelmReleaseNS], l[fluxHelmReleaseName]),
			"label " + fluxHelmReleaseName + "=" + l[fluxHelmReleaseName]}, true
	case a[argoTrackingID] != "":
		app, _, _ := strings.Cut(a[argoTrackingID], ":")
		return GitOpsOwner{"Argo CD", "Application " + app, "annotation " + argoTrackingID + "=" + a[argoTrackingID]}, true
	case l[argoInstance] != "":
		return GitOpsOwner{"Argo CD", "Application " + l[argoInstance], "label " + argoInstance + "=" + l[argoInstance]}, true
	case l[appInstance] != "":
		var keys []string
		for k := range l {
			if strings.HasPrefix(k, argoPrefix) {
				keys = append(keys, "label "+k)
			}
		}
		for k := range a {
			if strings.HasPrefix(k, argoPrefix) {
				keys = append(keys, "annotation "+k)
			}
		}
		if len(keys) > 0 {
			sort.Strings(keys)
			return GitOpsOwner{"Argo CD", "Application " + l[appInstance],
				"label " + appInstance + "=" + l[appInstance] + " with Argo CD's " + keys[0]}, true
		}
	}
	return GitOpsOwner{}, false
}

// restartHow decides how to restart obj and says why.
func (c *Client) restartHow(obj runtime.Object) (mode, why string) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return RestartAnnotationMode, "unknown object"
	}
	switch c.restartMode {
	case RestartAnnotationMode, RestartEvict:
		return c.restartMode, "ROLLOUT_RESTART_MODE=" + c.restartMode + " overrides the detection"
	}
	if o, ok := DetectGitOpsOwner(m); ok {
		return RestartEvict, fmt.Sprintf("it is applied by %s, which may revert a restartedAt annotation written into the pod template "+
			"or report it as drift; evicting the pods changes no spec, so the restart sticks", o)
	}
	return RestartAnnotationMode, "no GitOps controller (Flux, Argo CD) owns it, so the pod-template annotation kubectl rollout restart writes is kept"
}

// restart is k8s_rollout action=restart: the guards, the precondition
// (restartEvidence: in an autonomous run the pods must predate a write to
// a ConfigMap they reference, read now), then the annotation or evictions
// as restartHow decides, each conditional on what the check read, and an
// answer that says which, why, and on what evidence.
func (c *Client) restart(ctx context.Context, ref objectRef) (string, error) {
	obj, err := c.guard(ctx, RolloutRestart, ref)
	if err != nil {
		return "", err
	}
	ev, err := c.restartEvidence(ctx, ref, obj)
	if err != nil {
		c.log.Info("restart refused: precondition", zap.String("object", ref.String()), zap.Error(err))
		return "", err
	}
	mode, why := c.restartHow(obj)
	if mode == RestartEvict {
		return c.evictRestart(ctx, ref, obj, ev, why)
	}
	out, err := c.patch(ctx, RolloutRestart, ref, obj, c.restartPatch)
	if err != nil {
		return "", err
	}
	return out + fmt.Sprintf("How: the %s annotation in the pod template (restart mode annotation), because %s.\n", RestartAnnotation, why) +
		evidenceLine(ev), nil
}
