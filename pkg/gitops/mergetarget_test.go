package gitops

import (
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
)

const twoDocs = `apiVersion: v1
kind: Service
metadata: {name: cart}
spec: {ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
  %s
spec:
  template:
    spec:
      containers:
        - name: proxy
          resources: {limits: {memory: 64Mi}}
        - name: app
          resources:
            limits:
              memory: 256Mi
`

func TestMergeTarget(t *testing.T) {
	key := api.Finding{Namespace: "shop", Kind: "Deployment", Name: "cart", Container: "app", Reason: "OOMKilled"}.DeriveKey()
	body := func(ns, name, container, k string) string {
		return Proposal{Kind: "Deployment", Namespace: ns, Name: name, Container: container, Path: "apps/cart/deploy.yaml",
			Old: "256Mi", New: "384Mi", Factor: 1.5, FindingKey: k, Author: "k8s-engineer"}.Body()
	}
	for _, tc := range []struct {
		name, nsLine, body, want, err string
	}{
		{name: "the manifest names its namespace", nsLine: "namespace: shop", body: "whatever", want: "shop/Deployment/cart/app"},
		{name: "a kustomize-placed manifest takes the body's namespace", body: body("shop", "cart", "app", key), want: "shop/Deployment/cart/app"},
		{name: "the body names another workload", body: body("shop", "web", "app", key), err: "the PR body names"},
		{name: "the body names another container", body: body("shop", "cart", "proxy", key), err: "the PR body names"},
		{name: "the finding key is another namespace's", body: body("shop", "cart", "app",
			api.Finding{Namespace: "kube-system", Kind: "Deployment", Name: "cart", Container: "app", Reason: "OOMKilled"}.DeriveKey()), err: "finding key"},
		{name: "no namespace anywhere", body: "Raise it please.", err: "names no namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(strings.Replace(twoDocs, "%s", tc.nsLine, 1))
			out, _, _, err := BumpMemory(src, "Deployment", "cart", "app", 1.5)
			if err != nil {
				t.Fatal(err)
			}
			w, err := MergeTarget(src, "diff --git a/apps/cart/deploy.yaml b/apps/cart/deploy.yaml\n"+spliceDiff("apps/cart/deploy.yaml", src, out), tc.body)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q (got %+v)", err, tc.err, w)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Namespace + "/" + w.Kind + "/" + w.Name + "/" + w.Container; got != tc.want {
				t.Fatalf("target %s, want %s", got, tc.want)
			}
		})
	}
}
