package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// Clusters built by hand, unlike the fixture generator (other names,
// labels, shapes): the rules must hold on Kubernetes semantics alone. Each
// case runs on the fake clientset here and on the real API server in
// TestIntegrationSemantics.

// hand builds one case's objects in namespace ns; cluster-scoped names
// carry the suffix sfx.
type hand struct {
	o       *kubetest.Objects
	ns, sfx string
	now     time.Time
}

func (h *hand) ago(d time.Duration) metav1.Time {
	return metav1.NewTime(h.now.Add(-d).UTC().Truncate(time.Second))
}

func huid(parts ...string) types.UID { return types.UID("hand-" + strings.Join(parts, "-")) }

var tru = true

func (h *hand) ref(kind, apiVersion, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: huid(kind, h.ns, name), Controller: &tru}}
}

func handTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "ghcr.io/acme/" + app + ":7"}}}}
}

// deploy adds a Deployment with its ReplicaSet "<name>-rs"; conds replace
// the Available/Progressing conditions when given.
func (h *hand) deploy(name string, replicas, available int32, conds ...appsv1.DeploymentCondition) {
	t := handTemplate(name)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, UID: huid("Deployment", h.ns, name)},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: t},
		Status: appsv1.DeploymentStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available, UpdatedReplicas: replicas,
			UnavailableReplicas: replicas - available, Conditions: conds}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", Namespace: h.ns, UID: huid("ReplicaSet", h.ns, name+"-rs"),
		OwnerReferences: h.ref("Deployment", "apps/v1", name)},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: d.Spec.Selector, Template: t},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available}}
	h.o.Deployments = append(h.o.Deployments, d)
	h.o.ReplicaSets = append(h.o.ReplicaSets, rs)
}

type podState func(p *corev1.Pod, cs *corev1.ContainerStatus)

func ready(p *corev1.Pod, cs *corev1.ContainerStatus) {
	cs.Ready, cs.State = true, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: p.Status.StartTime.Rfc3339Copy()}}
}

// pod adds a pod of owner (kind "" = bare) labelled app=app in state st.
func (h *hand) pod(name, app, kind, ownerName string, st podState) *corev1.Pod {
	t := handTemplate(app)
	start := h.ago(3 * time.Hour)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, UID: huid("Pod", h.ns, name), Labels: t.Labels},
		Spec: t.Spec, Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start}}
	switch kind {
	case "ReplicaSet":
		p.OwnerReferences = h.ref("ReplicaSet", "apps/v1", ownerName)
	case "StatefulSet", "DaemonSet":
		p.OwnerReferences = h.ref(kind, "apps/v1", ownerName)
	}
	cs := corev1.ContainerStatus{Name: "main", Image: t.Spec.Containers[0].Image}
	st(p, &cs)
	if p.Status.Phase != corev1.PodPending || cs.State.Waiting != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	}
	status := corev1.ConditionFalse
	if cs.Ready {
		status = corev1.ConditionTrue
	}
	if p.Status.Conditions == nil {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: h.ago(time.Hour)},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: h.ago(3 * time.Hour)}}
	}
	if p.Status.Phase != corev1.PodPending || p.Spec.NodeName == "" {
		p.Spec.NodeName = ""
	}
	h.o.Pods = append(h.o.Pods, p)
	return p
}

func (h *hand) warn(kind, name, reason, msg string, lastAgo time.Duration) {
	ns := h.ns
	if kind == "Node" {
		ns = ""
	}
	evNS := nonEmpty(ns, "default")
	n := fmt.Sprintf("%s.%s-%d", name, strings.ToLower(reason), len(h.o.Events))
	h.o.Events = append(h.o.Events, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: evNS},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name, UID: huid(kind, ns, name)},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: msg, Count: 3,
		FirstTimestamp: h.ago(lastAgo + 10*time.Minute), LastTimestamp: h.ago(lastAgo), Source: corev1.EventSource{Component: "kubelet"}})
}

func (h *hand) service(name string, selector map[string]string, ports ...corev1.ServicePort) {
	if len(ports) == 0 {
		ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}
	}
	h.o.Services = append(h.o.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: ports}})
}

