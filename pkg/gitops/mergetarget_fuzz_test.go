package gitops

import (
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// FuzzMergeTarget: the workload a merge is judged by never comes from
// nowhere. Inputs are a base manifest, an edited version of it (diffed by
// the test helper unifiedDiff) or a raw diff, and a PR body. Whenever
// MergeTarget answers, the workload names all four parts, its namespace is
// written in the base manifest or claimed by the body, and its kind, name
// and container are written in the base manifest; it never panics.
func FuzzMergeTarget(f *testing.F) {
	key := api.Finding{Namespace: "shop", Kind: "Deployment", Name: "cart", Container: "app", Reason: "OOMKilled"}.DeriveKey()
	body := Proposal{Kind: "Deployment", Namespace: "shop", Name: "cart", Container: "app", Path: "deploy.yaml",
		Old: "256Mi", New: "384Mi", Factor: 1.5, FindingKey: key, Author: "k8s-engineer"}.Body()
	for _, ns := range []string{"namespace: shop", ""} {
		src := strings.Replace(twoDocs, "%s", ns, 1)
		f.Add(src, strings.Replace(src, "memory: 256Mi", "memory: 384Mi", 1), "", body)
		f.Add(src, strings.Replace(src, "memory: 64Mi", "memory: 96Mi", 1), "", "Raise it please.")
		f.Add(src, strings.Replace(src, "name: app", "name: ap", 1), "", body)
	}
	f.Add("kind: Deployment\n", "", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-kind: Deployment\n+kind: Pod\n", body)
	f.Fuzz(func(t *testing.T, base, edited, rawDiff, prBody string) {
		diff := rawDiff
		if diff == "" {
			diff = unifiedDiff("deploy.yaml", base, edited)
		}
		w, err := MergeTarget([]byte(base), diff, prBody)
		if err != nil {
			return
		}
		if w.Namespace == "" || w.Kind == "" || w.Name == "" || w.Container == "" {
			t.Fatalf("MergeTarget answered an incomplete workload %+v", w)
		}
		if !strings.Contains(base, w.Namespace) && !strings.Contains(prBody, w.Namespace) {
			t.Fatalf("namespace %q is neither in the manifest nor in the body", w.Namespace)
		}
		for _, s := range []string{w.Name, w.Container} {
			if !strings.Contains(base, s) {
				t.Fatalf("%q of %+v is not in the base manifest", s, w)
			}
		}
	})
}
