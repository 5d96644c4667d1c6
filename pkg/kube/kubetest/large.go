package kubetest

import (
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Planted is a problem the large fixture contains on purpose: the object a
// sweep must name (the owning workload, a node, a Service, ...) and the
// reasons it may give.
type Planted struct {
	Namespace, Kind, Name string
	Reasons               []string // the first is the one that must be reported
}

// Large fixture shape, after the production cluster of issue #12 (600
// namespaces, 615 Deployments, ~1,240 pods, 20 nodes, ~3,700 Warning
// events of which ~3,550 are churn).
const (
	LargeNamespaces  = 600
	LargeDeployments = 615
	largeNodes       = 20
	largeChurn       = 3550 // churn events within the hour, per scale unit
)

// LargeObjects is LargeObjectsScaled at scale 1.
func LargeObjects(prefix string, now time.Time) (*Objects, []Planted) {
	return LargeObjectsScaled(prefix, now, 1)
}

// LargeObjectsScaled builds a cluster of scale×600 namespaces named
// prefix-0000…, scale×615 Deployments (~2 pods each), 20 nodes that are
// all Ready, Services for a third of the Deployments, and scale×~3,550
// Warning events of churn within the last hour: probe failures, BackOff,
// FailedScheduling, FailedMount and node-controller NodeNotReady about pods
// that are Running and Ready now or that no longer exist, plus history
// older than the hour. Into it go 34 current problems of varied kinds
// (returned, with what a sweep must report for each) and as many
// look-alikes that are healthy by Kubernetes semantics (a Deployment
// scaled to zero behind a Service, a WaitForFirstConsumer claim, a CronJob
// that recovered, an HPA at max with a healthy target, a strict PDB over
// healthy pods, a rollout in progress, a container that recovered from an
// OOM kill).
func LargeObjectsScaled(prefix string, now time.Time, scale int) (*Objects, []Planted) {
	if scale < 1 {
		scale = 1
	}
	b := newBuilder(now)
	var planted []Planted
	plant := func(ns, kind, name string, reasons ...string) {
		planted = append(planted, Planted{ns, kind, name, reasons})
	}
	nsCount, depCount := LargeNamespaces*scale, LargeDeployments*scale
	nsName := func(i int) string { return fmt.Sprintf("%s-%04d", prefix, i%nsCount) }
	nodes := b.largeNodes(prefix, plant)
	for i := 0; i < nsCount; i++ {
		b.namespace(nsName(i))
	}
	plans := largePlans()
	quota := map[int]bool{67: true, 167: true} // 0/3: the quota blocks every pod
	const (
		scaledToZero = 590 // behind a Service, on purpose
		rolling      = 592 // mid-rollout, 2/3 available
		recovered    = 600 // OOM-killed 31 minutes ago, ready again
	)
	three := map[int]bool{}
	for i := 0; i < 20*scale; i++ {
		three[30*i+5] = true
	}
	var healthyPods []*corev1.Pod
	depName := func(i int) string {
		if i >= nsCount {
			return fmt.Sprintf("worker-%04d", i)
		}
		return fmt.Sprintf("svc-%04d", i)
	}
	for i := 0; i < depCount; i++ {
		ns, name := nsName(i), depName(i)
		replicas := int32(2)
		if three[i] || quota[i] || i == rolling {
			replicas = 3
		}
		if i == scaledToZero {
			replicas = 0
		}
		d := largeDeployment(ns, name, replicas)
		node := nodes[i%largeNodes]
		if i%largeNodes == 4 {
			node = nodes[5]
		}
		p, isPlanted := plans[i]
		first := len(b.o.Pods)
		switch {
		case isPlanted:
			b.workload(d, p.sc, wopts{affected: p.affected, node: node})
			plant(ns, "Deployment", name, p.reason)
		case quota[i]:
			b.quotaBlocked(d, node)
			plant(ns, "Deployment", name, "ReplicasUnavailable")
		case i == rolling:
			b.rollingOut(d, node)
		case i == recovered:
			b.workload(d, Recovered, wopts{affected: 1, node: node})
		default:
			b.workload(d, Healthy, wopts{node: node})
		}
		for _, p := range b.o.Pods[first:] {
			if p.Status.ContainerStatuses != nil && p.Status.ContainerStatuses[0].Ready {
				healthyPods = append(healthyPods, p)
			}
		}
		if i%3 == 0 || i == scaledToZero || quota[i] {
			b.service(ns, name, map[string]string{"app.kubernetes.io/name": name}, 80)
		}
	}
	b.largeExtras(prefix, nsName, depName, nodes, plant)
	b.churn(prefix, healthyPods, nodes, scale)
	return b.o, planted
}

// largeNodes adds the nodes, all Ready, one of them under memory pressure.
func (b *builder) largeNodes(prefix string, plant func(ns, kind, name string, reasons ...string)) []string {
	nodes := make([]string, largeNodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s-node-%02d", prefix, i)
		if i == 4 {
			b.node(nodes[i], true, corev1.NodeMemoryPressure)
			plant("", "Node", nodes[i], string(corev1.NodeMemoryPressure))
		} else {
			b.node(nodes[i], true, "")
		}
	}
	return nodes
}

// largePlan is how one Deployment of the large fixture is broken: its
// scenario, how many of its pods (-1: all) and the reason a sweep reports.
type largePlan struct {
	sc       Scenario
	affected int
	reason   string
}

// largePlans are the broken Deployments of the large fixture, by index.
func largePlans() map[int]largePlan {
	plans := map[int]largePlan{}
	put := func(sc Scenario, reason string, idx ...int) {
		for _, i := range idx {
			plans[i] = largePlan{sc, -1, reason}
		}
	}
	put(OOMKill, "OOMKilled", 7, 101, 202, 303)
	put(CrashLoop, "CrashLoopBackOff", 13, 113, 213, 413)
	plans[413] = largePlan{CrashLoop, 1, "CrashLoopBackOff"} // one of its two pods
	put(ImagePull, "ImagePullBackOff", 21, 121, 321)
	put(ConfigError, "CreateContainerConfigError", 34, 234)
	put(Unschedulable, "Unschedulable", 45, 345)
	put(NotReady, "ProbeFailure", 56, 456)
	put(StuckMount, "ContainerCreating", 78)
	return plans
}

// quotaBlocked adds d with none of its three pods: a ResourceQuota refuses
// them, which its ReplicaFailure condition and the ReplicaSet's events say.
func (b *builder) quotaBlocked(d *appsv1.Deployment, node string) {
	b.workload(d, Healthy, wopts{missing: 3, node: node})
	rs := b.o.ReplicaSets[len(b.o.ReplicaSets)-1]
	dep := b.o.Deployments[len(b.o.Deployments)-1]
	msg := fmt.Sprintf(`pods "%s-x7k2p" is forbidden: exceeded quota: compute-quota, requested: limits.memory=256Mi, used: limits.memory=512Mi, limited: limits.memory=512Mi`, rs.Name)
	dep.Status.Conditions = append(dep.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure,
		Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: msg, LastUpdateTime: b.t(3 * time.Hour), LastTransitionTime: b.t(3 * time.Hour)})
	b.eventFor(corev1.ObjectReference{Kind: "ReplicaSet", Namespace: d.Namespace, Name: rs.Name, UID: rs.UID, APIVersion: "apps/v1"}, "",
		corev1.EventTypeWarning, "FailedCreate", "Error creating: "+msg, 41, 3*time.Hour, 3*time.Minute, "replicaset-controller")
}

