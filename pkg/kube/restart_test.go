package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestDetectGitOpsOwner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		labels, ann map[string]string
		want        string // "" = none
	}{
		{"flux kustomization", map[string]string{fluxKustomizationName: "apps", fluxKustomizationNS: "flux-system"}, nil,
			"Flux Kustomization flux-system/apps (label kustomize.toolkit.fluxcd.io/name=apps)"},
		{"flux helmrelease", map[string]string{fluxHelmReleaseName: "web", fluxHelmReleaseNS: "shop"}, nil, "Flux HelmRelease shop/web"},
		{"argo tracking annotation", nil, map[string]string{argoTrackingID: "shop:apps/Deployment:shop/web"}, "Argo CD Application shop (annotation"},
		{"argo instance label", map[string]string{argoInstance: "shop"}, nil, "Argo CD Application shop (label argocd.argoproj.io/instance=shop)"},
		{"app instance with argo's sync-wave", map[string]string{appInstance: "shop"}, map[string]string{"argocd.argoproj.io/sync-wave": "1"},
			"Argo CD Application shop (label app.kubernetes.io/instance=shop with Argo CD's annotation argocd.argoproj.io/sync-wave)"},
		{"app instance alone (Helm sets it too)", map[string]string{appInstance: "shop", "app.kubernetes.io/managed-by": "Helm"}, nil, ""},
		{"nothing", map[string]string{"app": "web"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := DetectGitOpsOwner(&metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.ann})
			if ok != (tc.want != "") || !strings.HasPrefix(o.String(), tc.want) {
				t.Errorf("DetectGitOpsOwner = %q, %v; want %q", o.String(), ok, tc.want)
			}
		})
	}
	for in, want := range map[string]string{"": "auto", " Evict ": "evict", "annotation": "annotation", "auto": "auto"} {
		if got, err := ParseRestartMode(in); err != nil || got != want {
			t.Errorf("ParseRestartMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseRestartMode("delete"); err == nil {
		t.Error("ParseRestartMode accepted delete")
	}
}

// evictionCluster is a fake clientset holding Deployment shop/web (two
// Ready pods through ReplicaSet web-1) and playing the controllers: an
// eviction deletes the pod and creates a not-yet-Ready replacement, which
// turns Ready two pod lists later. It records the order of evictions and
// whether any eviction came while a replacement was not Ready.
type evictionCluster struct {
	cs *fake.Clientset

	mu        sync.Mutex
	evicted   []string
	early     []string // evictions made while a replacement was not Ready
	pending   map[string]int
	refuse    int // answer 429 to this many evictions first
	refused   int
	nextPodID int
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func newEvictionCluster(t *testing.T, labels map[string]string, mode string) (*Client, *evictionCluster) {
	t.Helper()
	two := int32(2)
	sel := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: fixtureNS, UID: "dep-web", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: fixtureNS, UID: "rs-web-1", Labels: sel,
		Annotations:     map[string]string{revisionAnnotation: "1"},
		OwnerReferences: []metav1.OwnerReference{ctrlRef("Deployment", "web", "dep-web")}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	ec := &evictionCluster{pending: map[string]int{}}
	// the pods mount web-config, written after both started: the evidence
	// an autonomous restart needs (restartEvidence)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: fixtureNS, CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))}}
	objs := []runtime.Object{d, rs, cm,
		webPod("web-1-old", testNow.Add(-2*time.Hour), true), webPod("web-1-older", testNow.Add(-3*time.Hour), true),
		// another app's pod with the same labels but another owner is not touched
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: fixtureNS, UID: "stray", Labels: sel}}}
	ec.cs = fake.NewClientset(objs...)
	ec.cs.PrependReactor("create", "pods", ec.evict)
	ec.cs.PrependReactor("list", "pods", ec.progress)
	c := New(ec.cs, WithClock(func() time.Time { return testNow }), WithRestartMode(mode), WithEvictionPacing(time.Millisecond, 2*time.Second))
	return c, ec
}

func ctrlRef(kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &yes}
}

func webPod(name string, created time.Time, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixtureNS, UID: types.UID("uid-" + name),
		Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(created),
		OwnerReferences: []metav1.OwnerReference{ctrlRef("ReplicaSet", "web-1", "rs-web-1")}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func (ec *evictionCluster) evict(a k8stesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.refused < ec.refuse {
		ec.refused++
		return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 429,
			Reason: metav1.StatusReasonTooManyRequests, Message: "Cannot evict pod as it would violate the pod's disruption budget.",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: "The disruption budget web needs 1 healthy pods and has 1 currently"}}}}}
	}
	name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
	if len(ec.pending) > 0 {
		ec.early = append(ec.early, name)
	}
	ec.evicted = append(ec.evicted, name)
	if err := ec.cs.Tracker().Delete(podsGVR, fixtureNS, name); err != nil {
		return true, nil, err
	}
	ec.nextPodID++
	repl := webPod(fmt.Sprintf("web-1-new%d", ec.nextPodID), testNow.Add(time.Duration(ec.nextPodID)*time.Minute), false)
	ec.pending[repl.Name] = 2
	return true, nil, ec.cs.Tracker().Add(repl)
}

