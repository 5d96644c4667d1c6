package kubetest

import (
	"fmt"
	"hash/fnv"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Scenario is how a fixture workload's pods look: healthy or one of the six
// classic failures.
type Scenario string

// Scenarios.
const (
	Healthy       Scenario = "healthy"
	OOMKill       Scenario = "oomkill"
	CrashLoop     Scenario = "crashloop"
	ImagePull     Scenario = "imagepull"
	ConfigError   Scenario = "configerror"
	NotReady      Scenario = "notready"
	Unschedulable Scenario = "unschedulable"
	// StuckMount: the pod waits in ContainerCreating because a volume
	// cannot mount (a FailedMount event says which).
	StuckMount Scenario = "stuckmount"
	// Recovered: running and ready again after an OOM kill 30 minutes ago.
	Recovered Scenario = "recovered"
)

// Objects is a fixture set as a real cluster would store it: each object
// with its status filled in, owner references and event object references
// by UID. UIDs are fixed here; Load maps them to the server's.
type Objects struct {
	Namespaces  []*corev1.Namespace
	Nodes       []*corev1.Node
	Deployments []*appsv1.Deployment
	ReplicaSets []*appsv1.ReplicaSet
	Pods        []*corev1.Pod
	Jobs        []*batchv1.Job
	Events      []*corev1.Event

	StatefulSets   []*appsv1.StatefulSet
	DaemonSets     []*appsv1.DaemonSet
	CronJobs       []*batchv1.CronJob
	Services       []*corev1.Service
	PVCs           []*corev1.PersistentVolumeClaim
	StorageClasses []*storagev1.StorageClass
	Ingresses      []*networkingv1.Ingress
	HPAs           []*autoscalingv2.HorizontalPodAutoscaler
	PDBs           []*policyv1.PodDisruptionBudget
	Webhooks       []*admissionv1.ValidatingWebhookConfiguration
}

// All returns every object, for fake.NewClientset.
func (o *Objects) All() []runtime.Object {
	var out []runtime.Object
	for _, x := range o.Namespaces {
		out = append(out, x)
	}
	for _, x := range o.Nodes {
		out = append(out, x)
	}
	for _, x := range o.Deployments {
		out = append(out, x)
	}
	for _, x := range o.ReplicaSets {
		out = append(out, x)
	}
	for _, x := range o.Pods {
		out = append(out, x)
	}
	for _, x := range o.Jobs {
		out = append(out, x)
	}
	for _, x := range o.Events {
		out = append(out, x)
	}
	for _, x := range o.StatefulSets {
		out = append(out, x)
	}
	for _, x := range o.DaemonSets {
		out = append(out, x)
	}
	for _, x := range o.CronJobs {
		out = append(out, x)
	}
	for _, x := range o.Services {
		out = append(out, x)
	}
	for _, x := range o.PVCs {
		out = append(out, x)
	}
	for _, x := range o.StorageClasses {
		out = append(out, x)
	}
	for _, x := range o.Ingresses {
		out = append(out, x)
	}
	for _, x := range o.HPAs {
		out = append(out, x)
	}
	for _, x := range o.PDBs {
		out = append(out, x)
	}
	for _, x := range o.Webhooks {
		out = append(out, x)
	}
	return out
}

// builder assembles Objects relative to a fixed now.
type builder struct {
	o   *Objects
	now time.Time
	ip  int
}

func newBuilder(now time.Time) *builder { return &builder{o: &Objects{}, now: now} }

// hashName is a stable pseudo pod-template-hash / pod suffix from the
// alphabet Kubernetes uses for generated names.
func hashName(s string, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := fnv.New64a()
	h.Write([]byte(s))
	v := h.Sum64()
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[v%uint64(len(alphabet))]
		v /= uint64(len(alphabet))
	}
	return string(out)
}