// rollingOut adds d mid-rollout: one pod short, its Progressing condition
// saying the new ReplicaSet is progressing (healthy by Kubernetes
// semantics).
func (b *builder) rollingOut(d *appsv1.Deployment, node string) {
	b.workload(d, Healthy, wopts{missing: 1, node: node})
	dep := b.o.Deployments[len(b.o.Deployments)-1]
	for k := range dep.Status.Conditions {
		if dep.Status.Conditions[k].Type == appsv1.DeploymentProgressing {
			dep.Status.Conditions[k].Reason = "ReplicaSetUpdated"
			dep.Status.Conditions[k].Message = fmt.Sprintf("ReplicaSet %q is progressing.", b.o.ReplicaSets[len(b.o.ReplicaSets)-1].Name)
		}
	}
}

// largeExtras plants the problems and look-alikes beyond Deployments.
func (b *builder) largeExtras(prefix string, nsName func(int) string, depName func(int) string, nodes []string, plant func(ns, kind, name string, reasons ...string)) {
	// a StatefulSet with one of three replicas missing, a DaemonSet two nodes short
	b.statefulSet(nsName(500), "db", 3, 2, nodes[1])
	plant(nsName(500), "StatefulSet", "db", "ReplicasUnavailable")
	b.daemonSet(nsName(501), "log-agent", nodes, 2)
	plant(nsName(501), "DaemonSet", "log-agent", "ReplicasUnavailable")
	// CronJobs: two whose last run failed, one that failed before and succeeded since
	for _, i := range []int{90, 290} {
		b.cronJob(nsName(i), "nightly-report", true)
		plant(nsName(i), "CronJob", "nightly-report", "JobFailed")
	}
	b.cronJob(nsName(390), "nightly-report", false)
	// a Service whose selector has a typo
	b.service(nsName(520), "payments", map[string]string{"app.kubernetes.io/name": "paymnets"}, 80)
	plant(nsName(520), "Service", "payments", "ServiceSelectsNoPods")
	// claims: Pending on a class that does not exist, Lost; a WaitForFirstConsumer claim no pod uses yet, a Bound one
	immediate, wait := storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer
	b.o.StorageClasses = append(b.o.StorageClasses,
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-standard"}, Provisioner: "csi.example.com", VolumeBindingMode: &immediate},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-local-wait"}, Provisioner: "csi.example.com", VolumeBindingMode: &wait})
	b.pvc(nsName(530), "data", prefix+"-fast-ssd", corev1.ClaimPending, "")
	plant(nsName(530), "PersistentVolumeClaim", "data", "PVCPending")
	b.pvc(nsName(540), "archive", prefix+"-standard", corev1.ClaimLost, "pvc-0b5e8f3a")
	plant(nsName(540), "PersistentVolumeClaim", "archive", "PVCLost")
	b.pvc(nsName(531), "scratch", prefix+"-local-wait", corev1.ClaimPending, "")
	b.pvc(nsName(532), "cache", prefix+"-standard", corev1.ClaimBound, "pvc-77aa01c2")
	// Ingresses: to a missing Service, to a missing port, and a good one
	b.ingress(nsName(550), "web", "shop-frontend", 80)
	plant(nsName(550), "Ingress", "web", "IngressBackendMissing")
	b.ingress(nsName(561), "api", depName(561), 8080) // svc-0561 has a Service on port 80
	plant(nsName(561), "Ingress", "api", "IngressBackendMissing")
	b.ingress(nsName(552), "docs", depName(552), 80)
	// HPAs: at max on the half-broken Deployment, unable to get metrics, and at max but healthy
	b.hpa(nsName(413), depName(413), 2, 2, 95, "")
	plant(nsName(413), "HorizontalPodAutoscaler", depName(413), "HPAAtMaxUnhealthy")
	b.hpa(nsName(570), depName(570), 2, 6, 0, "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container app of Pod "+depName(570))
	plant(nsName(570), "HorizontalPodAutoscaler", depName(570), "HPACannotScale")
	b.hpa(nsName(571), depName(571), 2, 2, 40, "")
	// PDBs: none allowed while the crash-looping pods are unhealthy; strict but healthy
	b.pdb(nsName(113), depName(113), 2, 0, 1)
	plant(nsName(113), "PodDisruptionBudget", depName(113), "PDBNoDisruptions")
	b.pdb(nsName(591), depName(591), 2, 2, 2)
	// webhooks: one whose Service does not exist (failurePolicy Fail), one served by a healthy Deployment
	b.webhook(prefix+"-policy-guard", nsName(580), "guard")
	plant("", "ValidatingWebhookConfiguration", prefix+"-policy-guard", "WebhookNoEndpoints")
	b.webhook(prefix+"-defaults", nsName(581), depName(581))
	b.service(nsName(581), depName(581), map[string]string{"app.kubernetes.io/name": depName(581)}, 443)
}

