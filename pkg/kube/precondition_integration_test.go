package kube

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// touchConfigAfter writes ConfigMap name until the API server records
// the write (lastDataWrite, whole seconds) strictly after after: a real
// configuration write that postdates the pods. A test API server may keep
// no managedFields, where only a creation counts: the ConfigMap is then
// created again.
func touchConfigAfter(t *testing.T, cs kubernetes.Interface, ns, name string, after time.Time) {
	t.Helper()
	n := 0
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if lastDataWrite(cm.ObjectMeta).After(after) {
			return true, nil
		}
		n++
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return false, err
		}
		_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"v": strconv.Itoa(n)}}, metav1.CreateOptions{})
		return false, err
	})
	if err != nil {
		t.Fatalf("ConfigMap %s/%s written after %s: %v", ns, name, after, err)
	}
}

// manualWorkload creates, on an API server without controllers, Deployment
// name with its ReplicaSet and two Running pods started at started, each
// mounting vol; it returns the Deployment as created.
func manualWorkload(t *testing.T, cs kubernetes.Interface, ns, name string, started time.Time, vol corev1.VolumeSource) *appsv1.Deployment {
	t.Helper()
	ctx := context.Background()
	sel := map[string]string{"app": name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: vol}}}
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: spec}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns, Labels: sel,
		Annotations:     map[string]string{revisionAnnotation: "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: spec}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-1-" + strconv.Itoa(i), Namespace: ns, Labels: sel,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
			Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := metav1.NewTime(started)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &st}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func cmVolume(name string) corev1.VolumeSource {
	return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

// TestIntegrationRestartPrecondition, on the real API server: an
// autonomous restart patches only a workload whose pods predate a real
// write to the ConfigMap they mount; one whose ConfigMap was last written
// before its pods started, or that mounts only a Secret, is refused and
// left as it was; and a change to the Deployment between the check and the
// write is refused by the API server (409 on the resourceVersion the check
// read), not overwritten. The same holds for a pod between an eviction's
// check and the eviction.
func TestIntegrationRestartPrecondition(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	cs := env.Clientset
	ns := uniqueName("precond")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	for _, name := range []string{"fresh-config", "old-config"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	future := time.Now().Add(time.Hour).Truncate(time.Second) // the pods started after every write here
	manualWorkload(t, cs, ns, "fresh", past, cmVolume("fresh-config"))
	manualWorkload(t, cs, ns, "racy", past, cmVolume("fresh-config"))
	manualWorkload(t, cs, ns, "evicty", past, cmVolume("fresh-config"))
	manualWorkload(t, cs, ns, "stale", future, cmVolume("old-config"))
	manualWorkload(t, cs, ns, "secret", past, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "token"}})
	touchConfigAfter(t, cs, ns, "fresh-config", past)

	c, err := Connect(env.Kubeconfig, "", zaptest.NewLogger(t), WithRestartMode(RestartAnnotationMode))
	if err != nil {
		t.Fatal(err)
	}
	restart := func(c *Client, name string) (string, error) {
		return c.Rollout(ctx, RolloutArgs{Action: RolloutRestart, Kind: "deployments", Namespace: ns, Name: name})
	}
	annotated := func(name string) bool {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[RestartAnnotation] != ""
	}

	out, err := restart(c, "fresh")
	if err != nil || !annotated("fresh") || !strings.Contains(out, "Evidence, read from the cluster right before the write: ConfigMap fresh-config written") {
		t.Errorf("fresh: %v %q", err, out)
	}
	for name, want := range map[string]string{"stale": "no configuration written since the pods started", "secret": "Secret token not checked (Secrets are never read)"} {
		_, err := restart(c, name)
		if !errors.Is(err, ErrPrecondition) || !strings.Contains(err.Error(), want) || annotated(name) {
			t.Errorf("%s: err = %v (want %q), annotated %v", name, err, want, annotated(name))
		}
	}

	// The Deployment changes between the check and the patch.
	c.beforeWrite = func(ctx context.Context) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "racy", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		d.Labels = map[string]string{"changed": "in-between"}
		if _, err := cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	_, err = restart(c, "racy")
	if !errors.Is(err, ErrPrecondition) || !strings.Contains(err.Error(), "changed after it was checked") || annotated("racy") {
		t.Errorf("racy: err = %v, annotated %v", err, annotated("racy"))
	}

	// A pod changes between an eviction's check and the eviction.
	ev, err := Connect(env.Kubeconfig, "", zaptest.NewLogger(t), WithRestartMode(RestartEvict), WithEvictionPacing(100*time.Millisecond, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ev.beforeWrite = func(ctx context.Context) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "evicty-1-0", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		p.Labels["changed"] = "in-between"
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	_, err = restart(ev, "evicty")
	if !errors.Is(err, ErrPrecondition) || !strings.Contains(err.Error(), "pod evicty-1-0 changed after it was checked") {
		t.Errorf("evicty: err = %v", err)
	}
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, "evicty-1-0", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("evicty-1-0 was evicted (%v)", err)
	}
}
