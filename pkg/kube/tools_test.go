package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

func TestToolsAreTheCanonicalSet(t *testing.T) {
	t.Parallel()
	c, _ := fakeClient(t)
	var names []string
	for _, tl := range Tools(c) {
		names = append(names, tl.Name())
		var schema map[string]any
		if err := json.Unmarshal(tl.Parameters(), &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: bad schema %s", tl.Name(), tl.Parameters())
		}
		if tl.Mutating() != (tl.Name() == ToolRollout) {
			t.Errorf("%s: mutating = %v", tl.Name(), tl.Mutating())
		}
		if !tools.AutonomousTools[tl.Name()] {
			t.Errorf("%s is not on the autonomous allowlist", tl.Name())
		}
	}
	want := "cluster_problems,k8s_get_resources,k8s_describe,k8s_get_events,k8s_get_pod_logs,k8s_get_yaml,k8s_api_resources,k8s_nodes,k8s_rollout"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("tools = %s\nwant    %s", got, want)
	}
}

// TestReadTools runs every read tool on the fixtures and checks the answer.
func TestReadTools(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: fixtureNS},
		Data: map[string]string{"LOG_LEVEL": "debug", "DB_URL": "postgres://db:5432/shop"}}
	c, cs := brokenClient(t, cm)
	cs.Resources = apiResources()
	cases := []struct {
		name, tool string
		args       map[string]any
		want       []string
		not        []string
	}{
		{"pods in namespace", ToolGetResources, map[string]any{"kind": "pods", "namespace": fixtureNS},
			[]string{"pods in namespace shop: 8", "CrashLoopBackOff", "ImagePullBackOff", "CreateContainerConfigError", "Pending(Unschedulable)", "RESTARTS"}, []string{"NAMESPACE"}},
		{"deployments all namespaces", ToolGetResources, map[string]any{"kind": "deploy"},
			[]string{"deployments in all namespaces: 7", "NAMESPACE", "oomkill", "0/1", "2/2"}, nil},
		{"label selector", ToolGetResources, map[string]any{"kind": "pods", "label_selector": "app.kubernetes.io/name=healthy"},
			[]string{"matching app.kubernetes.io/name=healthy: 2", "healthy-"}, []string{"oomkill"}},
		{"limit", ToolGetResources, map[string]any{"kind": "pods", "limit": 3},
			[]string{"3 shown, 5 more not shown"}, nil},
		{"configmap keys only", ToolGetResources, map[string]any{"kind": "configmaps", "namespace": fixtureNS},
			[]string{"DB_URL,LOG_LEVEL"}, []string{"postgres://"}},
		{"nodes", ToolGetResources, map[string]any{"kind": "nodes", "namespace": "ignored"},
			[]string{"nodes in cluster: 1", "kubecrew-fixture-node", "Ready"}, nil},
		{"none found", ToolGetResources, map[string]any{"kind": "cronjobs"}, []string{"none found"}, nil},
		{"describe deployment", ToolDescribe, map[string]any{"kind": "deployments", "namespace": fixtureNS, "name": "oomkill"},
			[]string{"Kind: Deployment", "memory=32Mi", "ReplicaSets", "revision 1: 0/1 ready", "oomkill-", "Warning BackOff: x1321 on 1 objects"}, nil},
		{"describe pod", ToolDescribe, map[string]any{"kind": "pod", "namespace": fixtureNS, "name": podName(t, c, "oomkill")},
			[]string{"Last State: Terminated (OOMKilled) exit code 137", "Restart Count: 293", "Controlled By: ReplicaSet/oomkill-", "BackOff"}, nil},
		{"describe configmap hides values", ToolDescribe, map[string]any{"kind": "configmaps", "namespace": fixtureNS, "name": "app-config"},
			[]string{"DB_URL: 23 bytes"}, []string{"postgres://"}},
		{"describe node", ToolDescribe, map[string]any{"kind": "nodes", "name": "kubecrew-fixture-node"},
			[]string{"Ready: True (KubeletReady)", "Allocatable: cpu 3800m"}, nil},
		{"events warning in ns", ToolGetEvents, map[string]any{"namespace": fixtureNS, "type": "Warning"},
			[]string{"where type=Warning: 9", "FailedScheduling", "Unhealthy"}, []string{"Pulled", "Normal"}},
		{"events by reason", ToolGetEvents, map[string]any{"reason": "Unhealthy", "since": "2h"},
			[]string{"within 2h where reason=Unhealthy: 1", "Readiness probe failed"}, []string{"BackOff"}},
		{"events by object", ToolGetEvents, map[string]any{"namespace": fixtureNS, "kind": "pod", "name": podName(t, c, "configerror")},
			[]string{"involvedObject.kind=Pod", `configmap "missing" not found`}, []string{"BackOff"}},
		{"events short window", ToolGetEvents, map[string]any{"reason": "FailedScheduling", "since": "1m"},
			[]string{": none"}, nil},
		{"logs single container", ToolPodLogs, map[string]any{"namespace": fixtureNS, "name": podName(t, c, "crashloop"), "previous": true, "tail_lines": 10000},
			[]string{"container app (previous instance, last 500 lines", "fake logs"}, nil},
		{"yaml deployment", ToolGetYAML, map[string]any{"kind": "deployments", "namespace": fixtureNS, "name": "oomkill"},
			[]string{"apiVersion: apps/v1", "kind: Deployment", "memory: 32Mi"}, []string{"managedFields"}},
		{"yaml configmap", ToolGetYAML, map[string]any{"kind": "cm", "namespace": fixtureNS, "name": "app-config"},
			[]string{"kind: ConfigMap", "LOG_LEVEL: '[REDACTED:configmap-value]'", "DB_URL: '[REDACTED:configmap-value]'"}, []string{"debug", "postgres://"}},
		{"api resources", ToolAPIResources, map[string]any{}, []string{"deployments", "apps/v1", "secrets (denied to kubecrew)"}, []string{"v1beta1"}},
		{"api resources group", ToolAPIResources, map[string]any{"group": "apps"}, []string{"1 resource type in group \"apps\""}, []string{"pods"}},
		{"nodes tool", ToolNodes, map[string]any{}, []string{"1 node: 1 ready, 0 not ready, 0 under pressure", "15Gi"}, nil},
		{"one node", ToolNodes, map[string]any{"name": "kubecrew-fixture-node"}, []string{"1 node"}, nil},
		{"rollout status", ToolRollout, map[string]any{"action": "status", "kind": "deployments", "namespace": fixtureNS, "name": "healthy"},
			[]string{"successfully rolled out (2/2 ready)"}, nil},
		{"rollout status broken", ToolRollout, map[string]any{"action": "status", "kind": "deployments", "namespace": fixtureNS, "name": "oomkill"},
			[]string{"waiting for rollout to finish: 0 of 1 updated replicas available"}, nil},
		{"rollout history", ToolRollout, map[string]any{"action": "history", "kind": "deployments", "namespace": fixtureNS, "name": "healthy"},
			[]string{"app=busybox:1.35", "app=busybox:1.36", "REVISION"}, nil},
		{"cluster problems tool", ToolClusterProblems, map[string]any{"since": "2h"},
			[]string{"within 2h", "OOMKilled shop/Deployment/oomkill", "coverage:"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, outcome := call(context.Background(), c, tc.tool, tc.args)
			if outcome != tools.OutcomeOK {
				t.Fatalf("%s: %s", outcome, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("unexpected %q in:\n%s", n, out)
				}
			}
		})
	}
}

