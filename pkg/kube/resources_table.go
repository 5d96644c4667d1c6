package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The tables of k8s_get_resources: one lister a kind, each listing its
// kind and adding kubectl-get-like columns and rows.

// tableRows collects one listing: the header, then a row an object. When
// withNS (all namespaces, a namespaced kind) every row starts with its
// namespace.
type tableRows struct {
	t      table
	now    time.Time
	withNS bool
}

func (r *tableRows) head(cols ...string) {
	if r.withNS {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	r.t.head = cols
}

func (r *tableRows) row(ns string, cells ...string) {
	if r.withNS {
		cells = append([]string{ns}, cells...)
	}
	r.t.add(cells...)
}

// tableLister lists kind in ns ("" = all) into r.
type tableLister func(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, r *tableRows) (metav1.ListMeta, error)

// tableListers are the kinds k8s_get_resources lists.
var tableListers = map[string]tableLister{
	KindPods:                     tablePods,
	KindDeployments:              tableDeployments,
	KindReplicaSets:              tableReplicaSets,
	KindStatefulSets:             tableStatefulSets,
	KindDaemonSets:               tableDaemonSets,
	KindJobs:                     tableJobs,
	KindCronJobs:                 tableCronJobs,
	KindServices:                 tableServices,
	KindConfigMaps:               tableConfigMaps,
	KindNodes:                    tableNodes,
	KindNamespaces:               tableNamespaces,
	KindEvents:                   tableEvents,
	KindIngresses:                tableIngresses,
	KindPersistentVolumeClaims:   tablePVCs,
	KindHorizontalPodAutoscalers: tableHPAs,
}

func tablePods(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE")
	for i := range l.Items {
		p := &l.Items[i]
		r, n := podReady(p)
		t.row(p.Namespace, p.Name, fmt.Sprintf("%d/%d", r, n), podStatus(p), strconv.Itoa(podRestarts(p)),
			age(t.now, p.CreationTimestamp), p.Spec.NodeName)
	}
	return l.ListMeta, nil
}

func tableDeployments(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE")
	for i := range l.Items {
		d := &l.Items[i]
		t.row(d.Namespace, d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, i32(d.Spec.Replicas, 1)),
			itoa32(d.Status.UpdatedReplicas), itoa32(d.Status.AvailableReplicas), age(t.now, d.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableReplicaSets(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.AppsV1().ReplicaSets(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "DESIRED", "CURRENT", "READY", "OWNER", "AGE")
	for i := range l.Items {
		r := &l.Items[i]
		t.row(r.Namespace, r.Name, itoa32(i32(r.Spec.Replicas, 1)), itoa32(r.Status.Replicas),
			itoa32(r.Status.ReadyReplicas), controllerOf(r.OwnerReferences), age(t.now, r.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableStatefulSets(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.AppsV1().StatefulSets(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "READY", "AGE")
	for i := range l.Items {
		s := &l.Items[i]
		t.row(s.Namespace, s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, i32(s.Spec.Replicas, 1)), age(t.now, s.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableDaemonSets(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.AppsV1().DaemonSets(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE")
	for i := range l.Items {
		d := &l.Items[i]
		s := d.Status
		t.row(d.Namespace, d.Name, itoa32(s.DesiredNumberScheduled), itoa32(s.CurrentNumberScheduled), itoa32(s.NumberReady),
			itoa32(s.UpdatedNumberScheduled), itoa32(s.NumberAvailable), age(t.now, d.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableJobs(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.BatchV1().Jobs(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "STATUS", "COMPLETIONS", "ACTIVE", "FAILED", "AGE")
	for i := range l.Items {
		j := &l.Items[i]
		t.row(j.Namespace, j.Name, jobStatus(j), fmt.Sprintf("%d/%d", j.Status.Succeeded, i32(j.Spec.Completions, 1)),
			itoa32(j.Status.Active), itoa32(j.Status.Failed), age(t.now, j.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableCronJobs(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.BatchV1().CronJobs(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST-SCHEDULE", "AGE")
	for i := range l.Items {
		j := &l.Items[i]
		last := "-"
		if j.Status.LastScheduleTime != nil {
			last = age(t.now, *j.Status.LastScheduleTime)
		}
		t.row(j.Namespace, j.Name, j.Spec.Schedule, strconv.FormatBool(j.Spec.Suspend != nil && *j.Spec.Suspend),
			strconv.Itoa(len(j.Status.Active)), last, age(t.now, j.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableServices(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "TYPE", "CLUSTER-IP", "PORTS", "AGE")
	for i := range l.Items {
		s := &l.Items[i]
		t.row(s.Namespace, s.Name, string(s.Spec.Type), s.Spec.ClusterIP, servicePorts(s), age(t.now, s.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "KEYS", "AGE")
	for i := range l.Items {
		m := &l.Items[i]
		keys := append(sortedKeys(m.Data), sortedKeys(m.BinaryData)...)
		t.row(m.Namespace, m.Name, strings.Join(keys, ","), age(t.now, m.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableNodes(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "STATUS", "ROLES", "AGE", "VERSION")
	for i := range l.Items {
		n := &l.Items[i]
		t.row("", n.Name, nodeStatus(n), nodeRoles(n), age(t.now, n.CreationTimestamp), n.Status.NodeInfo.KubeletVersion)
	}
	return l.ListMeta, nil
}

func tableNamespaces(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().Namespaces().List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "STATUS", "AGE")
	for i := range l.Items {
		n := &l.Items[i]
		t.row("", n.Name, string(n.Status.Phase), age(t.now, n.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableEvents(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().Events(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("LAST-SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE")
	for i := range l.Items {
		e := &l.Items[i]
		t.row(e.Namespace, shortDur(t.now.Sub(eventLastSeen(e))), e.Type, e.Reason,
			e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name, strconv.Itoa(eventCount(e)), e.Message)
	}
	return l.ListMeta, nil
}

func tableIngresses(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.NetworkingV1().Ingresses(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "CLASS", "HOSTS", "AGE")
	for i := range l.Items {
		g := &l.Items[i]
		var hosts []string
		for _, r := range g.Spec.Rules {
			hosts = append(hosts, nonEmpty(r.Host, "*"))
		}
		class := ""
		if g.Spec.IngressClassName != nil {
			class = *g.Spec.IngressClassName
		}
		t.row(g.Namespace, g.Name, class, strings.Join(hosts, ","), age(t.now, g.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tablePVCs(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "STATUS", "VOLUME", "CAPACITY", "STORAGECLASS", "AGE")
	for i := range l.Items {
		p := &l.Items[i]
		capacity := ""
		if q, ok := p.Status.Capacity[corev1.ResourceStorage]; ok {
			capacity = q.String()
		}
		sc := ""
		if p.Spec.StorageClassName != nil {
			sc = *p.Spec.StorageClassName
		}
		t.row(p.Namespace, p.Name, string(p.Status.Phase), p.Spec.VolumeName, capacity, sc, age(t.now, p.CreationTimestamp))
	}
	return l.ListMeta, nil
}

func tableHPAs(ctx context.Context, cs kubernetes.Interface, ns string, opts metav1.ListOptions, t *tableRows) (metav1.ListMeta, error) {
	l, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	t.head("NAME", "REFERENCE", "MIN", "MAX", "REPLICAS", "AGE")
	for i := range l.Items {
		h := &l.Items[i]
		t.row(h.Namespace, h.Name, h.Spec.ScaleTargetRef.Kind+"/"+h.Spec.ScaleTargetRef.Name,
			itoa32(i32(h.Spec.MinReplicas, 1)), itoa32(h.Spec.MaxReplicas), itoa32(h.Status.CurrentReplicas),
			age(t.now, h.CreationTimestamp))
	}
	return l.ListMeta, nil
}