func uid(kind, ns, name string) types.UID {
	h := fnv.New128a()
	h.Write([]byte(kind + "/" + ns + "/" + name))
	b := h.Sum(nil)
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

func (b *builder) t(ago time.Duration) metav1.Time {
	return metav1.NewTime(b.now.Add(-ago).UTC().Truncate(time.Second))
}

func (b *builder) namespace(name string) {
	b.o.Namespaces = append(b.o.Namespaces, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid("Namespace", "", name)},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	})
}

// node adds a node; ready false gives NotReady, pressure names a condition
// (e.g. MemoryPressure) that is True.
func (b *builder) node(name string, ready bool, pressure corev1.NodeConditionType) {
	cond := func(t corev1.NodeConditionType, bad bool, okReason, badReason, badMsg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReason,
			LastHeartbeatTime: b.t(10 * time.Second), LastTransitionTime: b.t(30 * 24 * time.Hour)}
		if t == corev1.NodeReady {
			c.Status = corev1.ConditionTrue
		}
		if bad {
			c.Status = corev1.ConditionTrue
			if t == corev1.NodeReady {
				c.Status = corev1.ConditionUnknown
			}
			c.Reason, c.Message, c.LastTransitionTime = badReason, badMsg, b.t(25*time.Minute)
		}
		return c
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid("Node", "", name),
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubecrew.io/fixture": "node"}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, pressure == corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
				cond(corev1.NodeDiskPressure, pressure == corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "KubeletHasDiskPressure", "kubelet has disk pressure"),
				cond(corev1.NodePIDPressure, pressure == corev1.NodePIDPressure, "KubeletHasSufficientPID", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
				cond(corev1.NodeReady, !ready, "KubeletReady", "NodeStatusUnknown", "Kubelet stopped posting node status."),
			},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m"), corev1.ResourceMemory: resource.MustParse("15Gi"), corev1.ResourcePods: resource.MustParse("110")},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Debian GNU/Linux 13", ContainerRuntimeVersion: "containerd://2.1.4", Architecture: "amd64", OperatingSystem: "linux"},
			// loopback: the API server's kubelet proxy (pod logs) fails fast instead of dialing a dead address
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		},
	}
	if !ready {
		n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}}
	}
	b.o.Nodes = append(b.o.Nodes, n)
}

func ctrl(kind, apiVersion, name string, u types.UID) []metav1.OwnerReference {
	t := true
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: u, Controller: &t, BlockOwnerDeletion: &t}}
}

// wopts shape one fixture workload.
type wopts struct {
	affected int    // pods showing the scenario (the rest are healthy); < 0: all
	missing  int    // desired pods the ReplicaSet never created (quota, admission)
	node     string // where scheduled pods run
}

// workload adds a Deployment (from a manifest) with its ReplicaSet, pods,
// statuses and events.
func (b *builder) workload(d *appsv1.Deployment, sc Scenario, o wopts) {
	affected, node := o.affected, o.node
	d = d.DeepCopy()
	ns := d.Namespace
	d.UID = uid("Deployment", ns, d.Name)
	d.Generation = 1
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	d.Spec.Replicas = &replicas
	if affected < 0 || affected > int(replicas) {
		affected = int(replicas)
	}
	if sc == Healthy {
		affected = 0
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	hash := hashName(ns+"/"+d.Name, 10)
	rsName := d.Name + "-" + hash
	tmpl := d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["pod-template-hash"] = hash
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels["pod-template-hash"] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: ns, UID: uid("ReplicaSet", ns, rsName), Labels: tmpl.Labels,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": "1", "deployment.kubernetes.io/desired-replicas": fmt.Sprint(replicas)},
			OwnerReferences: ctrl("Deployment", "apps/v1", d.Name, d.UID), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: selector, Template: *tmpl},
	}
	ready := int32(0)
	created := replicas - int32(o.missing)
	for i := 0; i < int(created); i++ {
		podSc := sc
		if i >= affected {
			podSc = Healthy
		}
		if b.pod(rs, podSc, node, i) {
			ready++
		}
	}
	rs.Status = appsv1.ReplicaSetStatus{Replicas: created, FullyLabeledReplicas: created, ReadyReplicas: ready, AvailableReplicas: ready, ObservedGeneration: 1}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: created, UpdatedReplicas: created,
		ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: replicas - ready}
	avail := corev1.ConditionTrue
	availReason, availMsg := "MinimumReplicasAvailable", "Deployment has minimum availability."
	if ready < replicas {
		avail, availReason, availMsg = corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
	}
	d.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: avail, Reason: availReason, Message: availMsg, LastUpdateTime: b.t(time.Hour), LastTransitionTime: b.t(time.Hour)},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
			Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", rsName), LastUpdateTime: b.t(20 * time.Hour), LastTransitionTime: b.t(20 * time.Hour)},
	}
	b.o.Deployments = append(b.o.Deployments, d)
	b.o.ReplicaSets = append(b.o.ReplicaSets, rs)
}