// churn adds Warning events within the hour that explain no current
// problem, and history older than the hour.
func (b *builder) churn(prefix string, healthy []*corev1.Pod, nodes []string, scale int) {
	kinds := []struct{ reason, msg, component string }{
		{"Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", "kubelet"},
		{"BackOff", "Back-off restarting failed container app in pod %s", "kubelet"},
		{"FailedScheduling", "0/20 nodes are available: 3 Insufficient cpu, 17 node(s) didn't match pod anti-affinity rules. preemption: 0/20 nodes are available: 20 No preemption victims found for incoming pod.", "default-scheduler"},
		{"FailedMount", `MountVolume.SetUp failed for volume "kube-api-access" : object "%s"/"kube-root-ca.crt" not registered`, "kubelet"},
		{"NodeNotReady", "Node is not ready", "node-controller"},
		{"Unhealthy", "Liveness probe failed: Get \"http://10.244.3.17:8080/healthz\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)", "kubelet"},
	}
	n := largeChurn * scale
	for k := 0; k < n; k++ {
		kd := kinds[k%len(kinds)]
		last := 5*time.Minute + time.Duration(k%50)*time.Minute + time.Duration(k%60)*time.Second
		count := int32(1 + k%9)
		var p *corev1.Pod
		if k%4 == 3 { // a pod of an older ReplicaSet, gone since
			h := healthy[k%len(healthy)]
			gone := h.DeepCopy()
			gone.Name = h.Name[:len(h.Name)-17] + "-" + hashName(fmt.Sprintf("old/%d", k), 10) + "-" + hashName(fmt.Sprintf("gone/%d", k), 5)
			gone.UID = uid("Pod", gone.Namespace, gone.Name)
			p = gone
		} else {
			p = healthy[(k*7)%len(healthy)]
		}
		msg := kd.msg
		switch kd.reason {
		case "BackOff":
			msg = fmt.Sprintf(msg, p.Name)
		case "FailedMount":
			msg = fmt.Sprintf(msg, p.Namespace)
		}
		b.event(p, corev1.EventTypeWarning, kd.reason, msg, count, last+time.Hour, last, kd.component)
	}
	// node-controller NodeNotReady about nodes that are Ready again
	for k := 0; k < 8*scale; k++ {
		node := nodes[k%len(nodes)]
		b.eventFor(corev1.ObjectReference{Kind: "Node", Name: node, UID: uid("Node", "", node), APIVersion: "v1"}, "",
			corev1.EventTypeWarning, "NodeNotReady", fmt.Sprintf("Node %s status is now: NodeNotReady", node), 1, 40*time.Minute, 38*time.Minute, "node-controller")
	}
	// history: older than the hour
	for k := 0; k < 100*scale; k++ {
		p := healthy[(k*13)%len(healthy)]
		b.event(p, corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", 2, 5*time.Hour, 2*time.Hour+time.Duration(k)*time.Minute, "kubelet")
	}
	_ = prefix
}

func largeDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: largeTemplate(labels),
		},
	}
}

func largeTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example.com/shop/svc:4.2.1",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		}}},
	}
}

func (b *builder) service(ns, name string, selector map[string]string, port int32) {
	b.o.Services = append(b.o.Services, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Service", ns, name)},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "http", Port: port,
			TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	})
}

// statefulSet adds a StatefulSet with ready of its replicas running (the
// rest never created: a volume or quota holds them).
func (b *builder) statefulSet(ns, name string, replicas, ready int32, node string) {
	labels := map[string]string{"app.kubernetes.io/name": name}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("StatefulSet", ns, name), Labels: labels, Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: largeTemplate(labels)},
		Status: appsv1.StatefulSetStatus{Replicas: ready, ReadyReplicas: ready, AvailableReplicas: ready, CurrentReplicas: ready, UpdatedReplicas: ready},
	}
	b.o.StatefulSets = append(b.o.StatefulSets, s)
	for i := 0; i < int(ready); i++ {
		b.podOf(ns, fmt.Sprintf("%s-%d", name, i), ctrl("StatefulSet", "apps/v1", name, s.UID), &s.Spec.Template, Healthy, node, i)
	}
}

// daemonSet adds a DaemonSet meant for every node with short of them
// without a pod.
func (b *builder) daemonSet(ns, name string, nodes []string, short int) {
	labels := map[string]string{"app.kubernetes.io/name": name}
	want, have := int32(len(nodes)), int32(len(nodes)-short)
	d := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("DaemonSet", ns, name), Labels: labels, Generation: 1},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: largeTemplate(labels)},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: want, CurrentNumberScheduled: have, NumberReady: have,
			NumberAvailable: have, NumberUnavailable: want - have, UpdatedNumberScheduled: have},
	}
	b.o.DaemonSets = append(b.o.DaemonSets, d)
	for i := 0; i < int(have); i++ {
		b.podOf(ns, name+"-"+hashName(fmt.Sprintf("%s/%s/%d", ns, name, i), 5), ctrl("DaemonSet", "apps/v1", name, d.UID), &d.Spec.Template, Healthy, nodes[i], i)
	}
}

// cronJob adds a CronJob with three runs: failed, then (lastFailed) failed
// again, or succeeded.
func (b *builder) cronJob(ns, name string, lastFailed bool) {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("CronJob", ns, name)},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "report", Image: "registry.example.com/shop/report:1.9.0"}}}}}}},
	}
	b.o.CronJobs = append(b.o.CronJobs, cj)
	b.job(cj, name+"-29243680", true, 50*time.Hour)
	b.job(cj, name+"-29245120", true, 26*time.Hour)
	b.job(cj, name+"-29246560", lastFailed, 2*time.Hour)
}

