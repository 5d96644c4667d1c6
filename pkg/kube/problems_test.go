package kube

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

func findProblem(r *ProblemReport, ns, kind, name, reason string) *Problem {
	for i := range r.Problems {
		p := &r.Problems[i]
		if p.Namespace == ns && p.Kind == kind && p.Name == name && p.Reason == reason {
			return p
		}
	}
	return nil
}

func TestClusterProblemsFindsEachFixture(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureReport(t, r, fixtureNS)
	if len(r.Coverage.Partial) != 0 {
		t.Errorf("partial = %v, want none", r.Coverage.Partial)
	}
	want := []string{CheckPodStates, CheckWorkloadReplicas, CheckOwnerResolution, CheckFailedJobs, CheckNodeConditions,
		CheckServices, CheckPVCs, CheckIngresses, CheckHPAs, CheckPDBs, CheckWebhooks, CheckWarningEvents}
	if strings.Join(r.Coverage.ChecksRun, ",") != strings.Join(want, ",") {
		t.Errorf("checks_run = %v, want %v", r.Coverage.ChecksRun, want)
	}
}

// checkFixtureReport asserts what a sweep must say about the broken-workload
// fixtures in ns (shared with the integration test).
func checkFixtureReport(t *testing.T, r *ProblemReport, ns string) {
	t.Helper()
	for _, f := range kubetest.Fixtures {
		var got []Problem
		for _, p := range r.Problems {
			if p.Namespace == ns && p.Name == f.Name {
				got = append(got, p)
			}
		}
		if f.Reason == "" {
			if len(got) != 0 {
				t.Errorf("%s: healthy workload reported: %+v", f.Name, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s: %d problems, want exactly 1 (%s): %+v", f.Name, len(got), f.Reason, got)
			continue
		}
		p := got[0]
		if p.Reason != f.Reason || p.Kind != "Deployment" || p.Container != f.Container || p.Remediable != f.Remediable || p.Pods != 1 {
			t.Errorf("%s: got reason=%s owner=%s/%s container=%q remediable=%v pods=%d; want %s Deployment/%s %q %v 1",
				f.Name, p.Reason, p.Kind, p.Name, p.Container, p.Remediable, p.Pods, f.Reason, f.Name, f.Container, f.Remediable)
		}
		if !strings.HasPrefix(p.Pod, f.Name+"-") {
			t.Errorf("%s: example pod %q is not the workload's", f.Name, p.Pod)
		}
	}
	oom := findProblem(r, ns, "Deployment", "oomkill", ReasonOOMKilled)
	if oom == nil {
		t.Fatal("no OOMKilled problem")
	}
	if oom.Severity != api.SeverityCritical || oom.Restarts != 293 || !strings.Contains(oom.Detail, "memory limit 32Mi") ||
		!strings.Contains(oom.Detail, "exit 137") || oom.Events == 0 {
		t.Errorf("oomkill problem = %+v", *oom)
	}
	cfg := findProblem(r, ns, "Deployment", "configerror", ReasonConfigError)
	if cfg == nil || !strings.Contains(cfg.Detail, `configmap "missing" not found`) {
		t.Errorf("configerror detail: %+v", cfg)
	}
	uns := findProblem(r, ns, "Deployment", "unschedulable", ReasonUnschedulable)
	if uns == nil || !strings.Contains(uns.Detail, "Insufficient memory") || uns.Events == 0 {
		t.Errorf("unschedulable: %+v", uns)
	}
	out := r.Render()
	if n := utf8.RuneCountInString(out); n > DefaultProblemChars {
		t.Errorf("render is %d chars", n)
	}
	for _, f := range kubetest.Fixtures {
		if f.Reason != "" && !strings.Contains(out, f.Reason+" "+ns+"/Deployment/"+f.Name) {
			t.Errorf("render does not name %s %s/Deployment/%s:\n%s", f.Reason, ns, f.Name, out)
		}
	}
	if !strings.Contains(out, "\ncoverage:\n  checks_run: ") || !strings.HasSuffix(out, "\n") {
		t.Errorf("render has no coverage block at the end:\n%s", out)
	}
}

func TestClusterProblemsRenderIsDeterministic(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	var outs []string
	for i := 0; i < 3; i++ {
		r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, r.Render())
	}
	if outs[0] != outs[1] || outs[1] != outs[2] {
		t.Errorf("renders differ:\n%s\n---\n%s", outs[0], outs[1])
	}
}

func TestClusterProblemsForbiddenListIsPartial(t *testing.T) {
	t.Parallel()
	c, cs := brokenClient(t)
	cs.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New(`User "noor" cannot list resource "events" in API group "" at the cluster scope`))
	})
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Coverage.Partial) != 1 || r.Coverage.Partial[0].List != "events" || !strings.Contains(r.Coverage.Partial[0].Why, "forbidden") {
		t.Errorf("partial = %+v", r.Coverage.Partial)
	}
	skipped := false
	for _, s := range r.Coverage.ChecksSkipped {
		if s.Check == CheckWarningEvents {
			skipped = true
		}
	}
	if !skipped {
		t.Errorf("warning-events not in checks_skipped: %+v", r.Coverage.ChecksSkipped)
	}
	if findProblem(r, fixtureNS, "Deployment", "oomkill", ReasonOOMKilled) == nil {
		t.Error("state checks must still find the OOM kill without events")
	}
	out := r.Render()
	if !strings.Contains(out, "partial: events (forbidden") {
		t.Errorf("render does not show partial events:\n%s", out)
	}
	if r.Healthy() {
		t.Error("a partial sweep is never healthy")
	}
}

