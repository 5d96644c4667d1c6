package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Access is one permission a cluster tool needs, cluster-wide (the tools
// take any namespace).
type Access struct {
	Verb     string `json:"verb"`
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"` // "pods", or "pods/log" for a subresource
}

// String is "list pods", "patch deployments.apps", "get pods/log".
func (a Access) String() string {
	r := a.Resource
	if a.Group != "" {
		res, sub, ok := strings.Cut(r, "/")
		r = res + "." + a.Group
		if ok {
			r += "/" + sub
		}
	}
	return a.Verb + " " + r
}

// kindGroups is each kind's API group.
var kindGroups = map[string]string{
	KindDeployments: "apps", KindReplicaSets: "apps", KindStatefulSets: "apps", KindDaemonSets: "apps",
	KindJobs: "batch", KindCronJobs: "batch", KindIngresses: "networking.k8s.io",
	KindHorizontalPodAutoscalers: "autoscaling",
}

func access(verb string, kinds ...string) []Access {
	out := make([]Access, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, Access{Verb: verb, Group: kindGroups[k], Resource: k})
	}
	return out
}

// toolAccess is what each cluster tool calls on the API server (the
// manifests' kubecrew-cluster-reader and kubecrew-rollout-restart roles
// grant exactly this; see manifests/base/rbac.yaml). k8s_api_resources
// reads discovery, which every authenticated identity may.
var toolAccess = map[string][]Access{
	ToolClusterProblems: append(access("list", KindPods, KindReplicaSets, KindDeployments, KindStatefulSets, KindDaemonSets,
		KindJobs, KindCronJobs, KindNodes, KindEvents, KindServices, KindPersistentVolumeClaims, KindIngresses, KindHorizontalPodAutoscalers),
		Access{Verb: "list", Group: "policy", Resource: "poddisruptionbudgets"},
		Access{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"},
		Access{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
		Access{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
		Access{Verb: "get", Resource: KindNamespaces}),
	ToolGetResources: access("list", Kinds...),
	ToolDescribe:     append(access("get", describeKinds...), access("list", KindPods, KindReplicaSets, KindEvents)...),
	ToolGetEvents:    access("list", KindEvents),
	ToolPodLogs:      append(access("get", KindPods), Access{Verb: "get", Resource: "pods/log"}),
	ToolGetYAML:      access("get", Kinds...),
	ToolNodes:        access("list", KindNodes, KindPods),
	// restart is the one write autonomous runs may make, and the only one
	// the shipped RBAC grants (Deployments only).
	ToolRollout: append(append(access("get", rolloutKinds...), access("list", KindReplicaSets)...),
		Access{Verb: "list", Group: "apps", Resource: "controllerrevisions"},
		Access{Verb: "patch", Group: "apps", Resource: KindDeployments}),
}

// Need is one permission and the tools that need it.
type Need struct {
	Access
	Tools []string `json:"tools"`
}

// NeedsOf returns what the named tools need from the API server, one entry
// per permission, those most tools need first. Tools that are not cluster tools are
// ignored; no cluster tool at all gives nil.
func NeedsOf(toolNames []string) []Need {
	by := map[Access][]string{}
	for _, t := range toolNames {
		for _, a := range toolAccess[t] {
			if !contains(by[a], t) {
				by[a] = append(by[a], t)
			}
		}
	}
	out := make([]Need, 0, len(by))
	for a, ts := range by {
		sort.Strings(ts)
		out = append(out, Need{Access: a, Tools: ts})
	}
	// The permissions most tools need first: a summary of what is denied
	// then names the ones that matter (list pods, list events) first.
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Tools) != len(out[j].Tools) {
			return len(out[i].Tools) > len(out[j].Tools)
		}
		return out[i].String() > out[j].String() // list before get
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Grant is the API server's answer for one Need.
type Grant struct {
	Need
	Allowed bool `json:"allowed"`
	// Reason is the authorizer's reason, when it gave one.
	Reason string `json:"reason,omitempty"`
}

// CheckAccess asks the API server, with one SelfSubjectAccessReview per
// need (concurrently), whether this client's own identity may do each,
// in every namespace. The error means the question could not be asked
// (cluster unreachable, no authorization API); it wraps
// ErrClusterUnavailable when the server did not answer.
func (c *Client) CheckAccess(ctx context.Context, needs []Need) ([]Grant, error) {
	if err := c.avail(); err != nil {
		return nil, err
	}
	out := make([]Grant, len(needs))
	errs := make([]error, len(needs))
	var wg sync.WaitGroup
	for i, n := range needs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, sub, _ := strings.Cut(n.Resource, "/")
			rev, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: n.Verb, Group: n.Group, Resource: res, Subresource: sub,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				errs[i] = c.apiErr(err, "access review for "+n.String())
				return
			}
			out[i] = Grant{Need: n, Allowed: rev.Status.Allowed && !rev.Status.Denied, Reason: rev.Status.Reason}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Denied summarizes the grants that were refused, e.g. "may not list pods,
// list events (cluster_problems, k8s_get_events)"; "" when all were allowed.
func Denied(gs []Grant) string {
	var what []string
	tools := map[string]bool{}
	for _, g := range gs {
		if g.Allowed {
			continue
		}
		what = append(what, g.String())
		for _, t := range g.Tools {
			tools[t] = true
		}
	}
	if len(what) == 0 {
		return ""
	}
	ts := make([]string, 0, len(tools))
	for t := range tools {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	const shown = 6
	list := strings.Join(what[:min(shown, len(what))], ", ")
	if len(what) > shown {
		list += fmt.Sprintf(" and %d more", len(what)-shown)
	}
	return fmt.Sprintf("this identity may not %s (%d of %d permissions the tools need; tools affected: %s)",
		list, len(what), len(gs), strings.Join(ts, ", "))
}