func podName(t *testing.T, c *Client, workload string) string {
	t.Helper()
	l, err := c.cs.CoreV1().Pods(fixtureNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + workload})
	if err != nil || len(l.Items) == 0 {
		t.Fatalf("no pod for %s: %v", workload, err)
	}
	return l.Items[0].Name
}

func apiResources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "list"}, ShortNames: []string{"po"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
			{Name: "secrets", Namespaced: true, Kind: "Secret", Verbs: []string{"get", "list"}}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"list", "get"}}}},
		{GroupVersion: "apps/v1beta1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"list"}}}},
	}
}

// TestRefusals: every bad slot gets a clear error before the API is touched.
func TestRefusals(t *testing.T) {
	t.Parallel()
	c, cs := brokenClient(t)
	cases := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"list secrets", ToolGetResources, map[string]any{"kind": "secrets"}, "kind secrets is denied"},
		{"list secret singular", ToolGetResources, map[string]any{"kind": "Secret"}, "kind secrets is denied"},
		{"list secrets with group", ToolGetResources, map[string]any{"kind": "secrets.v1."}, "kind secrets is denied"},
		{"yaml secret", ToolGetYAML, map[string]any{"kind": "secrets", "namespace": "shop", "name": "db"}, "kind secrets is denied"},
		{"describe secret", ToolDescribe, map[string]any{"kind": "secret", "namespace": "shop", "name": "db"}, "kind secrets is denied"},
		{"events of a secret", ToolGetEvents, map[string]any{"kind": "Secret"}, "kind secrets is denied"},
		{"rollout a secret", ToolRollout, map[string]any{"action": "status", "kind": "secrets", "namespace": "shop", "name": "db"}, "kind secrets is denied"},
		{"unknown kind", ToolGetResources, map[string]any{"kind": "widgets"}, `kind "widgets" is not supported here`},
		{"missing kind", ToolGetResources, map[string]any{}, "kind is required"},
		{"describe events", ToolDescribe, map[string]any{"kind": "events", "namespace": "shop", "name": "x"}, "use k8s_get_events"},
		{"rollout of pods", ToolRollout, map[string]any{"action": "status", "kind": "pods", "namespace": "shop", "name": "x"}, "not supported here"},
		{"bad namespace", ToolGetResources, map[string]any{"kind": "pods", "namespace": "Shop"}, "invalid namespace"},
		{"path namespace", ToolGetResources, map[string]any{"kind": "pods", "namespace": "../kube-system"}, "invalid namespace"},
		{"flag as name", ToolDescribe, map[string]any{"kind": "pods", "namespace": "shop", "name": "--all-namespaces"}, "invalid name"},
		{"long name", ToolGetYAML, map[string]any{"kind": "pods", "namespace": "shop", "name": strings.Repeat("a", 254)}, "at most 253"},
		{"missing name", ToolGetYAML, map[string]any{"kind": "pods", "namespace": "shop"}, "name is required"},
		{"missing namespace", ToolGetYAML, map[string]any{"kind": "pods", "name": "x"}, "namespace is required"},
		{"bad selector", ToolGetResources, map[string]any{"kind": "pods", "label_selector": "app in (a"}, "invalid label_selector"},
		{"negative limit", ToolGetResources, map[string]any{"kind": "pods", "limit": -1}, "cannot be negative"},
		{"unknown field", ToolGetResources, map[string]any{"kind": "pods", "output": "json"}, "unknown field"},
		{"bad event type", ToolGetEvents, map[string]any{"type": "Error"}, "Normal or Warning"},
		{"bad reason", ToolGetEvents, map[string]any{"reason": "Back Off;rm"}, "invalid reason"},
		{"bad since", ToolGetEvents, map[string]any{"since": "forever"}, "invalid since"},
		{"since too long", ToolGetEvents, map[string]any{"since": "30d"}, "between 1m and 7d"},
		{"logs bad container", ToolPodLogs, map[string]any{"namespace": "shop", "name": podName(t, c, "healthy"), "container": "sidecar"}, "has no container"},
		{"logs missing pod", ToolPodLogs, map[string]any{"namespace": "shop", "name": "nope"}, "not found: pod shop/nope"},
		{"yaml missing object", ToolGetYAML, map[string]any{"kind": "deployments", "namespace": "shop", "name": "nope"}, "not found: Deployment shop/nope"},
		{"bad group", ToolAPIResources, map[string]any{"group": "Apps!"}, "invalid group"},
		{"bad rollout action", ToolRollout, map[string]any{"action": "scale", "kind": "deployments", "namespace": "shop", "name": "healthy"}, "unknown action"},
		{"to_revision without undo", ToolRollout, map[string]any{"action": "restart", "kind": "deployments", "namespace": "shop", "name": "healthy", "to_revision": 1}, "only for undo"},
		{"problems bad namespace", ToolClusterProblems, map[string]any{"namespace": "A B"}, "invalid namespace"},
		{"problems bad since", ToolClusterProblems, map[string]any{"since": "0s"}, "invalid since"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, outcome := call(interactive(), c, tc.tool, tc.args)
			if outcome != tools.OutcomeError || !strings.HasPrefix(out, "ERROR: ") || !strings.Contains(out, tc.want) {
				t.Errorf("got %s %q, want an error containing %q", outcome, out, tc.want)
			}
		})
	}
	// no refusal above may have written anything
	for _, a := range cs.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("a refused call reached the API: %s %s", v, a.GetResource().Resource)
		}
		if a.GetResource().Resource == "secrets" {
			t.Errorf("secrets touched: %v", a)
		}
	}
}

