package kube

import (
	"context"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ClusterProblemsArgs are the slots of cluster_problems.
type ClusterProblemsArgs struct {
	Namespace string `json:"namespace,omitempty" description:"omit for the whole cluster"`
	Since     string `json:"since,omitempty" description:"event window, e.g. 2h (default 1h, max 7d)"`
}

// Tool names, as AGENT_TOOLS and the manuals spell them.
const (
	ToolClusterProblems = "cluster_problems"
	ToolGetResources    = "k8s_get_resources"
	ToolDescribe        = "k8s_describe"
	ToolGetEvents       = "k8s_get_events"
	ToolPodLogs         = "k8s_get_pod_logs"
	ToolGetYAML         = "k8s_get_yaml"
	ToolAPIResources    = "k8s_api_resources"
	ToolNodes           = "k8s_nodes"
	ToolRollout         = "k8s_rollout"
)

// Tools returns every cluster tool over c, in a stable order.
func Tools(c *Client) []tools.Tool {
	return []tools.Tool{
		tools.New(ToolClusterProblems,
			"Sweep the whole cluster in one call: every problem, most severe first, with owner and remediability, then a coverage block.",
			false, func(ctx context.Context, a ClusterProblemsArgs) (string, error) {
				window, err := parseSince(a.Since, DefaultProblemWindow)
				if err != nil {
					return "", err
				}
				r, err := c.ClusterProblems(ctx, ProblemOptions{Namespace: a.Namespace, Window: window})
				if err != nil {
					return "", err
				}
				return r.Render(), nil
			}),
		tools.New(ToolGetResources,
			"List objects of one kind as a table, like kubectl get. ConfigMaps show key names only; Secrets are never listed.",
			false, c.GetResources),
		tools.New(ToolDescribe,
			"Describe one object like kubectl describe: status, containers (limits, probes), conditions, its pods, recent events by reason.",
			false, c.Describe),
		tools.New(ToolGetEvents,
			"List events newest first, filtered; messages sanitized and shortened.",
			false, c.GetEvents),
		tools.New(ToolPodLogs,
			"Read the last lines of one pod container's log, or of its previous (crashed) instance.",
			false, c.PodLogs),
		tools.New(ToolGetYAML,
			"Get one object as YAML (managedFields and last-applied removed). Secrets are never read.",
			false, c.GetYAML),
		tools.New(ToolAPIResources,
			"List the resource types the API server serves, optionally of one group.",
			false, c.APIResources),
		tools.New(ToolNodes,
			"Nodes: readiness, pressure, allocatable, taints, kubelet version; unhealthy first.",
			false, c.Nodes),
		tools.New(ToolRollout,
			"Rollout of a deployment, statefulset or daemonset. kubecrew's own workloads are refused.",
			true, c.Rollout),
	}
}
