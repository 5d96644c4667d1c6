package kube

import "encoding/json"

// alertLabels are the labels Prometheus alerts on Kubernetes objects carry
// (kube-state-metrics and the kubernetes-mixin conventions), most specific
// owner first: the object an alert is about.
var alertLabels = []struct{ label, kind string }{
	{"deployment", "Deployment"}, {"statefulset", "StatefulSet"}, {"daemonset", "DaemonSet"},
	{"cronjob", "CronJob"}, {"job_name", "Job"}, {"job", "Job"}, {"pod", "Pod"},
	{"persistentvolumeclaim", "PersistentVolumeClaim"}, {"horizontalpodautoscaler", "HorizontalPodAutoscaler"},
	{"ingress", "Ingress"}, {"service", "Service"}, {"node", "Node"},
}

// AlertTarget names the object an alert is about from its labels (the
// namespace label plus the first of deployment, statefulset, daemonset,
// cronjob, job_name, job, pod, persistentvolumeclaim,
// horizontalpodautoscaler, ingress, service, node that holds a valid
// object name). ok is false when no label names one: a "job" label that
// is a Prometheus scrape job name (not a DNS name) is skipped; one that is
// a valid name is taken as a Job only when no other label names an object
// and the namespace is set.
func AlertTarget(labels map[string]string) (ObjectRef, bool) {
	ns := labels["namespace"]
	if ns != "" && validOptionalName("namespace", ns) != nil {
		ns = ""
	}
	for _, l := range alertLabels {
		v := labels[l.label]
		if v == "" || validOptionalName("name", v) != nil {
			continue
		}
		switch {
		case l.kind == "Node":
			return ObjectRef{Kind: "Node", Name: v}, true
		case ns == "":
			continue
		case l.label == "job" && anyObjectLabel(labels):
			continue
		}
		return ObjectRef{Namespace: ns, Kind: l.kind, Name: v}, true
	}
	return ObjectRef{}, false
}

func anyObjectLabel(labels map[string]string) bool {
	for _, l := range alertLabels {
		if l.label != "job" && labels[l.label] != "" {
			return true
		}
	}
	return false
}

// AlertTargetJSON is AlertTarget over an alert document as the core
// passes it in a run's context ({"labels": {...}, ...}).
func AlertTargetJSON(doc string) (ObjectRef, bool) {
	var d struct {
		Labels map[string]string `json:"labels"`
	}
	if doc == "" || json.Unmarshal([]byte(doc), &d) != nil {
		return ObjectRef{}, false
	}
	return AlertTarget(d.Labels)
}