func (h *hand) node(name string, readyStatus corev1.ConditionStatus, pressure corev1.NodeConditionType) {
	conds := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: readyStatus, Reason: "KubeletReady", LastHeartbeatTime: h.ago(time.Minute)}}
	if pressure != "" {
		conds = append(conds, corev1.NodeCondition{Type: pressure, Status: corev1.ConditionTrue, Reason: "KubeletHas" + string(pressure), Message: "kubelet reports " + string(pressure)})
	}
	h.o.Nodes = append(h.o.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + h.sfx, UID: huid("Node", "", name+h.sfx)},
		Status: corev1.NodeStatus{Conditions: conds}})
}

func (h *hand) job(name, cron string, failed bool, ago time.Duration) {
	start, end := h.ago(ago+10*time.Minute), h.ago(ago)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, UID: huid("Job", h.ns, name)},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers: []corev1.Container{{Name: "run", Image: "ghcr.io/acme/batch:3"}}}}}}
	if cron != "" {
		j.OwnerReferences = h.ref("CronJob", "batch/v1", cron)
	}
	if failed {
		j.Status = batchv1.JobStatus{Failed: 4, StartTime: &start, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: end},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: end}}}
	} else {
		j.Status = batchv1.JobStatus{Succeeded: 1, StartTime: &start, CompletionTime: &end, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: end},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: end}}}
	}
	h.o.Jobs = append(h.o.Jobs, j)
}

func (h *hand) cron(name string) {
	h.o.CronJobs = append(h.o.CronJobs, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, UID: huid("CronJob", h.ns, name)},
		Spec: batchv1.CronJobSpec{Schedule: "*/30 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "run", Image: "ghcr.io/acme/batch:3"}}}}}}}})
}

func crashing(reason string) podState {
	return func(p *corev1.Pod, cs *corev1.ContainerStatus) {
		cs.RestartCount = 9
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s"}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: map[string]int32{"OOMKilled": 137}[reason] + 1,
			StartedAt: metav1.NewTime(p.Status.StartTime.Add(time.Hour)), FinishedAt: metav1.NewTime(p.Status.StartTime.Add(time.Hour + time.Minute))}}
		if reason == "OOMKilled" {
			cs.LastTerminationState.Terminated.ExitCode = 137
		}
	}
}

func waiting(reason, msg string) podState {
	return func(p *corev1.Pod, cs *corev1.ContainerStatus) {
		p.Status.Phase = corev1.PodPending
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
}

func notReady(p *corev1.Pod, cs *corev1.ContainerStatus) {
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *p.Status.StartTime}}
}

func available(status corev1.ConditionStatus) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: status, Reason: "MinimumReplicas"}
}

func progressing(status corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: "rollout " + reason}
}

type semCase struct {
	name  string
	build func(h *hand)
	want  []string // "Kind/name Reason severity", sorted; cluster-scoped names without the suffix
}

