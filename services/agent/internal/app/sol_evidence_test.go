package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// TestSolRestartsOnlyOnConfigEvidence: Sol's playbook (no model) gets two
// delegated crash loops over POST /run. The one whose finding carries the
// diagnosis's evidence (a ConfigMap written after the pods started), which
// the cluster shows too, is rollout-restarted on the API server; the code bug — the same words in
// its detail and the generic advice, but no evidence — is answered with a
// recommendation and its Deployment is untouched.
func TestSolRestartsOnlyOnConfigEvidence(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	cs := env.Clientset
	ns := fmt.Sprintf("kc-evidence-%d", rand.IntN(1_000_000_000))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{envelope.Label: "enabled"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"api", "worker"} {
			_ = cs.AppsV1().Deployments(ns).Delete(context.Background(), n, metav1.DeleteOptions{})
		}
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// api's pods predate a real write to ConfigMap api-config; worker has
	// no such write (docs/MANUAL.md, "The action envelope": the restart reads
	// the cluster, not the finding)
	if _, err := kubetest.CreateRestartable(ctx, cs, ns, "api", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"worker"} {
		sel := map[string]string{"app": name}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/example/" + name + ":1.4.2"}}}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a := start(t, map[string]string{"AGENT_PERSONA": "sol", "KUBECONFIG": env.Kubeconfig})
	started := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	run := func(f api.Finding) api.RunResult {
		t.Helper()
		raw, _ := json.Marshal(f)
		body, _ := json.Marshal(api.RunRequest{Task: "fix this finding", Context: map[string]string{"finding": string(raw)}})
		code, b := do(t, "POST", a.url+"/run", string(body))
		if code != 200 {
			t.Fatalf("POST /run = %d %s", code, b)
		}
		var res api.RunResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	restartedAt := func(name string) string {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[kube.RestartAnnotation]
	}
	crash := func(name string) api.Finding {
		return api.Finding{Severity: "critical", Kind: "Deployment", Namespace: ns, Name: name, Container: "app", Reason: "CrashLoopBackOff",
			Detail:      "container app crash-looping, restarts 6; last exit 1 (Error); the alert says: crashing since its ConfigMap was changed",
			Remediation: "read the previous container's logs; if it broke after a config change, a rollout restart may clear it", Remediable: true, Confidence: 0.9}
	}

	withEvidence := crash("api")
	withEvidence.ConfigChange = &api.ConfigChange{Kind: "ConfigMap", Name: "api-config", ChangedAt: started.Add(3 * time.Minute), PodsStartedAt: started}
	res := run(withEvidence)
	if res.Verdict != api.VerdictActionTaken || !strings.Contains(res.Answer, "ConfigMap api-config") {
		t.Fatalf("with evidence: verdict %s, answer %q; want the restart", res.Verdict, res.Answer)
	}
	if restartedAt("api") == "" {
		t.Fatal("with evidence: the API server shows no restart of api")
	}

	res = run(crash("worker"))
	if res.Verdict != "recommendation" || !strings.Contains(res.Answer, "no configuration written after the pods started") {
		t.Fatalf("code bug: verdict %s, answer %q; want a recommendation", res.Verdict, res.Answer)
	}
	if v := restartedAt("worker"); v != "" {
		t.Fatalf("code bug: worker was restarted (restartedAt=%s)", v)
	}
}
