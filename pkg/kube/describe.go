package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// DescribeArgs are the slots of k8s_describe.
type DescribeArgs struct {
	Kind      string `json:"kind" enum:"pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,services,configmaps,nodes,namespaces,ingresses,persistentvolumeclaims,horizontalpodautoscalers"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

var describeKinds = []string{
	KindPods, KindDeployments, KindReplicaSets, KindStatefulSets, KindDaemonSets, KindJobs, KindCronJobs,
	KindServices, KindConfigMaps, KindNodes, KindNamespaces, KindIngresses, KindPersistentVolumeClaims,
	KindHorizontalPodAutoscalers,
}

const (
	describePods   = 20
	describeEvents = 20
	describeMsgMax = 200
)

// describer accumulates a kubectl-describe-like text.
type describer struct {
	b   strings.Builder
	now time.Time
}

func (d *describer) line(indent int, key, val string) {
	d.b.WriteString(strings.Repeat("  ", indent))
	if key != "" {
		d.b.WriteString(key)
		d.b.WriteString(": ")
	}
	d.b.WriteString(safetext.Clean(val, describeMsgMax))
	d.b.WriteByte('\n')
}

// Describe summarizes one object: metadata, spec and status that matter,
// its pods for workloads, and its recent events (and its pods' events,
// grouped by reason).
func (c *Client) Describe(ctx context.Context, a DescribeArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	ref, err := parseRef(a.Kind, a.Namespace, a.Name, describeKinds)
	if err != nil {
		if a.Kind == KindEvents || a.Kind == "event" {
			return "", fmt.Errorf("events are not described; use k8s_get_events")
		}
		return "", err
	}
	obj, err := c.getObject(ctx, ref)
	if err != nil {
		return "", err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	d := &describer{now: c.now()}
	d.line(0, "Kind", kindNames[ref.kind])
	d.line(0, "Name", m.GetName())
	if m.GetNamespace() != "" {
		d.line(0, "Namespace", m.GetNamespace())
	}
	d.line(0, "Created", m.GetCreationTimestamp().UTC().Format(time.RFC3339)+" ("+age(d.now, m.GetCreationTimestamp())+" ago)")
	d.line(0, "Labels", joinMap(m.GetLabels(), 20))
	ann := m.GetAnnotations()
	delete(ann, lastApplied)
	d.line(0, "Annotations", joinMap(ann, 10))
	if o := controllerOf(m.GetOwnerReferences()); o != "" {
		d.line(0, "Controlled By", o)
	}
	related := map[types.UID]bool{m.GetUID(): true} // objects whose events belong here
	var perr error
	switch o := obj.(type) {
	case *corev1.Pod:
		describePod(d, o)
	case *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job:
		perr = c.describeWorkload(ctx, d, obj, related)
	case *batchv1.CronJob:
		describeCronJob(d, o)
	case *corev1.Service:
		d.line(0, "Type", string(o.Spec.Type))
		d.line(0, "Cluster IP", o.Spec.ClusterIP)
		d.line(0, "Ports", servicePorts(o))
		d.line(0, "Selector", joinMap(o.Spec.Selector, 20))
		if len(o.Spec.Selector) > 0 {
			perr = c.describePodsBySelector(ctx, d, o.Namespace, labels.SelectorFromSet(o.Spec.Selector), "Backing Pods")
		}
	case *corev1.ConfigMap:
		d.line(0, "Data", "(values are not shown; use k8s_get_yaml to read one)")
		for _, k := range sortedKeys(o.Data) {
			d.line(1, k, fmt.Sprintf("%d bytes", len(o.Data[k])))
		}
		for _, k := range sortedKeys(o.BinaryData) {
			d.line(1, k, fmt.Sprintf("%d bytes (binary)", len(o.BinaryData[k])))
		}
	case *corev1.Node:
		describeNode(d, o)
	case *corev1.Namespace:
		d.line(0, "Status", string(o.Status.Phase))
	case *networkingv1.Ingress:
		describeIngress(d, o)
	case *corev1.PersistentVolumeClaim:
		describePVC(d, o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		d.line(0, "Reference", o.Spec.ScaleTargetRef.Kind+"/"+o.Spec.ScaleTargetRef.Name)
		d.line(0, "Replicas", fmt.Sprintf("min %d, max %d, current %d, desired %d", i32(o.Spec.MinReplicas, 1), o.Spec.MaxReplicas, o.Status.CurrentReplicas, o.Status.DesiredReplicas))
		var conds []condView
		for _, c := range o.Status.Conditions {
			conds = append(conds, condView{string(c.Type), string(c.Status), c.Reason, c.Message})
		}
		describeConditions(d, conds)
	}
	if perr != nil {
		d.line(0, "Pods", "not listed: "+perr.Error())
	}
	c.describeEvents(ctx, d, ref, related)
	return d.b.String(), nil
}

// describeWorkload describes a workload with a pod template: its replicas
// or completions, its template, and the pods it owns (whose events belong
// to it).
func (c *Client) describeWorkload(ctx context.Context, d *describer, obj any, related map[types.UID]bool) error {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		d.line(0, "Replicas", fmt.Sprintf("%d desired | %d updated | %d ready | %d available | %d unavailable",
			i32(o.Spec.Replicas, 1), o.Status.UpdatedReplicas, o.Status.ReadyReplicas, o.Status.AvailableReplicas, o.Status.UnavailableReplicas))
		d.line(0, "Strategy", string(o.Spec.Strategy.Type))
		d.line(0, "Paused", strconv.FormatBool(o.Spec.Paused))
		d.line(0, "Generation", fmt.Sprintf("%d (observed %d)", o.Generation, o.Status.ObservedGeneration))
		describeConditions(d, deployConds(o.Status.Conditions))
		describeTemplate(d, &o.Spec.Template)
		return c.describeOwned(ctx, d, o.Namespace, o.Spec.Selector, o.UID, related, true)
	case *appsv1.ReplicaSet:
		d.line(0, "Replicas", fmt.Sprintf("%d desired | %d current | %d ready", i32(o.Spec.Replicas, 1), o.Status.Replicas, o.Status.ReadyReplicas))
		describeTemplate(d, &o.Spec.Template)
		return c.describeOwned(ctx, d, o.Namespace, o.Spec.Selector, o.UID, related, false)
	case *appsv1.StatefulSet:
		d.line(0, "Replicas", fmt.Sprintf("%d desired | %d current | %d ready | %d updated", i32(o.Spec.Replicas, 1), o.Status.Replicas, o.Status.ReadyReplicas, o.Status.UpdatedReplicas))
		d.line(0, "Update Strategy", string(o.Spec.UpdateStrategy.Type))
		describeTemplate(d, &o.Spec.Template)
		return c.describeOwned(ctx, d, o.Namespace, o.Spec.Selector, o.UID, related, false)
	case *appsv1.DaemonSet:
		s := o.Status
		d.line(0, "Pods", fmt.Sprintf("%d desired | %d current | %d ready | %d updated | %d available | %d misscheduled",
			s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled, s.NumberAvailable, s.NumberMisscheduled))
		describeTemplate(d, &o.Spec.Template)
		return c.describeOwned(ctx, d, o.Namespace, o.Spec.Selector, o.UID, related, false)
	case *batchv1.Job:
		d.line(0, "Status", jobStatus(o))
		d.line(0, "Completions", fmt.Sprintf("%d/%d (active %d, failed %d, backoffLimit %d)", o.Status.Succeeded,
			i32(o.Spec.Completions, 1), o.Status.Active, o.Status.Failed, i32(o.Spec.BackoffLimit, 6)))
		var conds []condView
		for _, c := range o.Status.Conditions {
			conds = append(conds, condView{string(c.Type), string(c.Status), c.Reason, c.Message})
		}
		describeConditions(d, conds)
		describeTemplate(d, &o.Spec.Template)
		return c.describeOwned(ctx, d, o.Namespace, o.Spec.Selector, o.UID, related, false)
	}
	return nil
}

// describeCronJob: its schedule, last runs and active Jobs, and its template.
func describeCronJob(d *describer, o *batchv1.CronJob) {
	d.line(0, "Schedule", o.Spec.Schedule)
	d.line(0, "Suspend", strconv.FormatBool(o.Spec.Suspend != nil && *o.Spec.Suspend))
	if o.Status.LastScheduleTime != nil {
		d.line(0, "Last Schedule", o.Status.LastScheduleTime.UTC().Format(time.RFC3339))
	}
	if o.Status.LastSuccessfulTime != nil {
		d.line(0, "Last Successful", o.Status.LastSuccessfulTime.UTC().Format(time.RFC3339))
	}
	var act []string
	for _, j := range o.Status.Active {
		act = append(act, j.Name)
	}
	d.line(0, "Active Jobs", strings.Join(act, ", "))
	describeTemplate(d, &o.Spec.JobTemplate.Spec.Template)
}

func describeNode(d *describer, o *corev1.Node) {
	d.line(0, "Status", nodeStatus(o))
	d.line(0, "Roles", nodeRoles(o))
	d.line(0, "Taints", taints(o))
	d.line(0, "Kubelet", o.Status.NodeInfo.KubeletVersion)
	var conds []condView
	for _, c := range o.Status.Conditions {
		conds = append(conds, condView{string(c.Type), string(c.Status), c.Reason, c.Message})
	}
	describeConditions(d, conds)
	d.line(0, "Allocatable", fmt.Sprintf("cpu %s, memory %s, pods %s", o.Status.Allocatable.Cpu(), o.Status.Allocatable.Memory(), o.Status.Allocatable.Pods()))
	d.line(0, "Capacity", fmt.Sprintf("cpu %s, memory %s, pods %s", o.Status.Capacity.Cpu(), o.Status.Capacity.Memory(), o.Status.Capacity.Pods()))
}

func describeIngress(d *describer, o *networkingv1.Ingress) {
	if o.Spec.IngressClassName != nil {
		d.line(0, "Class", *o.Spec.IngressClassName)
	}
	d.line(0, "Rules", "")
	for _, r := range o.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			backend := ""
			if p.Backend.Service != nil {
				backend = p.Backend.Service.Name + ":" + nonEmpty(p.Backend.Service.Port.Name, strconv.Itoa(int(p.Backend.Service.Port.Number)))
			}
			d.line(1, nonEmpty(r.Host, "*")+p.Path, backend)
		}
	}
}

func describePVC(d *describer, o *corev1.PersistentVolumeClaim) {
	d.line(0, "Status", string(o.Status.Phase))
	d.line(0, "Volume", o.Spec.VolumeName)
	if o.Spec.StorageClassName != nil {
		d.line(0, "StorageClass", *o.Spec.StorageClassName)
	}
	if q, ok := o.Status.Capacity[corev1.ResourceStorage]; ok {
		d.line(0, "Capacity", q.String())
	}
	var modes []string
	for _, m := range o.Spec.AccessModes {
		modes = append(modes, string(m))
	}
	d.line(0, "Access Modes", strings.Join(modes, ","))
}

type condView struct{ typ, status, reason, msg string }

func deployConds(cs []appsv1.DeploymentCondition) []condView {
	var out []condView
	for _, c := range cs {
		out = append(out, condView{string(c.Type), string(c.Status), c.Reason, c.Message})
	}
	return out
}

func describeConditions(d *describer, cs []condView) {
	if len(cs) == 0 {
		return
	}
	d.line(0, "Conditions", "")
	for _, c := range cs {
		v := c.status
		if c.reason != "" {
			v += " (" + c.reason + ")"
		}
		if c.msg != "" {
			v += " " + c.msg
		}
		d.line(1, c.typ, v)
	}
}

func describePod(d *describer, p *corev1.Pod) {
	d.line(0, "Status", podStatus(p))
	d.line(0, "Phase", string(p.Status.Phase))
	d.line(0, "Node", p.Spec.NodeName)
	d.line(0, "IP", p.Status.PodIP)
	d.line(0, "QoS Class", string(p.Status.QOSClass))
	var conds []condView
	for _, c := range p.Status.Conditions {
		conds = append(conds, condView{string(c.Type), string(c.Status), c.Reason, c.Message})
	}
	describeConditions(d, conds)
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		statuses[s.Name] = s
	}
	d.line(0, "Containers", "")
	for _, c := range p.Spec.Containers {
		describeContainer(d, c)
		if s, ok := statuses[c.Name]; ok {
			d.line(2, "State", containerState(s.State))
			if s.LastTerminationState != (corev1.ContainerState{}) {
				d.line(2, "Last State", containerState(s.LastTerminationState))
			}
			d.line(2, "Ready", strconv.FormatBool(s.Ready))
			d.line(2, "Restart Count", strconv.Itoa(int(s.RestartCount)))
		}
	}
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "Running since " + s.Running.StartedAt.UTC().Format(time.RFC3339)
	case s.Waiting != nil:
		v := "Waiting (" + s.Waiting.Reason + ")"
		if s.Waiting.Message != "" {
			v += " " + s.Waiting.Message
		}
		return v
	case s.Terminated != nil:
		t := s.Terminated
		v := fmt.Sprintf("Terminated (%s) exit code %d", nonEmpty(t.Reason, "Unknown"), t.ExitCode)
		if t.Signal != 0 {
			v += fmt.Sprintf(" signal %d", t.Signal)
		}
		if !t.FinishedAt.IsZero() {
			v += " at " + t.FinishedAt.UTC().Format(time.RFC3339)
		}
		if t.Message != "" {
			v += ": " + t.Message
		}
		return v
	}
	return "Unknown"
}

func describeTemplate(d *describer, t *corev1.PodTemplateSpec) {
	d.line(0, "Pod Template", "")
	d.line(1, "Labels", joinMap(t.Labels, 20))
	if t.Spec.ServiceAccountName != "" {
		d.line(1, "Service Account", t.Spec.ServiceAccountName)
	}
	for _, c := range t.Spec.Containers {
		describeContainer(d, c)
	}
}

func describeContainer(d *describer, c corev1.Container) {
	d.line(1, c.Name, "")
	d.line(2, "Image", c.Image)
	if s := resourceList(c.Resources.Limits); s != "" {
		d.line(2, "Limits", s)
	}
	if s := resourceList(c.Resources.Requests); s != "" {
		d.line(2, "Requests", s)
	}
	for _, p := range []struct {
		name string
		p    *corev1.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if p.p != nil {
			d.line(2, p.name, probeString(p.p))
		}
	}
	var env []string
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil {
			env = append(env, "configmap "+e.ConfigMapRef.Name)
		}
		if e.SecretRef != nil {
			env = append(env, "secret "+e.SecretRef.Name+" (not read)")
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			env = append(env, e.Name+" from configmap "+e.ValueFrom.ConfigMapKeyRef.Name)
		}
	}
	if len(env) > 0 {
		d.line(2, "Environment From", strings.Join(env, ", "))
	}
}

func resourceList(l corev1.ResourceList) string {
	var out []string
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := l[k]; ok {
			out = append(out, string(k)+"="+q.String())
		}
	}
	return strings.Join(out, ", ")
}

func probeString(p *corev1.Probe) string {
	var what string
	switch {
	case p.HTTPGet != nil:
		what = fmt.Sprintf("http-get %s port %s", p.HTTPGet.Path, p.HTTPGet.Port.String())
	case p.TCPSocket != nil:
		what = "tcp-socket port " + p.TCPSocket.Port.String()
	case p.Exec != nil:
		what = "exec " + strings.Join(p.Exec.Command, " ")
	case p.GRPC != nil:
		what = fmt.Sprintf("grpc port %d", p.GRPC.Port)
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds failure=%d", what, p.InitialDelaySeconds,
		max(p.TimeoutSeconds, 1), max(p.PeriodSeconds, 10), max(p.FailureThreshold, 3))
}

// describeOwned lists the pods a workload selects (and, for Deployments,
// its ReplicaSets), marking their UIDs as related for the events section.
func (c *Client) describeOwned(ctx context.Context, d *describer, ns string, sel *metav1.LabelSelector, owner types.UID, related map[types.UID]bool, withRS bool) error {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("bad selector: %w", err)
	}
	if withRS {
		rss, err := c.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			return c.apiErr(err, "list replicasets")
		}
		var lines []string
		for i := range rss.Items {
			rs := &rss.Items[i]
			if !ownedBy(rs.OwnerReferences, owner) {
				continue
			}
			related[rs.UID] = true
			lines = append(lines, fmt.Sprintf("%s revision %s: %d/%d ready", rs.Name,
				nonEmpty(rs.Annotations[revisionAnnotation], "?"), rs.Status.ReadyReplicas, i32(rs.Spec.Replicas, 1)))
		}
		sort.Strings(lines)
		d.line(0, "ReplicaSets", "")
		for _, l := range lines {
			d.line(1, "", l)
		}
	}
	return c.describePodsBySelector(ctx, d, ns, s, "Pods", related)
}

func (c *Client) describePodsBySelector(ctx context.Context, d *describer, ns string, s labels.Selector, title string, related ...map[types.UID]bool) error {
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return c.apiErr(err, "list pods")
	}
	d.line(0, title, fmt.Sprintf("%d", len(pods.Items)))
	t := &table{head: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}}
	for i := range pods.Items {
		p := &pods.Items[i]
		for _, r := range related {
			r[p.UID] = true
		}
		if i < describePods {
			r, n := podReady(p)
			t.add(p.Name, fmt.Sprintf("%d/%d", r, n), podStatus(p), strconv.Itoa(podRestarts(p)), age(d.now, p.CreationTimestamp))
		}
	}
	if len(t.rows) > 0 {
		for _, l := range strings.Split(strings.TrimRight(t.String(), "\n"), "\n") {
			d.b.WriteString("  " + l + "\n")
		}
	}
	if len(pods.Items) > describePods {
		d.line(1, "", fmt.Sprintf("... and %d more pods", len(pods.Items)-describePods))
	}
	return nil
}

// describeEvents lists the object's own events newest first, then its
// related objects' events (pods, ReplicaSets) grouped by reason.
func (c *Client) describeEvents(ctx context.Context, d *describer, ref objectRef, related map[types.UID]bool) {
	ns := ref.namespace
	opts := metav1.ListOptions{}
	if len(related) == 1 { // only the object itself: let the server filter
		opts.FieldSelector = "involvedObject.name=" + ref.name + ",involvedObject.kind=" + kindNames[ref.kind]
	}
	var own []*corev1.Event
	type group struct {
		reason, typ, msg string
		count            int
		last             time.Time
		objects          map[string]bool
	}
	groups := map[string]*group{}
	err := c.eachEvent(ctx, ns, opts, func(e *corev1.Event) {
		io := e.InvolvedObject
		isSelf := io.Kind == kindNames[ref.kind] && io.Name == ref.name
		switch {
		case isSelf:
			own = append(own, keptEvent(e))
		case related[io.UID]:
			g := groups[e.Type+"/"+e.Reason]
			if g == nil {
				g = &group{reason: e.Reason, typ: e.Type, objects: map[string]bool{}}
				groups[e.Type+"/"+e.Reason] = g
			}
			g.count += eventCount(e)
			g.objects[io.Kind+"/"+io.Name] = true
			if ls := eventLastSeen(e); ls.After(g.last) || g.msg == "" {
				g.last, g.msg = ls, e.Message
			}
		}
	})
	if err != nil {
		d.line(0, "Events", "not listed: "+c.apiErr(err, "list events").Error())
		return
	}
	sortEventsNewestFirst(own)
	if len(own) == 0 {
		d.line(0, "Events", "<none>")
	} else {
		d.line(0, "Events", fmt.Sprintf("%d (newest first)", len(own)))
		t := &table{head: []string{"LAST-SEEN", "TYPE", "REASON", "COUNT", "MESSAGE"}}
		for i, e := range own {
			if i == describeEvents {
				break
			}
			t.add(shortDur(d.now.Sub(eventLastSeen(e)))+" ago", e.Type, e.Reason, strconv.Itoa(eventCount(e)), safetext.Clean(e.Message, describeMsgMax))
		}
		for _, l := range strings.Split(strings.TrimRight(t.String(), "\n"), "\n") {
			d.b.WriteString("  " + l + "\n")
		}
	}
	if len(groups) == 0 {
		return
	}
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		gi, gj := groups[keys[i]], groups[keys[j]]
		if gi.typ != gj.typ {
			return gi.typ == corev1.EventTypeWarning
		}
		return gi.last.After(gj.last) || (gi.last.Equal(gj.last) && keys[i] < keys[j])
	})
	d.line(0, "Events of its pods and ReplicaSets", "grouped by reason")
	for _, k := range keys {
		g := groups[k]
		d.line(1, g.typ+" "+g.reason, fmt.Sprintf("x%d on %d objects, last %s ago: %s", g.count, len(g.objects),
			shortDur(d.now.Sub(g.last)), safetext.Clean(g.msg, describeMsgMax)))
	}
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// joinMap renders k=v pairs sorted, at most n, values bounded.
func joinMap(m map[string]string, n int) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := sortedKeys(m)
	var out []string
	for i, k := range keys {
		if i == n {
			out = append(out, fmt.Sprintf("… %d more", len(keys)-n))
			break
		}
		out = append(out, k+"="+safetext.Clean(m[k], 80))
	}
	return strings.Join(out, ", ")
}