// TestSchemaEnumsMatchKinds: the kind enum the model sees is exactly Kinds
// (minus what a tool refuses), so the schema and the validator cannot drift.
func TestSchemaEnumsMatchKinds(t *testing.T) {
	t.Parallel()
	c, _ := fakeClient(t)
	want := map[string][]string{
		ToolGetResources: Kinds,
		ToolGetYAML:      Kinds,
		ToolDescribe:     describeKinds,
		ToolRollout:      rolloutKinds,
	}
	for _, tl := range Tools(c) {
		kinds, ok := want[tl.Name()]
		if !ok {
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tl.Parameters(), &schema); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(schema.Properties["kind"].Enum, ","); got != strings.Join(kinds, ",") {
			t.Errorf("%s kind enum = %s\nwant %s", tl.Name(), got, strings.Join(kinds, ","))
		}
	}
}

// TestGetEventsKeepsTheNewest: a listing of more events than it shows
// keeps only the newest so far, yet counts them all and shows the same
// newest ones, newest first.
func TestGetEventsKeepsTheNewest(t *testing.T) {
	t.Parallel()
	var objs []runtime.Object
	const n = 2500
	for i := 0; i < n; i++ {
		at := metav1.NewTime(testNow.Add(-time.Duration((i*7919)%n) * time.Second)) // shuffled times
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("e%04d", (i*7919)%n)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "p"}, Type: corev1.EventTypeWarning,
			Reason: "BackOff", Message: fmt.Sprintf("m%04d", (i*7919)%n), LastTimestamp: at, Count: 1})
	}
	c, _ := fakeClient(t, objs...)
	out, err := c.GetEvents(context.Background(), GetEventsArgs{Namespace: "shop", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf(": %d (newest 5 shown)", n)) {
		t.Errorf("header: %s", out)
	}
	last := -1
	for i := 0; i < 5; i++ {
		at := strings.Index(out, fmt.Sprintf("m%04d", i))
		if at < 0 || at < last {
			t.Fatalf("m%04d missing or out of order:\n%s", i, out)
		}
		last = at
	}
	if strings.Contains(out, "m0005") {
		t.Errorf("an older event shown:\n%s", out)
	}
}
