package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetResourcesArgs are the slots of k8s_get_resources.
type GetResourcesArgs struct {
	Kind          string `json:"kind" enum:"pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,services,configmaps,nodes,namespaces,events,ingresses,persistentvolumeclaims,horizontalpodautoscalers" description:"resource kind (Secrets are never listed)"`
	Namespace     string `json:"namespace,omitempty" description:"namespace; omit for all namespaces (ignored for nodes and namespaces)"`
	LabelSelector string `json:"label_selector,omitempty" description:"label selector, e.g. app=web,tier!=cache"`
	Limit         int    `json:"limit,omitempty" description:"maximum rows (default 100, at most 500)"`
}

const (
	defaultRows = 100
	maxRows     = 500
)

// GetResources lists one kind as a kubectl-get-like table. ConfigMaps show
// their key names only, never values.
func (c *Client) GetResources(ctx context.Context, a GetResourcesArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	kind, err := parseKind(a.Kind, nil)
	if err != nil {
		return "", err
	}
	ns := a.Namespace
	if clusterScoped[kind] {
		ns = ""
	}
	if err := validOptionalName("namespace", ns); err != nil {
		return "", err
	}
	sel, err := parseSelector(a.LabelSelector)
	if err != nil {
		return "", err
	}
	limit, err := bound(a.Limit, defaultRows, maxRows)
	if err != nil {
		return "", err
	}
	opts := metav1.ListOptions{LabelSelector: sel, Limit: int64(limit)}
	t, meta, err := c.listTable(ctx, kind, ns, opts)
	if err != nil {
		return "", c.apiErr(err, "list "+kind+" in "+scope(ns))
	}
	shown := len(t.rows)
	more := 0
	if shown > limit { // a server (or fake) that ignored the limit
		more = shown - limit
		t.rows = t.rows[:limit]
		shown = limit
	} else if meta.RemainingItemCount != nil {
		more = int(*meta.RemainingItemCount)
	}
	var b strings.Builder
	where := scope(ns)
	if clusterScoped[kind] {
		where = "cluster"
	}
	fmt.Fprintf(&b, "%s in %s", kind, where)
	if sel != "" {
		fmt.Fprintf(&b, " matching %s", sel)
	}
	switch {
	case shown == 0:
		b.WriteString(": none found\n")
		return b.String(), nil
	case more > 0:
		fmt.Fprintf(&b, ": %d shown, %d more not shown (narrow with namespace or label_selector)\n", shown, more)
	case meta.Continue != "":
		fmt.Fprintf(&b, ": first %d shown, more exist (narrow with namespace or label_selector)\n", shown)
	default:
		fmt.Fprintf(&b, ": %d\n", shown)
	}
	b.WriteString(t.String())
	return b.String(), nil
}

