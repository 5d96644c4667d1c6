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
	Kind          string `json:"kind" enum:"pods,deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,services,configmaps,nodes,namespaces,events,ingresses,persistentvolumeclaims,horizontalpodautoscalers"`
	Namespace     string `json:"namespace,omitempty" description:"omit for all"`
	LabelSelector string `json:"label_selector,omitempty" description:"e.g. app=web,tier!=cache"`
	Limit         int    `json:"limit,omitempty" description:"default 100, max 500"`
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

// listTable lists kind and renders its rows. ns "" lists all namespaces,
// and then the rows of a namespaced kind start with their namespace.
func (c *Client) listTable(ctx context.Context, kind, ns string, opts metav1.ListOptions) (*table, metav1.ListMeta, error) {
	list, ok := tableListers[kind]
	if !ok {
		return nil, metav1.ListMeta{}, fmt.Errorf("kind %s cannot be listed", kind)
	}
	r := &tableRows{now: c.now(), withNS: ns == "" && !clusterScoped[kind]}
	lm, err := list(ctx, c.cs, ns, opts, r)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	return &r.t, lm, nil
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