// oldRevision adds a scaled-down revision-1 ReplicaSet with another image to
// the last added Deployment, which becomes revision 2 (for rollout history
// and undo).
func (b *builder) oldRevision(image string) {
	d := b.o.Deployments[len(b.o.Deployments)-1]
	cur := b.o.ReplicaSets[len(b.o.ReplicaSets)-1]
	d.Annotations["deployment.kubernetes.io/revision"] = "2"
	cur.Annotations["deployment.kubernetes.io/revision"] = "2"
	old := cur.DeepCopy()
	hash := hashName(d.Namespace+"/"+d.Name+"/old", 10)
	old.Name = d.Name + "-" + hash
	old.UID = uid("ReplicaSet", d.Namespace, old.Name)
	old.Labels = map[string]string{}
	for k, v := range cur.Labels {
		old.Labels[k] = v
	}
	old.Labels["pod-template-hash"] = hash
	old.Spec.Selector.MatchLabels["pod-template-hash"] = hash
	old.Spec.Template.Labels = old.Labels
	old.Spec.Template.Spec.Containers[0].Image = image
	old.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	zero := int32(0)
	old.Spec.Replicas = &zero
	old.Status = appsv1.ReplicaSetStatus{ObservedGeneration: 1}
	b.o.ReplicaSets = append(b.o.ReplicaSets, old)
}

// pod adds one pod of rs in scenario sc; it reports whether the pod is ready.
func (b *builder) pod(rs *appsv1.ReplicaSet, sc Scenario, node string, i int) bool {
	name := rs.Name + "-" + hashName(fmt.Sprintf("%s/%s/%d", rs.Namespace, rs.Name, i), 5)
	return b.podOf(rs.Namespace, name, ctrl("ReplicaSet", "apps/v1", rs.Name, rs.UID), &rs.Spec.Template, sc, node, i)
}

// podOf adds one pod named name from tmpl, owned by refs, in scenario sc;
// it reports whether the pod is ready.
func (b *builder) podOf(ns, name string, refs []metav1.OwnerReference, tmpl *corev1.PodTemplateSpec, sc Scenario, node string, i int) bool {
	spec := *tmpl.Spec.DeepCopy()
	if sc != Unschedulable {
		spec.NodeName = node
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Pod", ns, name), Labels: tmpl.Labels,
			OwnerReferences: refs, CreationTimestamp: b.t(20 * time.Hour)},
		Spec: spec,
	}
	b.ip++
	ip := fmt.Sprintf("10.244.%d.%d", b.ip/250, b.ip%250+2)
	started := b.t(20 * time.Hour)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.10", PodIP: ip, StartTime: &started, QOSClass: corev1.PodQOSBurstable}
	if sc == Unschedulable {
		p.Status.PodIP, p.Status.HostIP = "", ""
		b.unschedulable(p)
		return false
	}
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	cs, ready := b.containerStatus(p, sc, ip, i)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	cond := func(t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		s := corev1.ConditionTrue
		if !ok {
			s = corev1.ConditionFalse
		}
		return corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: b.t(19 * time.Hour)}
	}
	notReadyReason := "ContainersNotReady"
	p.Status.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, sc != ImagePull && sc != ConfigError && sc != StuckMount, ""),
		cond(corev1.PodInitialized, true, ""),
		cond(corev1.PodReady, ready, map[bool]string{false: notReadyReason}[ready]),
		cond(corev1.ContainersReady, ready, map[bool]string{false: notReadyReason}[ready]),
		cond(corev1.PodScheduled, true, ""),
	}
	b.o.Pods = append(b.o.Pods, p)
	return ready
}