// listTable lists kind and renders its rows. ns "" lists all namespaces.
func (c *Client) listTable(ctx context.Context, kind, ns string, opts metav1.ListOptions) (*table, metav1.ListMeta, error) {
	now := c.now()
	all := ns == ""
	t := &table{}
	head := func(cols ...string) {
		if all && !clusterScoped[kind] {
			cols = append([]string{"NAMESPACE"}, cols...)
		}
		t.head = cols
	}
	row := func(ns string, cells ...string) {
		if all && !clusterScoped[kind] {
			cells = append([]string{ns}, cells...)
		}
		t.add(cells...)
	}
	switch kind {
	case KindPods:
		l, err := c.cs.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE")
		for i := range l.Items {
			p := &l.Items[i]
			r, n := podReady(p)
			row(p.Namespace, p.Name, fmt.Sprintf("%d/%d", r, n), podStatus(p), strconv.Itoa(podRestarts(p)),
				age(now, p.CreationTimestamp), p.Spec.NodeName)
		}
		return t, l.ListMeta, nil
	case KindDeployments:
		l, err := c.cs.AppsV1().Deployments(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE")
		for i := range l.Items {
			d := &l.Items[i]
			row(d.Namespace, d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, i32(d.Spec.Replicas, 1)),
				itoa32(d.Status.UpdatedReplicas), itoa32(d.Status.AvailableReplicas), age(now, d.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindReplicaSets:
		l, err := c.cs.AppsV1().ReplicaSets(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "DESIRED", "CURRENT", "READY", "OWNER", "AGE")
		for i := range l.Items {
			r := &l.Items[i]
			row(r.Namespace, r.Name, itoa32(i32(r.Spec.Replicas, 1)), itoa32(r.Status.Replicas),
				itoa32(r.Status.ReadyReplicas), controllerOf(r.OwnerReferences), age(now, r.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindStatefulSets:
		l, err := c.cs.AppsV1().StatefulSets(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "READY", "AGE")
		for i := range l.Items {
			s := &l.Items[i]
			row(s.Namespace, s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, i32(s.Spec.Replicas, 1)), age(now, s.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindDaemonSets:
		l, err := c.cs.AppsV1().DaemonSets(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE")
		for i := range l.Items {
			d := &l.Items[i]
			s := d.Status
			row(d.Namespace, d.Name, itoa32(s.DesiredNumberScheduled), itoa32(s.CurrentNumberScheduled), itoa32(s.NumberReady),
				itoa32(s.UpdatedNumberScheduled), itoa32(s.NumberAvailable), age(now, d.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindJobs:
		l, err := c.cs.BatchV1().Jobs(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "STATUS", "COMPLETIONS", "ACTIVE", "FAILED", "AGE")
		for i := range l.Items {
			j := &l.Items[i]
			row(j.Namespace, j.Name, jobStatus(j), fmt.Sprintf("%d/%d", j.Status.Succeeded, i32(j.Spec.Completions, 1)),
				itoa32(j.Status.Active), itoa32(j.Status.Failed), age(now, j.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindCronJobs:
		l, err := c.cs.BatchV1().CronJobs(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST-SCHEDULE", "AGE")
		for i := range l.Items {
			j := &l.Items[i]
			last := "-"
			if j.Status.LastScheduleTime != nil {
				last = age(now, *j.Status.LastScheduleTime)
			}
			row(j.Namespace, j.Name, j.Spec.Schedule, strconv.FormatBool(j.Spec.Suspend != nil && *j.Spec.Suspend),
				strconv.Itoa(len(j.Status.Active)), last, age(now, j.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindServices:
		l, err := c.cs.CoreV1().Services(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "TYPE", "CLUSTER-IP", "PORTS", "AGE")
		for i := range l.Items {
			s := &l.Items[i]
			row(s.Namespace, s.Name, string(s.Spec.Type), s.Spec.ClusterIP, servicePorts(s), age(now, s.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindConfigMaps:
		l, err := c.cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "KEYS", "AGE")
		for i := range l.Items {
			m := &l.Items[i]
			keys := append(sortedKeys(m.Data), sortedKeys(m.BinaryData)...)
			row(m.Namespace, m.Name, strings.Join(keys, ","), age(now, m.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindNodes:
		l, err := c.cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "STATUS", "ROLES", "AGE", "VERSION")
		for i := range l.Items {
			n := &l.Items[i]
			row("", n.Name, nodeStatus(n), nodeRoles(n), age(now, n.CreationTimestamp), n.Status.NodeInfo.KubeletVersion)
		}
		return t, l.ListMeta, nil
	case KindNamespaces:
		l, err := c.cs.CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "STATUS", "AGE")
		for i := range l.Items {
			n := &l.Items[i]
			row("", n.Name, string(n.Status.Phase), age(now, n.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindEvents:
		l, err := c.cs.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("LAST-SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE")
		for i := range l.Items {
			e := &l.Items[i]
			row(e.Namespace, shortDur(now.Sub(eventLastSeen(e))), e.Type, e.Reason,
				e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name, strconv.Itoa(eventCount(e)), e.Message)
		}
		return t, l.ListMeta, nil
	case KindIngresses:
		l, err := c.cs.NetworkingV1().Ingresses(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "CLASS", "HOSTS", "AGE")
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
			row(g.Namespace, g.Name, class, strings.Join(hosts, ","), age(now, g.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindPersistentVolumeClaims:
		l, err := c.cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "STATUS", "VOLUME", "CAPACITY", "STORAGECLASS", "AGE")
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
			row(p.Namespace, p.Name, string(p.Status.Phase), p.Spec.VolumeName, capacity, sc, age(now, p.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	case KindHorizontalPodAutoscalers:
		l, err := c.cs.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, opts)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		head("NAME", "REFERENCE", "MIN", "MAX", "REPLICAS", "AGE")
		for i := range l.Items {
			h := &l.Items[i]
			row(h.Namespace, h.Name, h.Spec.ScaleTargetRef.Kind+"/"+h.Spec.ScaleTargetRef.Name,
				itoa32(i32(h.Spec.MinReplicas, 1)), itoa32(h.Spec.MaxReplicas), itoa32(h.Status.CurrentReplicas),
				age(now, h.CreationTimestamp))
		}
		return t, l.ListMeta, nil
	}
	return nil, metav1.ListMeta{}, fmt.Errorf("kind %s cannot be listed", kind)
}

func itoa32(n int32) string { return strconv.Itoa(int(n)) }

// controllerOf renders the controlling owner reference as Kind/name.
func controllerOf(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r.Kind + "/" + r.Name
		}
	}
	if len(refs) > 0 {
		return refs[0].Kind + "/" + refs[0].Name
	}
	return ""
}

func servicePorts(s *corev1.Service) string {
	var out []string
	for _, p := range s.Spec.Ports {
		v := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort != 0 {
			v = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
		out = append(out, v)
	}
	return strings.Join(out, ",")
}
