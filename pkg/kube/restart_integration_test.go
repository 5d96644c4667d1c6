package kube

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// simWeb creates, in a fresh namespace of the simulated cluster, a
// two-replica Deployment "web" applied by Flux (its label) and a
// PodDisruptionBudget with minAvailable, and waits until both pods are
// Ready and the disruption controller has computed the budget.
func simWeb(t *testing.T, env *kubetest.Env, minAvailable int) string {
	t.Helper()
	ctx := context.Background()
	cs := env.Clientset
	ns := uniqueName("evict")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	sel := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns,
		Labels: map[string]string{fluxKustomizationName: "apps", fluxKustomizationNS: "flux-system"}},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: cmVolume("web-config")}}}}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minA := intstr.FromInt32(int32(minAvailable))
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minA, Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 2 && p.Status.ExpectedPods == 2, nil
	})
	if err != nil {
		t.Fatalf("web: two Ready pods counted by the PodDisruptionBudget within 90s: %v", err)
	}
	// the configuration is written after the pods started: the evidence an
	// autonomous restart needs (restartEvidence)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var started time.Time
	for i := range pods.Items {
		if s := podStart(&pods.Items[i]); s.After(started) {
			started = s
		}
	}
	touchConfigAfter(t, cs, ns, "web-config", started)
	return ns
}

// readyWatch follows the namespace's pods and keeps the least number of
// Ready, not-terminating pods seen at any moment, and the most originals
// terminating at once.
type readyWatch struct {
	mu          sync.Mutex
	pods        map[string]*corev1.Pod
	orig        map[string]bool
	minReady    int
	maxGoing    int
	events      int
	stop        func()
	done        chan struct{}
	watchFailed error
}

func watchReady(t *testing.T, cs kubernetes.Interface, ns string) *readyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &readyWatch{pods: map[string]*corev1.Pod{}, orig: map[string]bool{}, minReady: 1 << 30, stop: cancel, done: make(chan struct{})}
	for i := range l.Items {
		p := l.Items[i]
		w.pods[p.Name], w.orig[p.Name] = &p, true
	}
	w.observe()
	wi, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				w.mu.Lock()
				w.watchFailed = errors.New("watch error event")
				w.mu.Unlock()
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.pods, p.Name)
			} else {
				w.pods[p.Name] = p
			}
			w.events++
			w.mu.Unlock()
			w.observe()
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

func (w *readyWatch) observe() {
	w.mu.Lock()
	defer w.mu.Unlock()
	ready, going := 0, 0
	for name, p := range w.pods {
		if p.DeletionTimestamp == nil && podIsReady(p) {
			ready++
		}
		if w.orig[name] && p.DeletionTimestamp != nil {
			going++
		}
	}
	w.minReady = min(w.minReady, ready)
	w.maxGoing = max(w.maxGoing, going)
}

// The restart that sticks, on the simulated cluster: Flux applies web, so
// auto mode evicts its two pods one at a time; the PodDisruptionBudget
// (minAvailable 1) is never violated and each replacement is Ready before
// the next eviction.
func TestIntegrationRestartByEvictionRespectsPDB(t *testing.T) {
	env := kubetest.Sim(t)
	ns := simWeb(t, env, 1)
	w := watchReady(t, env.Clientset, ns)
	c, err := Connect(env.Kubeconfig, "", zaptest.NewLogger(t), WithRestartMode(RestartAuto), WithEvictionPacing(100*time.Millisecond, 90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Rollout(context.Background(), RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: ns, Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out)
	for _, want := range []string{"by evicting its 2 pods one at a time through the Eviction API", "1. evicted ", "2. evicted ",
		"because it is applied by Flux Kustomization flux-system/apps"} {
		if !strings.Contains(out, want) {
			t.Errorf("answer lacks %q", want)
		}
	}
	d, err := env.Clientset.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Annotations[RestartAnnotation] != "" {
		t.Errorf("the pod template changed (%v): %v", err, d.Spec.Template.Annotations)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.minReady < 1 {
		t.Errorf("at one moment only %d pods were Ready: the PodDisruptionBudget (minAvailable 1) was violated", w.minReady)
	}
	if w.maxGoing > 1 {
		t.Errorf("%d original pods were terminating at once; evictions must go one at a time", w.maxGoing)
	}
	live := 0
	for name, p := range w.pods {
		if w.orig[name] && p.DeletionTimestamp == nil {
			t.Errorf("original pod %s was not restarted", name)
		}
		if !w.orig[name] && p.DeletionTimestamp == nil && podIsReady(p) {
			live++
		}
	}
	if live != 2 || w.watchFailed != nil {
		t.Errorf("%d Ready replacements (want 2), watch error %v, %d events", live, w.watchFailed, w.events)
	}
}

// A PodDisruptionBudget that allows no disruption (minAvailable 2 of 2):
// every eviction is answered 429, asked again within the budget, then the
// restart stops and says so; no pod was removed.
func TestIntegrationRestartByEvictionBlockedByPDB(t *testing.T) {
	env := kubetest.Sim(t)
	ns := simWeb(t, env, 2)
	c, err := Connect(env.Kubeconfig, "", zaptest.NewLogger(t), WithRestartMode(RestartEvict), WithEvictionPacing(200*time.Millisecond, 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Rollout(context.Background(), RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: ns, Name: "web"})
	if !errors.Is(err, ErrRestartIncomplete) || !strings.Contains(err.Error(), "evicted 0 of 2 pods") ||
		!strings.Contains(err.Error(), "a PodDisruptionBudget blocks evicting pod web-") || !strings.Contains(err.Error(), "429") {
		t.Fatalf("err = %v", err)
	}
	t.Log(err)
	l, err := env.Clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			t.Errorf("pod %s is being deleted although the budget allowed no disruption", p.Name)
		}
	}
	if len(l.Items) != 2 {
		t.Errorf("%d pods, want the 2 originals", len(l.Items))
	}
}