// unschedulable adds p as pending, not scheduled, with the scheduler's
// events.
func (b *builder) unschedulable(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.StartTime = nil
	msg := "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: msg, LastTransitionTime: b.t(19 * time.Hour)}}
	b.event(p, "Warning", "FailedScheduling", msg, 228, 19*time.Hour, 5*time.Minute, "default-scheduler")
	b.o.Pods = append(b.o.Pods, p)
}

// containerStatus is the status of p's container in scenario sc, with the
// kubelet's events about it (p's phase set where the scenario has one);
// it reports whether the container is ready.
func (b *builder) containerStatus(p *corev1.Pod, sc Scenario, ip string, i int) (corev1.ContainerStatus, bool) {
	name, ns, started := p.Name, p.Namespace, *p.Status.StartTime
	c := p.Spec.Containers[0]
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "docker.io/library/" + c.Image + "@sha256:" + fmt.Sprintf("%064x", i+1),
		ContainerID: "containerd://" + fmt.Sprintf("%064x", b.ip)}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	podRef := fmt.Sprintf("%s_%s(%s)", name, ns, p.UID)
	ready := false
	switch sc {
	case Healthy:
		cs.State, cs.Ready, cs.Started = running, true, ptr(true)
		ready = true
	case OOMKill:
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 5m0s restarting failed container=%s pod=%s", c.Name, podRef)}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
			StartedAt: b.t(3 * time.Minute), FinishedAt: b.t(3*time.Minute - 2*time.Second), ContainerID: cs.ContainerID}}
		cs.RestartCount, cs.Started = 293, ptr(false)
		b.event(p, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.Name, podRef), 1321, 19*time.Hour, 40*time.Second, "kubelet")
		b.event(p, "Normal", "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image), 293, 19*time.Hour, 3*time.Minute, "kubelet")
	case CrashLoop:
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 5m0s restarting failed container=%s pod=%s", c.Name, podRef)}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: b.t(4 * time.Minute), FinishedAt: b.t(4 * time.Minute), ContainerID: cs.ContainerID}}
		cs.RestartCount, cs.Started = 212, ptr(false)
		b.event(p, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.Name, podRef), 960, 19*time.Hour, 70*time.Second, "kubelet")
	case ImagePull:
		p.Status.Phase = corev1.PodPending
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
			Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: failed to pull and unpack image %q: failed to resolve reference %q: dial tcp: lookup registry.invalid: no such host", c.Image, c.Image, c.Image)}}
		cs.ImageID, cs.ContainerID, cs.Started = "", "", ptr(false)
		b.event(p, "Warning", "Failed", fmt.Sprintf("Failed to pull image %q: failed to resolve reference %q: dial tcp: lookup registry.invalid: no such host", c.Image, c.Image), 231, 19*time.Hour, 2*time.Minute, "kubelet")
		b.event(p, "Warning", "Failed", "Error: ErrImagePull", 231, 19*time.Hour, 2*time.Minute, "kubelet")
		b.event(p, "Warning", "BackOff", fmt.Sprintf("Back-off pulling image %q", c.Image), 5012, 19*time.Hour, 30*time.Second, "kubelet")
		b.event(p, "Warning", "Failed", "Error: ImagePullBackOff", 5012, 19*time.Hour, 30*time.Second, "kubelet")
		b.event(p, "Normal", "Pulling", fmt.Sprintf("Pulling image %q", c.Image), 231, 19*time.Hour, 2*time.Minute, "kubelet")
	case ConfigError:
		p.Status.Phase = corev1.PodPending
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `configmap "missing" not found`}}
		cs.ContainerID, cs.Started = "", ptr(false)
		b.event(p, "Warning", "Failed", `Error: configmap "missing" not found`, 5390, 19*time.Hour, 50*time.Second, "kubelet")
	case NotReady:
		cs.State, cs.Ready, cs.Started = running, false, ptr(true)
		port := "8080"
		if rp := c.ReadinessProbe; rp != nil && rp.HTTPGet != nil {
			port = rp.HTTPGet.Port.String()
		}
		b.event(p, "Warning", "Unhealthy", fmt.Sprintf("Readiness probe failed: Get \"http://%s:%s/healthz\": dial tcp %s:%s: connect: connection refused", ip, port, ip, port),
			13680, 19*time.Hour, 4*time.Second, "kubelet")
	case Recovered:
		cs.State, cs.Ready, cs.Started = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: b.t(30 * time.Minute)}}, true, ptr(true)
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
			StartedAt: b.t(3 * time.Hour), FinishedAt: b.t(31 * time.Minute), ContainerID: cs.ContainerID}}
		cs.RestartCount = 3
		ready = true
		b.event(p, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.Name, podRef), 4, 3*time.Hour, 32*time.Minute, "kubelet")
	case StuckMount:
		p.Status.Phase = corev1.PodPending
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		cs.ImageID, cs.ContainerID, cs.Started = "", "", ptr(false)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: p.Name[:len(p.Name)-17] + "-config"}}}})
		b.event(p, "Warning", "FailedMount", fmt.Sprintf(`MountVolume.SetUp failed for volume "config" : configmap "%s-config" not found`, p.Name[:len(p.Name)-17]),
			580, 19*time.Hour, 90*time.Second, "kubelet")
	}
	return cs, ready
}

