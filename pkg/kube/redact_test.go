package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGetYAMLRedacts: k8s_get_yaml shows a ConfigMap's keys and only the
// values of allowlisted keys, and never a literal env value whose name
// looks secret; the trace would count what went (tools.Result.Redacted).
func TestGetYAMLRedacts(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"},
		Data: map[string]string{"LOG_LEVEL": "debug", "app.conf": "db.password=Pl4ntedCm\n"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "web:1", Env: []corev1.EnvVar{
			{Name: "DB_PASSWORD", Value: "Pl4ntedEnv"}, {Name: "MODE", Value: "prod"},
			{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}},
		}}}}}
	c, _ := fakeClient(t, cm, pod)
	c.cmValueKeys = map[string]bool{"LOG_LEVEL": true}
	for _, tc := range []struct {
		kind, name string
		want, not  []string
	}{
		{"configmaps", "app", []string{"LOG_LEVEL: debug", "app.conf: '[REDACTED:configmap-value]'"}, []string{"Pl4ntedCm"}},
		{"pods", "web", []string{"name: DB_PASSWORD", "[REDACTED:secret-env]", "value: prod", "name: api"}, []string{"Pl4ntedEnv"}},
	} {
		out, outcome := call(context.Background(), c, ToolGetYAML, map[string]any{"kind": tc.kind, "namespace": "shop", "name": tc.name})
		if outcome != "ok" {
			t.Fatalf("%s: %s", outcome, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: missing %q in:\n%s", tc.kind, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: %q leaked:\n%s", tc.kind, n, out)
			}
		}
	}
}