func (b *builder) job(cj *batchv1.CronJob, name string, failed bool, ago time.Duration) {
	backoff := int32(6)
	ns := cj.Namespace
	t := b.t(ago - 20*time.Minute)
	start := b.t(ago)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Job", ns, name),
			OwnerReferences: ctrl("CronJob", "batch/v1", cj.Name, cj.UID)},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, Template: *cj.Spec.JobTemplate.Spec.Template.DeepCopy()},
	}
	if failed {
		j.Status = batchv1.JobStatus{Failed: 7, StartTime: &start, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: t, LastTransitionTime: t},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: t, LastTransitionTime: t},
		}}
	} else {
		j.Status = batchv1.JobStatus{Succeeded: 1, StartTime: &start, CompletionTime: &t, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: t, LastTransitionTime: t},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: t, LastTransitionTime: t},
		}}
	}
	b.o.Jobs = append(b.o.Jobs, j)
}

func (b *builder) pvc(ns, name, class string, phase corev1.PersistentVolumeClaimPhase, volume string) {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("PersistentVolumeClaim", ns, name), CreationTimestamp: b.t(6 * time.Hour)},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase},
	}
	if phase == corev1.ClaimBound {
		c.Status.AccessModes = c.Spec.AccessModes
		c.Status.Capacity = c.Spec.Resources.Requests
	}
	b.o.PVCs = append(b.o.PVCs, c)
}

func (b *builder) ingress(ns, name, svc string, port int32) {
	pt := networkingv1.PathTypePrefix
	b.o.Ingresses = append(b.o.Ingresses, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Ingress", ns, name)},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: name + ".shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: svc, Port: networkingv1.ServiceBackendPort{Number: port}}}}}}}}}},
	})
}

// hpa adds a CPU HPA on a Deployment at current replicas; utilization 0
// means metrics are missing (cannotScale is the ScalingActive message).
func (b *builder) hpa(ns, target string, current, max int32, utilization int32, cannotScale string) {
	minR, targetU := int32(1), int32(70)
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: ns, UID: uid("HorizontalPodAutoscaler", ns, target)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: max,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &targetU}}}}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current, DesiredReplicas: current},
	}
	cond := func(t autoscalingv2.HorizontalPodAutoscalerConditionType, ok bool, reason, msg string) autoscalingv2.HorizontalPodAutoscalerCondition {
		s := corev1.ConditionTrue
		if !ok {
			s = corev1.ConditionFalse
		}
		return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: b.t(2 * time.Hour)}
	}
	h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{cond(autoscalingv2.AbleToScale, true, "ReadyForNewScale", "recommended size matches current size")}
	if cannotScale != "" {
		h.Status.Conditions = append(h.Status.Conditions, cond(autoscalingv2.ScalingActive, false, "FailedGetResourceMetric", cannotScale))
	} else {
		u := utilization
		h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &u}}}}
		h.Status.Conditions = append(h.Status.Conditions, cond(autoscalingv2.ScalingActive, true, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"))
		if current >= max {
			h.Status.Conditions = append(h.Status.Conditions, cond(autoscalingv2.ScalingLimited, true, "TooManyReplicas", "the desired replica count is more than the maximum replica count"))
		}
	}
	b.o.HPAs = append(b.o.HPAs, h)
}

func (b *builder) pdb(ns, target string, expected, healthy, desired int32) {
	minA := intstr.FromInt32(desired)
	allowed := healthy - desired
	if allowed < 0 {
		allowed = 0
	}
	b.o.PDBs = append(b.o.PDBs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: ns, UID: uid("PodDisruptionBudget", ns, target), Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minA,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": target}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: expected, CurrentHealthy: healthy,
			DesiredHealthy: desired, DisruptionsAllowed: allowed},
	})
}

// webhook adds a validating webhook (failurePolicy Fail) served by
// ns/svc, for a resource nothing creates.
func (b *builder) webhook(name, ns, svc string) {
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	path := "/validate"
	b.o.Webhooks = append(b.o.Webhooks, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid("ValidatingWebhookConfiguration", "", name)},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "validate." + name + ".kubecrew.test",
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: ns, Name: svc, Path: &path}},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{"kubecrew.test"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	})
}