// progress turns a pending replacement Ready on its second list.
func (ec *evictionCluster) progress(k8stesting.Action) (bool, runtime.Object, error) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	for name, n := range ec.pending {
		if n > 1 {
			ec.pending[name] = n - 1
			continue
		}
		delete(ec.pending, name)
		p := webPod(name, testNow, true)
		if o, err := ec.cs.Tracker().Get(podsGVR, fixtureNS, name); err == nil {
			p.CreationTimestamp = o.(*corev1.Pod).CreationTimestamp
		}
		if err := ec.cs.Tracker().Update(podsGVR, p, fixtureNS); err != nil {
			return true, nil, err
		}
	}
	return false, nil, nil
}

func TestRestartByEviction(t *testing.T) {
	t.Parallel()
	flux := map[string]string{fluxKustomizationName: "apps", fluxKustomizationNS: "flux-system"}
	cases := []struct {
		name     string
		labels   map[string]string
		mode     string
		refuse   int // 429s before the PDB lets the first eviction through
		evict    bool
		want     []string
		wantPods int // Ready replacement pods at the end
	}{
		{"auto, Flux owner: evict", flux, "auto", 0, true, []string{"by evicting its 2 pods one at a time", "evicted web-1-older; replacement web-1-new1 Ready",
			"evicted web-1-old; replacement web-1-new2 Ready", "How: evictions (restart mode evict), because it is applied by Flux Kustomization flux-system/apps"}, 2},
		{"PDB refuses twice, then lets it through", flux, "auto", 2, true, []string{"by evicting its 2 pods"}, 2},
		{"evict forced without an owner", nil, "evict", 0, true, []string{"ROLLOUT_RESTART_MODE=evict overrides the detection"}, 2},
		{"auto, no owner: annotation", nil, "auto", 0, false, []string{"restarted Deployment shop/web", "How: the kubectl.kubernetes.io/restartedAt annotation", "no GitOps controller"}, 0},
		{"annotation forced over Flux", flux, "annotation", 0, false, []string{"ROLLOUT_RESTART_MODE=annotation overrides the detection"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ec := newEvictionCluster(t, tc.labels, tc.mode)
			ec.refuse = tc.refuse
			out, err := c.Rollout(context.Background(), RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: fixtureNS, Name: "web"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("answer lacks %q:\n%s", w, out)
				}
			}
			d := getDeploy(t, c, fixtureNS, "web")
			if annotated := d.Spec.Template.Annotations[RestartAnnotation] != ""; annotated == tc.evict {
				t.Errorf("restartedAt annotation written %v, evict %v", annotated, tc.evict)
			}
			ec.mu.Lock()
			defer ec.mu.Unlock()
			if tc.evict && strings.Join(ec.evicted, ",") != "web-1-older,web-1-old" {
				t.Errorf("evicted %q, want the oldest first, each once", ec.evicted)
			}
			if !tc.evict && len(ec.evicted) > 0 {
				t.Errorf("evicted %q in annotation mode", ec.evicted)
			}
			if len(ec.early) > 0 {
				t.Errorf("evicted %q while a replacement was not Ready", ec.early)
			}
			if ec.refused != tc.refuse {
				t.Errorf("%d refusals answered, want %d", ec.refused, tc.refuse)
			}
		})
	}
}

func TestRestartByEvictionBlockedByPDB(t *testing.T) {
	t.Parallel()
	c, ec := newEvictionCluster(t, map[string]string{argoInstance: "shop"}, "auto")
	c.evictTimeout = 50 * time.Millisecond
	ec.refuse = 1 << 30
	_, err := c.Rollout(context.Background(), RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: fixtureNS, Name: "web"})
	if !errors.Is(err, ErrRestartIncomplete) {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{"Deployment shop/web: evicted 0 of 2 pods", "a PodDisruptionBudget blocks evicting pod web-1-older",
		`429 "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 1 healthy pods and has 1 currently"`,
		"The other pods were not restarted and nothing was forced"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	ec.mu.Lock()
	if ec.refused < 2 || len(ec.evicted) != 0 {
		t.Errorf("refused %d times, evicted %q: it must ask again within the budget and evict nothing", ec.refused, ec.evicted)
	}
	ec.mu.Unlock()
	// Through the tool: an error the model reads, never a success.
	out, outcome := call(context.Background(), c, ToolRollout, map[string]any{"action": "restart", "kind": "deployments", "namespace": fixtureNS, "name": "web"})
	if outcome == "ok" || !strings.Contains(out, "restart incomplete") {
		t.Errorf("tool answer (%s): %s", outcome, out)
	}
}
