package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// objectRef is a validated pointer at one object.
type objectRef struct {
	kind      string // canonical plural
	namespace string // "" for cluster-scoped kinds
	name      string
}

func (r objectRef) String() string {
	return kindNames[r.kind] + " " + nsName(r.namespace, r.name)
}

// parseRef validates the kind, namespace and name slots of a one-object tool.
func parseRef(kind, namespace, name string, allowed []string) (objectRef, error) {
	k, err := parseKind(kind, allowed)
	if err != nil {
		return objectRef{}, err
	}
	if err := validName("name", name); err != nil {
		return objectRef{}, err
	}
	if clusterScoped[k] {
		namespace = ""
	} else if err := validName("namespace", namespace); err != nil {
		return objectRef{}, err
	}
	return objectRef{kind: k, namespace: namespace, name: name}, nil
}

// groupVersion of each kind, for the apiVersion of rendered objects.
var groupVersions = map[string]schema.GroupVersion{
	KindPods: {Version: "v1"}, KindServices: {Version: "v1"}, KindConfigMaps: {Version: "v1"},
	KindNodes: {Version: "v1"}, KindNamespaces: {Version: "v1"}, KindEvents: {Version: "v1"},
	KindPersistentVolumeClaims: {Version: "v1"},
	KindDeployments:            {Group: "apps", Version: "v1"}, KindReplicaSets: {Group: "apps", Version: "v1"},
	KindStatefulSets: {Group: "apps", Version: "v1"}, KindDaemonSets: {Group: "apps", Version: "v1"},
	KindJobs: {Group: "batch", Version: "v1"}, KindCronJobs: {Group: "batch", Version: "v1"},
	KindIngresses:                {Group: "networking.k8s.io", Version: "v1"},
	KindHorizontalPodAutoscalers: {Group: "autoscaling", Version: "v2"},
}

// getObject fetches one object of a known kind with its TypeMeta filled.
func (c *Client) getObject(ctx context.Context, r objectRef) (runtime.Object, error) {
	o := metav1.GetOptions{}
	var obj runtime.Object
	var err error
	switch r.kind {
	case KindPods:
		obj, err = c.cs.CoreV1().Pods(r.namespace).Get(ctx, r.name, o)
	case KindDeployments:
		obj, err = c.cs.AppsV1().Deployments(r.namespace).Get(ctx, r.name, o)
	case KindReplicaSets:
		obj, err = c.cs.AppsV1().ReplicaSets(r.namespace).Get(ctx, r.name, o)
	case KindStatefulSets:
		obj, err = c.cs.AppsV1().StatefulSets(r.namespace).Get(ctx, r.name, o)
	case KindDaemonSets:
		obj, err = c.cs.AppsV1().DaemonSets(r.namespace).Get(ctx, r.name, o)
	case KindJobs:
		obj, err = c.cs.BatchV1().Jobs(r.namespace).Get(ctx, r.name, o)
	case KindCronJobs:
		obj, err = c.cs.BatchV1().CronJobs(r.namespace).Get(ctx, r.name, o)
	case KindServices:
		obj, err = c.cs.CoreV1().Services(r.namespace).Get(ctx, r.name, o)
	case KindConfigMaps:
		obj, err = c.cs.CoreV1().ConfigMaps(r.namespace).Get(ctx, r.name, o)
	case KindNodes:
		obj, err = c.cs.CoreV1().Nodes().Get(ctx, r.name, o)
	case KindNamespaces:
		obj, err = c.cs.CoreV1().Namespaces().Get(ctx, r.name, o)
	case KindEvents:
		obj, err = c.cs.CoreV1().Events(r.namespace).Get(ctx, r.name, o)
	case KindIngresses:
		obj, err = c.cs.NetworkingV1().Ingresses(r.namespace).Get(ctx, r.name, o)
	case KindPersistentVolumeClaims:
		obj, err = c.cs.CoreV1().PersistentVolumeClaims(r.namespace).Get(ctx, r.name, o)
	case KindHorizontalPodAutoscalers:
		obj, err = c.cs.AutoscalingV2().HorizontalPodAutoscalers(r.namespace).Get(ctx, r.name, o)
	default:
		return nil, fmt.Errorf("kind %s cannot be fetched", r.kind)
	}
	if err != nil {
		return nil, c.apiErr(err, r.String())
	}
	obj.GetObjectKind().SetGroupVersionKind(groupVersions[r.kind].WithKind(kindNames[r.kind]))
	return obj, nil
}
