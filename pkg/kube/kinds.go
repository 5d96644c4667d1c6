package kube

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// ErrSecretsDenied answers any attempt to read, list or describe Secrets.
var ErrSecretsDenied = errors.New("kind secrets is denied: kubecrew never reads, lists or describes Secrets")

// Resource kinds, the only values a kind slot accepts.
const (
	KindPods                     = "pods"
	KindDeployments              = "deployments"
	KindReplicaSets              = "replicasets"
	KindStatefulSets             = "statefulsets"
	KindDaemonSets               = "daemonsets"
	KindJobs                     = "jobs"
	KindCronJobs                 = "cronjobs"
	KindServices                 = "services"
	KindConfigMaps               = "configmaps"
	KindNodes                    = "nodes"
	KindNamespaces               = "namespaces"
	KindEvents                   = "events"
	KindIngresses                = "ingresses"
	KindPersistentVolumeClaims   = "persistentvolumeclaims"
	KindHorizontalPodAutoscalers = "horizontalpodautoscalers"
)

// Kinds lists every kind the read tools accept, in schema order.
var Kinds = []string{
	KindPods, KindDeployments, KindReplicaSets, KindStatefulSets, KindDaemonSets, KindJobs, KindCronJobs,
	KindServices, KindConfigMaps, KindNodes, KindNamespaces, KindEvents, KindIngresses,
	KindPersistentVolumeClaims, KindHorizontalPodAutoscalers,
}

// kindNames maps a canonical kind to its API Kind.
var kindNames = map[string]string{
	KindPods: "Pod", KindDeployments: "Deployment", KindReplicaSets: "ReplicaSet", KindStatefulSets: "StatefulSet",
	KindDaemonSets: "DaemonSet", KindJobs: "Job", KindCronJobs: "CronJob", KindServices: "Service",
	KindConfigMaps: "ConfigMap", KindNodes: "Node", KindNamespaces: "Namespace", KindEvents: "Event",
	KindIngresses: "Ingress", KindPersistentVolumeClaims: "PersistentVolumeClaim",
	KindHorizontalPodAutoscalers: "HorizontalPodAutoscaler",
}

// clusterScoped kinds ignore the namespace slot.
var clusterScoped = map[string]bool{KindNodes: true, KindNamespaces: true}

// kindAliases are the spellings a model commonly uses (kubectl short
// names, singulars, API Kinds in lower case).
var kindAliases = map[string]string{
	"pod": KindPods, "po": KindPods,
	"deployment": KindDeployments, "deploy": KindDeployments,
	"replicaset": KindReplicaSets, "rs": KindReplicaSets,
	"statefulset": KindStatefulSets, "sts": KindStatefulSets,
	"daemonset": KindDaemonSets, "ds": KindDaemonSets,
	"job": KindJobs, "cronjob": KindCronJobs, "cj": KindCronJobs,
	"service": KindServices, "svc": KindServices,
	"configmap": KindConfigMaps, "cm": KindConfigMaps,
	"node": KindNodes, "no": KindNodes,
	"namespace": KindNamespaces, "ns": KindNamespaces,
	"event": KindEvents, "ev": KindEvents,
	"ingress": KindIngresses, "ing": KindIngresses,
	"persistentvolumeclaim": KindPersistentVolumeClaims, "pvc": KindPersistentVolumeClaims,
	"horizontalpodautoscaler": KindHorizontalPodAutoscalers, "hpa": KindHorizontalPodAutoscalers,
}

// parseKind normalizes a kind slot and checks it against allowed (nil: all
// Kinds). Secrets get ErrSecretsDenied whatever the spelling.
func parseKind(s string, allowed []string) (string, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexByte(k, '.'); i > 0 { // "deployments.apps", "secrets.v1."
		k = k[:i]
	}
	if k == "secret" || k == "secrets" {
		return "", ErrSecretsDenied
	}
	if a, ok := kindAliases[k]; ok {
		k = a
	}
	list := allowed
	if list == nil {
		list = Kinds
	}
	for _, a := range list {
		if a == k {
			return k, nil
		}
	}
	if s == "" {
		return "", fmt.Errorf("kind is required; one of: %s", strings.Join(list, ", "))
	}
	sorted := append([]string(nil), list...)
	sort.Strings(sorted)
	return "", fmt.Errorf("kind %q is not supported here; one of: %s", safetext.Clean(s, 60), strings.Join(sorted, ", "))
}