func ptr[T any](v T) *T { return &v }

// event adds a core/v1 event about pod p, first seen firstAgo and last seen lastAgo.
func (b *builder) event(p *corev1.Pod, typ, reason, msg string, count int32, firstAgo, lastAgo time.Duration, component string) {
	fieldPath := ""
	if len(p.Spec.Containers) > 0 && reason != "FailedScheduling" && reason != "FailedMount" {
		fieldPath = "spec.containers{" + p.Spec.Containers[0].Name + "}"
	}
	ref := corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1", FieldPath: fieldPath}
	b.eventFor(ref, p.Spec.NodeName, typ, reason, msg, count, firstAgo, lastAgo, component)
}

// eventFor adds a core/v1 event about any object.
func (b *builder) eventFor(ref corev1.ObjectReference, host, typ, reason, msg string, count int32, firstAgo, lastAgo time.Duration, component string) {
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // events about cluster-scoped objects live in default
	}
	name := fmt.Sprintf("%s.%s", ref.Name, hashName(fmt.Sprintf("%s/%s/%s/%s/%d", ns, ref.Name, reason, msg, len(b.o.Events)), 16))
	instance := host
	if component != "kubelet" {
		instance = component + "-" + FixtureNode
	}
	b.o.Events = append(b.o.Events, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Event", ns, name)},
		InvolvedObject: ref,
		Type:           typ, Reason: reason, Message: msg, Count: count,
		FirstTimestamp:      b.t(firstAgo),
		LastTimestamp:       b.t(lastAgo),
		Source:              corev1.EventSource{Component: component, Host: host},
		ReportingController: component,
		ReportingInstance:   instance,
	})
}