var semCases = []semCase{
	{"healthy with churn", func(h *hand) {
		h.deploy("checkout", 2, 2, available(corev1.ConditionTrue), progressing(corev1.ConditionTrue, "NewReplicaSetAvailable"))
		h.pod("checkout-rs-a1", "checkout", "ReplicaSet", "checkout-rs", ready)
		h.pod("checkout-rs-a2", "checkout", "ReplicaSet", "checkout-rs", ready)
		h.node("pool-a", corev1.ConditionTrue, "")
		h.warn("Pod", "checkout-rs-a1", "Unhealthy", "Readiness probe failed: connection refused", 8*time.Minute)
		h.warn("Pod", "checkout-rs-a2", "BackOff", "Back-off restarting failed container", 20*time.Minute)
		h.warn("Pod", "checkout-rs-a1", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", 40*time.Minute)
		h.warn("Pod", "checkout-rs-a2", "FailedMount", "MountVolume.SetUp failed for volume \"certs\"", 30*time.Minute)
		h.warn("Pod", "checkout-rs-a2", "NodeNotReady", "Node is not ready", 25*time.Minute)
		h.warn("Pod", "checkout-rs-old99", "Unhealthy", "Liveness probe failed", 12*time.Minute) // gone
		h.warn("Node", "pool-a"+h.sfx, "NodeNotReady", "Node pool-a status is now: NodeNotReady", 35*time.Minute)
		h.warn("Deployment", "checkout", "FailedCreate", "quota exceeded", 50*time.Minute) // since created
	}, nil},
	{"recovered OOM kill is not a problem", func(h *hand) {
		h.deploy("ledger", 1, 1)
		h.pod("ledger-rs-x", "ledger", "ReplicaSet", "ledger-rs", func(p *corev1.Pod, cs *corev1.ContainerStatus) {
			ready(p, cs)
			cs.RestartCount = 2
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137,
				StartedAt: h.ago(2 * time.Hour), FinishedAt: h.ago(10 * time.Minute)}}
		})
	}, nil},
	{"OOM on one of three replicas is high, not critical", func(h *hand) {
		h.deploy("ledger", 3, 2)
		h.pod("ledger-rs-a", "ledger", "ReplicaSet", "ledger-rs", crashing("OOMKilled"))
		h.pod("ledger-rs-b", "ledger", "ReplicaSet", "ledger-rs", ready)
		h.pod("ledger-rs-c", "ledger", "ReplicaSet", "ledger-rs", ready)
	}, []string{"Deployment/ledger OOMKilled high"}},
	{"a rollout in progress is not a problem; a stuck one is", func(h *hand) {
		h.deploy("rolling", 3, 2, progressing(corev1.ConditionTrue, "ReplicaSetUpdated"))
		h.deploy("stuck", 3, 2, progressing(corev1.ConditionFalse, "ProgressDeadlineExceeded"))
	}, []string{"Deployment/stuck ProgressDeadlineExceeded medium"}},
	{"a StatefulSet with no ready pod is critical", func(h *hand) {
		one := int32(1)
		h.o.StatefulSets = append(h.o.StatefulSets, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: h.ns, UID: huid("StatefulSet", h.ns, "pg")},
			Spec:   appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}}, Template: handTemplate("pg")},
			Status: appsv1.StatefulSetStatus{Replicas: 1}})
		h.pod("pg-0", "pg", "StatefulSet", "pg", crashing("Error"))
	}, []string{"StatefulSet/pg CrashLoopBackOff critical"}},
	{"a bare pod and a DaemonSet short of pods", func(h *hand) {
		h.pod("debug", "debug", "", "", waiting("ErrImagePull", "pull access denied"))
		h.o.DaemonSets = append(h.o.DaemonSets, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "node-exporter", Namespace: h.ns, UID: huid("DaemonSet", h.ns, "node-exporter")},
			Spec:   appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node-exporter"}}, Template: handTemplate("node-exporter")},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, NumberUnavailable: 1}})
		h.pod("node-exporter-q", "node-exporter", "DaemonSet", "node-exporter", ready)
	}, []string{"DaemonSet/node-exporter ReplicasUnavailable medium", "Pod/debug ImagePullBackOff high"}},
	{"evicted pods of a healthy Deployment are history", func(h *hand) {
		h.deploy("search", 1, 1)
		h.pod("search-rs-ok", "search", "ReplicaSet", "search-rs", ready)
		h.pod("search-rs-ev", "search", "ReplicaSet", "search-rs", func(p *corev1.Pod, cs *corev1.ContainerStatus) {
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
		})
	}, nil},
	{"Services: a selector typo, one scaled to zero on purpose, one behind a broken Deployment", func(h *hand) {
		h.service("orders", map[string]string{"app": "ordres"})
		h.deploy("batch-ui", 0, 0)
		h.service("batch-ui", map[string]string{"app": "batch-ui"})
		h.deploy("api", 1, 0)
		h.pod("api-rs-1", "api", "ReplicaSet", "api-rs", waiting("CreateContainerConfigError", `secret "api-env" not found`))
		h.service("api", map[string]string{"app": "api"})
		h.o.Services = append(h.o.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "external", Namespace: h.ns},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.net"}})
	}, []string{"Deployment/api CreateContainerConfigError critical", "Service/orders ServiceSelectsNoPods medium"}},
	{"Services: one whose Deployment says it is available but runs no pod, one with a ready pod", func(h *hand) {
		h.deploy("web", 2, 2) // healthy by its status: the sweep keeps no more of it than its index entries
		h.service("web", map[string]string{"app": "web"})
		h.deploy("shop", 1, 1)
		h.pod("shop-rs-1", "shop", "ReplicaSet", "shop-rs", ready)
		h.service("shop", map[string]string{"app": "shop"})
	}, []string{"Service/web ServiceSelectsNoPods high"}},
	{"claims: Lost, Pending for a pod, and WaitForFirstConsumer unused", func(h *hand) {
		wait := storagev1.VolumeBindingWaitForFirstConsumer
		h.o.StorageClasses = append(h.o.StorageClasses, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "topo" + h.sfx}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wait})
		class := "topo" + h.sfx
		claim := func(name string, phase corev1.PersistentVolumeClaimPhase) {
			h.o.PVCs = append(h.o.PVCs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, CreationTimestamp: h.ago(time.Hour)},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resourceQty("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: phase}})
		}
		claim("scratch", corev1.ClaimPending)
		claim("wal", corev1.ClaimPending)
		claim("old", corev1.ClaimLost)
		p := h.pod("writer", "writer", "", "", func(p *corev1.Pod, cs *corev1.ContainerStatus) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims."}}
		})
		p.Spec.Volumes = []corev1.Volume{{Name: "wal", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "wal"}}}}
	}, []string{"PersistentVolumeClaim/old PVCLost high", "PersistentVolumeClaim/wal PVCPending high", "Pod/writer Unschedulable high"}},
	{"Ingress backends by port name and default backend", func(h *hand) {
		h.deploy("web", 1, 1)
		h.pod("web-rs-1", "web", "ReplicaSet", "web-rs", ready)
		h.service("web", map[string]string{"app": "web"})
		pt := networkingv1.PathTypeExact
		ing := func(name string, def *networkingv1.IngressBackend, port networkingv1.ServiceBackendPort) {
			i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: networkingv1.IngressSpec{DefaultBackend: def}}
			if def == nil {
				i.Spec.Rules = []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{Path: "/v2", PathType: &pt, Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{Name: "web", Port: port}}}}}}}}
			}
			h.o.Ingresses = append(h.o.Ingresses, i)
		}
		ing("byname", nil, networkingv1.ServiceBackendPort{Name: "https"})
		ing("good", nil, networkingv1.ServiceBackendPort{Name: "http"})
		ing("fallback", &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "gone", Port: networkingv1.ServiceBackendPort{Number: 80}}}, networkingv1.ServiceBackendPort{})
	}, []string{"Ingress/byname IngressBackendMissing high", "Ingress/fallback IngressBackendMissing high"}},
	{"HPAs: disabled on purpose, cannot get scale, at max over target", func(h *hand) {
		h.deploy("front", 4, 4)
		hpa := func(name string, cur, max int32, conds []autoscalingv2.HorizontalPodAutoscalerCondition, util int32) {
			t := int32(80)
			x := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: max, ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "front", APIVersion: "apps/v1"},
					Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &t}}}}},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: cur, DesiredReplicas: cur, Conditions: conds}}
			if util > 0 {
				x.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &util}}}}
			}
			h.o.HPAs = append(h.o.HPAs, x)
		}
		c := func(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason string) autoscalingv2.HorizontalPodAutoscalerCondition {
			return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: reason, LastTransitionTime: h.ago(time.Hour)}
		}
		hpa("off", 4, 10, []autoscalingv2.HorizontalPodAutoscalerCondition{c(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"), c(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled")}, 0)
		hpa("noscale", 4, 10, []autoscalingv2.HorizontalPodAutoscalerCondition{c(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale")}, 0)
		hpa("maxed", 4, 4, []autoscalingv2.HorizontalPodAutoscalerCondition{c(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"), c(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooManyReplicas")}, 97)
		hpa("calm", 4, 4, []autoscalingv2.HorizontalPodAutoscalerCondition{c(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale")}, 50)
	}, []string{"HorizontalPodAutoscaler/maxed HPAAtMaxUnhealthy medium", "HorizontalPodAutoscaler/noscale HPACannotScale medium"}},
	{"PDBs: strict over healthy pods, blocking over unhealthy ones", func(h *hand) {
		pdb := func(name string, expected, healthy, desired int32) {
			m := intstr.FromString("100%")
			h.o.PDBs = append(h.o.PDBs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
				Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &m, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
				Status: policyv1.PodDisruptionBudgetStatus{ExpectedPods: expected, CurrentHealthy: healthy, DesiredHealthy: desired}})
		}
		pdb("strict", 3, 3, 3)
		pdb("blocking", 3, 1, 3)
	}, []string{"PodDisruptionBudget/blocking PDBNoDisruptions medium"}},
	{"webhooks: no selector, by URL, Ignore with no ready pod", func(h *hand) {
		ignore, none := admissionv1.Ignore, admissionv1.SideEffectClassNone
		url := "https://hooks.example.net/mutate"
		hook := func(name string, cc admissionv1.WebhookClientConfig, fp *admissionv1.FailurePolicyType) admissionv1.ValidatingWebhook {
			return admissionv1.ValidatingWebhook{Name: name + ".acme.io", ClientConfig: cc, FailurePolicy: fp, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{"acme.io"}, APIVersions: []string{"v1"}, Resources: []string{"gadgets"}}}}}
		}
		h.service("manual", nil)
		h.service("policy", map[string]string{"app": "policy"})
		h.pod("policy-0", "policy", "", "", notReady)
		h.o.Webhooks = append(h.o.Webhooks, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "acme" + h.sfx},
			Webhooks: []admissionv1.ValidatingWebhook{
				hook("manual", admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: h.ns, Name: "manual"}}, nil),
				hook("remote", admissionv1.WebhookClientConfig{URL: &url}, nil),
				hook("policy", admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: h.ns, Name: "policy"}}, &ignore),
			}})
	}, []string{"Pod/policy-0 ProbeFailure high", "ValidatingWebhookConfiguration/acme WebhookNoEndpoints medium"}},
	{"jobs: a CronJob that recovered, one that did not, old and new failed Jobs", func(h *hand) {
		h.cron("backup")
		h.job("backup-1", "backup", true, 90*time.Minute)
		h.job("backup-2", "backup", false, 30*time.Minute)
		h.cron("sync")
		h.job("sync-1", "sync", false, 90*time.Minute)
		h.job("sync-2", "sync", true, 30*time.Minute)
		h.job("migrate-old", "", true, 72*time.Hour)
		h.job("migrate-new", "", true, time.Hour)
	}, []string{"CronJob/sync JobFailed medium", "Job/migrate-new JobFailed medium"}},
	{"nodes: pressure while Ready, and NotReady", func(h *hand) {
		h.node("disk", corev1.ConditionTrue, corev1.NodeDiskPressure)
		h.node("down", corev1.ConditionUnknown, "")
		h.node("fine", corev1.ConditionTrue, "")
	}, []string{"Node/disk DiskPressure high", "Node/down NodeNotReady critical"}},
}

