package kubetest

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Planted is a problem the large fixture contains on purpose: the object a
// sweep must name (the owning workload, a node) and the reasons it may give.
type Planted struct {
	Namespace, Kind, Name string
	Reasons               []string // the first is the one that must be reported
}

// Large fixture shape, after the production cluster of seed 000 (615
// Deployments, ~1,250 pods, ~600 namespaces, ~3,700 Warning events).
const (
	LargeNamespaces  = 600
	LargeDeployments = 615
	largeNodes       = 5
)

// LargeObjects builds a cluster of LargeNamespaces namespaces named
// prefix-000…, LargeDeployments Deployments with 1,250 pods, five nodes and
// ~3,700 Warning events — nearly all of them history older than an hour on
// healthy pods — with a few dozen planted problems, returned with what a
// sweep must report for each.
func LargeObjects(prefix string, now time.Time) (*Objects, []Planted) {
	b := newBuilder(now)
	var planted []Planted
	nodes := make([]string, largeNodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s-node-%d", prefix, i)
		switch i {
		case 3:
			b.node(nodes[i], false, "")
			planted = append(planted, Planted{"", "Node", nodes[i], []string{"NodeNotReady"}})
		case 4:
			b.node(nodes[i], true, corev1.NodeMemoryPressure)
			planted = append(planted, Planted{"", "Node", nodes[i], []string{"MemoryPressure"}})
		default:
			b.node(nodes[i], true, "")
		}
	}
	for i := 0; i < LargeNamespaces; i++ {
		b.namespace(fmt.Sprintf("%s-%03d", prefix, i))
	}
	// planted pod scenarios by Deployment index, spread over the namespaces
	type plan struct {
		sc       Scenario
		affected int
		reason   string
	}
	plans := map[int]plan{}
	put := func(sc Scenario, reason string, idx ...int) {
		for _, i := range idx {
			plans[i] = plan{sc, -1, reason}
		}
	}
	put(OOMKill, "OOMKilled", 7, 101, 202, 303, 404, 505)
	put(CrashLoop, "CrashLoopBackOff", 13, 113, 213, 313, 413, 513)
	plans[513] = plan{CrashLoop, 1, "CrashLoopBackOff"} // one of its two pods
	put(ImagePull, "ImagePullBackOff", 21, 121, 221, 321)
	put(ConfigError, "CreateContainerConfigError", 34, 134, 234)
	put(Unschedulable, "Unschedulable", 45, 145, 245, 345)
	put(NotReady, "ProbeFailure", 56, 156, 256, 356)
	short := map[int]bool{67: true, 167: true} // quota: one pod never created
	mount := 78                                // a FailedMount event on a healthy workload
	three := map[int]bool{}                    // 20 Deployments run 3 replicas: 1,250 pods
	for i := 0; i < 20; i++ {
		three[30*i+5] = true
	}
	healthyPods := []*corev1.Pod{}
	for i := 0; i < LargeDeployments; i++ {
		ns := fmt.Sprintf("%s-%03d", prefix, i%LargeNamespaces)
		name := fmt.Sprintf("svc-%03d", i)
		if i >= LargeNamespaces {
			name = fmt.Sprintf("worker-%03d", i)
		}
		replicas := int32(2)
		if three[i] || short[i] {
			replicas = 3
		}
		d := largeDeployment(ns, name, replicas)
		node := nodes[i%3]
		p, isPlanted := plans[i]
		first := len(b.o.Pods)
		switch {
		case isPlanted:
			b.workload(d, p.sc, wopts{affected: p.affected, node: node})
			planted = append(planted, Planted{ns, "Deployment", name, []string{p.reason}})
		case short[i]:
			b.workload(d, Healthy, wopts{missing: 1, node: node})
			rs := b.o.ReplicaSets[len(b.o.ReplicaSets)-1]
			b.eventFor(corev1.ObjectReference{Kind: "ReplicaSet", Namespace: ns, Name: rs.Name, UID: rs.UID, APIVersion: "apps/v1"}, "",
				corev1.EventTypeWarning, "FailedCreate",
				fmt.Sprintf(`Error creating: pods "%s-x7k2p" is forbidden: exceeded quota: compute-quota, requested: limits.memory=256Mi, used: limits.memory=512Mi, limited: limits.memory=512Mi`, rs.Name),
				41, 3*time.Hour, 3*time.Minute, "replicaset-controller")
			planted = append(planted, Planted{ns, "Deployment", name, []string{"ReplicasUnavailable", "FailedCreate"}})
		default:
			b.workload(d, Healthy, wopts{node: node})
			if i == mount {
				p := b.o.Pods[len(b.o.Pods)-1]
				b.event(p, corev1.EventTypeWarning, "FailedMount",
					fmt.Sprintf(`MountVolume.SetUp failed for volume "config" : configmap "%s-config" not found`, name), 12, 40*time.Minute, 2*time.Minute, "kubelet")
				planted = append(planted, Planted{ns, "Deployment", name, []string{"FailedMount"}})
			}
		}
		for _, p := range b.o.Pods[first:] {
			if p.Status.ContainerStatuses != nil && p.Status.ContainerStatuses[0].Ready {
				healthyPods = append(healthyPods, p)
			}
		}
	}
	// two nightly CronJobs whose last Job failed
	for _, i := range []int{90, 290} {
		ns := fmt.Sprintf("%s-%03d", prefix, i)
		b.failedJob(ns, "nightly-report", "nightly-report-29245120")
		planted = append(planted, Planted{ns, "CronJob", "nightly-report", []string{"JobFailed"}})
	}
	// history: ~3,600 Warning events on healthy pods, last seen 2-23 hours ago
	noise := []struct{ reason, msg string }{
		{"BackOff", "Back-off restarting failed container app in pod %s"},
		{"Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"},
		{"FailedScheduling", "0/5 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 3 Insufficient cpu."},
		{"FailedMount", `MountVolume.SetUp failed for volume "kube-api-access" : object "%s"/"kube-root-ca.crt" not registered`},
		{"NetworkNotReady", "network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"},
	}
	for k := 0; k < 3600; k++ {
		p := healthyPods[k%len(healthyPods)]
		n := noise[k%len(noise)]
		msg := n.msg
		if n.reason == "BackOff" {
			msg = fmt.Sprintf(msg, p.Name)
		} else if n.reason == "FailedMount" {
			msg = fmt.Sprintf(msg, p.Namespace)
		}
		last := 2*time.Hour + time.Duration(k%1260)*time.Minute
		b.event(p, corev1.EventTypeWarning, n.reason, msg, int32(1+k%7), last+time.Hour, last, "kubelet")
	}
	// recent Normal events: the sweep must not read them
	for k := 0; k < 300; k++ {
		p := healthyPods[(k*7)%len(healthyPods)]
		b.event(p, corev1.EventTypeNormal, "Pulled", `Container image "registry.example.com/shop/svc:4.2.1" already present on machine`, 1, 10*time.Minute, 10*time.Minute, "kubelet")
	}
	return b.o, planted
}

func largeDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/shop/svc:4.2.1",
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
					},
				}}},
			},
		},
	}
}

// failedJob adds a CronJob-owned Job that hit its backoff limit.
func (b *builder) failedJob(ns, cronJob, name string) {
	backoff := int32(6)
	t := b.t(50 * time.Minute)
	start := b.t(70 * time.Minute)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Job", ns, name),
			OwnerReferences: ctrl("CronJob", "batch/v1", cronJob, uid("CronJob", ns, cronJob))},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "report", Image: "registry.example.com/shop/report:1.9.0"}},
		}}},
		Status: batchv1.JobStatus{Failed: 7, StartTime: &start, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: t, LastTransitionTime: t},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: t, LastTransitionTime: t},
		}},
	}
	b.o.Jobs = append(b.o.Jobs, j)
}
