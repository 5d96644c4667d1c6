package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

func getDeploy(t *testing.T, c *Client, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := c.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func patches(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "update" || a.GetVerb() == "create" || a.GetVerb() == "delete" {
			n++
		}
	}
	return n
}

// TestRolloutGate: autonomous runs (a context without a mode is one) may
// read and restart; undo, pause and resume are refused at call time,
// whatever name the tool is called by, and nothing is written.
func TestRolloutGate(t *testing.T) {
	t.Parallel()
	autonomous := context.Background()
	cases := []struct {
		name     string
		ctx      context.Context
		tool     string // "" = k8s_rollout
		action   string
		denied   bool
		mutation bool
		refused  bool // the restart's precondition refuses (restartEvidence)
	}{
		{"autonomous status", autonomous, "", "status", false, false, false},
		{"autonomous history", autonomous, "", "history", false, false, false},
		{"autonomous restart, no evidence", autonomous, "", "restart", false, false, true},
		{"interactive restart", interactive(), "", "restart", false, true, false},
		{"autonomous undo", autonomous, "", "undo", true, false, false},
		{"autonomous pause", autonomous, "", "pause", true, false, false},
		{"autonomous resume", autonomous, "", "resume", true, false, false},
		{"autonomous undo via alias", autonomous, "k8s_rollout_undo", "undo", true, false, false},
		{"autonomous pause via alias", autonomous, "restart_things", "pause", true, false, false},
		{"explicit autonomous mode undo", tools.WithMode(autonomous, tools.ModeAutonomous), "", "undo", true, false, false},
		{"interactive undo", interactive(), "", "undo", false, true, false},
		{"interactive pause", interactive(), "", "pause", false, true, false},
		{"interactive undo via alias", interactive(), "k8s_rollout_undo", "undo", false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, cs := brokenClient(t)
			rollout := Tools(c)[8]
			set := tools.Set{rollout}
			name := ToolRollout
			if tc.tool != "" {
				set = tools.Set{tools.Alias(tc.tool, rollout)}
				name = tc.tool
			}
			args, _ := json.Marshal(RolloutArgs{Action: tc.action, Kind: "deployments", Namespace: fixtureNS, Name: "healthy"})
			res := set.Call(tc.ctx, name, args, 0)
			out, outcome := res.Output, res.Outcome
			if tc.denied {
				if outcome != tools.OutcomeDenied || !strings.Contains(out, "k8s.rollout."+tc.action+" is not allowed in an autonomous run") {
					t.Fatalf("want denied, got %s: %s", outcome, out)
				}
				if len(cs.Actions()) != 0 {
					t.Errorf("a denied call touched the API: %v", cs.Actions())
				}
				return
			}
			if tc.refused {
				if outcome == tools.OutcomeOK || !strings.Contains(out, ErrPrecondition.Error()) {
					t.Fatalf("want refused by the precondition, got %s: %s", outcome, out)
				}
			} else if outcome != tools.OutcomeOK {
				t.Fatalf("%s: %s", outcome, out)
			}
			if got := patches(cs) > 0; got != tc.mutation {
				t.Errorf("mutation = %v, want %v (%v)", got, tc.mutation, cs.Actions())
			}
		})
	}
}

