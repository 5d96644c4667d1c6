package kubetest

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func authorizationAttributes(r rbacv1.PolicyRule) *authorizationv1.ResourceAttributes {
	group := ""
	if len(r.APIGroups) > 0 {
		group = r.APIGroups[0]
	}
	return &authorizationv1.ResourceAttributes{Verb: r.Verbs[0], Group: group, Resource: r.Resources[0]}
}

// allowed asks the API server, as cs's user, whether attrs is allowed.
func allowed(ctx context.Context, cs kubernetes.Interface, attrs *authorizationv1.ResourceAttributes) (bool, error) {
	rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, nil // not yet allowed to ask either: keep polling
	}
	return rev.Status.Allowed, nil
}