func newHand(ns, sfx string, now time.Time) *hand {
	h := &hand{o: &kubetest.Objects{}, ns: ns, sfx: sfx, now: now}
	h.o.Namespaces = []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	return h
}

// semGot lists the problems of a case's namespace and cluster-scoped
// objects as "Kind/name Reason severity".
func semGot(r *ProblemReport, ns, sfx string) []string {
	var got []string
	for _, p := range r.Problems {
		switch {
		case p.Namespace == ns:
		case p.Namespace == "" && sfx != "" && strings.HasSuffix(p.Name, sfx):
		case p.Namespace == "" && sfx == "":
		default:
			continue
		}
		got = append(got, fmt.Sprintf("%s/%s %s %s", p.Kind, strings.TrimSuffix(p.Name, sfx), p.Reason, p.Severity))
	}
	sort.Strings(got)
	return got
}

func TestProblemsSemanticsOnHandBuiltClusters(t *testing.T) {
	t.Parallel()
	for _, tc := range semCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHand("acme", "", testNow)
			tc.build(h)
			c, _ := fakeClient(t, h.o.All()...)
			r, err := c.ClusterProblems(context.Background(), ProblemOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := semGot(r, "acme", ""); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n got %q\nwant %q\n%s", got, tc.want, r.Render())
			}
			if len(tc.want) == 0 && r.Verdict() != VerdictHealthy {
				t.Errorf("verdict %s, want healthy:\n%s", r.Verdict(), r.Render())
			}
		})
	}
}

func resourceQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
