package kube

import (
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// remediations is the suggested next step per reason.
var remediations = map[string]string{
	ReasonOOMKilled:           "raise the container's memory limit in Git (bump_workload_memory); a restart alone will OOM again",
	ReasonCrashLoopBackOff:    "read the previous container's logs and fix the cause; a rollout restart helps only when the configuration changed after the pods started (config_change)",
	ReasonProbeFailure:        "check the probe endpoint and the app's logs; a rollout restart may clear a wedged process",
	ReasonImagePull:           "fix the image reference or pull credentials in Git; restarting does not help",
	ReasonConfigError:         "create the missing ConfigMap/Secret key or fix the reference in Git",
	ReasonCreateError:         "read the container runtime error and fix the pod spec in Git",
	ReasonUnschedulable:       "free capacity, add nodes, or lower the requests/affinity; restarting does not help",
	ReasonReplicasUnavailable: "describe the workload and its pods to see why replicas are not ready",
	ReasonProgressDeadline:    "the rollout is stuck; describe it, then consider k8s_rollout undo (interactive only)",
	ReasonJobFailed:           "read the failed job's pod logs; rerun after fixing the cause",
	ReasonNodeNotReady:        "check the node's kubelet and network; drain it if it does not recover",
	ReasonStuckCreating:       "describe the pod: a volume that cannot mount or a sandbox that cannot start; fix the claim, Secret or ConfigMap it needs",
	ReasonServiceNoReadyPods:  "the Service has no endpoint: fix the pods it selects (see their problems)",
	ReasonServiceNoPods:       "fix the Service's selector or deploy what it should select; delete it if it is left over",
	ReasonPVCPending:          "describe the claim: a missing storage class, a provisioner error or no matching volume",
	ReasonPVCLost:             "the bound volume is gone: restore it from backup or recreate the claim; pods using it cannot start",
	ReasonIngressBackend:      "point the Ingress at an existing Service and port, or create the Service",
	ReasonHPACannotScale:      "fix what the HPA reports (metrics server, resource requests, scale target)",
	ReasonHPAAtMax:            "the autoscaler cannot add capacity: fix the target's problem or raise maxReplicas",
	ReasonPDBBlocking:         "the budget allows no eviction while pods are unhealthy: fix the pods before draining nodes",
	ReasonWebhookNoEndpoints:  "restore the webhook's Service and pods, or remove the webhook configuration; with failurePolicy Fail it blocks API writes",
}

// ProblemsToFindings turns a report into findings (same order): Kind and
// Name are the owning workload's, severity follows severityOf, Key comes
// from api.Finding.DeriveKey.
func ProblemsToFindings(r *ProblemReport) []api.Finding {
	if r == nil {
		return nil
	}
	out := make([]api.Finding, 0, len(r.Problems))
	for _, p := range r.Problems {
		f := api.Finding{
			Severity:     p.Severity,
			Kind:         p.Kind,
			Namespace:    p.Namespace,
			Name:         p.Name,
			Container:    p.Container,
			Reason:       p.Reason,
			Detail:       redactText(findingDetail(p)),
			Remediation:  remediations[p.Reason],
			Remediable:   p.Remediable,
			Confidence:   p.Confidence,
			ConfigChange: p.ConfigChange,
		}
		if f.Remediation == "" {
			f.Remediation = "investigate with k8s_describe and k8s_get_events"
		}
		f.Key = f.DeriveKey()
		out = append(out, f)
	}
	return out
}

// workloadKinds are the owners with a pod template that a rollout drives.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true}

// redactText is redact.String for a finding's free text: the detail quotes
// event and log messages, and a finding reaches reports and chat posts.
func redactText(s string) string {
	out, _ := redact.String(s)
	return out
}

// findingDetail is the problem's state, the Services it leaves without
// an endpoint, and the event that explains it.
func findingDetail(p Problem) string {
	d := p.Detail
	if len(p.Services) > 0 {
		d += "; Services without endpoints: " + strings.Join(p.Services, ", ")
	}
	if p.Evidence != "" {
		d += "; evidence: " + p.Evidence
	}
	if p.ConfigNote != "" {
		d += "; config: " + p.ConfigNote
	}
	return safetext.Clean(d, 2*detailMax)
}