func TestRolloutRestartSetsAnnotation(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	out, err := c.Rollout(interactive(), RolloutArgs{Action: "restart", Kind: "deploy", Namespace: fixtureNS, Name: "oomkill"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "restarted Deployment shop/oomkill") {
		t.Errorf("answer = %q", out)
	}
	d := getDeploy(t, c, fixtureNS, "oomkill")
	if got := d.Spec.Template.Annotations[RestartAnnotation]; got != testNow.Format(time.RFC3339) {
		t.Errorf("restartedAt = %q, want %q", got, testNow.Format(time.RFC3339))
	}
	if d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String() != "32Mi" {
		t.Error("restart changed more than the annotation")
	}
}

func TestRolloutUndoRestoresPreviousTemplate(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	out, err := c.Rollout(interactive(), RolloutArgs{Action: "undo", Kind: "deployments", Namespace: fixtureNS, Name: "healthy"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "rolled back (revision 2 -> 1)") {
		t.Errorf("answer = %q", out)
	}
	d := getDeploy(t, c, fixtureNS, "healthy")
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "busybox:1.35" {
		t.Errorf("image after undo = %s", img)
	}
	if _, ok := d.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Error("pod-template-hash leaked into the deployment template")
	}
	if _, err := c.Rollout(interactive(), RolloutArgs{Action: "undo", Kind: "deployments", Namespace: fixtureNS, Name: "healthy", ToRevision: 7}); err == nil ||
		!strings.Contains(err.Error(), "revision 7 not found") {
		t.Errorf("undo to a missing revision: %v", err)
	}
	if _, err := c.Rollout(interactive(), RolloutArgs{Action: "undo", Kind: "deployments", Namespace: fixtureNS, Name: "oomkill"}); err == nil ||
		!strings.Contains(err.Error(), "no previous revision") {
		t.Errorf("undo without history: %v", err)
	}
}

func TestRolloutPauseResume(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	ctx := interactive()
	if _, err := c.Rollout(ctx, RolloutArgs{Action: "pause", Kind: "deployments", Namespace: fixtureNS, Name: "healthy"}); err != nil {
		t.Fatal(err)
	}
	if !getDeploy(t, c, fixtureNS, "healthy").Spec.Paused {
		t.Fatal("not paused")
	}
	if _, err := c.Rollout(ctx, RolloutArgs{Action: "restart", Kind: "deployments", Namespace: fixtureNS, Name: "healthy"}); err == nil || !strings.Contains(err.Error(), "is paused") {
		t.Errorf("restart of a paused deployment: %v", err)
	}
	if _, err := c.Rollout(ctx, RolloutArgs{Action: "pause", Kind: "deployments", Namespace: fixtureNS, Name: "healthy"}); err == nil {
		t.Error("double pause accepted")
	}
	if _, err := c.Rollout(ctx, RolloutArgs{Action: "resume", Kind: "deployments", Namespace: fixtureNS, Name: "healthy"}); err != nil {
		t.Fatal(err)
	}
	if getDeploy(t, c, fixtureNS, "healthy").Spec.Paused {
		t.Fatal("still paused")
	}
}

// TestRolloutRefusesFleet: lesson 14, the detector could restart itself.
// Even an interactive restart of a kubecrew workload is refused, by the
// workload's label or its pod template's.
func TestRolloutRefusesFleet(t *testing.T) {
	t.Parallel()
	o, err := kubetest.BrokenObjects("kubecrew", testNow)
	if err != nil {
		t.Fatal(err)
	}
	o.Deployments[0].Labels[FleetLabel] = FleetValue               // configerror: on the Deployment
	o.Deployments[1].Spec.Template.Labels[FleetLabel] = FleetValue // crashloop: on the template only
	c, cs := fakeClient(t, o.All()...)
	for _, name := range []string{o.Deployments[0].Name, o.Deployments[1].Name} {
		for _, ctx := range []context.Context{context.Background(), interactive()} {
			_, err := c.Rollout(ctx, RolloutArgs{Action: "restart", Kind: "deployments", Namespace: "kubecrew", Name: name})
			if !errors.Is(err, ErrFleetWorkload) {
				t.Errorf("%s: err = %v, want ErrFleetWorkload", name, err)
			}
		}
	}
	if n := patches(cs); n != 0 {
		t.Errorf("%d writes to fleet workloads", n)
	}
	if _, err := c.Rollout(context.Background(), RolloutArgs{Action: "status", Kind: "deployments", Namespace: "kubecrew", Name: o.Deployments[0].Name}); err != nil {
		t.Errorf("reading a fleet workload's status is fine: %v", err)
	}
}

func TestRolloutStatefulSetAndDaemonSet(t *testing.T) {
	t.Parallel()
	three := int32(3)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "data", UID: "sts-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-2"}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "data", UID: "ds-uid"},
		Spec:   appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 4}}
	tr := true
	rev := func(n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-" + string(rune('0'+n)), Namespace: "data", Labels: map[string]string{"app": "db"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "sts-uid", Controller: &tr}}},
			Revision: n, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"metadata":{"labels":{"rev":"` + string(rune('0'+n)) + `"}}}}}`)}}
	}
	c, _ := fakeClient(t, sts, ds, rev(1), rev(2))
	out, err := c.Rollout(context.Background(), RolloutArgs{Action: "status", Kind: "sts", Namespace: "data", Name: "db"})
	if err != nil || !strings.Contains(out, "waiting for 1 pods to be ready (2/3)") {
		t.Errorf("sts status = %q %v", out, err)
	}
	out, err = c.Rollout(context.Background(), RolloutArgs{Action: "status", Kind: "daemonsets", Namespace: "data", Name: "agent"})
	if err != nil || !strings.Contains(out, "successfully rolled out (4 pods)") {
		t.Errorf("ds status = %q %v", out, err)
	}
	out, err = c.Rollout(context.Background(), RolloutArgs{Action: "history", Kind: "statefulsets", Namespace: "data", Name: "db"})
	if err != nil || !strings.Contains(out, "db-1") || !strings.Contains(out, "db-2") {
		t.Errorf("sts history = %q %v", out, err)
	}
	if _, err := c.Rollout(interactive(), RolloutArgs{Action: "undo", Kind: "statefulsets", Namespace: "data", Name: "db"}); err != nil {
		t.Fatalf("sts undo: %v", err)
	}
	got, _ := c.cs.AppsV1().StatefulSets("data").Get(context.Background(), "db", metav1.GetOptions{})
	if got.Spec.Template.Labels["rev"] != "1" {
		t.Errorf("sts undo did not apply revision 1's patch: %v", got.Spec.Template.Labels)
	}
	if _, err := c.Rollout(interactive(), RolloutArgs{Action: "pause", Kind: "daemonsets", Namespace: "data", Name: "agent"}); err == nil ||
		!strings.Contains(err.Error(), "only supported for deployments") {
		t.Errorf("ds pause: %v", err)
	}
}
