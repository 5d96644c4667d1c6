package kube

import (
	"context"
	"testing"
)

func TestAlertTarget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		labels map[string]string
		want   ObjectRef
		ok     bool
	}{
		{"deployment", map[string]string{"alertname": "KubeDeploymentReplicasMismatch", "namespace": "shop", "deployment": "api"}, ObjectRef{"shop", "Deployment", "api"}, true},
		{"pod beats container", map[string]string{"namespace": "shop", "pod": "api-7d9-x", "container": "app"}, ObjectRef{"shop", "Pod", "api-7d9-x"}, true},
		{"workload beats pod", map[string]string{"namespace": "shop", "pod": "db-0", "statefulset": "db"}, ObjectRef{"shop", "StatefulSet", "db"}, true},
		{"kube-state-metrics job_name", map[string]string{"namespace": "batch", "job_name": "nightly-29012345", "job": "kube-state-metrics"}, ObjectRef{"batch", "Job", "nightly-29012345"}, true},
		{"scrape job is not an object", map[string]string{"namespace": "shop", "job": "kube-state-metrics", "pod": "api-1"}, ObjectRef{"shop", "Pod", "api-1"}, true},
		{"node needs no namespace", map[string]string{"node": "worker-3", "instance": "10.0.0.3:9100"}, ObjectRef{"", "Node", "worker-3"}, true},
		{"no namespace, no namespaced target", map[string]string{"deployment": "api"}, ObjectRef{}, false},
		{"invalid name skipped", map[string]string{"namespace": "shop", "deployment": "Bad_Name", "pod": "api-1"}, ObjectRef{"shop", "Pod", "api-1"}, true},
		{"nothing", map[string]string{"alertname": "Watchdog"}, ObjectRef{}, false},
	}
	for _, tc := range cases {
		got, ok := AlertTarget(tc.labels)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := AlertTargetJSON(`{"status":"firing","labels":{"namespace":"shop","deployment":"api"}}`); !ok || got.Name != "api" {
		t.Errorf("json: %+v %v", got, ok)
	}
	if _, ok := AlertTargetJSON(`not json`); ok {
		t.Error("bad json accepted")
	}
}

// The focus resolves a pod to its owner: what an alert run may act on.
func TestFocusResolvesThePodsOwner(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: fixtureNS})
	if err != nil {
		t.Fatal(err)
	}
	focus := ObjectRef{Namespace: fixtureNS, Kind: "Pod"}
	for _, p := range r.Problems {
		if p.Name == "crashloop" {
			focus.Name = p.Pod
		}
	}
	r, err = c.ClusterProblems(context.Background(), ProblemOptions{Namespace: fixtureNS, Focus: &focus})
	if err != nil {
		t.Fatal(err)
	}
	if r.Focus.Owner != (ObjectRef{fixtureNS, "Deployment", "crashloop"}) || r.Focus.State != "broken" {
		t.Fatalf("focus = %+v", r.Focus)
	}
}
