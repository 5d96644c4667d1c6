package kube

import (
	"context"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ClusterProblemsArgs are the slots of cluster_problems.
type ClusterProblemsArgs struct {
	Namespace string `json:"namespace,omitempty" description:"only this namespace; omit for the whole cluster (recommended first)"`
	Since     string `json:"since,omitempty" description:"Warning event window, e.g. 30m, 2h (default 1h, at most 7d)"`
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
			"Sweep the cluster in one call: workloads below desired replicas, crash loops, OOM kills, image pull and "+
				"config errors, unschedulable pods, failing probes, nodes not ready or under pressure, and Warning events "+
				"grouped by object and reason. Most severe first, each with its owning workload and whether it is "+
				"remediable, ending with a coverage block (checks run, skipped, partial). Start every health check here.",
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
			"List objects of one kind as a table (like kubectl get), in one namespace or all, optionally filtered by a "+
				"label selector. ConfigMaps show key names only. Secrets are never listed.",
			false, c.GetResources),
		tools.New(ToolDescribe,
			"Describe one object (like kubectl describe): status, containers with limits and probes, conditions, its "+
				"pods for workloads, and its recent events plus its pods' events grouped by reason.",
			false, c.Describe),
		tools.New(ToolGetEvents,
			"List events newest first, filtered by namespace, type (Normal|Warning), reason, involved object and a time "+
				"window. Messages are sanitized and shortened.",
			false, c.GetEvents),
		tools.New(ToolPodLogs,
			"Read the last lines (at most 500) of one pod container's log, or of its previous instance after a crash.",
			false, c.PodLogs),
		tools.New(ToolGetYAML,
			"Get one object as YAML (managedFields and last-applied annotation removed). Secrets are never read.",
			false, c.GetYAML),
		tools.New(ToolAPIResources,
			"List the resource types the API server serves (discovery), optionally for one API group.",
			false, c.APIResources),
		tools.New(ToolNodes,
			"Nodes with readiness, memory/disk/PID pressure, allocatable CPU/memory/pods, taints and kubelet version; "+
				"unhealthy nodes first with their condition messages.",
			false, c.Nodes),
		tools.New(ToolRollout,
			"Rollout of a deployment, statefulset or daemonset: status and history read; restart sets the restart "+
				"annotation; undo, pause and resume are for interactive runs only. kubecrew's own workloads are refused.",
			true, c.Rollout),
	}
}