func TestClusterProblemsUnreachable(t *testing.T) {
	t.Parallel()
	c, cs := fakeClient(t)
	refused := &url.Error{Op: "Get", URL: "https://10.96.0.1:443/api/v1/pods", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, refused })
	_, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if !errors.Is(err, ErrClusterUnavailable) || !strings.HasPrefix(err.Error(), "cluster_unavailable: ") {
		t.Fatalf("err = %v, want cluster_unavailable", err)
	}
	out, outcome := call(context.Background(), c, ToolClusterProblems, map[string]any{})
	if !strings.HasPrefix(out, "ERROR: cluster_unavailable: ") || outcome != "error" {
		t.Errorf("tool = %q (%s)", out, outcome)
	}
}

func TestClusterProblemsSanitizesEventText(t *testing.T) {
	t.Parallel()
	evil := "\x1b[2J\x1b[31mdisk\u202Eexe.txt\u200b failing\n" + strings.Repeat("A", 10<<10)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "evil.1", Namespace: fixtureNS},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: fixtureNS, Name: "data"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed", Message: evil, Count: 3,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute)),
	}
	class := "fast"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: fixtureNS, CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	c, _ := brokenClient(t, ev, pvc)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := findProblem(r, fixtureNS, "PersistentVolumeClaim", "data", ReasonPVCPending)
	if p == nil {
		t.Fatalf("pending claim missing: %+v", r.Problems)
	}
	out := r.Render()
	for _, bad := range []string{"\x1b", "\u202E", "\u200b", strings.Repeat("A", detailMax+1)} {
		if strings.Contains(p.Evidence, bad) || strings.Contains(out, bad) {
			t.Errorf("%q survived", bad)
		}
	}
	if !strings.Contains(p.Evidence, "diskexe.txt failing AAAA") || utf8.RuneCountInString(p.Evidence) > detailMax {
		t.Errorf("evidence = %q", p.Evidence)
	}
}

func TestClusterProblemsOldEventsAreHistory(t *testing.T) {
	t.Parallel()
	old := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "old.1", Namespace: fixtureNS},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: fixtureNS, Name: "gone-abc"},
		Type:           corev1.EventTypeWarning, Reason: "FailedMount", Message: "old", Count: 1,
		LastTimestamp: metav1.NewTime(testNow.Add(-3 * time.Hour)),
	}
	c, _ := brokenClient(t, old)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := findProblem(r, fixtureNS, "Pod", "gone-abc", "FailedMount"); p != nil {
		t.Errorf("event older than the window reported: %+v", p)
	}
	if r.Coverage.EventsOutsideWindow != 1 {
		t.Errorf("outside window = %d", r.Coverage.EventsOutsideWindow)
	}
	// within a 4h window it is churn about a pod that is gone: never a problem
	r, _ = c.ClusterProblems(context.Background(), ProblemOptions{Window: 4 * time.Hour})
	if p := findProblem(r, fixtureNS, "Pod", "gone-abc", "FailedMount"); p != nil {
		t.Errorf("an event about a gone pod is a problem: %+v", p)
	}
	if r.Churn.Events != 1 || r.Churn.OnGone != 1 || r.Churn.ByReason["FailedMount"] != 1 {
		t.Errorf("churn = %+v", r.Churn)
	}
}

