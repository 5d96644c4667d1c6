package kube

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

func TestNeedsOf(t *testing.T) {
	if n := NeedsOf([]string{"load_skill", "read_repo_file"}); n != nil {
		t.Fatalf("no cluster tool: %v", n)
	}
	needs := NeedsOf([]string{ToolClusterProblems, ToolGetEvents, ToolPodLogs, ToolRollout})
	by := map[string][]string{}
	for _, n := range needs {
		by[n.String()] = n.Tools
	}
	for want, tools := range map[string]string{
		"list events":                   "cluster_problems,k8s_get_events",
		"get pods/log":                  "k8s_get_pod_logs",
		"patch deployments.apps":        "k8s_rollout",
		"list replicasets.apps":         "cluster_problems,k8s_rollout",
		"list controllerrevisions.apps": "k8s_rollout",
	} {
		if got := strings.Join(by[want], ","); got != tools {
			t.Errorf("%s: tools %q, want %q", want, got, tools)
		}
	}
	if _, ok := by["get secrets"]; ok {
		t.Error("no tool reads Secrets")
	}
}

func TestDenied(t *testing.T) {
	gs := []Grant{
		{Need: Need{Access: Access{Verb: "list", Resource: "pods"}, Tools: []string{"cluster_problems"}}},
		{Need: Need{Access: Access{Verb: "list", Resource: "events"}, Tools: []string{"k8s_get_events"}}, Allowed: true},
	}
	got := Denied(gs)
	if !strings.Contains(got, "may not list pods (1 of 2") || !strings.Contains(got, "tools affected: cluster_problems") {
		t.Errorf("Denied = %q", got)
	}
	gs[0].Allowed = true
	if got := Denied(gs); got != "" {
		t.Errorf("all allowed: %q", got)
	}
}

// BenchmarkCheckAccess is what one uncached /ready costs Noor on the real
// API server: one SelfSubjectAccessReview per permission her tools need,
// concurrently.
func BenchmarkCheckAccess(b *testing.B) {
	env := kubetest.Start(b)
	c, err := Connect(env.Kubeconfig, "", zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	needs := NeedsOf([]string{ToolClusterProblems, ToolGetResources, ToolDescribe, ToolGetEvents, ToolPodLogs, ToolGetYAML, ToolAPIResources, ToolNodes})
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.CheckAccess(ctx, needs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(needs)), "reviews/op")
}
