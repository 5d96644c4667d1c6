package kubetest

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateRestartable creates, on an API server without controllers,
// Deployment name in ns (with labels) whose restart is justified: its
// ReplicaSet's Running pod started an hour ago and mounts ConfigMap
// <name>-config, created now, so the pod predates a write to it (the
// precondition of an autonomous rollout restart, docs/MANUAL.md "The action
// envelope").
func CreateRestartable(ctx context.Context, cs kubernetes.Interface, ns, name string, labels map[string]string) (*appsv1.Deployment, error) {
	sel := map[string]string{"app": name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}}}}}}
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: spec}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	yes := true
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns, Labels: sel,
		Annotations:     map[string]string{"deployment.kubernetes.io/revision": "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: spec}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("replicaset of %s/%s: %w", ns, name, err)
	}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-1-a", Namespace: ns, Labels: sel,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
		Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("pod of %s/%s: %w", ns, name, err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("pod status of %s/%s: %w", ns, name, err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-config", Namespace: ns},
		Data: map[string]string{"LOG_LEVEL": "debug"}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("configmap of %s/%s: %w", ns, name, err)
	}
	return d, nil
}