func TestClusterProblemsNamespaceScope(t *testing.T) {
	t.Parallel()
	c, _ := brokenClient(t)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems outside the namespace: %+v", r.Problems)
	}
	if r.Coverage.ChecksSkipped[0].Check != CheckNodeConditions {
		t.Errorf("node check not skipped for a namespace sweep: %+v", r.Coverage.ChecksSkipped)
	}
	if _, err := c.ClusterProblems(context.Background(), ProblemOptions{Namespace: "Bad_NS"}); err == nil {
		t.Error("bad namespace accepted")
	}
}

func TestClusterProblemsJobsNodesAndFleet(t *testing.T) {
	t.Parallel()
	tr := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29012345", Namespace: "batch", UID: "job-uid",
			OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "nightly", Controller: &tr, APIVersion: "batch/v1"}}},
		Status: batchv1.JobStatus{Failed: 6, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}},
	}
	notReady := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-2"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue, Message: "kubelet has insufficient memory available"}}}}
	o, err := kubetest.BrokenObjects("kubecrew", testNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range o.Deployments { // the fleet's own namespace: label every workload
		d.Labels[FleetLabel] = FleetValue
	}
	c, _ := fakeClient(t, append(o.All(), job, notReady)...)
	r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jp := findProblem(r, "batch", "CronJob", "nightly", ReasonJobFailed)
	if jp == nil || jp.Remediable || jp.Severity != api.SeverityMedium || !strings.Contains(jp.Detail, "BackoffLimitExceeded") {
		t.Errorf("failed job: %+v", jp)
	}
	if p := findProblem(r, "", "Node", "worker-2", ReasonNodeNotReady); p == nil || p.Severity != api.SeverityCritical {
		t.Errorf("node not ready: %+v", p)
	}
	if p := findProblem(r, "", "Node", "worker-2", "MemoryPressure"); p == nil || p.Severity != api.SeverityHigh {
		t.Errorf("memory pressure: %+v", p)
	}
	oom := findProblem(r, "kubecrew", "Deployment", "oomkill", ReasonOOMKilled)
	if oom == nil || oom.Remediable {
		t.Errorf("a fleet workload must not be remediable: %+v", oom)
	}
	for _, f := range ProblemsToFindings(r) {
		if f.Remediable {
			t.Errorf("nothing should be remediable: only fleet workloads are remediable-shaped: %+v", f)
		}
	}
	if r.Problems[0].Reason != ReasonNodeNotReady && r.Problems[0].Reason != ReasonOOMKilled {
		t.Errorf("first problem is not critical: %+v", r.Problems[0])
	}
}

func TestRenderBoundedOnManyProblems(t *testing.T) {
	t.Parallel()
	var ps []Problem
	for i := 0; i < 2000; i++ {
		ps = append(ps, Problem{Severity: api.SeverityLow, Check: CheckWarningEvents, Namespace: "ns", Kind: "Pod",
			Name: strings.Repeat("x", 50) + strconv.Itoa(i), Reason: "PVCPending", Detail: strings.Repeat("d", detailMax), Events: i})
	}
	r := &ProblemReport{Problems: ps, Coverage: Coverage{Scope: "all namespaces", Window: time.Hour, ChecksRun: []string{CheckPVCs}}}
	out := r.Render()
	if n := utf8.RuneCountInString(out); n > DefaultProblemChars {
		t.Fatalf("%d chars", n)
	}
	if !strings.Contains(out, "more broken objects not shown: low PVCPending x") || !strings.Contains(out, "coverage:") {
		t.Errorf("no summary or coverage:\n%s", out[len(out)-600:])
	}
}
