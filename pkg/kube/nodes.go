package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// NodesArgs are the slots of k8s_nodes.
type NodesArgs struct {
	Name string `json:"name,omitempty" description:"omit for all nodes"`
}

const maxNodeRows = 100

// pressureConditions are the node conditions that are bad when True.
var pressureConditions = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable}

// Nodes reports each node's readiness, pressure conditions, allocatable
// resources and taints; unhealthy nodes come first with their condition
// messages.
func (c *Client) Nodes(ctx context.Context, a NodesArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	if err := validOptionalName("name", a.Name); err != nil {
		return "", err
	}
	var nodes []corev1.Node
	if a.Name != "" {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil {
			return "", c.apiErr(err, "node "+a.Name)
		}
		nodes = []corev1.Node{*n}
	} else {
		l, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", c.apiErr(err, "list nodes")
		}
		nodes = l.Items
	}
	if len(nodes) == 0 {
		return "no nodes found\n", nil
	}
	type nodeView struct {
		n       *corev1.Node
		bad     []string // "NotReady: msg", "MemoryPressure: msg"
		healthy bool
	}
	views := make([]nodeView, len(nodes))
	notReady, pressured := 0, 0
	for i := range nodes {
		n := &nodes[i]
		v := nodeView{n: n}
		if ready, msg := nodeReady(n); !ready {
			notReady++
			v.bad = append(v.bad, "NotReady: "+safetext.Clean(msg, 160))
		}
		press := false
		for _, pc := range pressureConditions {
			if cond := nodeCondition(n, pc); cond != nil && cond.Status == corev1.ConditionTrue {
				press = true
				v.bad = append(v.bad, string(pc)+": "+safetext.Clean(cond.Message, 160))
			}
		}
		if press {
			pressured++
		}
		v.healthy = len(v.bad) == 0
		views[i] = v
	}
	sort.SliceStable(views, func(i, j int) bool {
		if views[i].healthy != views[j].healthy {
			return !views[i].healthy
		}
		return views[i].n.Name < views[j].n.Name
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d ready, %d not ready, %d under pressure\n", plural(len(nodes), "node"),
		len(nodes)-notReady, notReady, pressured)
	t := &table{head: []string{"NAME", "STATUS", "CONDITIONS", "CPU", "MEMORY", "PODS", "TAINTS", "VERSION", "AGE"}}
	now := c.now()
	shown := 0
	for _, v := range views {
		if shown == maxNodeRows {
			break
		}
		n := v.n
		alloc := n.Status.Allocatable
		var conds []string
		for _, pc := range pressureConditions {
			if cond := nodeCondition(n, pc); cond != nil && cond.Status == corev1.ConditionTrue {
				conds = append(conds, string(pc))
			}
		}
		t.add(n.Name, nodeStatus(n), strings.Join(conds, ","), alloc.Cpu().String(), alloc.Memory().String(),
			alloc.Pods().String(), taints(n), n.Status.NodeInfo.KubeletVersion, age(now, n.CreationTimestamp))
		shown++
	}
	b.WriteString("allocatable resources per node:\n")
	b.WriteString(t.String())
	if len(views) > shown {
		fmt.Fprintf(&b, "... and %d more nodes not shown (all healthy ones sort last)\n", len(views)-shown)
	}
	for i, v := range views {
		if v.healthy || i >= maxNodeRows {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", v.n.Name)
		for _, m := range v.bad {
			fmt.Fprintf(&b, "  %s\n", m)
		}
	}
	return b.String(), nil
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// nodeReady: a node without a Ready condition is not ready (its kubelet
// never reported).
func nodeReady(n *corev1.Node) (bool, string) {
	c := nodeCondition(n, corev1.NodeReady)
	if c == nil {
		return false, "no Ready condition reported"
	}
	if c.Status == corev1.ConditionTrue {
		return true, ""
	}
	return false, nonEmpty(c.Reason, string(c.Status)) + ": " + c.Message
}

func nodeStatus(n *corev1.Node) string {
	s := "Ready"
	if ok, _ := nodeReady(n); !ok {
		s = "NotReady"
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

func nodeRoles(n *corev1.Node) string {
	var roles []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func taints(n *corev1.Node) string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return strings.Join(out, ",")
}

// jobStatus is Complete, Failed (with reason), Suspended or Running.
func jobStatus(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return "Complete"
		case batchv1.JobFailed:
			return "Failed(" + nonEmpty(c.Reason, "unknown") + ")"
		case batchv1.JobSuspended:
			return "Suspended"
		}
	}
	return "Running"
}
