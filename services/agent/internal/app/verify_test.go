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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/pkg/pager/pagertest"
)

// TestAMergedBumpThatDidNotStopTheOOMKillsPagesOnceAndResolvesOnce runs on
// the test API server: Sol opens the memory-bump PR for the OOM-killed
// fixture, Vera reviews and merges it, and the test plays the GitOps
// controller (the merged limit applied, the rollout done) and the kubelet
// (the container OOM-killed again, over and over). Vera's follow-up check
// finds the fix did not work and pages PagerDuty once — however many
// checks see the kills go on — with the evidence and the report link;
// when the container stops being killed and the Deployment is available
// for a whole window, the page is resolved once, and both checks are on
// the merge in Vera's action log.
func TestAMergedBumpThatDidNotStopTheOOMKillsPagesOnceAndResolvesOnce(t *testing.T) {
	env := kubetest.Start(t)
	ctx := context.Background()
	ns := fmt.Sprintf("kc-verify-%d", rand.IntN(1_000_000_000))
	if err := env.LoadFixtures(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pd := pagertest.NewPagerDuty(t)
	repo := fixturesRepo(t)
	urls := fleet(t, map[string]string{"KUBECONFIG": env.Kubeconfig, "GITOPS_FORGE": "local", "GITOPS_REPO": repo,
		"PAGE_TARGET": "pagerduty", "PAGE_KEY": pd.RoutingKey, "PAGE_URL": pd.URL, "PAGE_LINK_BASE": "https://kubecrew.example.com/vera",
		"ACTIONS_VERIFY_SYNC_TIMEOUT": "60s", "ACTIONS_VERIFY_WINDOW": "1s", "ACTIONS_VERIFY_INTERVAL": "100ms", "ACTIONS_VERIFY_WATCH": "2m"},
		"sol", "vera")

	finding, _ := json.Marshal(api.Finding{Severity: "critical", Kind: "Deployment", Namespace: ns, Name: "oomkill", Container: "app",
		Reason: "OOMKilled", Detail: "OOMKilled 293 times", Remediable: true, Confidence: 1})
	body, _ := json.Marshal(api.RunRequest{Task: "fix this finding", Context: map[string]string{"finding": string(finding)}})
	if code, b := do(t, "POST", urls["sol"]+"/run", string(body)); code != 200 {
		t.Fatalf("sol /run = %d %s", code, b)
	}
	forge, err := gitops.NewLocal(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "Vera merged the PR", 30*time.Second, func() bool {
		prs, _ := forge.ListPRs(ctx, "all")
		return len(prs) == 1 && prs[0].State == gitops.StateMerged
	})

	cs := env.Clientset
	applyMerged(t, cs, ns, "48Mi") // the GitOps controller syncs the merged revision
	kill := oomKiller(t, cs, ns)   // the kubelet: the container is OOM-killed again and again
	key := "kubecrew/" + ns + "-deployment-oomkill-app"
	poll(t, "the page", 60*time.Second, func() bool { kill(); return pd.Count("trigger", key) > 0 })
	for range 15 { // the kills go on across many checks
		kill()
		time.Sleep(100 * time.Millisecond)
	}
	if n := pd.Count("trigger", key); n != 1 {
		t.Fatalf("%d triggers for %s, want 1: %+v", n, key, pd.Events())
	}
	tr := pd.Events()[0]
	if tr.Payload.Severity != "critical" || tr.Payload.Source != ns+"/Deployment/oomkill" ||
		!strings.Contains(tr.Payload.Summary, "the merged memory bump (32Mi → 48Mi) did not fix "+ns+"/Deployment/oomkill") ||
		!strings.Contains(tr.Payload.Details["evidence"], "OOM kill(s) since the change was live") ||
		!strings.Contains(tr.Payload.Details["oom_kill_1"], "container app OOMKilled at ") ||
		len(tr.Links) != 1 || !strings.HasPrefix(tr.Links[0].Href, "https://kubecrew.example.com/vera/runs/") {
		t.Errorf("trigger: %+v payload %+v", tr, tr.Payload)
	}

	recoverOOMKill(t, cs, ns) // a human raised it further, or the load went away: no more kills, available
	poll(t, "the resolve", 60*time.Second, func() bool { return pd.Count("resolve", key) > 0 })
	time.Sleep(500 * time.Millisecond) // several more watch intervals: nothing else may be sent
	if tr, rs := pd.Count("trigger", key), pd.Count("resolve", key); tr != 1 || rs != 1 || len(pd.Rejected()) != 0 {
		t.Fatalf("triggers %d, resolves %d (want 1 and 1), refused %v", tr, rs, pd.Rejected())
	}

	_, lb := do(t, "GET", urls["vera"]+"/actions/log?outcome=done", "")
	var log struct {
		Items []api.ActionView `json:"items"`
	}
	if err := json.Unmarshal(lb, &log); err != nil || len(log.Items) != 1 {
		t.Fatalf("vera's action log: %s", lb)
	}
	m := log.Items[0]
	if m.Action != "gitops.pr.mergetrivial" || m.Namespace != ns || m.Name != "oomkill" || m.Container != "app" || len(m.Checks) != 2 ||
		m.Checks[1].Status != "not_fixed" || m.Checks[1].Paged != "triggered" || m.Checks[0].Status != "fixed" || m.Checks[0].Paged != "resolved" {
		t.Fatalf("the merge and its checks: %+v", m)
	}
}

func poll(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// applyMerged does what the GitOps controller and the Deployment
// controller would: the merged limit in the live spec, the rollout done
// (the new pod not available: it is being OOM-killed).
func applyMerged(t *testing.T, cs kubernetes.Interface, ns, limit string) {
	t.Helper()
	ctx := context.Background()
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "oomkill", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse(limit)
	if d, err = cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setDeploymentStatus(t, cs, d, false)
}

func setDeploymentStatus(t *testing.T, cs kubernetes.Interface, d *appsv1.Deployment, available bool) {
	t.Helper()
	st := corev1.ConditionFalse
	var ready int32
	if available {
		st, ready = corev1.ConditionTrue, 1
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: ready,
		AvailableReplicas: ready, UnavailableReplicas: 1 - ready, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: st, Reason: "MinimumReplicasAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()},
		}}
	if _, err := cs.AppsV1().Deployments(d.Namespace).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// oomKiller returns what the kubelet does to the container each time it
// is killed: its last state is a fresh OOMKilled termination, it waits in
// CrashLoopBackOff, its restart count goes up.
func oomKiller(t *testing.T, cs kubernetes.Interface, ns string) func() {
	return func() {
		t.Helper()
		ctx := context.Background()
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=oomkill"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("oomkill pods: %v (%d)", err, len(pods.Items))
		}
		for _, p := range pods.Items {
			now := metav1.Now()
			s := &p.Status.ContainerStatuses[0]
			s.RestartCount++
			s.Ready = false
			s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			s.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
				StartedAt: metav1.NewTime(now.Add(-2 * time.Second)), FinishedAt: now}}
			if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// recoverOOMKill: the container runs and is ready (its last OOM kill is the old
// one), the Deployment is available.
func recoverOOMKill(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=oomkill"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		s := &p.Status.ContainerStatuses[0]
		s.Ready, s.Started = true, new(true)
		s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "oomkill", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setDeploymentStatus(t, cs, d, true)
}
